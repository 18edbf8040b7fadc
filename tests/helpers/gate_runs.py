"""Two runs of the same golden set with known per-question scores, written to a real store, for the gate."""
import json

import numpy as np
import pandas as pd

from evaluators import loaders
from evaluators.metrics import REGISTRY
from evaluators.metrics.registry import lookup
from evaluators.store import open_store


def _run(store, golden_id, outputs_id, name, scores, repeats=None):
    """scores: {metric: values per question (None: not scored)}; repeats: {metric: per question list or None}."""
    metrics = list(scores)
    n = len(next(iter(scores.values())))
    run_id = store.create_run(name=name, golden_dataset_id=golden_id, outputs_dataset_ids=[outputs_id],
                              judge="offline", judge_model=None, metrics=metrics, config={}, n_samples=n)
    rows = []
    for metric, values in scores.items():
        scale = lookup(metric).range
        for i, value in enumerate(values):
            ok = value is not None and not (isinstance(value, float) and np.isnan(value))
            row = {"run_id": run_id, "question_id": f"q{i}", "method": "m", "metric": metric,
                   "value": float(value) if ok else None, "norm": float(scale.norm(value)) if ok else None,
                   "status": "ok" if ok else "error", "judge": "offline", "detail": None if ok else "judge failed",
                   "label": None}
            if repeats is not None:
                row["repeats"] = (repeats.get(metric) or [None] * n)[i]
            rows.append(row)
    store.write_scores(pd.DataFrame(rows))
    store.finish_run(run_id, "finished")
    return run_id


def gate_runs(tmp_path, baseline, candidates, *, repeats=None):
    """A database with a baseline run and one run per candidate ({name: scores}), all of method "m" on the same
    questions q0..q{n-1}: (db path, store, baseline run id, {name: run id}). repeats: {name: {metric: lists}}."""
    n = len(next(iter(baseline.values())))
    golden = tmp_path / "golden.jsonl"
    golden.write_text("\n".join(json.dumps({"question_id": f"q{i}", "question": f"Question {i}?", "reference": "r"})
                                for i in range(n)))
    outputs = tmp_path / "outputs.jsonl"
    outputs.write_text("\n".join(json.dumps({"question_id": f"q{i}", "method": "m", "answer": "a", "contexts": ["c"]})
                                 for i in range(n)))
    db = tmp_path / "gate.duckdb"
    store = open_store(db)
    golden_id = store.save_dataset(loaders.load(golden, role="golden")).dataset_id
    outputs_id = store.save_dataset(loaders.load(outputs, role="outputs")).dataset_id
    base = _run(store, golden_id, outputs_id, "v1", baseline)
    made = {name: _run(store, golden_id, outputs_id, name, scores, (repeats or {}).get(name))
            for name, scores in candidates.items()}
    return db, store, base, made


def halving(n=20, correct=16, refused=8, seed=0):
    """The issue's scenario on every metric of the catalogue: v1 answers `correct` of n questions right; v2 replaces
    `refused` of the right answers with refusals (answer_class 0.80 -> 0.40 at the defaults). Each metric follows
    correctness with its own noise, identical in both runs where the answer is unchanged; a refusal scores as a
    refusal does (correctness-like metrics at their floor, faithfulness 1, dont_know 1)."""
    rng = np.random.default_rng(seed)
    right = np.array([True] * correct + [False] * (n - correct))
    refusal = np.zeros(n, dtype=bool)
    refusal[:refused] = True
    v1, v2 = {}, {}
    for metric in REGISTRY:
        m = lookup(metric)
        quality = np.clip(0.25 + 0.6 * right + rng.normal(0, 0.08, n), 0, 1)  # this metric's view of each answer
        if m.range.name in ("binary", "label"):
            quality = right.astype(float)
        if metric == "dont_know":
            before, after = np.zeros(n), refusal.astype(float)
        elif metric == "faithfulness":  # says nothing the context does not: "faithful" (issue 34, item 4)
            before, after = quality, np.where(refusal, 1.0, quality)
        elif m.direction < 0:
            before, after = 1 - quality, np.where(refusal, 0.0, 1 - quality)
        else:
            before, after = quality, np.where(refusal, 0.0, quality)
        v1[metric] = list(m.range.value(before))
        v2[metric] = list(m.range.value(after))
    return v1, v2
