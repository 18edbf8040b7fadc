"""The minimal app on a fresh database opens at once on the ARAGOG demo run and computes the demo runs in the
background. The demos are given two cheap metrics here: the real build takes minutes (tests/test_demo.py)."""
from dataclasses import replace
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from evaluators import demo
from evaluators.store import close_store, open_store
from tests.helpers.screens import metrics_table
from tests.helpers import ROOT

CHEAP = ("exact_match", "rouge_l")


@pytest.fixture
def app(tmp_path, monkeypatch):
    db = tmp_path / "app.duckdb"
    monkeypatch.setenv("RAGSCOPE_DB", str(db))
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(demo, "DEMOS", tuple(replace(d, metrics=CHEAP) for d in demo.DEMOS))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    yield at
    import streamlit as st

    demo.wait_for_demos(open_store(db), timeout=300)  # no demo thread may write into a closed database
    st.cache_resource.clear()
    close_store(db)


def _run_ids(db: Path) -> dict[str, str]:
    """demo key -> its run id."""
    names = {d.name: d.key for d in demo.DEMOS}
    rows = open_store(db).cursor().execute("SELECT name, run_id FROM runs").fetchall()
    return {names[name]: run_id for name, run_id in rows if name in names}


def test_first_start_opens_at_once_on_the_aragog_demo_while_the_demos_wait_their_turn(app, tmp_path, monkeypatch):
    order = []
    monkeypatch.setattr(demo, "_compute_in_turn", lambda store, manager, pending: order.extend(
        d.key for d, _ in pending))  # the background build never starts: the runs stay queued
    app.run()
    assert not app.exception, app.exception
    runs = _run_ids(tmp_path / "app.duckdb")
    assert order == ["aragog", "clapnq", "graphrag", "hyde"]  # the default first
    assert app.sidebar.selectbox[0].value == runs["aragog"]  # the newest run: the one the app opens on
    assert app.title[0].value == "Overview" and any("Demo\\: ARAGOG retrieval settings" in c.value for c in app.caption)
    assert any("GPT\\-3\\.5\\-turbo in four haystack RAG pipelines" in i.value for i in app.info)  # the description
    assert any("being computed in the background (status: queued)" in i.value for i in app.info)


def test_first_start_computes_every_demo_in_the_background(app, tmp_path):
    app.run()
    assert not app.exception, app.exception
    store = open_store(tmp_path / "app.duckdb")
    demo.wait_for_demos(store, timeout=300)
    statuses = dict(store.cursor().execute("SELECT name, status FROM runs").fetchall())
    assert statuses == {d.name: "finished" for d in demo.DEMOS}
    fresh = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    fresh.run()
    assert not fresh.exception, fresh.exception
    assert fresh.sidebar.selectbox[0].value == _run_ids(tmp_path / "app.duckdb")["aragog"]
    table = metrics_table(fresh)
    assert set(demo.ARAGOG_SETTINGS) <= set(table.columns)
    assert table.loc["rouge_l", "minilm_top1_chunk64 n"] == "107/107"
    assert 0 < table.loc["rouge_l", "msmarco-distilroberta_top3_chunk256"] < 1
    assert table.loc["rouge_l", "judge"] == "deterministic"
    assert any("heuristic" in info.value for info in fresh.info)
    assert demo.start_demos(store, None) is None  # every demo finished: a later start computes nothing


def test_a_demo_build_stopped_mid_way_is_resumed_on_the_next_start(app, tmp_path):
    store = open_store(tmp_path / "app.duckdb")  # the demo runs created, then the process died before scoring
    runs = dict((d.key, run_id) for d, run_id in demo.demo_runs(store))
    app.run()
    assert not app.exception, app.exception
    demo.wait_for_demos(store, timeout=300)
    assert _run_ids(tmp_path / "app.duckdb") == runs  # resumed, not created again
    fresh = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    fresh.run()
    assert metrics_table(fresh).loc["rouge_l", "mpnet_top2_chunk128 n"] == "107/107"


def test_a_run_without_scores_says_so(app, tmp_path):
    from evaluators import loaders
    from evaluators.runs import lifecycle

    app.run()  # starts the demo build
    store = open_store(tmp_path / "app.duckdb")
    demo.wait_for_demos(store, timeout=300)
    golden = store.save_dataset(loaders.load(demo.DEMO_GOLDEN, role="golden")).dataset_id
    outputs = store.save_dataset(loaders.load(demo.DEMO_OUTPUTS, role="outputs")).dataset_id
    run_id = lifecycle.start_stored(store, golden, [outputs],
                                    lifecycle.RunSpec(name="empty", metrics=["exact_match"]))
    fresh = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)  # a new session: not on an unfinished run
    fresh.run()
    assert not fresh.exception, fresh.exception
    opened = fresh.session_state["run_id"]
    assert fresh.sidebar.selectbox[0].value == opened != run_id and store.run(opened)["status"] == "finished"
    fresh = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    fresh.session_state["run_id"] = run_id  # the run picked in the sidebar
    fresh.run()
    assert not fresh.exception, fresh.exception
    assert fresh.sidebar.selectbox[0].value == run_id
    assert any("no scores yet" in info.value for info in fresh.info)
