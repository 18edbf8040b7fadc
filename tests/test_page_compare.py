"""The Compare screen on the evaluated demo run (AppTest): the per-metric table against an independent
computation from the database, the selections, and every drill-down to Claims.

AppTest cannot click a plotly chart or a dataframe row. `click` sends the state the browser sends on
such a click (the selection JSON under the element's id) with the next run, so the page's own code
reads the event and drills down, as in the browser."""
import base64
import html
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from streamlit.proto.WidgetStates_pb2 import WidgetState

from evaluators.store import open_store

pytestmark = pytest.mark.usefixtures("navigation_pages")

A, B = "local_search", "basic_search"


def element(at, kind: str, key: str):
    found = [e for e in at.get(kind) if e.key == key]
    assert found, f"no {kind} with key {key!r}"
    return found[0]


def click(at, target, selection: dict) -> None:
    """Run the app with `selection` as the clicked chart's or table's event."""
    states = at._tree.get_widget_states()
    states.widgets.append(WidgetState(id=target.proto.id, string_value=json.dumps({"selection": selection})))
    at._run(states)
    assert not at.exception, at.exception


def points(*customdata) -> dict:
    return {"points": [{"curve_number": 0, "point_index": i, "customdata": list(c)} for i, c in enumerate(customdata)],
            "point_indices": list(range(len(customdata))), "box": [], "lasso": []}


def rows(*positions) -> dict:
    return {"rows": list(positions), "columns": [], "cells": []}


def page(at) -> str:
    return Path(at._registered_pages[at._finished_page_script_hash]["script_path"]).name


def figure(at, key: str) -> dict:
    return json.loads(element(at, "plotly_chart", key).proto.spec)


def values(array) -> list:
    """A plotly JSON array: a list, or numpy data as {"dtype", "bdata": base64} (plotly >= 6)."""
    if isinstance(array, dict):
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"]).tolist()
    return list(array)


def pairs(db, metric: str, question_type: str | None = None) -> pd.DataFrame:
    """Both methods' `ok` values of one metric, straight from the scores table (the independent side)."""
    type_filter = "AND g.question_type = $type" if question_type else ""
    return open_store(db).cursor().execute(
        f"""
        SELECT s.question_id, any_value(s.value) FILTER (s.method = $a) AS a,
               any_value(s.value) FILTER (s.method = $b) AS b
        FROM scores s JOIN runs r USING (run_id)
        JOIN golden_items g ON g.dataset_id = r.golden_dataset_id AND g.question_id = s.question_id
        WHERE r.status = 'finished' AND s.metric = $metric AND s.status = 'ok' {type_filter}
        GROUP BY s.question_id HAVING count(*) = 2 ORDER BY s.question_id
        """, {"a": A, "b": B, "metric": metric, **({"type": question_type} if question_type else {})}).df()


def table(at) -> pd.DataFrame:
    return element(at, "dataframe", "cmp_table").value.set_index("metric")


def test_the_table_matches_an_independent_computation(app_at):
    at = app_at("pages/compare.py")
    assert at.title[0].value == "Compare"
    assert at.multiselect(key="cmp_methods").value == [A, B]
    shown = table(at)
    delta = f"Δ {A} − {B}"
    assert list(shown.columns[:5]) == [delta, "95% CI", "p (Holm)", "n", f"{A} better"]
    expected = pairs(app_at.db, "rouge_l")
    a, b = expected["a"].to_numpy(), expected["b"].to_numpy()
    row = shown.loc["rouge_l"]
    assert row["n"] == len(expected) == 103
    assert row[delta] == pytest.approx(round(np.mean(a - b), 3), abs=1e-9)
    assert (row[f"{A} mean"], row[f"{B} mean"]) == (round(a.mean(), 3), round(b.mean(), 3))
    assert (row[f"{A} better"], row["ties"], row[f"{B} better"]) == (np.sum(a > b), np.sum(a == b), np.sum(a < b))
    assert row["p"] == pytest.approx(sps.wilcoxon(a - b, zero_method="pratt").pvalue)
    assert row["scale"] == "0-1"
    # hallucination_rate: lower is better, so "local_search better" counts lower rates.
    hall = pairs(app_at.db, "hallucination_rate")
    assert shown.loc["hallucination_rate", f"{A} better"] == np.sum(hall["a"] < hall["b"])
    assert pd.isna(shown.loc["dont_know", f"{A} better"]) and shown.loc["dont_know", "better"] == "no direction"
    # Holm over every row shown, and significant rows first.
    p = shown["p"].to_numpy()
    order = np.argsort(p, kind="stable")
    holm = np.empty(len(p))
    holm[order] = np.maximum.accumulate(np.minimum(1, (len(p) - np.arange(len(p))) * p[order]))
    assert shown["p (Holm)"].to_numpy() == pytest.approx(holm)
    assert "checks_pass_rate" not in shown.index
    assert any("Not comparable" in c.value and "checks_pass_rate" in c.value for c in at.caption)
    assert {b.label for b in at.get("download_button")} >= {"CSV", "Parquet", "JSON"}


