"""A run whose outputs file carries the RAG system's own latency, tokens and cost (issue 37), with faithfulness
cells written directly (no judge): local_search answers best at the highest cost, basic_search cheapest and second,
llm_with_context dearer than basic_search and worse, so the Pareto front is local_search and basic_search."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from evaluators import loaders
from evaluators.store import open_store

N = 10
# method -> (faithfulness of question i, latency ms of question i, cost USD per answer)
PLAN = {
    "local_search": (lambda i: 0.9 if i % 5 else 0.7, lambda i: 900.0 + 10 * i, 0.004),
    "basic_search": (lambda i: 0.7 if i % 5 else 0.5, lambda i: 300.0 + 5 * i, 0.001),
    "llm_with_context": (lambda i: 0.4 if i % 5 else 0.3, lambda i: 500.0 + 20 * i, 0.002),
}


def usage_run(db: Path, tmp_path: Path, *, usage: bool = True, metrics=("faithfulness",), spend: float = 1.0,
              without: tuple[str, ...] = ()) -> str:
    """The run (finished; the store stays open). usage False: the same answers with no usage columns; `without`:
    the usage columns left out. `metrics`: headline metrics scored, each with the faithfulness plan's values (the
    second and later shifted down by 0.1). spend: the plan's latencies and costs times this (another run of the
    same methods, e.g. on slower hardware)."""
    golden = pd.DataFrame({"question_id": [f"q{i}" for i in range(N)], "question": [f"Question {i}?" for i in range(N)],
                           "reference": [f"Answer {i}." for i in range(N)]})
    rows = [{"question_id": f"q{i}", "method": m, "answer": f"{m} says {i}.", "contexts": '["a chunk"]',
             "latency_ms": spend * latency(i), "input_tokens": 1000 + i, "output_tokens": 50,
             "cost_usd": round(spend * cost * (1 + i / 50), 6)}
            for m, (_, latency, cost) in PLAN.items() for i in range(N)]
    outputs = pd.DataFrame(rows)
    if not usage:
        outputs = outputs.drop(columns=["latency_ms", "input_tokens", "output_tokens", "cost_usd"])
    outputs = outputs.drop(columns=list(without))
    golden.to_csv(tmp_path / "golden.csv", index=False)
    outputs.to_csv(tmp_path / f"outputs-{usage}.csv", index=False)
    store = open_store(db)
    g = store.save_dataset(loaders.load(tmp_path / "golden.csv", role="golden"))
    o = store.save_dataset(loaders.load(tmp_path / f"outputs-{usage}.csv", role="outputs"))
    run_id = store.create_run(name="usage" if usage else "no usage", golden_dataset_id=g.dataset_id,
                              outputs_dataset_ids=[o.dataset_id], judge="offline", judge_model=None,
                              metrics=list(metrics), config={}, n_samples=N * len(PLAN))
    store.write_scores(pd.DataFrame(
        [{"run_id": run_id, "question_id": f"q{i}", "method": m, "metric": metric, "value": quality(i) - 0.1 * k,
          "norm": quality(i) - 0.1 * k, "status": "ok", "judge": "offline", "detail": None, "label": None}
         for k, metric in enumerate(metrics) for m, (quality, _, _) in PLAN.items() for i in range(N)]))
    store.finish_run(run_id, "finished")
    return run_id
