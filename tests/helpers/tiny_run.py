"""A four-question run and the human-ratings file that goes with it."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from evaluators import loaders
from evaluators.metrics.registry import label_metrics
from evaluators.store import open_store


QUESTIONS = ("q1", "q2", "q3", "q4")


METHODS = ("local", "basic")


HEADER = "question_id,method,annotator,faithfulness,faithfulness_reason,correctness\n"


GOOD_ROWS = [
    "q1,local,ann,4,all supported,correct",
    "q1,local,bob,3,,correct",
    "q2,basic,ann,1,invents a date,wrong",
]


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def tiny_run(db: Path, tmp_path: Path, scores: list[tuple] = (), metrics=("faithfulness",)) -> str:
    """A run over 4 questions x 2 methods whose cells are written directly (no judge): `scores` are
    (question_id, method, metric, value, status, detail). The store stays open."""
    golden = [{"question_id": q, "question": f"Question {q}?", "reference": f"Answer {q}."} for q in QUESTIONS]
    outputs = [{"question_id": q, "method": m, "answer": f"{m} answer {q}", "contexts": ["a chunk"]}
               for q in QUESTIONS for m in METHODS]
    store = open_store(db)
    g = store.save_dataset(loaders.load(write(tmp_path / "golden.jsonl", "\n".join(map(json.dumps, golden))),
                                        role="golden"))
    o = store.save_dataset(loaders.load(write(tmp_path / "outputs.jsonl", "\n".join(map(json.dumps, outputs))),
                                        role="outputs"))
    run_id = store.create_run(name="tiny", golden_dataset_id=g.dataset_id, outputs_dataset_ids=[o.dataset_id],
                              judge="offline", judge_model=None, metrics=list(metrics), config={}, n_samples=8)
    if scores:
        store.write_scores(pd.DataFrame(
            [{"run_id": run_id, "question_id": q, "method": m, "metric": metric, "value": value,
              "norm": value, "status": status, "judge": "offline", "detail": detail,
              # a label metric's label, as the engine stores it beside the detail that starts with it
              "label": detail.split(" (")[0] if metric in label_metrics() and status == "ok" else None}
             for q, m, metric, value, status, detail in scores]))
    store.finish_run(run_id, "finished")
    return run_id
