"""The app loads installed packages' metrics (the `ragscope.metrics` entry points) at start: one that fails to load
is a warning in the sidebar, and the app goes on. The demos are given two cheap metrics (tests/pages/test_app.py)."""
from dataclasses import replace

from streamlit.testing.v1 import AppTest

from evaluators import demo
from evaluators.metrics.registry import USER
from evaluators.store import close_store, open_store
from tests.helpers import ROOT
from tests.helpers.plugin_files import user_metrics_kept, write_dist

WORKS = ("from evaluators.metrics.plugins import plugin_metric\n"
         "@plugin_metric('acme_app_words', scale='percent', higher_is_better=None)\n"
         "def acme_app_words(sample):\n    return min(100, len(sample.output.answer.split()))\n")


def test_a_broken_entry_point_is_a_warning_and_a_working_one_is_loaded(tmp_path, monkeypatch):
    import streamlit as st

    site = write_dist(tmp_path / "site", {"acme": "acme_app_metrics", "broken": "acme_app_broken"},
                      {"acme_app_metrics": WORKS, "acme_app_broken": "raise RuntimeError('acme app broke')\n"})
    monkeypatch.syspath_prepend(str(site))
    db = tmp_path / "app.duckdb"
    monkeypatch.setenv("RAGSCOPE_DB", str(db))
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(demo, "DEMOS", tuple(replace(d, metrics=("exact_match",)) for d in demo.DEMOS))
    st.cache_resource.clear()  # the entry points are loaded once per process: this test's process
    with user_metrics_kept():
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        try:
            at.run()
            assert not at.exception, at.exception
            warnings = [w.value for w in at.sidebar.warning]
            assert len(warnings) == 1 and "broken" in warnings[0] and "acme app broke" in warnings[0]
            assert USER["acme_app_words"].user["definition"]["source"] == "entry point acme"
        finally:
            demo.wait_for_demos(open_store(db), timeout=300)  # no demo thread may write into a closed database
            st.cache_resource.clear()
            close_store(db)


def test_evaluate_offers_an_installed_packages_metrics_and_the_run_computes_and_stores_them(app_at, tmp_path,
                                                                                           monkeypatch):
    import streamlit as st

    from tests.helpers.evaluate_screen import _pick_metrics, start_and_wait

    site = write_dist(tmp_path / "site", {"acme": "acme_eval_metrics"},
                      {"acme_eval_metrics": WORKS.replace("acme_app_words", "acme_eval_words")})
    monkeypatch.syspath_prepend(str(site))
    st.cache_resource.clear()  # app.py loads the entry points once per process: again, with this one installed
    with user_metrics_kept():
        try:
            at = app_at("pages/evaluate.py")
            offered = at.multiselect(key="eval-metrics-plugins")
            assert offered.options == ["acme_eval_words"] and offered.value == ["acme_eval_words"]
            _pick_metrics(at, lexical=["exact_match"])
            store = open_store(app_at.db)
            run_id, run = start_and_wait(at, store)
            assert run["status"] == "finished" and "acme_eval_words" in list(run["metrics"])
            [stored] = store.user_metrics(run_id)
            assert (stored["metric"], stored["kind"], stored["definition"]["source"]) == (
                "acme_eval_words", "plugin", "entry point acme")
            values = store.cursor().execute(
                "SELECT s.value, o.answer FROM scores s JOIN runs r USING (run_id) JOIN rag_outputs o "
                "ON list_contains(r.outputs_dataset_ids, o.dataset_id) AND o.question_id = s.question_id "
                "AND o.method = s.method WHERE s.run_id = ? AND s.metric = 'acme_eval_words'", [run_id]).fetchall()
            assert values and all(v == min(100, len(a.split())) for v, a in values)
        finally:
            st.cache_resource.clear()
