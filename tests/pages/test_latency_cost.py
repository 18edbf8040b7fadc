"""Overview's and Compare's "Latency and cost" section (AppTest): drawn from the view's tables for a run whose
answers record latency and cost, absent for one whose answers do not."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from evaluators.queries import compare, overview
from evaluators.store import open_store
from tests.helpers.usage_run import usage_run

pytestmark = pytest.mark.usefixtures("navigation_pages")
SECTION = "Latency and cost of the RAG system"


def _subheaders(at) -> list[str]:
    return [s.value for s in at.subheader]


def _table(at, column: str) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if column in d.value.columns)


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
