"""Several people at once (issue 12) on one DuckDB file: two browser sessions start runs at the same time, labels
are imported and annotations saved while a run writes, a CLI run works beside a session's run. Every cell is
stored exactly once, no write is lost, every session sees every run. Real parts: AppTest sessions of app.py on
a file in tmp_path, sharing the process's one RunManager and Store as a Streamlit server's sessions do."""
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from streamlit.testing.v1 import AppTest

from evaluators import loaders
from evaluators.runs import engine, lifecycle
from evaluators.metrics import REGISTRY
from evaluators.records import ERROR_STATUSES
from evaluators.store import close_store, open_store
from tests.helpers.shared_db import free_for_others, held_elsewhere
from ui.common import run_manager
from tests.helpers import ROOT

TIMEOUT = 300  # seconds; generous: the test machine is shared
METHODS = ("basic", "local")
# x 2 methods: a dozen batches of up to engine.BATCH_SIZE samples per run, each committed on its own, so two runs
# started a moment apart write in turns for a while (seconds) and a page reads between their commits
N_QUESTIONS = 6000
LEXICAL = [m.id for m in REGISTRY.values() if m.family == "lexical"]  # what "Deterministic only" picks
EARLIER = 4  # questions of the finished run that people rate


def _inputs(tmp_path: Path, stem: str, n: int) -> tuple[Path, Path]:
    """A golden set of `n` questions and both methods' answers (numbers, keywords, an abstention now and then,
    so the lexical metrics have work and more than one status)."""
    golden, outputs = tmp_path / f"{stem}_golden.jsonl", tmp_path / f"{stem}_outputs.jsonl"
    golden.write_text("".join(json.dumps({
        "question_id": f"q{i}", "question": f"When did the town of Vale {i} build its stone bridge?",
        "reference": f"The town of Vale {i} built its stone bridge in {1800 + i % 200}, after the flood."}) + "\n"
        for i in range(n)))
    outputs.write_text("".join(json.dumps({
        "question_id": f"q{i}", "method": method,
        "answer": ("I don't know." if i % 7 == 0 else
                   f"Vale {i} built the bridge in {1800 + (i + j) % 200} [1]." if method == "basic" else
                   f"The town of Vale {i} built its stone bridge in {1800 + i % 200}."),
        "contexts": [f"Vale {i} is a town on the river.", f"The bridge of Vale {i} dates from {1800 + i % 200}."]})
        + "\n" for i in range(n) for j, method in enumerate(METHODS)))
    return golden, outputs


@pytest.fixture
def team(tmp_path, monkeypatch, navigation_pages):
    """A database with a large golden set and outputs stored and one small finished run (so the app opens
    without building the demos, and people have a run to rate); RAGSCOPE_DB names it for the app."""
    import streamlit as st

    db = tmp_path / "team.duckdb"
    store = open_store(db)
    big = _inputs(tmp_path, "big", N_QUESTIONS)
    golden_id = store.save_dataset(loaders.load(big[0], role="golden")).dataset_id
    outputs_id = store.save_dataset(loaders.load(big[1], role="outputs")).dataset_id
    small = [store.save_dataset(loaders.load(path, role=role)).dataset_id
             for path, role in zip(_inputs(tmp_path, "small", EARLIER), ("golden", "outputs"))]
    earlier = lifecycle.start_stored(store, small[0], [small[1]],
                                     lifecycle.RunSpec(metrics=["exact_match"], name="rated by people"))
    assert engine.execute_run(store, earlier) == "finished"
    monkeypatch.setenv("RAGSCOPE_DB", str(db))
    monkeypatch.chdir(ROOT)
    st.cache_resource.clear()  # a RunManager and Store of this test's own
    yield SimpleNamespace(db=db, store=store, golden=golden_id, outputs=outputs_id, earlier=earlier, big=big)
    manager = run_manager()
    for run_id in manager.running():  # a failed test leaves no worker writing into the next one's teardown
        manager.cancel(run_id)
        manager.wait(run_id, TIMEOUT)
    st.cache_resource.clear()
    close_store(db)


