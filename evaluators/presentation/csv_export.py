"""CSV that a spreadsheet opens as text: every CSV RAGScope writes (the CLI's export and `view --csv`, the
screens' downloads) goes through `to_csv`.

A spreadsheet runs a cell that starts with = + - @ (or a tab or carriage return before one) as a formula
(CSV injection). The loaders refuse such cells on input, but an export also holds text nobody loaded:
claims, reasons and explanations an LLM judge wrote, and answers from older databases. So each text cell
and column name that starts with one of these characters gets a leading apostrophe, which a spreadsheet
shows as text and hides (OWASP's advice). Numbers are left alone: -0.5 in a numeric column is a number.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def defused(value):
    """`value` with an apostrophe in front when it is text a spreadsheet would run as a formula."""
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_START) else value


def safe_for_spreadsheets(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of `frame` whose text cells and column names cannot start a formula."""
    out = frame.copy()
    for i, dtype in enumerate(out.dtypes):
        if pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype):
            out.isetitem(i, out.iloc[:, i].map(defused))
    out.columns = [defused(c) for c in out.columns]
    return out


def to_csv(frame: pd.DataFrame, path: str | Path | None = None) -> str | None:
    """`frame` as CSV without its index (the text, or written to `path`), safe to open in a spreadsheet."""
    return safe_for_spreadsheets(frame).to_csv(path, index=False)
