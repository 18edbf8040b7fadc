"""The minimal app on a fresh database opens on the evaluated demo run."""
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from evaluators.store import close_store

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def app(tmp_path, monkeypatch):
    db = tmp_path / "app.duckdb"
    monkeypatch.setenv("RAGSCOPE_DB", str(db))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)  # a first start builds the demo (~1 min)
    yield at
    import streamlit as st

    st.cache_resource.clear()
    close_store(db)


def test_first_start_opens_on_the_evaluated_demo(app):
    app.run()
    assert not app.exception, app.exception
    assert app.title[0].value == "Overview" and any("Demo\\: GraphRAG\\-Bench" in c.value for c in app.caption)
    table = app.dataframe[0].value
    assert {"basic_search", "local_search", "local_search 95% CI", "local_search n"} <= set(table.columns)
    assert table.loc["rouge_l", "local_search n"] == "103/103"
    assert 0 < table.loc["rouge_l", "local_search"] < 1
    assert table.loc["faithfulness", "judge"] == "offline" and table.loc["rouge_l", "judge"] == "deterministic"
    assert any("heuristic" in info.value for info in app.info)


def test_a_first_start_stopped_mid_way_is_resumed_on_the_next(app, tmp_path):
    from evaluators import engine, loaders
    from evaluators.demo import DEMO_GOLDEN, DEMO_OUTPUTS, DEMO_RUN_NAME
    from evaluators.store import open_store

    store = open_store(tmp_path / "app.duckdb")  # a demo run created, then the process died before scoring
    golden = store.save_dataset(loaders.load(DEMO_GOLDEN, role="golden")).dataset_id
    outputs = store.save_dataset(loaders.load(DEMO_OUTPUTS, role="outputs")).dataset_id
    engine.create_run(store, golden_dataset_id=golden, outputs_dataset_ids=[outputs], name=DEMO_RUN_NAME,
                      metrics=["exact_match", "rouge_l"])
    app.run()
    assert not app.exception, app.exception
    assert app.dataframe[0].value.loc["rouge_l", "local_search n"] == "103/103"


def test_a_run_without_scores_says_so(app, tmp_path):
    from evaluators import engine, loaders
    from evaluators.demo import DEMO_GOLDEN, DEMO_OUTPUTS
    from evaluators.store import open_store

    app.run()  # builds the finished demo run
    store = open_store(tmp_path / "app.duckdb")
    golden = store.save_dataset(loaders.load(DEMO_GOLDEN, role="golden")).dataset_id
    outputs = store.save_dataset(loaders.load(DEMO_OUTPUTS, role="outputs")).dataset_id
    run_id = engine.create_run(store, golden_dataset_id=golden, outputs_dataset_ids=[outputs], name="empty",
                               metrics=["exact_match"])
    fresh = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)  # a new session: newest run first
    fresh.run()
    assert not fresh.exception, fresh.exception
    assert fresh.selectbox[0].value == run_id
    assert any("no scores yet" in info.value for info in fresh.info)
