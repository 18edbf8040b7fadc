"""Overview's and Compare's "Latency and cost" section (AppTest): drawn from the view's tables for a run whose
answers record latency and cost, absent for one whose answers do not."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from evaluators.presentation.figures import GREY
from evaluators.queries import compare, overview, system
from evaluators.store import open_store
from tests.helpers.screens import values
from tests.helpers.usage_run import usage_run

pytestmark = pytest.mark.usefixtures("navigation_pages")
SECTION = "Latency and cost of the RAG system"


def _subheaders(at) -> list[str]:
    return [s.value for s in at.subheader]


def _table(at, column: str) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if column in d.value.columns)


def _chart(at) -> dict:
    """The quality-against-cost chart's plotly spec (the chart with a Pareto front)."""
    return next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
                if "Pareto front" in {t.get("name") for t in json.loads(c.proto.spec)["data"]})


def _markers(chart: dict) -> list[tuple]:
    return sorted((t["name"], t["x"][0], t["y"][0]) for t in chart["data"] if t.get("mode") == "markers")


@pytest.mark.parametrize("page, view", [("pages/overview.py", overview.view), ("pages/compare.py", compare.view)])
def test_the_section_shows_the_views_numbers_and_front_for_a_run_with_latencies(app_on, tmp_path, page, view):
    db = tmp_path / "usage.duckdb"
    run_id = usage_run(db, tmp_path)
    at = app_on(db, page, run_id)
    assert SECTION in _subheaders(at)
    tables = view(open_store(db), run_id)
    shown = _table(at, "p95 latency ms")
    pd.testing.assert_frame_equal(shown.reset_index(drop=True), tables["latency_cost"], check_dtype=False)
    chart = next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
                 if "Pareto front" in {t.get("name") for t in json.loads(c.proto.spec)["data"]})
    drawn = sorted((t["name"], t["x"][0], t["y"][0]) for t in chart["data"] if t.get("mode") == "markers")
    points = tables["quality_cost"]
    assert drawn == sorted(zip(points["method"], points["x"], points["quality"]))
    assert sorted(points.loc[points["on front"], "method"]) == ["basic_search", "local_search"]
    said = [m.value.replace("\\", "") for m in at.markdown if m.value.startswith("- ")]
    assert [f"- {s}." for s in tables["pareto"]["sentence"]] == said[-len(tables["pareto"]):]


@pytest.mark.parametrize("page", ["pages/overview.py", "pages/compare.py"])
def test_the_section_is_absent_for_a_run_without_latencies(app_on, tmp_path, page):
    db = tmp_path / "plain.duckdb"
    run_id = usage_run(db, tmp_path, usage=False)
    at = app_on(db, page, run_id)
    assert not at.exception, at.exception
    assert SECTION not in _subheaders(at)
    assert not any("p95 latency ms" in d.value.columns for d in at.dataframe)


def test_picking_another_quality_metric_redraws_the_chart(app_on, tmp_path):
    db = tmp_path / "usage.duckdb"
    run_id = usage_run(db, tmp_path, metrics=("faithfulness", "context_recall"))
    at = app_on(db, "pages/overview.py", run_id)
    next(s for s in at.selectbox if s.label == "Quality axis").set_value("context_recall")
    at.run()
    assert not at.exception, at.exception
    chart = next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
                 if "Pareto front" in {t.get("name") for t in json.loads(c.proto.spec)["data"]})
    assert chart["layout"]["yaxis"]["title"]["text"] == "context_recall (mean, 95% CI)"


def test_compare_with_another_run_shows_its_side_from_its_own_answers(app_on, tmp_path):
    db = tmp_path / "usage.duckdb"
    run_id = usage_run(db, tmp_path)
    other = usage_run(db, tmp_path, spend=2.0)  # the same methods, twice as slow and dear
    at = app_on(db, "pages/compare.py", run_id)
    at.selectbox(key="cmp_other_run").set_value(other)
    at.run()
    assert not at.exception, at.exception
    theirs = f"{other}:local_search"
    assert at.multiselect(key=f"cmp_methods_{other}").value == ["local_search", theirs]
    tables = compare.view(open_store(db), run_id, methods=["local_search", theirs], baseline=theirs)
    shown = _table(at, "p95 latency ms").reset_index(drop=True)
    pd.testing.assert_frame_equal(shown, tables["latency_cost"], check_dtype=False)
    assert shown["method"].tolist() == ["local_search", theirs]
    mine, dear = shown.set_index("method").loc[["local_search", theirs], "median latency ms"]
    assert dear == 2 * mine  # the other run's answers, not this run's again
    chart = _chart(at)
    points = tables["quality_cost"]
    assert _markers(chart) == sorted(zip(points["method"], points["x"], points["quality"]))
    colours = [t["marker"]["color"] for t in chart["data"] if t.get("mode") == "markers"]
    assert len(set(colours)) == len(colours) and GREY not in colours  # the other run's side has a colour of its own


