"""The History page (AppTest) on runs written through the Store API (tests/queries/test_history.py checks the
numbers of the view it draws): one chart per metric with a star on each significant step, and the view's tables."""
import pytest

from evaluators.presentation.figures import method_colours
from evaluators.queries import history as h
from evaluators.queries.compare import run_methods
from tests.helpers.screens import figure, same, values
from tests.helpers.history_runs import runs  # noqa: F401  (the fixture)

pytestmark = pytest.mark.usefixtures("navigation_pages")


def test_the_page_draws_each_methods_runs_and_stars_the_significant_steps(runs, app_on):  # noqa: F811
    store, _, _, rising = runs
    at = app_on(store.path, "pages/history.py", rising[0])
    assert at.title[0].value == "History"
    tables = h.view(store, rising[0])
    same(at.dataframe[0].value, tables["steps"])  # st.dataframe has no key in AppTest without on_select
    same(at.dataframe[1].value, tables["points"])
    line, stars = figure(at, "hist_judge_overall")["data"]
    assert values(line["x"]) == [1, 2, 3] and values(line["y"]) == [2.0, 4.0, 4.0]
    assert values(stars["x"]) == [2] and stars["marker"]["color"] == ["#1a7f37"]  # 2 -> 4: better, significant
    assert line["marker"]["color"] == method_colours(run_methods(store, rising[0]))["m1"]  # as on its Overview
    at.multiselect(key="hist_metrics").set_value([]).run()
    assert any("Pick at least one" in i.value for i in at.info)


def test_a_run_alone_on_its_golden_set_has_no_history(runs, app_on):  # noqa: F811
    store, _, _, _ = runs
    edited = store.cursor().execute("SELECT run_id FROM runs WHERE name = 'edited'").fetchall()[0][0]
    at = app_on(store.path, "pages/history.py", edited)
    assert any("only run with scores on its golden set" in i.value for i in at.info)


def test_a_run_without_scores_is_not_called_the_only_run_with_scores(runs, app_on):  # noqa: F811
    store, first, _, _ = runs
    cur = store.cursor()
    (edited,), = cur.execute("SELECT run_id FROM runs WHERE name = 'edited'").fetchall()
    cur.execute("DELETE FROM scores WHERE run_id = ?", [edited])  # alone on its golden set, and nothing scored
    cur.execute("UPDATE runs SET status = 'cancelled' WHERE run_id = ?", [edited])
    at = app_on(store.path, "pages/history.py", edited)
    infos = [i.value for i in at.info]
    assert not any("only run with scores" in i for i in infos)
    assert any(i.startswith("This run has no scores yet (status: cancelled)") for i in infos)
    assert not at.get("plotly_chart")

    # A run not scored yet on a golden set with a history: said, and the other runs' history shown
    golden, outputs = cur.execute("SELECT golden_dataset_id, outputs_dataset_ids FROM runs WHERE run_id = ?",
                                  [first]).fetchall()[0]
    waiting = store.create_run(name="waiting", golden_dataset_id=golden, outputs_dataset_ids=list(outputs),
                               judge="offline", judge_model=None, metrics=["judge_overall"], config={}, n_samples=18)
    cur.execute("UPDATE runs SET status = 'cancelled' WHERE run_id = ?", [waiting])
    at = app_on(store.path, "pages/history.py", waiting)
    assert any(i.value.startswith("This run has no scores yet (status: cancelled), so it is not among the points "
                                  "below; they are the 2 other runs") for i in at.info)
    assert at.get("plotly_chart") and not at.exception
