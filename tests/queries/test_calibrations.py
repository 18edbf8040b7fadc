"""queries/calibrations.py: a judge's latest calibration read back from a real DuckDB file, its headline and table."""
import math

from evaluators.queries.calibrations import latest_calibration
from evaluators.records.run_status import RunStatus
from evaluators.store import CALIBRATION_RESULT_COLUMNS, Store
from tests.helpers.calibration import calibration_row


def save(store, judge="openai", model="gpt-5-mini", rows=(), status=RunStatus.FINISHED.value):
    return store.save_calibration(judge=judge, judge_model=model, judge_config={"base_url": None}, n_items=200,
                                  seed=0, cost_usd=0.42, status=status, note="200 of 200 items judged", rows=list(rows))


def test_the_latest_calibration_of_a_judge_and_model_with_its_headline(tmp_path):
    store = Store(tmp_path / "s.duckdb")
    save(store, rows=[calibration_row(value=0.5)])
    latest = save(store, rows=[calibration_row(value=math.nan), calibration_row(), calibration_row("faithfulness", 0.7)])
    save(store, model="gpt-4o-mini", rows=[calibration_row(value=0.1)])
    c = latest_calibration(store.cursor(), "openai", "gpt-5-mini")
    assert c.calibration_id == latest and [r["label"] for r in c.rows] == ["correctness", "correctness", "faithfulness"]
    assert math.isnan(c.rows[0]["value"])  # stored NULL, read as NaN: never a 0
    assert c.headline == ("gpt-5-mini agrees with people: correctness AUROC 0.91 [0.87, 0.94] on 200 labelled items; "
                          "the offline judge 0.78")
    table = c.table()
    assert list(table["judge"]) == ["n/a", "0.91 [0.87, 0.94]", "0.70 [0.87, 0.94]"]
    assert latest_calibration(store.cursor(), "openai", "gpt-4.1") is None
    assert latest_calibration(store.cursor(), "offline", None) is None
    store.close()


def test_the_headline_says_what_was_left_out_and_that_a_run_stopped(tmp_path):
    store = Store(tmp_path / "s.duckdb")
    save(store, judge="offline", model=None, rows=[calibration_row(n=150, n_failed=50)], status=RunStatus.BUDGET_REACHED.value)
    c = latest_calibration(store.cursor(), "offline", None)
    assert c.headline == ("The offline judge agrees with people: correctness AUROC 0.91 [0.87, 0.94] on 150 labelled "
                          "items (50 not judged, left out) (stopped: budget reached)")
    assert c.table()["n"].tolist() == ["150 of 200"]
    store.close()


def test_the_rows_these_tests_store_have_every_stored_column():
    assert set(calibration_row()) == set(CALIBRATION_RESULT_COLUMNS)
