"""The Overview page on the evaluated demo run (AppTest): it draws the tables of `queries.overview.view` (whose
numbers tests/queries/test_overview.py checks), for the chosen scale and chart metric."""
import json

import pandas as pd
import pytest

from evaluators import queries
from evaluators.queries import PERCENT, compare, hypotheses
from evaluators.queries import overview as q
from evaluators.store import close_store, open_store
from tests.helpers.calibration import calibration_row
from tests.helpers.headline_run import headline_run
from tests.helpers.screens import values

pytestmark = pytest.mark.usefixtures("navigation_pages")


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
        assert f.p_holm == pytest.approx(row["p (Holm)"].iloc[0])  # one family of tests on both screens (issue 34)
    if findings["metric"].notna().any():  # the family the findings are corrected over, said under them
        assert any(c.value.endswith(hypotheses.caption(secondary=False)) for c in at.caption)
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


def _unescaped(text: str) -> str:
    return text.replace("\\", "")


def test_a_cancelled_run_says_its_results_are_partial_and_how_much_is_scored(app_at):
    from evaluators.store import close_store

    at = app_at()
    assert not [w for w in at.warning if "Partial results" in w.value]  # a finished run: no notice
    store = open_store(app_at.db)
    run_id = at.session_state["run_id"]
    cur = store.cursor()
    # As a run cancelled mid-way leaves it: the last 40 questions never scored, one more sample half scored
    cur.execute("DELETE FROM scores WHERE run_id = $r AND question_id IN (SELECT DISTINCT question_id FROM scores "
                "WHERE run_id = $r ORDER BY question_id DESC LIMIT 40)", {"r": run_id})
    cur.execute("DELETE FROM scores WHERE run_id = $r AND (question_id, method, metric) IN (SELECT (question_id, "
                "method, metric) FROM scores WHERE run_id = $r ORDER BY question_id, method, metric LIMIT 3)",
                {"r": run_id})
    cur.execute("UPDATE runs SET status = 'cancelled' WHERE run_id = ?", [run_id])
    (samples, metrics), = cur.execute("SELECT n_samples, len(metrics) FROM runs WHERE run_id = ?", [run_id]).fetchall()
    (stored,), = cur.execute("SELECT count(*) FROM scores WHERE run_id = ?", [run_id]).fetchall()
    (complete,), = cur.execute("SELECT count(*) FROM (SELECT question_id, method FROM scores WHERE run_id = ? "
                               "GROUP BY ALL HAVING count(*) = ?)", [run_id, metrics]).fetchall()
    assert samples == 206 and complete == 206 - 2 * 40 - 1
    close_store(app_at.db)
    at = app_at()
    notices = [_unescaped(w.value) for w in at.warning if "Partial results" in w.value]
    assert notices == [f"Partial results: this run was cancelled. {complete:,} of {samples:,} samples are scored "
                       f"({stored:,} of {samples * metrics:,} cells); every number below is over the cells scored so "
                       "far. Resume it on **Evaluate**."]


def test_a_new_session_opens_on_the_newest_finished_run_that_is_not_a_try_out(app_at):
    from evaluators import evaluate
    from evaluators.store import close_store

    store = open_store(app_at.db)
    (demo_run,), = store.cursor().execute("SELECT run_id FROM runs").fetchall()
    golden = [{"question_id": "t1", "question": "Where is Truro?", "reference": "In Cornwall."},
              {"question_id": "t2", "question": "What is Truro?", "reference": "A city."}]
    tiny = evaluate(golden, {"smoke": [{"question_id": "t1", "answer": "Cornwall.", "contexts": ["Truro, Cornwall"]},
                                       {"question_id": "t2", "answer": "A city.", "contexts": ["Truro is a city"]}]},
                    db=app_at.db, metrics=["exact_match"], name="two-sample try-out").run_id
    close_store(app_at.db)
    at = app_at()
    assert queries.runs(open_store(app_at.db))["run_id"].iloc[0] == tiny  # the newest, yet not the one opened
    assert at.session_state["run_id"] == demo_run and at.title[0].value == "Overview"
    assert at.sidebar.selectbox[0].value == demo_run


def test_the_default_run_is_the_newest_finished_one_of_20_samples_or_more():
    frame = lambda *rows: pd.DataFrame(rows, columns=["run_id", "status", "n_samples"])  # noqa: E731  (newest first)
    assert queries.default_run(frame(("tiny", "finished", 2), ("cut", "cancelled", 400), ("big", "finished", 206),
                                     ("older", "finished", 500))) == "big"
    assert queries.default_run(frame(("tiny", "finished", 2), ("tinier", "finished", 1))) == "tiny"
    assert queries.default_run(frame(("queued", "queued", 428), ("cut", "cancelled", 3))) == "queued"  # a first start
    assert queries.default_run(frame()) is None


def test_one_colour_per_method_in_every_chart_of_the_run(app_at):
    from evaluators.presentation import figures

    at = app_at()
    methods = compare.run_methods(open_store(app_at.db), at.session_state["run_id"])
    expected = figures.method_colours(methods)
    assert len(set(expected.values())) == len(methods) == 2
    for chart in at.get("plotly_chart"):  # the headline and the chart by question type
        traces = json.loads(chart.proto.spec)["data"]
        assert {t["name"]: t["marker"]["color"] for t in traces} == expected


def test_method_colours_do_not_depend_on_the_order_or_the_methods_a_chart_shows():
    from evaluators.presentation import figures

    run = figures.method_colours(["b", "a", "c"])
    assert run == figures.method_colours(["c", "b", "a"]) and list(run) == ["a", "b", "c"]
    assert len(set(run.values())) == 3 and not {figures.GREEN, figures.RED} & set(run.values())
    with_others = figures.method_colours(["b", "a", "c"], others=["a", "0-older"])  # another run's method after
    assert {m: with_others[m] for m in run} == run and with_others["0-older"] not in run.values()


def test_the_judge_says_how_far_it_agreed_with_people_once_calibrated(tmp_path, app_on):
    store, run_id = headline_run(tmp_path, judge=("openai", "gpt-5-mini"))
    close_store(store.path)
    at = app_on(tmp_path / "h.duckdb", "pages/overview.py", run_id)
    said = " ".join(i.value for i in at.info)
    assert "has not been measured here" in said and "Calibrate the judge" in said
    assert not any("calibrated" in e.label for e in at.expander)
    store = open_store(tmp_path / "h.duckdb")
    store.save_calibration(judge="openai", judge_model="gpt-5-mini", judge_config={}, n_items=200, seed=0,
                           cost_usd=None, status="finished", note="", rows=[calibration_row()])
    close_store(store.path)
    at = app_on(tmp_path / "h.duckdb", "pages/overview.py", run_id)
    said = _unescaped(" ".join(i.value for i in at.info))
    assert ("gpt-5-mini agrees with people: correctness AUROC 0.91 [0.87, 0.94] on 200 labelled items; the offline "
            "judge 0.78") in said
    assert table(at, "offline judge")["judge"].tolist() == ["0.91 [0.87, 0.94]"]
