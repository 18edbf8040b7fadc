"""The app and `python -m evaluators` share one DuckDB file: each process holds it only for a unit of work
(evaluators.store leases) and waits while the other does. Real files, real subprocesses."""
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest
from streamlit.testing.v1 import AppTest

from evaluators import loaders, queries
from evaluators.runs import engine, lifecycle
from evaluators.demo import DEMO_GOLDEN, DEMO_OUTPUTS
from evaluators.runs.runner import RunManager
from evaluators.store import Store, StoreLocked, close_store, open_store
from tests.helpers.shared_db import free_for_others, held_elsewhere
from tests.helpers import ROOT

LEXICAL = ["exact_match", "keyword_coverage", "rouge_l", "dont_know"]


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "shared.duckdb"
    yield path
    close_store(path)


def test_the_file_is_held_only_while_a_lease_or_cursor_is_alive(db):
    store = open_store(db)
    assert free_for_others(db)  # opened and migrated, then let go of
    with store.lease():
        with store.lease():  # nested: the inner end does not let go
            pass
        assert not free_for_others(db)
    assert free_for_others(db)
    cur = store.cursor()
    assert not free_for_others(db)
    del cur
    assert free_for_others(db)


def test_threads_share_one_connection_and_the_last_lease_lets_go(db):
    store = open_store(db)
    inside, leave = threading.Barrier(3), threading.Event()

    def unit():
        with store.lease():
            store.cursor().execute("SELECT count(*) FROM runs").fetchall()  # a cursor of its own, no 'busy'
            inside.wait(timeout=30)
            leave.wait(timeout=30)

    threads = [threading.Thread(target=unit) for _ in range(2)]
    for t in threads:
        t.start()
    inside.wait(timeout=30)
    assert not free_for_others(db)
    leave.set()
    for t in threads:
        t.join()
    assert free_for_others(db)


def test_migrations_are_checked_once_per_store_not_per_lease(db, monkeypatch):
    calls = []
    monkeypatch.setattr(Store, "_migrate", lambda self: calls.append(self.path))
    store = open_store(db)
    for _ in range(3):
        with store.lease():
            store.cursor()
    assert calls == [str(db)]


def test_a_lease_waits_for_another_process_then_gives_up_after_its_bound(db):
    store = open_store(db)
    with held_elsewhere(db, delay=1) as holder:
        with pytest.raises(StoreLocked, match="in use by another process"):
            with store.lease(wait=0.3):
                pass
        busy = []
        holder.let_go()  # it lets go in a second
        start = time.monotonic()
        with store.lease(wait=60, on_busy=lambda: busy.append(time.monotonic())):
            waited = time.monotonic() - start
            assert store.cursor().execute("SELECT count(*) FROM runs").fetchall() == [(0,)]
        assert holder.closed(60)
        assert busy and waited >= 0.5


WRITER = """
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[5])
from evaluators.store import open_store

db, who, n, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
store = open_store(db)
print("ready", flush=True)
while not go.exists():
    time.sleep(0.01)
for i in range(n):
    held = store.cursor()  # a unit of work that takes a while: the file is held while the cursor lives
    store.add_annotation(run_id="r", question_id=f"{who}-{i}", method="m", author=who, note="x")
    time.sleep(0.03)
    del held
    time.sleep(0.05)  # a pause, as between two batches
"""


def test_two_processes_alternate_writes_on_one_file_and_lose_none(db, tmp_path):
    open_store(db)  # the schema, once
    close_store(db)
    go, n = tmp_path / "go", 20
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(db), who, str(n), str(go), str(ROOT)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for who in ("a", "b")]
    for w in writers:  # both have opened the store (and let go of it) before either writes
        assert w.stdout.readline().strip() == "ready", w.stderr.read()
    go.touch()
    for w in writers:
        assert w.wait(timeout=120) == 0, w.stderr.read()
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT author, question_id FROM annotations ORDER BY created_at").fetchall()
    con.close()
    assert sorted(rows) == sorted((who, f"{who}-{i}") for who in ("a", "b") for i in range(n))
    switches = sum(1 for (x, _), (y, _) in zip(rows, rows[1:]) if x != y)
    assert switches >= 2  # interleaved, not one process after the other


def _small_inputs(tmp_path: Path, n: int = 10) -> tuple[Path, Path]:
    """The first `n` demo questions and both methods' answers to them."""
    golden, outputs = tmp_path / "golden.csv", tmp_path / "outputs.jsonl"
    lines = DEMO_GOLDEN.read_text().splitlines(keepends=True)
    golden.write_text("".join(lines[:n + 1]))  # the questions are one line each
    ids = {line.split(",", 1)[0] for line in lines[1:n + 1]}
    outputs.write_text("".join(line for line in DEMO_OUTPUTS.read_text().splitlines(keepends=True)
                               if json.loads(line)["question_id"] in ids))
    return golden, outputs


