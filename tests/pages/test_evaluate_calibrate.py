"""Evaluate's "Calibrate the judge" (AppTest on a copy of the demo database): the estimate first, the calibration in a
background thread polled to its end, then the stored headline and table of this judge and model; History untouched,
the key typed in the page never stored or shown."""
import time

from evaluators.queries import datasets as qd
from evaluators.queries.calibrations import latest_calibration
from evaluators.store import open_store
from tests.helpers.calibration import KEY, responder
from tests.helpers.openai_server import start_server
from ui.common import md_escape

TIMEOUT = 300


def _until_calibrated(at):
    deadline = time.monotonic() + TIMEOUT
    while not any("agrees with people" in s.value for s in (*at.success, *at.warning)):
        assert not at.exception, at.exception
        assert not at.error, [e.value for e in at.error]
        assert time.monotonic() < deadline, "the calibration did not end"
        time.sleep(0.3)
        at.run()  # what the fragment's timer does in a browser


def test_the_offline_judge_calibrated_from_the_screen(app_at):
    at = app_at("pages/evaluate.py")
    store = open_store(app_at.db)
    runs_before = len(qd.recent_runs(store))
    assert any(c.value == "Not calibrated yet: its agreement with people shows here once it is." for c in at.caption)
    at.number_input(key="eval-cal-sample").set_value(20)
    at.run()
    assert any(c.value == "20 labelled items, offline judge: no calls, no key." for c in at.caption)
    at.button(key="eval-calibrate").click()
    at.run()
    _until_calibrated(at)
    stored = latest_calibration(store.cursor(), "offline", None)
    assert [s.value for s in at.success if "agrees" in s.value] == [md_escape(stored.headline)]
    assert stored.headline.startswith("The offline judge agrees with people: correctness AUROC")
    table = next(d.value for d in at.dataframe if "token F1" in d.value.columns)
    assert len(table) == len(stored.rows) and stored.n_items == 20
    assert len(qd.recent_runs(store)) == runs_before  # its runs went to a private file: History untouched


def test_the_openai_judge_calibrated_with_the_key_typed_in_the_page(app_at, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    at = app_at("pages/evaluate.py")
    with start_server() as server:
        server.responder = responder()
        at.radio(key="eval-judge").set_value("openai")
        at.run()
        at.text_input(key="eval-base-url").input(server.base_url)
        at.text_input(key="eval-model").input("test-model")
        at.run()  # the model's prices are prefilled once it is named: then set
        at.number_input(key="eval-price-in").set_value(1.0)
        at.number_input(key="eval-price-out").set_value(1.0)
        at.number_input(key="eval-cal-sample").set_value(20)
        at.run()
        assert at.button(key="eval-calibrate").disabled  # no key yet
        assert any(md_escape("To calibrate: enter the API key") in c.value for c in at.caption)
        assert any(c.value.startswith(md_escape("20 labelled items: ")) and md_escape("cost (estimate) $") in c.value
                   for c in at.caption), [c.value for c in at.caption if "labelled" in c.value]
        at.text_input(key="eval-key-input").input(KEY)
        at.run()
        at.button(key="eval-calibrate").click()
        at.run()
        _until_calibrated(at)
        assert server.request_count > 0
    stored = latest_calibration(open_store(app_at.db).cursor(), "openai", "test-model")
    assert stored.headline.startswith("test-model agrees with people")
    assert [s.value for s in at.success if "agrees" in s.value] == [md_escape(stored.headline)]
    shown = " ".join(str(e.value) for e in (*at.caption, *at.success, *at.info, *at.error, *at.code))
    assert KEY not in shown
    assert KEY.encode() not in app_at.db.read_bytes()
