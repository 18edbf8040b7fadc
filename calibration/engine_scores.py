"""Human-labelled items scored through the real engine: one DuckDB file, `engine.execute_run`.

bench/judge_quality.py sets these scores beside the human labels. Nothing here re-implements a
metric: items become golden items and RAG outputs, are stored, evaluated by `engine.execute_run`
with the chosen judge, and read back from the `scores`, `claims` and `chunk_verdicts` tables.
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from calibration.sets import Item
from evaluators.runs import engine, lifecycle
from evaluators.judges import Judge
from evaluators.loaders import Dataset
from evaluators.records import Chunk, GoldenItem, RagOutput
from evaluators.store import Store

METHOD = "answer"  # every item is one (question, method) sample of this one method


@dataclass(frozen=True)
class Scored:
    """What the engine stored for a list of items, keyed by item_id."""

    scores: pd.DataFrame  # item_id x metric: value (NULL where the cell is not ok)
    labels: pd.DataFrame  # item_id x metric: the label of label metrics (verdict, answer_class, ...)
    statuses: pd.DataFrame  # item_id x metric: status
    claims: pd.DataFrame  # item_id, source, claim_idx, text, verdict
    chunks: pd.DataFrame  # item_id, chunk_idx, relevant, relevance_score
    details: pd.DataFrame | None = None  # item_id x metric: the cell's detail (why a cell is not ok)
    missing: tuple[str, ...] = ()  # metric ids asked for that the engine did not have (an earlier release)


def _dataset(name: str, golden=(), outputs=()) -> Dataset:
    payload = repr((name, golden, outputs)).encode()
    return Dataset(source=name, format="jsonl", content_hash=hashlib.sha256(payload).hexdigest(),
                   golden=tuple(golden), outputs=tuple(outputs), columns={})


def score_items(items: Sequence[Item], metrics: Sequence[str], db: Path, *, judge: Judge | None = None,
                name: str = "judge quality") -> Scored:
    """Evaluate `items` with `metrics` through `engine.execute_run` in the DuckDB file `db` (judge: the offline one
    by default)."""
    golden = [GoldenItem(i.item_id, i.question, i.reference) for i in items]
    outputs = [RagOutput(i.item_id, METHOD, i.answer, tuple(Chunk(str(k + 1), t) for k, t in enumerate(i.contexts)))
               for i in items]
    store = Store(db)
    try:
        golden_id = store.save_dataset(_dataset(name + " golden", golden=golden)).dataset_id
        outputs_id = store.save_dataset(_dataset(name + " outputs", outputs=outputs)).dataset_id
        run_id = lifecycle.start_stored(store, golden_id, [outputs_id],
                                        lifecycle.RunSpec(judge, metrics=metrics, name=name))
        engine.execute_run(store, run_id)
        cur = store.cursor()
        cells = cur.execute("SELECT question_id AS item_id, metric, value, status, label, detail "
                            "FROM scores WHERE run_id = ?", [run_id]).df()
        claims = cur.execute("SELECT question_id AS item_id, source, claim_idx, text, verdict FROM claims "
                             "WHERE run_id = ? ORDER BY question_id, source, claim_idx", [run_id]).df()
        chunks = cur.execute("SELECT question_id AS item_id, chunk_idx, relevant, relevance_score FROM chunk_verdicts "
                             "WHERE run_id = ? ORDER BY question_id, chunk_idx", [run_id]).df()
    finally:
        store.close()
    return scored_from_cells(cells, claims, chunks)


def scored_from_cells(cells: pd.DataFrame, claims: pd.DataFrame, chunks: pd.DataFrame,
                      missing: Sequence[str] = ()) -> Scored:
    """`Scored` from the stored rows: cells (item_id, metric, value, status, label, detail), claims and chunks.
    Shared with bench/previous_release.py, which reads the same rows from an earlier release's engine."""
    columns = ("value", "status", "label", "detail")
    cells = cells.reindex(columns=["item_id", "metric", *columns])
    wide = {col: cells.pivot(index="item_id", columns="metric", values=col) for col in columns}
    return Scored(wide["value"].astype(float), wide["label"], wide["status"], claims, chunks, wide["detail"],
                  tuple(missing))