def _listed(at: AppTest) -> set[str]:
    """The run ids in the sidebar's run picker (shown as "name (run_id)")."""
    return {option.rsplit(" (", 1)[1].rstrip(")") for option in at.sidebar.selectbox[0].options}


def test_a_cli_run_while_the_app_serves_the_file_shows_in_the_app_without_a_restart(db, tmp_path, monkeypatch):
    import streamlit as st

    store = open_store(db)
    golden_id = store.save_dataset(loaders.load(DEMO_GOLDEN, role="golden")).dataset_id
    outputs_id = store.save_dataset(loaders.load(DEMO_OUTPUTS, role="outputs")).dataset_id
    first = lifecycle.start_stored(store, golden_id, [outputs_id], lifecycle.RunSpec(metrics=LEXICAL))
    engine.execute_run(store, first)  # a finished run: the app starts without building the demos
    monkeypatch.setenv("RAGSCOPE_DB", str(db))
    monkeypatch.chdir(ROOT)
    manager, stop, second = RunManager(), threading.Event(), None

    def keep_reading():  # pages and their polls meanwhile: short units of work, back to back
        while not stop.is_set():
            with store.lease():
                queries.runs(store)
                time.sleep(0.2)
            time.sleep(0.05)

    reader = threading.Thread(target=keep_reading, daemon=True)
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.run()
        assert not at.exception, at.exception
        assert _listed(at) == {first}

        golden, outputs = _small_inputs(tmp_path)
        held = store.cursor()  # the app is busy with the file as the CLI starts: the CLI waits, and says so
        cli = subprocess.Popen(
            [sys.executable, "-m", "evaluators", "run", "--golden", str(golden), "--outputs", str(outputs),
             "--metrics", ",".join(LEXICAL), "--name", "from the CLI", "--db", str(db)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "RAGSCOPE_DB_WAIT": "120"})
        said = []
        while not any("busy" in line for line in said):
            said.append(cli.stderr.readline())
            assert said[-1], "".join(said)
        del held
        # while the CLI evaluates, the app runs one of its own in the background, a commit per sample
        second = lifecycle.start_stored(store, golden_id, [outputs_id],
                                        lifecycle.RunSpec(metrics=LEXICAL, name="from the app"))
        manager.start(store, second, batch_size=1)
        reader.start()
        out, err = cli.communicate(timeout=600)
        assert cli.returncode == 0, "".join(said) + err
        assert "".join(said).count("busy") + err.count("busy") == 1  # said once
        assert manager.wait(second, timeout=300).status == "finished"

        fresh = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)  # a new session, the same process
        fresh.run()
        assert not fresh.exception, fresh.exception
        runs = queries.runs(store).set_index("run_id")
        cli_run = runs.index[runs["name"] == "from the CLI"][0]
        assert _listed(fresh) == {first, second, cli_run}
        assert runs.loc[cli_run, "status"] == runs.loc[second, "status"] == "finished"
        cells = dict(store.cursor().execute("SELECT run_id, count(*) FROM scores GROUP BY ALL").fetchall())
        assert cells[cli_run] == 20 * len(LEXICAL) and cells[second] == 206 * len(LEXICAL)  # no write lost
    finally:
        stop.set()
        if reader.is_alive():
            reader.join()
        if second is not None:
            manager.wait(second, timeout=300)
        st.cache_resource.clear()


def test_the_app_says_who_holds_the_file_when_it_cannot_open_it(tmp_path, monkeypatch):
    """A first start while another process keeps the file past $RAGSCOPE_DB_WAIT: a message, not a traceback;
    once the file is free, a reload opens it."""
    import streamlit as st

    from evaluators import demo

    db = tmp_path / "held.duckdb"
    monkeypatch.setenv("RAGSCOPE_DB", str(db))
    monkeypatch.setenv("RAGSCOPE_DB_WAIT", "1")
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(demo, "start_demos", lambda store, manager: None)  # an empty file: no demo build here
    with held_elsewhere(db):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.run()
        assert not at.exception, at.exception
        assert "in use by another process" in at.error[0].value and "reload this page" in at.error[0].value
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.run()
        assert not at.exception and not at.error, (at.exception, at.error)
        assert any("No run yet" in c.value for c in at.sidebar.caption)  # the empty file, opened
    finally:
        st.cache_resource.clear()
        close_store(db)
