"""A private copy of the evaluated demo database (`demo` fixture), for tests that write to it."""
from __future__ import annotations

import shutil

import pytest

from evaluators.store import close_store, open_store


@pytest.fixture
def demo(demo_db_file, tmp_path):
    db = tmp_path / "demo.duckdb"
    shutil.copy(demo_db_file, db)
    store = open_store(db)
    run_id = store.cursor().execute("SELECT run_id FROM runs").fetchall()[0][0]
    yield store, run_id
    close_store(db)
