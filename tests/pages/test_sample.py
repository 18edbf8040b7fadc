"""A sampled run in the app (AppTest on a real DuckDB file): every screen of the run says "sample of N of M
questions", and the Evaluate screen judges a sample of N questions with its seed, counted in the plan."""
import json

import pytest

from evaluators import evaluate
from evaluators.runs import sampling
from evaluators.store import open_store
from tests.helpers.evaluate_screen import until_done
from tests.helpers.sample_inputs import METRICS, write_files
from ui.common import md_escape

pytestmark = pytest.mark.usefixtures("navigation_pages")
NOTE = "sample of 12 of 30 questions (seed 7)"


def _shown(at) -> str:
    return "\n".join([c.value for c in at.caption] + [h.value for h in at.html] + [t.value for t in at.text])


def test_every_screen_of_a_sampled_run_says_it_is_a_sample(tmp_path, app_on):
    golden, outputs, _ = write_files(tmp_path)
    db = tmp_path / "app.duckdb"
    result = evaluate(golden, outputs, metrics=METRICS.split(","), db=db, sample=12, seed=7)
    result.store.close()
    for page in ("overview", "compare", "correlations", "history", "claims", "error_analysis", "evaluate"):
        at = app_on(db, f"pages/{page}.py", result.run_id)
        assert not at.exception, (page, at.exception)
        shown = _shown(at)
        assert NOTE in shown or md_escape(NOTE) in shown, page


def test_the_evaluate_screen_judges_a_sample_of_n_questions_with_its_seed(tmp_path, app_on):
    golden, outputs, questions = write_files(tmp_path)
    db = tmp_path / "app.duckdb"
    evaluate(golden, outputs, metrics=["exact_match"], db=db).store.close()  # the datasets, stored
    at = app_on(db, "pages/evaluate.py")
    for family in ("claims", "semantic", "rubric", "composite"):
        at.multiselect(key=f"eval-metrics-{family}").set_value([])
    at.multiselect(key="eval-metrics-lexical").set_value(["exact_match"])
    assert at.number_input(key="eval-seed").disabled  # a seed matters only for a sample
    at.number_input(key="eval-sample").set_value(12)
    at.run()
    at.number_input(key="eval-seed").set_value(7)
    at.run()
    captions = [c.value for c in at.caption]
    assert f"A {NOTE}, stratified by question type." in captions
    assert "24 samples (2 methods x up to 12 sampled questions) x 1 metrics = 24 cells" in captions
    at.button(key="eval-start").click()
    at.run()
    assert not at.exception, at.exception
    store = open_store(db)
    run_id = at.selectbox(key="eval-run").value
    run = until_done(at, store, run_id)
    assert json.loads(run["config"])["sample"] == {"n": 12, "of": 30, "seed": 7} and run["n_samples"] == 24
    first = _cells(store, run_id)
    assert {q for q, *_ in first} == set(sampling.choose(questions, 12, 7))

    # grown from the run's panel: only the questions the larger sample adds are judged
    at.number_input(key=f"eval-grow-{run_id}").set_value(18)
    at.button(key="eval-grow").click()
    at.run()
    assert not at.exception, at.exception
    run = until_done(at, store, run_id)
    assert json.loads(run["config"])["sample"]["n"] == 18 and run["n_samples"] == 36
    grown = _cells(store, run_id)
    assert {q for q, *_ in grown} == set(sampling.choose(questions, 18, 7)) and set(first) < set(grown)
    assert any("sample of 18 of 30 questions (seed 7)" in t.value for t in at.text)


def _cells(store, run_id):
    """Every score cell with the time it was written: a cell computed again would have a new one."""
    return store.cursor().execute("SELECT question_id, method, metric, value, created_at FROM scores "
                                  "WHERE run_id = ?", [run_id]).fetchall()
