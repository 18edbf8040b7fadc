"""Two runs with known per-question values written straight to the store, for the Compare and History reads
(`small`, `runs` fixtures; `holm_of` recomputes the Holm adjustment by hand)."""
import json

import numpy as np
import pandas as pd
import pytest

from evaluators import loaders
from evaluators.store import close_store, open_store


# A small run: 6 questions of types A/B/none, methods m1, m2, m3.
# rouge_l (higher is better), hallucination_rate (lower is better), dont_know (no direction).
VALUES = {  # metric -> method -> per-question values (None: a cell not scored ok)
    "rouge_l": {"m1": [0.9, 0.8, 0.5, 0.4, 0.7, 0.6], "m2": [0.5, 0.8, 0.6, 0.1, None, 0.2],
                "m3": [0.9, 0.8, 0.5, 0.4, 0.7, 0.6]},
    "hallucination_rate": {"m1": [0.0, 0.1, 0.5, 0.0, 0.2, 0.0], "m2": [0.3, 0.1, 0.2, 0.4, 0.2, 0.5],
                           "m3": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]},
    "dont_know": {"m1": [0, 0, 1, 0, 0, 0], "m2": [0, 1, 1, 0, 0, 0], "m3": [0, 0, 0, 0, 0, 0]},
    "judge_overall": {"m1": [5, 4, 3, 4, 2, 1], "m2": [3, 3, 3, 3, 3, 3], "m3": [1, 1, 1, 1, 1, 1]},
}


TYPES = ["A", "A", "B", "B", "B", None]


def write_run(store, folder, name: str, values: dict, references: dict[str, str] | None = None) -> str:
    """A finished run of `values` (metric -> method -> per-question values, None: a cell not scored ok) over a
    golden set of TYPES (in turn) whose references are "r" unless `references` (question id -> text) says otherwise."""
    methods = list(next(iter(values.values())))
    n = len(next(iter(values.values()))[methods[0]])  # questions q0, q1, ... of types TYPES in turn
    golden = folder / f"{name}-golden.jsonl"
    golden.write_text("\n".join(json.dumps({"question_id": f"q{i}", "question": f"Question {i}?",
                                            "reference": (references or {}).get(f"q{i}", "r"),
                                            **({"question_type": t} if (t := TYPES[i % len(TYPES)]) else {})})
                                for i in range(n)))
    outputs = folder / f"{name}-outputs.jsonl"
    outputs.write_text("\n".join(json.dumps({"question_id": f"q{i}", "method": m, "answer": "a", "contexts": ["c"]})
                                 for i in range(n) for m in methods))
    golden_id = store.save_dataset(loaders.load(golden, role="golden")).dataset_id
    outputs_id = store.save_dataset(loaders.load(outputs, role="outputs")).dataset_id
    run_id = store.create_run(name=name, golden_dataset_id=golden_id, outputs_dataset_ids=[outputs_id],
                              judge="offline", judge_model=None, metrics=list(values), config={},
                              n_samples=n * len(methods))
    rows = []
    for metric, by_method in values.items():
        for method, per_question in by_method.items():
            for i, v in enumerate(per_question):
                norm = None if v is None else ((v - 1) / 4 if metric == "judge_overall" else float(v))
                rows.append({"run_id": run_id, "question_id": f"q{i}", "method": method, "metric": metric,
                             "value": None if v is None else float(v), "norm": norm,
                             "status": "ok" if v is not None else "judge_error", "judge": "offline", "detail": None})
    store.write_scores(pd.DataFrame(rows))
    store.finish_run(run_id, "finished")
    return run_id


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.duckdb"
    store = open_store(path)
    yield store, write_run(store, tmp_path, "small", VALUES)
    close_store(path)


# Later runs whose m1 scores what m2 scored in the first run: across runs, m1 - later m1 is m1 - m2 of the first.
LATER = {metric: {"m1": by_method["m2"]} for metric, by_method in VALUES.items()}


EDITED = {"q2": "a corrected reference"}


@pytest.fixture
def runs(small, tmp_path):
    """The small run, a later run on the same golden set, and one on a golden set whose q2 reference was edited."""
    store, first = small
    return (store, first, write_run(store, tmp_path, "same golden set", LATER),
            write_run(store, tmp_path, "edited golden set", LATER, references=EDITED))


def holm_of(p: np.ndarray) -> np.ndarray:
    order = np.argsort(p, kind="stable")
    adjusted = np.empty(len(p))
    adjusted[order] = np.maximum.accumulate(np.minimum(1, (len(p) - np.arange(len(p))) * p[order]))
    return adjusted
