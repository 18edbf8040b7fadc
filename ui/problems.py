"""The problems of input files on a screen (Data's uploads, Evaluate's criteria files): each with its file, row and
field and its whole message, as the CLI prints them."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from evaluators.records import Problem
from ui.common import downloads, md_escape

PROBLEMS_SHOWN = 100  # problems listed in full on the screen; every one of them is in the download


def problem_frame(problems: list[Problem]) -> pd.DataFrame:
    return pd.DataFrame({"file": [p.file for p in problems],
                         "row": pd.array([p.row for p in problems], dtype="Int64"),
                         "field": [p.field or "" for p in problems],
                         "message": [p.message for p in problems]})


def show_problems(problems: list[Problem], key: str) -> None:
    """Every problem with its file, row and field and its whole message, wrapped, as the CLI prints it: st.table,
    whose rows grow with their text (st.dataframe's canvas cut long messages at the column's edge). st.table reads
    its cells as markdown, so each cell is escaped: a message quoting the file's text shows it as written."""
    frame = problem_frame(problems)
    shown = frame.head(PROBLEMS_SHOWN).astype({"row": object})
    shown["row"] = ["" if pd.isna(r) else str(r) for r in shown["row"]]
    st.table(shown.map(md_escape), hide_index=True)
    if len(frame) > PROBLEMS_SHOWN:
        st.caption(f"The first {PROBLEMS_SHOWN} of {len(frame):,} problems; download them all:")
        downloads(frame, "problems", key)