def test_view_type_baseline_and_family_selections(app_at):
    at = app_at("pages/compare.py")
    expected = pairs(app_at.db, "judge_overall")
    at.radio(key="cmp_view").set_value("percent").run()
    row = table(at).loc["judge_overall"]
    assert row[f"Δ {A} − {B}"] == pytest.approx(round(100 * np.mean(expected["a"] - expected["b"]) / 4, 3), abs=1e-9)
    assert row[f"{A} mean"] == pytest.approx(round(100 * (expected["a"].mean() - 1) / 4, 3), abs=1e-9)

    at.radio(key="cmp_view").set_value("own scale")
    at.selectbox(key="cmp_type").set_value("Complex Reasoning").run()
    typed = pairs(app_at.db, "rouge_l", "Complex Reasoning")
    row = table(at).loc["rouge_l"]
    assert row["n"] == len(typed) == 31
    assert row[f"Δ {A} − {B}"] == pytest.approx(round(np.mean(typed["a"] - typed["b"]), 3), abs=1e-9)

    at.selectbox(key=f"cmp_baseline_{A}|{B}").set_value(A).run()
    swapped = table(at)
    assert f"Δ {B} − {A}" in swapped.columns
    assert swapped.loc["rouge_l", f"Δ {B} − {A}"] == pytest.approx(-row[f"Δ {A} − {B}"], abs=1e-9)

    at.multiselect(key="cmp_families").set_value(["lexical"]).run()
    assert set(table(at)["family"]) == {"lexical"}
    at.multiselect(key="cmp_methods").set_value([A]).run()
    assert any("at least two methods" in i.value for i in at.info)


def test_a_table_row_picks_the_metric_shown_per_question(app_at):
    at = app_at("pages/compare.py")
    position = list(table(at).index).index("rouge_l")
    click(at, element(at, "dataframe", "cmp_table"), rows(position))
    assert at.selectbox(key="cmp_metric").value == "rouge_l"
    gaps = element(at, "dataframe", "cmp_disagreements").value
    assert list(gaps.columns[:3]) == [A, B, f"Δ {A} − {B}"]
    assert (gaps[f"Δ {A} − {B}"] - (gaps[A] - gaps[B])).abs().max() < 2e-3  # each row: A - B, rounded
    assert list(gaps[f"Δ {A} − {B}"].abs()) == sorted(gaps[f"Δ {A} − {B}"].abs(), reverse=True)
    expected = pairs(app_at.db, "rouge_l")
    assert gaps[f"Δ {A} − {B}"].abs().iloc[0] == pytest.approx(round((expected["a"] - expected["b"]).abs().max(), 3))
    scatter = figure(at, "cmp_scatter")
    assert sum(len(values(trace["x"])) for trace in scatter["data"]) == 103
    assert {trace["name"] for trace in scatter["data"]} == {"Fact Retrieval", "Complex Reasoning",
                                                           "Contextual Summarize", "Creative Generation"}
    assert scatter["layout"]["shapes"][0]["x0"] == 0 and scatter["layout"]["shapes"][0]["x1"] == 1  # the diagonal


def test_a_scatter_point_opens_the_question_on_claims(app_at):
    at = app_at("pages/compare.py")
    trace = figure(at, "cmp_scatter")["data"][0]
    question_id, hover = trace["customdata"][0][:2]
    question = open_store(app_at.db).cursor().execute(
        "SELECT question FROM golden_items WHERE question_id = ?", [question_id]).fetchall()[0][0]
    assert html.unescape(hover.replace("<br>", " ")).startswith(" ".join(question.split())[:40])
    click(at, element(at, "plotly_chart", "cmp_scatter"), points(trace["customdata"][0]))
    assert page(at) == "claims.py"
    assert at.session_state["question_id"] == question_id


