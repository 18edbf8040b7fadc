"""A database file that cannot be opened or written: one clear message with the path and what to do (exit 3 in the
CLI, no traceback), nothing half written, and never a download (DuckDB fetches a scanner to open a SQLite file)."""
import re
import resource
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from evaluators.store import close_store, open_store
from tests.helpers.cli import DEMO, cli, table_counts
from tests.helpers import ROOT


def _refused(db: Path, why: str) -> str:
    out = cli("runs", db=db)
    assert out.returncode == 3, out.stderr
    assert "Traceback" not in out.stderr
    assert f"cannot use the database {db}: {why}" in out.stderr and "--db" in out.stderr
    return out.stderr


def test_a_directory(tmp_path):
    (tmp_path / "dir.duckdb").mkdir()
    _refused(tmp_path / "dir.duckdb", "it is a directory")


def test_a_text_file_is_not_a_database_and_is_left_as_it_was(tmp_path):
    db = tmp_path / "notes.duckdb"
    db.write_text("my notes\n")
    _refused(db, "it is not a DuckDB database")
    assert db.read_text() == "my notes\n"


def test_a_sqlite_file_is_refused_without_fetching_an_extension(tmp_path):
    db = tmp_path / "other.duckdb"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    stderr = _refused(db, "it is not a DuckDB database")
    # Before: DuckDB tried to download sqlite_scanner from extensions.duckdb.org ("Failed to download extension").
    assert "download" not in stderr.lower() and "install" not in stderr.lower()


def test_the_store_can_neither_install_nor_load_extensions_nor_read_files(tmp_path):
    (tmp_path / "x.csv").write_text("a\n1\n")
    store = open_store(tmp_path / "t.duckdb")
    try:
        cur = store.cursor()
        settings = dict(cur.execute(
            "SELECT name, value FROM duckdb_settings() WHERE name IN ('autoinstall_known_extensions', "
            "'autoload_known_extensions', 'enable_external_access', 'lock_configuration')").fetchall())
        assert settings == {"autoinstall_known_extensions": "false", "autoload_known_extensions": "false",
                            "enable_external_access": "false", "lock_configuration": "true"}
        with pytest.raises(duckdb.Error):  # locked: no statement turns it back on
            cur.execute("SET autoinstall_known_extensions = true")
        with pytest.raises(duckdb.Error):
            cur.execute(f"SELECT * FROM read_csv('{tmp_path / 'x.csv'}')").fetchall()
    finally:
        close_store(tmp_path / "t.duckdb")


def test_a_place_that_cannot_be_written():
    # sysfs takes no new files, for root too (a chmod'ed folder would not stop root)
    _refused(Path("/sys/ragscope-test.duckdb"), "this place cannot be written")


def test_the_app_shows_the_message_instead_of_a_traceback(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    db = tmp_path / "notes.duckdb"
    db.write_text("my notes\n")
    monkeypatch.setenv("RAGSCOPE_DB", str(db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    assert not at.exception
    shown = [re.sub(r"\\(.)", r"\1", e.value) for e in at.error]  # as read: markdown's escapes undone
    assert any(f"cannot use the database {db}: it is not a DuckDB database" in text for text in shown), shown


def _no_bigger_than(limit: int):
    def apply() -> None:  # in the child: a write past `limit` bytes fails with EFBIG, as on a full disk
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_a_full_disk_stops_the_run_with_a_message_and_leaves_nothing_half_written(tmp_path):
    db = tmp_path / "full.duckdb"
    open_store(db)
    close_store(db)
    run = [sys.executable, "-m", "evaluators", "run", "--db", str(db), "--golden", str(DEMO / "novel_44557_golden.csv"),
           "--outputs", str(DEMO / "novel_44557_outputs.jsonl"), "--metrics", "exact_match,rouge_l"]
    out = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, timeout=300,
                         preexec_fn=_no_bigger_than(db.stat().st_size + 64_000))
    assert out.returncode == 3, out.stderr
    assert "Traceback" not in out.stderr
    assert f"cannot use the database {db}: the disk is full" in out.stderr and "--resume" in out.stderr
    counts = table_counts(db)  # what was committed is whole: every dataset with all its rows, or none
    assert counts["scores"] == 0 and counts["golden_items"] in (0, 103)
    assert counts["rag_outputs"] in (0, 103, 206)

    again = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, timeout=300)  # room again
    assert again.returncode == 0, again.stderr
    counts = table_counts(db)
    assert (counts["golden_items"], counts["rag_outputs"], counts["scores"]) == (103, 206, 2 * 206)


def test_the_message_is_raised_as_store_unavailable(tmp_path):
    from evaluators.store import StoreUnavailable

    (tmp_path / "dir.duckdb").mkdir()
    with pytest.raises(StoreUnavailable, match="it is a directory"):
        open_store(tmp_path / "dir.duckdb")
