"""The Overview page on the evaluated demo run (AppTest): it draws the tables of `queries.overview.view` (whose
numbers tests/test_queries_overview.py checks), for the chosen scale and chart metric."""
import base64
import json

import numpy as np
import pandas as pd
import pytest

from evaluators.queries import PERCENT, compare
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
    pd.testing.assert_frame_equal(table(at, "family"), tables["metrics"], check_dtype=False)
    assert table(at, "% pass").to_dict() == tables["verdict"].to_dict()
    pd.testing.assert_frame_equal(table(at, "n_scored"), tables["by_question_type"], check_dtype=False)
    assert widget(at, "selectbox", "Metric").value == "judge_overall"  # the chart's metric

    widget(at, "radio", "Show scores in").set_value(PERCENT)
    widget(at, "selectbox", "Metric").set_value("rouge_l")
    at.run()
    assert not at.exception, at.exception
    tables = q.view(store, run_id, scale=PERCENT, metric="rouge_l")
    pd.testing.assert_frame_equal(table(at, "family"), tables["metrics"], check_dtype=False)
    chart = json.loads(at.get("plotly_chart")[1].proto.spec)  # the first is the headline's
    bars = tables["by_question_type_chart"]
    assert sorted(sum((values(t["y"]) for t in chart["data"]), [])) == pytest.approx(sorted(bars["mean"]))
    assert chart["layout"]["yaxis"]["title"]["text"] == f"rouge_l ({PERCENT})"


def test_the_headline_draws_the_views_scores_and_says_compares_numbers(app_at):
    """The headline chart holds the view's scores; its sentences are the view's, and each difference it reports
    has the paired difference, interval and n that Compare shows for the same methods and baseline."""
    at = app_at()
    store, run_id = open_store(app_at.db), at.session_state["run_id"]
    tables = q.view(store, run_id)
    headline = tables["headline"]
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    drawn = {(t["name"], x): y for t in chart["data"] for x, y in zip(values(t["x"]), values(t["y"]))}
    assert drawn == pytest.approx({(r.method, r.item): r.value for r in headline.itertuples()})
    shown = [m.value for m in at.markdown if m.value.startswith("- ")]
    findings = tables["findings"]
    assert len(shown) == len(findings) and all(s.replace("\\", "") == "- " + f for s, f in
                                               zip(shown, findings["sentence"]))
    lead = findings["sentence"].iloc[0]
    leader = lead.split(" leads on ")[0]
    assert leader in set(headline["method"]) and lead.endswith("each other method is compared with it.")
    others = sorted(set(headline["method"]) - {leader})
    rows = compare.view(store, run_id, methods=[leader, *others], baseline=leader)["metrics"]
    for f in findings.dropna(subset=["metric"]).itertuples():
        row = rows[(rows["method"] == (f.worse if f.better == leader else f.better)) & (rows["metric"] == f.metric)]
        factor = 100 if f.unit == "%" else 1
        sign = 1 if f.better != leader else -1  # Compare reads each difference from the other method's side
        assert f.n == row["n"].iloc[0]
        assert sign * f.difference == pytest.approx(factor * row[f"Δ vs {leader}"].iloc[0], abs=factor * 5e-4)
    judge = [i.value for i in at.info if "offline judge" in i.value]
    assert judge and tables["judge"]["agreement measured"].iloc[0]
    assert any(d.value.equals(tables["agreement"]) for d in at.dataframe)

    widget(at, "selectbox", "Each method compared with").set_value(others[0])  # a chosen baseline
    at.run()
    assert not at.exception, at.exception
    findings = q.view(store, run_id, baseline=others[0])["findings"]
    shown = [m.value.replace("\\", "") for m in at.markdown if m.value.startswith("- ")]
    assert shown == ["- " + f for f in findings["sentence"]]
    assert shown[0] == f"- Each method is compared with {others[0]}."