@pytest.mark.parametrize("page, view", [("pages/overview.py", overview.view), ("pages/compare.py", compare.view)])
def test_the_cost_axis_is_picked_and_the_front_drawn_on_it(app_on, tmp_path, page, view):
    db = tmp_path / "usage.duckdb"
    run_id = usage_run(db, tmp_path)
    at = app_on(db, page, run_id)
    axis = at.selectbox(key=f"{'overview' if 'overview' in page else 'cmp'}-cost-axis-{run_id}")
    assert axis.label == "Cost axis" and axis.value == "cost"
    assert axis.options == [system.COST, system.LATENCY, system.P95]
    assert _chart(at)["layout"]["xaxis"]["title"]["text"] == system.COST  # the default, unchanged
    axis.set_value("p95_latency")
    at.run()
    assert not at.exception, at.exception
    chart = _chart(at)
    assert chart["layout"]["xaxis"]["title"]["text"] == system.P95
    tables = view(open_store(db), run_id, cost_axis="p95_latency")
    points = tables["quality_cost"]
    assert _markers(chart) == sorted(zip(points["method"], points["x"], points["quality"]))
    assert points["x"].tolist() == tables["latency_cost"].set_index("method").loc[points["method"],
                                                                                  "p95 latency ms"].tolist()
    front = next(t for t in chart["data"] if t.get("name") == "Pareto front")
    assert values(front["x"]) == sorted(points.loc[points["on front"], "x"])
    said = [m.value.replace("\\", "") for m in at.markdown if m.value.startswith("- ")]
    assert [f"- {s}." for s in tables["pareto"]["sentence"]] == said[-len(tables["pareto"]):]
    assert "p95 latency against faithfulness" in said[-len(tables["pareto"])]


def test_only_the_axes_the_answers_record_are_offered(app_on, tmp_path):
    db = tmp_path / "latency.duckdb"
    run_id = usage_run(db, tmp_path, without=("cost_usd",))
    at = app_on(db, "pages/overview.py", run_id)
    axis = at.selectbox(key=f"overview-cost-axis-{run_id}")
    assert axis.options == [system.LATENCY, system.P95] and axis.value == "median_latency"
    assert _chart(at)["layout"]["xaxis"]["title"]["text"] == system.LATENCY


def test_an_axis_the_new_sides_do_not_record_falls_back_to_the_default_and_says_so(app_on, tmp_path):
    db = tmp_path / "usage.duckdb"
    run_id = usage_run(db, tmp_path)
    other = usage_run(db, tmp_path, without=("latency_ms",))  # its answers record cost and tokens only
    at = app_on(db, "pages/compare.py", run_id)
    at.selectbox(key=f"cmp-cost-axis-{run_id}").set_value("p95_latency")
    at.run()
    at.selectbox(key="cmp_other_run").set_value(other)
    at.run()
    theirs = [f"{other}:local_search", f"{other}:basic_search"]
    at.multiselect(key=f"cmp_methods_{other}").set_value(theirs)
    at.run()
    assert not at.exception, at.exception
    assert _chart(at)["layout"]["xaxis"]["title"]["text"] == system.COST
    said = [m.value.replace("\\", "") for m in at.markdown if m.value.startswith("- ")]
    assert "- p95 latency is not recorded for these methods: the chart's x is the mean cost per answer (USD)." in said
    axis = at.selectbox(key=f"cmp-cost-axis-{run_id}")
    assert axis.options == [system.COST] and axis.value == "cost"  # the pick is the default again
    at.run()
    assert not any("not recorded for these methods" in m.value for m in at.markdown)
