"""An analyst's criteria on the screens (AppTest; the views' numbers are tested in
tests/queries/test_criteria_views.py): Error analysis filters the samples that failed a criterion, Overview lists
the criteria and its "How scores are computed" shows the criterion's text and version as the run stored it, and
History says a criterion whose text changed is not compared across the change."""
from __future__ import annotations

from evaluators.metrics import registry
from tests.helpers.criteria_runs import PLAIN, SOURCE, SOURCE_V2, criteria_runs, scored  # noqa: F401

ERRORS, OVERVIEW, HISTORY = "pages/error_analysis.py", "pages/overview.py", "pages/history.py"


def test_error_analysis_lists_the_samples_that_failed_a_criterion(criteria_runs, app_on):
    db, store, runs = criteria_runs
    failed = scored(store, runs["first"], SOURCE.id).query("value == 0")
    at = app_on(db, ERRORS, runs["first"])
    at.selectbox(key="ea-filter-metric").set_value(SOURCE.id).run()
    assert not at.exception, at.exception
    at.slider(key=f"ea-range-{SOURCE.id}").set_value((0, 0)).run()  # pass/fail: the failed ones
    assert not at.exception, at.exception
    assert any(c.value.startswith(f"{len(failed)} samples match") for c in at.caption), [c.value for c in at.caption]
    table = next(d.value for d in at.dataframe if d.key and d.key.startswith("errors-table-"))
    assert set(zip(table["question_id"], table["method"])) == set(zip(failed["question_id"], failed["method"]))
    assert (table[SOURCE.id] == 0).all()


def test_overview_shows_the_criteria_and_how_the_run_asked_them(criteria_runs, app_on):
    db, _, runs = criteria_runs
    registry.USER.clear()
    at = app_on(db, OVERVIEW, runs["first"])
    metrics = next(d.value for d in at.dataframe if SOURCE.id in getattr(d.value, "index", []))
    assert metrics.loc[SOURCE.id, "family"] == "criteria" and metrics.loc[PLAIN.id, "scale"] == "likert"
    panel = next(e for e in at.expander if e.label == "How scores are computed")
    texts = " ".join(t.value for t in panel.text)
    assert SOURCE.criterion in texts and SOURCE.version in texts and SOURCE_V2.criterion not in texts
    assert any(f"yours \\(criterion, version {SOURCE.version}\\)" in m.value for m in panel.markdown)


def test_history_says_a_changed_criterion_is_not_compared(criteria_runs, app_on):
    db, _, runs = criteria_runs
    at = app_on(db, HISTORY, runs["changed"])
    at.multiselect(key="hist_metrics").set_value([SOURCE.id]).run()
    assert not at.exception, at.exception
    warnings = [w.value for w in at.warning]
    assert any(SOURCE.version in w and SOURCE_V2.version in w and "not compared" in w for w in warnings), warnings


def test_compare_with_another_run_warns_of_a_changed_criterion(criteria_runs, app_on):
    db, _, runs = criteria_runs
    at = app_on(db, "pages/compare.py", runs["changed"])
    at.selectbox(key="cmp_other_run").set_value(runs["same"]).run()
    assert not at.exception, at.exception
    warnings = [w.value.replace("\\", "") for w in at.warning]  # as rendered: the markdown escapes gone
    assert (f"names_the_source: the criterion changed between the runs (version {SOURCE.version} -> "
            f"{SOURCE_V2.version}): not compared") in warnings, warnings
