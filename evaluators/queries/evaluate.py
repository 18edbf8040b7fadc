"""Evaluate screen queries: a stored run's cells, in all and per metric (what a resume or a re-run of
failed cells would compute), and the live progress of a run being computed in the app."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from evaluators.metrics.registry import lookup
from evaluators.queries.datasets import run_cells
from evaluators.store import Store

if TYPE_CHECKING:
    from evaluators.runs.runner import Snapshot

CELL_COLUMNS = {"n_ok": "ok", "n_not_applicable": "not applicable", "n_failed": "failed", "n_total": "samples",
                "n_missing": "not computed"}


def view(store: Store, run_id: str) -> dict[str, pd.DataFrame]:
    """The Evaluate screen's tables of a run, as shown: its cells in all (scored, not applicable, failed:
    what a re-run recomputes, not computed yet: what a resume computes) and per metric, in the run's order."""
    cells = run_cells(store, run_id)
    totals = {"Scored": "n_ok", "Not applicable": "n_not_applicable", "Failed": "n_failed",
              "Not computed yet": "n_missing"}
    return {"totals": pd.DataFrame([{shown: int(cells[column].sum()) for shown, column in totals.items()}]),
            "cells": cells.rename(columns=CELL_COLUMNS)}


def progress(snap: Snapshot) -> pd.DataFrame:
    """Per metric of a run being computed: cells done of all, the pace and the time left (the app's worker
    knows them; the store does not)."""
    rows = []
    for metric_id, state in snap.metrics.items():
        pace = state.seconds_per_cell
        rows.append({"metric": metric_id, "family": lookup(metric_id).family,
                     "done": state.done, "total": state.total,
                     "progress": state.done / state.total if state.total else 1.0,
                     "ms per cell": round(1000 * pace, 2) if pace is not None else None,
                     "time left": "done" if state.done >= state.total
                     else seconds_text(snap.metric_seconds_left(metric_id)) or "not timed yet"})
    return pd.DataFrame(rows)


def seconds_text(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 1:
        return "<1 s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds // 60:.0f} min {seconds % 60:02.0f} s"
    return f"{seconds // 3600:.0f} h {seconds % 3600 // 60:02.0f} min"
