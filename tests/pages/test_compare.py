"""The Compare page on the evaluated demo run (AppTest): it draws the tables of `queries.compare.view` (whose
numbers tests/queries/test_compare.py checks), and its clicks reach the details and Claims.

AppTest cannot click a plotly chart or a dataframe row. `click` sends the state the browser sends on
such a click (the selection JSON under the element's id) with the next run, so the page's own code
reads the event and drills down, as in the browser."""
import json

import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetState

from evaluators.queries import compare as q
from evaluators.queries import hypotheses
from evaluators.store import open_store
from tests.helpers.compare_runs import runs, small  # noqa: F401  (fixtures)
from ui.common import md_escape
from tests.helpers.screens import click, element, figure, page, points, rows, same, values

pytestmark = pytest.mark.usefixtures("navigation_pages")

A, B = "local_search", "basic_search"


def test_the_page_draws_the_views_tables_and_its_clicks_drill_down(app_at):
    at = app_at("pages/compare.py")
    assert at.title[0].value == "Compare" and at.multiselect(key="cmp_methods").value == [A, B]
    store, run_id = open_store(app_at.db), at.session_state["run_id"]
    tables = q.view(store, run_id)
    same(element(at, "dataframe", "cmp_table").value, tables["metrics"])
    summary = tables["summary"].iloc[0]
    assert any(m.value.startswith(f"**{md_escape(A)}** is significantly better than **{md_escape(B)}** on "
                                  f"{summary['significantly better']} of {summary['metrics']} metrics")
               for m in at.markdown)
    assert any("Not comparable" in c.value and "checks_pass_rate" in c.value for c in at.caption)
    # The families of tests the p (Holm) column is corrected over, and by which method (issue 34)
    assert [c.value for c in at.caption].count(hypotheses.caption(secondary=True)) == 1
    assert "Primary family: the 7 headline metrics" in hypotheses.caption(secondary=True)
    _, cells = figure(at, "cmp_heatmap")["data"]
    heat = tables["heatmap"]
    assert [c[3] for c in cells["customdata"]] == heat["n"].tolist()
    assert [c[4] for c in cells["customdata"]] == pytest.approx(heat["Δ"].tolist())
    assert sum(len(values(t["x"])) for t in figure(at, "cmp_scatter")["data"]) == len(tables["scatter"]) == 103
    same(element(at, "dataframe", "cmp_disagreements").value, tables["disagreements"])
    assert {b.label for b in at.get("download_button")} >= {"CSV", "Parquet", "JSON"}

    # A row of the table picks the metric shown per question.
    position = tables["metrics"]["metric"].tolist().index("rouge_l")
    click(at, element(at, "dataframe", "cmp_table"), rows(position))
    assert at.selectbox(key="cmp_metric").value == "rouge_l"
    same(element(at, "dataframe", "cmp_disagreements").value, q.view(store, run_id, metric="rouge_l")["disagreements"])

    # A heatmap cell lists its questions; a row of that list opens the question on Claims.
    _, cells = figure(at, "cmp_heatmap")["data"]
    cell = next(c for c in cells["customdata"] if c[0] == "Fact Retrieval" and c[1] == "rouge_l")
    click(at, element(at, "plotly_chart", "cmp_heatmap"), points(cell))
    listed = element(at, "dataframe", "cmp_cell_questions").value
    same(listed, q.view(store, run_id, cell_type="Fact Retrieval", cell_metric="rouge_l")["cell_questions"])
    assert any(t.value.startswith("Fact Retrieval · rouge_l") for t in at.text)
    click(at, element(at, "dataframe", "cmp_cell_questions"), rows(0))
    assert page(at) == "claims.py" and at.session_state["question_id"] == listed["question_id"].iloc[0]


def test_a_comparison_with_another_run_says_what_was_left_out_and_opens_each_side_in_its_run(runs, app_on):  # noqa: F811
    store, first, _, edited = runs
    at = app_on(store.path, "pages/compare.py", first)
    other = at.selectbox(key="cmp_other_run")
    assert other.options[0] == "no: methods of this run" and len(other.options) == 3  # same golden set first
    other.set_value(edited).run()
    assert at.multiselect(key=f"cmp_methods_{edited}").value == ["m1", f"{edited}:m1"]
    tables = q.view(store, first, methods=["m1", f"{edited}:m1"], baseline=f"{edited}:m1")
    same(element(at, "dataframe", "cmp_table").value, tables["metrics"])
    assert any(w.value.startswith("1 question is left out of m1 vs") for w in at.warning)
    same(next(d.value for d in at.dataframe if "baseline's reference" in d.value), tables["left_out"])
    # A disagreement clicked: one button per side; the other run's opens Claims on that run.
    gaps = element(at, "dataframe", "cmp_disagreements")
    click(at, gaps, rows(0))
    labels = [b.label for b in at.button if b.key and b.key.startswith("cmp_open_")]
    assert labels == [md_escape("m1"), md_escape(f"{edited}:m1")]
    states = at._tree.get_widget_states()
    states.widgets.append(WidgetState(id=gaps.proto.id, string_value=json.dumps({"selection": rows(0)})))
    states.widgets.append(WidgetState(id=at.button(key=f"cmp_open_{edited}:m1").proto.id, trigger_value=True))
    at._run(states)
    assert page(at) == "claims.py" and at.session_state["run_id"] == edited
    assert at.session_state["question_id"] == tables["disagreements"]["question_id"].iloc[0]
