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
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    yield at
    import streamlit as st

    st.cache_resource.clear()
    close_store(db)


def test_first_start_opens_on_the_evaluated_demo(app):
    app.run()
    assert not app.exception, app.exception
    assert "Demo: GraphRAG-Bench" in app.subheader[0].value
    table = app.dataframe[0].value
    assert {"basic_search", "local_search"} <= set(table.columns)
    assert "/103)" in table.loc["rouge_l", "local_search"]
    assert table.loc["faithfulness", "judge"] == "offline" and table.loc["rouge_l", "judge"] == "deterministic"
    assert any("heuristic" in info.value for info in app.info)
