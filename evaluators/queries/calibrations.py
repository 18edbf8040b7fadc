"""A judge's latest calibration (`judge calibrate`, runs/calibrate.py): how far it agrees with people, where the
judge is shown (Evaluate's judge panel, Overview's headline, the report).

    latest_calibration(cursor, judge, judge_model) -> Calibration | None
    Calibration.headline   "gpt-5-mini agrees with people: correctness AUROC 0.91 [0.87, 0.94] on 200 labelled
                            items; the offline judge 0.78"
    Calibration.table()    one row per label, set and part: judge [CI], offline judge [CI], token F1 [CI], n
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime

import duckdb
import pandas as pd

from evaluators.records.run_status import RunStatus
from evaluators.store import CALIBRATION_RESULT_COLUMNS

OFFLINE = "offline"


@dataclass(frozen=True)
class Calibration:
    """One stored calibration of a judge and its rows (dicts of CALIBRATION_RESULT_COLUMNS, in stored order; a
    figure that could not be computed is NaN)."""

    calibration_id: str
    created_at: datetime
    judge: str
    judge_model: str | None
    judge_config: dict
    n_items: int
    seed: int | None
    cost_usd: float | None
    status: str
    note: str
    rows: tuple[dict, ...]

    @property
    def who(self) -> str:
        return "The offline judge" if self.judge == OFFLINE else (self.judge_model or self.judge)  # starts a sentence

    @property
    def headline(self) -> str:
        return headline(self)

    def table(self) -> pd.DataFrame:
        return table(self)


def latest_calibration(cursor: duckdb.DuckDBPyConnection, judge: str, judge_model: str | None) -> Calibration | None:
    """The latest calibration of `judge` (a judge's name: "openai", "offline") with `judge_model` (None for the offline
    judge), or None when it was never calibrated (or the database predates calibrations)."""
    try:
        found = cursor.execute(
            "SELECT calibration_id, created_at, judge, judge_model, judge_config, n_items, seed, cost_usd, status, note "
            "FROM calibrations WHERE judge = ? AND judge_model IS NOT DISTINCT FROM ? "
            "ORDER BY created_at DESC, calibration_id DESC LIMIT 1", [judge, judge_model]).fetchall()
    except duckdb.CatalogException:  # a read-only database of an earlier schema: no calibration table yet
        return None
    if not found:
        return None
    cid, created, judge_, model, config, n_items, seed, cost, status, note = found[0]
    result = cursor.execute(f"SELECT {', '.join(CALIBRATION_RESULT_COLUMNS)} FROM calibration_results "
                            "WHERE calibration_id = ? ORDER BY rowid", [cid]).fetchall()
    rows = tuple({c: (math.nan if v is None and c not in ("label_text", "sets", "part") else v)
                  for c, v in zip(CALIBRATION_RESULT_COLUMNS, r)} for r in result)
    return Calibration(cid, created, judge_, model, json.loads(config or "{}"), n_items, seed, cost, status,
                       note or "", rows)


def _number(value: float) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.2f}"


def figure(value: float, lo: float, hi: float) -> str:
    """"0.91 [0.87, 0.94]", "n/a" when it could not be computed."""
    if value is None or math.isnan(value):
        return "n/a"
    return f"{value:.2f} [{_number(lo)}, {_number(hi)}]"


def headline(c: Calibration) -> str:
    """One line: the first label's figure with its CI (the first row with a value: correctness before faithfulness
    before relevance), on how many items, beside the offline judge's; what was left out or stopped."""
    lead = next((r for r in c.rows if not math.isnan(r["value"])), None)
    stopped = f" (stopped: {c.status.replace('_', ' ')})" if c.status != RunStatus.FINISHED else ""
    if lead is None:
        return f"{c.who} could not be measured against people{stopped}: {c.note or 'no figure'}"
    text = (f"{c.who} agrees with people: {lead['label']} {lead['statistic']} "
            f"{figure(lead['value'], lead['lo'], lead['hi'])} on {lead['n']} labelled items")
    if c.judge != OFFLINE:
        text += f"; the offline judge {_number(lead['offline_value'])}"
    if lead["n_failed"]:
        text += f" ({lead['n_failed']} not judged, left out)"
    return text + stopped


def table(c: Calibration) -> pd.DataFrame:
    """The screens' and the CLI's table: label, part, statistic, judge [CI], offline judge [CI], token F1 [CI], n."""
    return pd.DataFrame([{
        "label": r["label"], "set": r["sets"], "part": r["part"], "statistic": r["statistic"],
        "judge": figure(r["value"], r["lo"], r["hi"]),
        "offline judge": figure(r["offline_value"], r["offline_lo"], r["offline_hi"]),
        "token F1": figure(r["token_f1_value"], r["token_f1_lo"], r["token_f1_hi"]),
        "n": f"{r['n']} of {r['n'] + r['n_failed']}" if r["n_failed"] else str(r["n"]),
        "people said": r["label_text"]} for r in c.rows],
        columns=["label", "set", "part", "statistic", "judge", "offline judge", "token F1", "n", "people said"])
