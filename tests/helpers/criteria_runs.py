"""Stored runs with an analyst's criteria scored, without an LLM: each run is started and executed for real (the
offline judge, a real DuckDB file: its criterion cells come out not applicable), then its criterion cells are
replaced by scores on each criterion's scale (seeded, "local" better than "basic"), as an LLM judge would store
them. The `criteria_runs` fixture: three runs of one golden set, the third with a changed criterion text."""
from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pandas as pd
import pytest

from evaluators import loaders
from evaluators.metrics import registry
from evaluators.metrics.registry import lookup
from evaluators.records.criteria import Criterion
from evaluators.runs import engine, lifecycle
from evaluators.store import close_store, open_store

N = 20  # questions
METHODS = ("local", "basic")
METRICS = ("exact_match", "rouge_l")  # deterministic: no model, no judge
SOURCE = Criterion("names_the_source", "The answer says which passage its main claim comes from.",
                   scale="pass/fail", inputs=("question", "answer", "contexts"))
PLAIN = Criterion("plain_language", "The answer is in plain language a customer understands.", scale="1-5",
                  levels={1: "jargon throughout", 3: "some jargon", 5: "plain throughout"})
POLICY = Criterion("policy_share", "The share of the answer's claims that name the policy they rely on.",
                   scale="0-1", inputs=("question", "answer", "reference"), name="Policy named")
CRITERIA = (SOURCE, PLAIN, POLICY)
# The third run's names_the_source: another text, so another version of the same metric.
SOURCE_V2 = Criterion("names_the_source", "The answer quotes the passage its main claim comes from.",
                      scale="pass/fail", inputs=("question", "answer", "contexts"))


def values(criterion: Criterion, method: str, seed: int) -> list[float]:
    """N scores on the criterion's scale, better for "local" than for "basic"."""
    rng = np.random.default_rng([seed, METHODS.index(method)])
    good = method == "local"
    if criterion.scale == "pass/fail":
        return list((rng.random(N) < (0.8 if good else 0.35)).astype(float))
    if criterion.scale == "1-5":
        return list(np.clip(np.round(rng.normal(4.0 if good else 2.5, 0.9, N)), 1, 5))
    return list(np.round(np.clip(rng.normal(0.7 if good else 0.45, 0.15, N), 0, 1), 2))


def inputs(store, folder) -> tuple[str, str]:
    """(golden id, outputs id) of N questions of types A and B, answered by both METHODS, stored."""
    golden, outputs = folder / "criteria-golden.jsonl", folder / "criteria-outputs.jsonl"
    golden.write_text("\n".join(json.dumps({"question_id": f"q{i}", "question": f"Which policy covers case {i}?",
                                            "reference": f"Policy {i} covers it.", "question_type": "AB"[i % 2]})
                                for i in range(N)))
    outputs.write_text("\n".join(json.dumps({"question_id": f"q{i}", "method": m, "contexts": [f"Policy {i} text."],
                                             "answer": f"Policy {i} covers it." if m == "local" or i % 3 else "No."})
                                 for i in range(N) for m in METHODS))
    return (store.save_dataset(loaders.load(golden, role="golden")).dataset_id,
            store.save_dataset(loaders.load(outputs, role="outputs")).dataset_id)


def criteria_run(store, golden_id: str, outputs_id: str, criteria=CRITERIA, *, seed: int = 0, name: str = "run",
                 day: int = 1, judged: bool = True) -> str:
    """A finished run of METRICS and `criteria` whose criterion cells hold `values` (seeded by `seed`), dated
    2026-11-`day` (History orders runs by date); judged=False: as the offline judge left them (not applicable)."""
    spec = lifecycle.RunSpec(metrics=METRICS, criteria=tuple(criteria), name=name)
    run_id = lifecycle.start_stored(store, golden_id, [outputs_id], spec)
    engine.execute_run(store, run_id)
    if not judged:
        return run_id
    rows = []
    for c in criteria:
        scale = lookup(c.id).range
        for method in METHODS:
            for i, v in enumerate(values(c, method, seed)):
                rows.append({"run_id": run_id, "question_id": f"q{i}", "method": method, "metric": c.id,
                             "value": v, "norm": float(scale.norm(v)), "status": "ok", "judge": "openai",
                             "detail": f"the judge's score: scored {v}", "repeats": None, "label": None,
                             "counts": None})
    store.write_scores(pd.DataFrame(rows))
    store.cursor().execute("UPDATE runs SET created_at = ? WHERE run_id = ?", [dt.datetime(2026, 11, day), run_id])
    return run_id


def scored(store, run_id: str, metric: str) -> pd.DataFrame:
    """The stored ok cells of one metric: question_id, method, value (what a test recomputes its numbers from)."""
    return store.cursor().execute("SELECT question_id, method, value FROM scores WHERE run_id = ? AND metric = ? "
                                  "AND status = 'ok' ORDER BY method, question_id", [run_id, metric]).df()


def forget_users_metrics() -> None:
    """Empty the process's users' metrics, as in a new process that only has the database (the read side must
    register them from the store)."""
    registry.USER.clear()


@pytest.fixture
def criteria_runs(tmp_path):
    """(db path, store, {"first", "same", "changed": run id}): "same" repeats the first's criteria (same versions,
    other scores), "changed" has names_the_source at another text (another version). The process's users' metrics
    are emptied before and after, so the reads register them from the store."""
    forget_users_metrics()
    path = tmp_path / "criteria.duckdb"
    store = open_store(path)
    golden_id, outputs_id = inputs(store, tmp_path)
    runs = {"first": criteria_run(store, golden_id, outputs_id, name="first", seed=1, day=1),
            "same": criteria_run(store, golden_id, outputs_id, name="same", seed=2, day=2),
            "changed": criteria_run(store, golden_id, outputs_id, (SOURCE_V2, PLAIN, POLICY), name="changed",
                                    seed=3, day=3)}
    forget_users_metrics()
    yield path, store, runs
    close_store(path)
    forget_users_metrics()
