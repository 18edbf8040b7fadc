"""The offline judge's measured agreement with people, as the app's panels and the CLI quote it.

bench/judge_quality.py writes `agreement.json` beside this file (test parts of public human-labelled
sets, 95% bootstrap CIs, the best simple baseline on the same items); nothing here computes it.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

import pandas as pd

PATH = Path(__file__).with_name("agreement.json")
COLUMNS = ["metric", "human label", "set", "n", "statistic", "offline judge [95% CI]", "best baseline",
           "baseline [95% CI]", "difference [95% CI]"]


@lru_cache(maxsize=1)
def _measured() -> dict:
    return json.loads(PATH.read_text()) if PATH.exists() else {"rows": []}


def _ci(t: list) -> str:
    est, lo, hi = t
    return "n/a" if est is None else f"{est:.3f} [{lo:.3f}, {hi:.3f}]"


def table(metric_ids: Iterable[str]) -> pd.DataFrame:
    """The measured rows of `metric_ids` (one per human label and scorer), in `COLUMNS`."""
    wanted = set(metric_ids)
    rows = [[r["scorer"], r["label"], r["set"], r["n"], r["statistic"], _ci(r["value"]), r["baseline"],
             _ci(r["baseline_value"]), _ci(r["difference"])]
            for r in _measured()["rows"] if r["metric"] in wanted]
    return pd.DataFrame(rows, columns=COLUMNS)


def source() -> str:
    m = _measured()
    return f"{m.get('source', '')}, {m.get('command', '')}, {m.get('date', '')}"
