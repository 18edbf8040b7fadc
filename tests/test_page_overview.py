"""The Overview page on the evaluated demo run (AppTest): it draws the tables of `queries.overview.view` (whose
numbers tests/test_queries_overview.py checks), for the chosen scale and chart metric."""
import base64
import json

import numpy as np
import pandas as pd
import pytest

from evaluators.queries import PERCENT
from evaluators.queries import overview as q
from evaluators.store import open_store

pytestmark = pytest.mark.usefixtures("navigation_pages")


def values(array) -> list:
    """A plotly JSON array: a list, or numpy data as {"dtype", "bdata": base64} (plotly >= 6)."""
    if isinstance(array, dict):
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"]).tolist()
    return list(array)


def widget(at, kind: str, label: str):
    return next(w for w in at.get(kind) if w.label == label)


def table(at, column: str) -> pd.DataFrame:
    """The dataframe shown with this column."""
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_the_page_draws_the_views_tables(app_at):
    at = app_at()
    assert at.title[0].value == "Overview"
    store, run_id = open_store(app_at.db), at.session_state["run_id"]
    tables = q.view(store, run_id)
    pd.testing.assert_frame_equal(at.dataframe[0].value, tables["metrics"], check_dtype=False)
    assert table(at, "% pass").to_dict() == tables["verdict"].to_dict()
    pd.testing.assert_frame_equal(table(at, "n_scored"), tables["by_question_type"], check_dtype=False)
    assert widget(at, "selectbox", "Metric").value == "judge_overall"  # the chart's metric

    widget(at, "radio", "Show scores in").set_value(PERCENT)
    widget(at, "selectbox", "Metric").set_value("rouge_l")
    at.run()
    assert not at.exception, at.exception
    tables = q.view(store, run_id, scale=PERCENT, metric="rouge_l")
    pd.testing.assert_frame_equal(at.dataframe[0].value, tables["metrics"], check_dtype=False)
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    bars = tables["by_question_type_chart"]
    assert sorted(sum((values(t["y"]) for t in chart["data"]), [])) == pytest.approx(sorted(bars["mean"]))
    assert chart["layout"]["yaxis"]["title"]["text"] == f"rouge_l ({PERCENT})"