def test_a_heatmap_cell_lists_its_questions_and_a_row_opens_claims(app_at):
    at = app_at("pages/compare.py")
    heatmap, cells = figure(at, "cmp_heatmap")["data"]
    cell = next(c for c in cells["customdata"] if c[0] == "Fact Retrieval" and c[1] == "rouge_l")
    expected = pairs(app_at.db, "rouge_l", "Fact Retrieval")
    assert cell[3] == len(expected) == 49  # n in the hover
    assert cell[4] == pytest.approx(np.mean(expected["a"] - expected["b"]))
    assert heatmap["type"] == "heatmap" and "rouge_l" in heatmap["x"]
    click(at, element(at, "plotly_chart", "cmp_heatmap"), points(cell))
    listed = element(at, "dataframe", "cmp_cell_questions").value
    assert len(listed) == 49 and set(listed["question_id"]) == set(expected["question_id"])
    assert list(listed["Δ"].abs()) == sorted(listed["Δ"].abs(), reverse=True)
    assert any(t.value.startswith("Fact Retrieval · rouge_l") for t in at.text)
    click(at, element(at, "dataframe", "cmp_cell_questions"), rows(0))
    assert page(at) == "claims.py" and at.session_state["question_id"] == listed["question_id"].iloc[0]


def test_a_disagreement_row_opens_the_question(app_at):
    at = app_at("pages/compare.py")
    gaps = element(at, "dataframe", "cmp_disagreements").value
    click(at, element(at, "dataframe", "cmp_disagreements"), rows(2))
    assert page(at) == "claims.py" and at.session_state["question_id"] == gaps["question_id"].iloc[2]


def _add_run(db, methods: dict[str, str]) -> str:
    """A finished run over the demo datasets whose methods copy the demo's (new name -> demo method),
    written through the Store API; the newest run, so the sidebar opens on it."""
    store = open_store(db)
    demo = store.cursor().execute(
        "SELECT run_id, golden_dataset_id, outputs_dataset_ids FROM runs WHERE status = 'finished'").fetchall()[0]
    run_id = store.create_run(name="copy", golden_dataset_id=demo[1], outputs_dataset_ids=list(demo[2]),
                              judge="offline", judge_model=None, metrics=["rouge_l"], config={}, n_samples=103)
    cells = store.cursor().execute(
        "SELECT * EXCLUDE (created_at) FROM scores WHERE run_id = ? AND method IN (SELECT unnest(?))",
        [demo[0], list(set(methods.values()))]).df()
    store.write_scores(pd.concat([cells[cells["method"] == source].assign(run_id=run_id, method=name)
                                  for name, source in methods.items()]))
    store.finish_run(run_id, "finished")
    return run_id


def test_a_run_with_one_method_says_what_to_do(app_at):
    _add_run(app_at.db, {"local_search": A})
    at = app_at("pages/compare.py")
    assert any("one method only" in i.value and "Data" in i.value for i in at.info)
    assert not at.get("plotly_chart")


def test_three_methods_are_each_compared_with_the_baseline(app_at):
    odd = "<b>llm</b> *only*"  # an uploaded method name is shown as text, never as markdown or HTML
    _add_run(app_at.db, {A: A, B: B, odd: A})
    at = app_at("pages/compare.py")
    at.multiselect(key="cmp_methods").set_value([A, B, odd]).run()
    at.selectbox(key=f"cmp_baseline_{A}|{B}|{odd}").set_value(B).run()
    shown = element(at, "dataframe", "cmp_table").value
    assert set(shown["method"]) == {A, odd} and f"Δ vs {B}" in shown.columns
    by = shown.set_index(["method", "metric"])
    assert by.loc[(odd, "rouge_l"), f"Δ vs {B}"] == by.loc[(A, "rouge_l"), f"Δ vs {B}"]  # a copy of A
    assert len(shown) == 2 * 32  # Holm over both comparisons
    assert at.selectbox(key="cmp_detail").value == A
    at.selectbox(key="cmp_detail").set_value(odd).run()
    assert element(at, "dataframe", "cmp_disagreements").value.columns[0] == odd
    assert any(h.value.startswith("Per question: \\<b\\>llm\\</b\\> \\*only\\*") for h in at.subheader)
    assert figure(at, "cmp_scatter")["layout"]["xaxis"]["title"]["text"].startswith("&lt;b&gt;llm&lt;/b&gt; *only*")