def _session(page: str) -> AppTest:
    """A browser session of the app, opened on `page`."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page(page)
    at.run()
    assert not at.exception, at.exception
    return at


def _choose(at: AppTest, team, name: str) -> None:
    """Evaluate: the big golden set and outputs, both methods, the deterministic metrics, a run name."""
    at.selectbox(key="eval-golden").set_value(team.golden)
    at.run()
    at.multiselect(key="eval-outputs").set_value([team.outputs])  # the small outputs answer q0..q3 too
    at.run()
    at.button(key="eval-pick-lexical").click()
    at.run()
    at.text_input(key="eval-name").input(name)
    at.run()
    assert not at.exception, at.exception
    assert at.multiselect(key="eval-methods").value == list(METHODS)
    cells = f"{2 * N_QUESTIONS:,} samples (2 methods x up to {N_QUESTIONS:,} questions) x {len(LEXICAL)} metrics"
    assert any(c.value.startswith(cells) for c in at.caption), [c.value for c in at.caption]
    assert not at.button(key="eval-start").disabled


def _start(at: AppTest) -> str:
    at.button(key="eval-start").click()
    at.run()
    assert not at.exception, at.exception
    return at.selectbox(key="eval-run").value  # the page picks the run it started


def _until_done(sessions: list[AppTest], run_ids: list[str]) -> None:
    """Poll every session (what the run panel's fragment timer does in a browser) until no run is computed."""
    manager, deadline = run_manager(), time.monotonic() + TIMEOUT
    while any(manager.is_running(r) for r in run_ids):
        assert time.monotonic() < deadline, "a run did not end"
        for at in sessions:
            at.run()
            assert not at.exception, at.exception
        time.sleep(0.1)
    for run_id in run_ids:
        snap = manager.wait(run_id, TIMEOUT)
        assert snap.status == "finished", snap.error


def _run_ids(options) -> set[str]:
    """The run ids of a run picker, whose options read "... (run_id)"."""
    return {option.rsplit(" (", 1)[1].rstrip(")") for option in options}


def _assert_complete(store, run_id: str, n_questions: int = N_QUESTIONS, metrics=LEXICAL) -> None:
    """The run is finished with exactly one cell per question, method and metric, each with a status."""
    run = store.run(run_id)
    assert run["status"] == "finished" and run["n_samples"] == 2 * n_questions, run
    rows = store.cursor().execute("SELECT question_id, method, metric, status FROM scores WHERE run_id = ?",
                                  [run_id]).fetchall()
    expected = {(f"q{i}", m, metric) for i in range(n_questions) for m in METHODS for metric in metrics}
    assert len(rows) == len(expected)  # no cell twice
    assert {r[:3] for r in rows} == expected  # none missing
    statuses = {r[3] for r in rows}
    assert None not in statuses and not statuses & set(ERROR_STATUSES), statuses
    assert {"ok", "not_applicable"} <= statuses  # e.g. the checks metric: the golden set has no checks


def _commits(store, run_id: str) -> list:
    """When each batch of the run's scores was committed (write_scores stamps a batch with one time)."""
    return [t for t, in store.cursor().execute(
        "SELECT DISTINCT created_at FROM scores WHERE run_id = ? ORDER BY 1", [run_id]).fetchall()]


def test_two_sessions_start_runs_at_once_and_both_are_stored_whole_and_seen_by_both(team):
    alice, bob = _session("pages/evaluate.py"), _session("pages/evaluate.py")
    _choose(alice, team, "alice's run")
    _choose(bob, team, "bob's run")
    first = _start(alice)
    second = _start(bob)
    assert first != second and team.store.run(second)["name"] == "bob's run"
    # Both workers were alive as Bob's page was drawn: the runs overlap (the page says so to everyone).
    assert any(c.value.startswith("2 runs under way in this app") for c in bob.caption), [c.value for c in bob.caption]
    assert run_manager().snapshot(first).active

    _until_done([alice, bob], [first, second])
    for run_id in (first, second):
        _assert_complete(team.store, run_id)
    alices, bobs = _commits(team.store, first), _commits(team.store, second)
    assert len(alices) > 1 and len(bobs) > 1
    assert bobs[0] < alices[-1] and alices[0] < bobs[-1]  # their batches were written in turns

    everyone = {team.earlier, first, second}
    for at in (alice, bob):
        at.run()  # a rerun, as the next click does
        assert not at.exception, at.exception
        assert _run_ids(at.sidebar.selectbox[0].options) == everyone
        assert _run_ids(at.selectbox(key="eval-run").options) == everyone
        assert any(s.value.startswith("Finished.") for s in at.success)


RATINGS_HEADER = "question_id,method,annotator,faithfulness,faithfulness_reason,correctness\n"


def _ratings() -> tuple[bytes, int]:
    """Two people's ratings of every answer of the finished run (2 dimensions each), and how many."""
    rows = [f"q{i},{method},{who},{(i + j) % 5 + 1},reason {i} {j},{'correct' if i % 2 else 'wrong'}"
            for i in range(EARLIER) for method in METHODS for j, who in enumerate(("ann", "bob"))]
    return (RATINGS_HEADER + "\n".join(rows) + "\n").encode(), 2 * len(rows)


def _annotate_while_running(store, run_ids: list[str], running: str, saved: list[tuple[str, str]],
                            errors: list[BaseException]) -> None:
    """Erin labels answers as Error analysis saves them (a score override, then tags and a note), one after
    another, on the finished run and on the one being computed, as long as that one runs."""
    try:
        _annotate(store, run_ids, running, saved)
    except BaseException as exc:  # noqa: BLE001 -- the test thread reports it
        errors.append(exc)


def _annotate(store, run_ids: list[str], running: str, saved: list[tuple[str, str]]) -> None:
    manager, i = run_manager(), 0
    while manager.is_running(running) and i < 400:
        run_id = run_ids[i % len(run_ids)]
        question, method, note = f"q{i % EARLIER}", METHODS[i % 2], f"erin's note {i}"
        if i % 2:
            saved.append((store.add_annotation(run_id=run_id, question_id=question, method=method, author="erin",
                                               metric="exact_match", label=None, override_value=1.0, note=note,
                                               judge_label=None, judge_value=0.0), note))
        else:
            saved.append((store.add_annotation(run_id=run_id, question_id=question, method=method, author="erin",
                                               tags=["wrong-entity", f"t{i}"], note=note), note))
        i += 1
        time.sleep(0.02)  # a moment between two saves: the page's rerun after each


def test_labels_imported_and_annotations_saved_while_a_run_writes_all_land(team):
    carol, dave = _session("pages/evaluate.py"), _session("pages/data.py")
    _choose(carol, team, "carol's run")
    ratings, n_ratings = _ratings()
    dave.selectbox(key="labels-run").set_value(team.earlier)
    dave.file_uploader(key="labels-upload").set_value(("ratings.csv", ratings, "text/csv"))
    dave.run()
    assert not dave.button(key="labels-import").disabled

    running = _start(carol)
    saved, errors = [], []
    erin = threading.Thread(target=_annotate_while_running,
                            args=(team.store, [team.earlier, running], running, saved, errors))
    erin.start()
    manager, deadline = run_manager(), time.monotonic() + TIMEOUT
    while not _commits(team.store, running):  # the run has written its first batch: it writes now
        assert manager.is_running(running) and time.monotonic() < deadline, "the run wrote no batch"
        time.sleep(0.05)
    dave.button(key="labels-import").click()
    dave.run()
    assert not dave.exception, dave.exception
    assert dave.success and dave.success[0].value.startswith(f"imported {n_ratings} ratings of 2 dimensions")
    assert manager.snapshot(running).active  # the import landed while the run was writing

    _until_done([carol, dave], [running])
    erin.join(TIMEOUT)
    assert not erin.is_alive() and not errors, errors
    _assert_complete(team.store, running)

    stored = team.store.cursor().execute(
        "SELECT annotation_id, run_id, author, source, note, created_at FROM annotations").fetchall()
    imported = [r for r in stored if r[3] == "ratings.csv"]
    assert len(imported) == n_ratings and {r[1] for r in imported} == {team.earlier}
    erins = {r[0]: r for r in stored if r[2] == "erin"}
    assert len(stored) == n_ratings + len(saved) and len(erins) == len(saved)  # nothing lost, nothing else
    assert {(a, erins[a][4]) for a, _ in saved} == set(saved)  # each with its own note
    assert {r[1] for r in erins.values()} == {team.earlier, running}
    commits = _commits(team.store, running)
    assert any(commits[0] < r[5] < commits[-1] for r in erins.values())  # saved between two of the run's batches


def test_a_cli_run_and_a_sessions_run_on_the_same_data_write_in_turns_and_the_session_sees_both(team):
    """Beside tests/store/test_shared_db.py (a CLI run while the app's manager runs one): here the app's run is started
    and followed on Evaluate, whose every rerun holds the file while the CLI waits for it, the CLI stores the files
    the app stored already (found by content, no second copy), and the same session lists the CLI's run."""
    frank = _session("pages/evaluate.py")
    _choose(frank, team, "frank's run")
    golden, outputs = team.big
    said = team.db.with_name("cli.log")  # a file, not a pipe: its progress bar must never wait for a reader
    with open(said, "w") as log:
        cli = subprocess.Popen(
            [sys.executable, "-m", "evaluators", "run", "--golden", str(golden), "--outputs", str(outputs),
             "--metrics", ",".join(LEXICAL), "--name", "from the CLI", "--db", str(team.db)],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "RAGSCOPE_DB_WAIT": str(TIMEOUT)})
    try:
        deadline = time.monotonic() + TIMEOUT
        while not (cli_run := team.store.cursor().execute(
                "SELECT run_id FROM runs WHERE name = 'from the CLI'").fetchall()):
            assert cli.poll() is None, said.read_text()
            assert time.monotonic() < deadline, "the CLI created no run"
            time.sleep(0.05)
        cli_run = cli_run[0][0]
        ours = _start(frank)  # while the CLI evaluates
        manager = run_manager()
        while manager.is_running(ours) or cli.poll() is None:
            assert time.monotonic() < deadline, "a run did not end"
            frank.run()
            assert not frank.exception, frank.exception
            time.sleep(0.1)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    assert cli.wait(TIMEOUT) == 0, said.read_text()
    assert manager.wait(ours, TIMEOUT).status == "finished"
    for run_id in (ours, cli_run):
        _assert_complete(team.store, run_id)
    assert team.store.run(cli_run)["golden_dataset_id"] == team.golden  # the stored copy, found by content
    assert team.store.cursor().execute("SELECT count(*) FROM datasets").fetchall() == [(4,)]
    # The runs overlapped (which process's batches go first is the file lock's choice: not asserted)
    theirs, mine = team.store.run(cli_run), team.store.run(ours)
    assert mine["created_at"] < theirs["finished_at"] and theirs["created_at"] < mine["finished_at"]

    frank.run()  # the next rerun of the same session
    assert not frank.exception, frank.exception
    everyone = {team.earlier, ours, cli_run}
    assert _run_ids(frank.sidebar.selectbox[0].options) == everyone
    assert _run_ids(frank.selectbox(key="eval-run").options) == everyone


def test_a_write_that_waited_for_another_process_lets_go_of_the_file_when_it_ends(team):
    """A run's last write (its status) takes the file outside any lease; when a CLI job held the file just then,
    the write waits, and once done lets go at once, not when the garbage collector gets round to it."""
    assert free_for_others(team.db)  # nothing of this process holds the file now
    with held_elsewhere(team.db) as holder:
        waited = threading.Event()
        writer = threading.Thread(target=lambda: team.store.finish_run(team.earlier, "finished"))
        team.store.on_busy = waited.set
        writer.start()
        assert waited.wait(TIMEOUT)  # the write found the file held
        holder.let_go()
        assert holder.closed(TIMEOUT)
        writer.join(TIMEOUT)
        assert not writer.is_alive()
    assert free_for_others(team.db)
