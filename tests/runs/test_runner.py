"""Background runs (evaluators.runs.runner) and the engine's per-metric progress and cancellation, on real
DuckDB files: the demo golden set and outputs, lexical metrics (no model, so it stays fast)."""
import json
import threading
import time

import pytest

from evaluators.queries import datasets as qd
from evaluators import judges, loaders
from evaluators.runs import engine, lifecycle
from evaluators.demo import DEMO_GOLDEN, DEMO_OUTPUTS
from evaluators.judges import OfflineJudge, OpenAIJudge
from evaluators.runs.runner import MetricState, RunManager, Snapshot
from evaluators.judges import prompts
from evaluators.store import close_store, open_store
from tests.helpers.openai_server import Reply, start_server
from tests.helpers.seed_000 import SEED_000_CHUNKS, SEED_000_EXTRACTION, SEED_000_VERIFICATION

LEXICAL = ["exact_match", "keyword_coverage", "rouge_l", "dont_know"]
N_SAMPLES = 206  # 103 demo questions x 2 methods
TIMEOUT = 300  # seconds; generous: the test machine is shared


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "runs.duckdb"
    yield open_store(path)
    close_store(path)


@pytest.fixture
def demo(store):
    golden = store.save_dataset(loaders.load(DEMO_GOLDEN, role="golden")).dataset_id
    outputs = store.save_dataset(loaders.load(DEMO_OUTPUTS, role="outputs")).dataset_id
    return golden, outputs


def _run(store, demo, metrics=LEXICAL, **kwargs):
    golden, outputs = demo
    return lifecycle.start_stored(store, golden, [outputs], lifecycle.RunSpec(metrics=metrics, **kwargs))


def _cells(store, run_id):
    rows = store.cursor().execute(
        "SELECT question_id, method, metric, status, created_at FROM scores WHERE run_id = ?", [run_id]).fetchall()
    return {(q, m, metric): (status, created) for q, m, metric, status, created in rows}


def _wait_until(predicate, timeout=TIMEOUT):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_two_runs_at_once_both_finish_with_every_cell_once(store, demo):
    manager = RunManager()
    first, second = _run(store, demo), _run(store, demo, metrics=["exact_match", "number_match"])
    manager.start(store, first, batch_size=1)  # one commit per sample: both stay busy a while
    manager.start(store, second, batch_size=1)
    assert sorted(manager.running()) == sorted([first, second])

    for run_id, metrics in ((first, LEXICAL), (second, ["exact_match", "number_match"])):
        snap = manager.wait(run_id, TIMEOUT)
        assert snap.status == "finished" and not snap.active and snap.error is None
        assert snap.done == snap.total == N_SAMPLES * len(metrics) and snap.fraction == 1
        assert {m: (s.done, s.total) for m, s in snap.metrics.items()} == {m: (N_SAMPLES, N_SAMPLES) for m in metrics}
        assert all(s.computed == N_SAMPLES for s in snap.metrics.values())
        assert store.run(run_id)["status"] == "finished"
        cells = _cells(store, run_id)
        assert len(cells) == N_SAMPLES * len(metrics) and {s for s, _ in cells.values()} <= {"ok", "not_applicable"}
    assert manager.running() == []


def test_cancel_mid_run_then_resume_finishes_without_duplicates(store, demo):
    manager = RunManager()
    run_id = _run(store, demo)
    total = N_SAMPLES * len(LEXICAL)
    manager.start(store, run_id, batch_size=1)
    _wait_until(lambda: manager.snapshot(run_id).done >= 40)
    assert manager.cancel(run_id)
    snap = manager.wait(run_id, TIMEOUT)
    assert snap.status == "cancelled" and snap.cancel_requested
    assert store.run(run_id)["status"] == "cancelled"
    before = _cells(store, run_id)
    assert 40 <= len(before) < total and snap.done == len(before)  # what was computed is stored
    assert not manager.cancel(run_id)  # nothing left to cancel

    cells = qd.run_cells(store, run_id)
    assert int(cells["n_missing"].sum()) == total - len(before) and int(cells["n_failed"].sum()) == 0

    snap = manager.start(store, run_id, batch_size=50)  # resume
    snap = manager.wait(run_id, TIMEOUT)
    assert snap.status == "finished" and snap.done == snap.total == total
    assert sum(s.computed for s in snap.metrics.values()) == total - len(before)  # only what was missing
    after = _cells(store, run_id)
    assert len(after) == total
    assert all(after[key] == value for key, value in before.items())  # not recomputed
    assert store.cursor().execute("SELECT count(*), count(DISTINCT (question_id, method, metric)) FROM scores "
                                  "WHERE run_id = ?", [run_id]).fetchall() == [(total, total)]
    assert store.run(run_id)["status"] == "finished"


def test_a_run_started_from_another_thread_than_the_stores_works_while_pages_read(store, demo):
    manager = RunManager()
    run_id = _run(store, demo)
    started = {}
    starter = threading.Thread(target=lambda: started.setdefault("snap", manager.start(store, run_id, batch_size=2)))
    starter.start()
    starter.join()
    assert started["snap"].run_id == run_id
    reads = 0
    while manager.is_running(run_id):  # the main thread reads the store while the worker writes it
        assert len(qd.run_cells(store, run_id)) == len(LEXICAL)
        reads += 1
    assert reads > 0
    assert manager.wait(run_id).status == "finished"
    assert len(_cells(store, run_id)) == N_SAMPLES * len(LEXICAL)


def test_a_live_run_is_not_started_twice(store, demo):
    manager = RunManager()
    run_id = _run(store, demo)
    manager.start(store, run_id, batch_size=1)
    manager.start(store, run_id, batch_size=1)
    assert [t.name for t in threading.enumerate()].count(f"ragscope-run-{run_id}") == 1
    assert manager.wait(run_id, TIMEOUT).status == "finished"
    assert len(_cells(store, run_id)) == N_SAMPLES * len(LEXICAL)


def test_a_failing_run_reports_its_error_and_the_run_says_failed(store, demo, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    manager = RunManager()
    run_id = _run(store, demo, metrics=["exact_match", "faithfulness"], 
                  judge=OpenAIJudge("m", "http://127.0.0.1:9/v1"))
    snap = manager.wait(manager.start(store, run_id).run_id, TIMEOUT)
    assert snap.status == "failed" and "no API key" in snap.error
    run = store.run(run_id)
    assert run["status"] == "failed" and "no API key" in run["error"]
    assert manager.snapshot("no-such-run") is None
    with pytest.raises(KeyError):
        manager.start(store, "no-such-run")


def test_engine_reports_every_metric_per_batch_and_stops_on_cancel(store, demo):
    run_id = _run(store, demo)
    reports, cancel = [], threading.Event()

    def on_metric(metric, metric_done, metric_total, done, total):
        reports.append((metric, metric_done, metric_total, done, total))
        if len(reports) == len(LEXICAL) + 12:  # the opening reports, then one batch and two metrics of the next
            cancel.set()

    status = engine.execute_run(store, run_id, batch_size=100, on_metric=on_metric, cancel=cancel)
    assert status == "cancelled" and store.run(run_id)["status"] == "cancelled"
    total = N_SAMPLES * len(LEXICAL)
    assert reports[:len(LEXICAL)] == [(m, 0, N_SAMPLES, 0, total) for m in LEXICAL]
    # each metric as it starts on a batch, then when it has scored it
    assert reports[len(LEXICAL):] == [
        ("exact_match", 0, N_SAMPLES, 0, total), ("exact_match", 100, N_SAMPLES, 100, total),
        ("keyword_coverage", 0, N_SAMPLES, 100, total), ("keyword_coverage", 100, N_SAMPLES, 200, total),
        ("rouge_l", 0, N_SAMPLES, 200, total), ("rouge_l", 100, N_SAMPLES, 300, total),
        ("dont_know", 0, N_SAMPLES, 300, total), ("dont_know", 100, N_SAMPLES, 400, total),
        ("exact_match", 100, N_SAMPLES, 400, total), ("exact_match", 200, N_SAMPLES, 500, total),
        ("keyword_coverage", 100, N_SAMPLES, 500, total), ("keyword_coverage", 200, N_SAMPLES, 600, total),
    ]
    cells = _cells(store, run_id)  # the cancelled batch keeps the two metrics it finished
    per_metric = {m: sum(1 for (_, _, metric) in cells if metric == m) for m in LEXICAL}
    assert per_metric == {"exact_match": 200, "keyword_coverage": 200, "rouge_l": 100, "dont_know": 100}

    statuses = []
    reports.clear()
    status = engine.execute_run(store, run_id, progress=lambda d, t: statuses.append(store.run(run_id)["status"]),
                                on_metric=lambda *r: reports.append(r))
    assert status == "finished" and statuses[0] == "running"  # a resumed run says so while it works
    assert reports[:len(LEXICAL)] == [("exact_match", 200, N_SAMPLES, 600, total),
                                      ("keyword_coverage", 200, N_SAMPLES, 600, total),
                                      ("rouge_l", 100, N_SAMPLES, 600, total),
                                      ("dont_know", 100, N_SAMPLES, 600, total)]
    assert reports[-1] == ("dont_know", N_SAMPLES, N_SAMPLES, total, total)
    assert len(_cells(store, run_id)) == total


def test_a_run_of_some_methods_scores_only_those(store, demo):
    run_id = _run(store, demo, metrics=["exact_match"], methods=["local_search"])
    assert store.run(run_id)["n_samples"] == 103
    assert engine.execute_run(store, run_id) == "finished"
    assert {m for (_, m, _) in _cells(store, run_id)} == {"local_search"} and len(_cells(store, run_id)) == 103
    with pytest.raises(ValueError, match="nothing to evaluate"):
        _run(store, demo, methods=["no_such_method"])


def test_eta_sums_each_metrics_remaining_cells_at_its_own_pace():
    timed = {
        "slow": MetricState(done=5, total=20, computed=5, seconds=5.0),  # 1 s per cell, 15 left
        "fast": MetricState(done=5, total=20, computed=5, seconds=0.5),  # 0.1 s per cell, 15 left
        "resumed": MetricState(done=20, total=20),  # finished in an earlier session: nothing left
    }
    snap = Snapshot("r", "running", 30, 60, timed, elapsed=5.5, cancel_requested=False)
    assert snap.metric_seconds_left("slow") == pytest.approx(15)
    assert snap.metric_seconds_left("fast") == pytest.approx(1.5)
    assert snap.metric_seconds_left("resumed") == 0
    assert snap.eta_seconds == pytest.approx(16.5)
    untimed = Snapshot("r", "running", 30, 80, timed | {"new": MetricState(done=0, total=20)}, 5.5, False)
    assert untimed.metric_seconds_left("new") is None and untimed.eta_seconds is None  # no guess from others
    assert Snapshot("r", "starting", 0, 0, {}, 0.1, False).eta_seconds is None
    assert Snapshot("r", "finished", 60, 60, {}, 9.0, False).eta_seconds == 0
    assert OfflineJudge().batch_size == engine.BATCH_SIZE and OpenAIJudge("m", concurrency=8).batch_size == 64


def test_a_key_lent_for_a_run_reaches_its_judge_and_is_never_stored(store, tmp_path, monkeypatch):
    key = "sk-lent-for-one-run-only"
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    golden, outputs = tmp_path / "g.jsonl", tmp_path / "o.jsonl"
    golden.write_text("".join(json.dumps({"question_id": f"q{i}", "question": f"Question {i}?",
                                          "reference": "Mostly exciting."}) + "\n" for i in range(3)))
    outputs.write_text("".join(json.dumps({"question_id": f"q{i}", "method": "local", "answer": "Game changer.",
                                           "contexts": list(SEED_000_CHUNKS)}) + "\n" for i in range(3)))
    ids = (store.save_dataset(loaders.load(golden, role="golden")).dataset_id,
           store.save_dataset(loaders.load(outputs, role="outputs")).dataset_id)
    manager = RunManager()
    with start_server() as server:
        server.responder = lambda body: Reply.json(
            SEED_000_EXTRACTION if prompts.task_of(body["messages"]) == "extraction"
            else SEED_000_VERIFICATION)
        run_id = _run(store, ids, metrics=["faithfulness"], 
                      judge=OpenAIJudge("m", server.base_url, concurrency=2))
        snap = manager.wait(manager.start(store, run_id, api_key=key).run_id, TIMEOUT)
        assert snap.status == "finished", snap.error
        assert server.request_count == 6  # extraction + verification per sample
    assert {s for s, _ in _cells(store, run_id).values()} == {"ok"}
    assert run_id not in judges._lent_keys  # returned when the worker ended
    cur = store.cursor()
    texts = cur.execute("SELECT coalesce(config::VARCHAR, '') || coalesce(error, '') FROM runs").fetchall()
    texts += cur.execute("SELECT coalesce(request, '') || coalesce(response, '') || coalesce(error, '') "
                         "FROM judge_calls").fetchall()
    texts += cur.execute("SELECT response FROM judge_cache").fetchall()
    assert len(texts) > 6 and not any(key in t for (t,) in texts)
    cur.execute("CHECKPOINT")
    assert key.encode() not in (tmp_path / "runs.duckdb").read_bytes()


def test_the_pace_leaves_out_each_metrics_first_batch_which_loads_the_models():
    from evaluators.runs.runner import Job

    job = Job("r")
    job.on_metric("m", 0, 40, 0, 40)  # the engine's opening report
    job.on_metric("m", 0, 40, 0, 40)  # starts on the first batch...
    time.sleep(1.0)  # ... which loads the models
    job.on_metric("m", 10, 40, 10, 40)
    job.on_metric("m", 10, 40, 10, 40)  # the second batch: warm
    time.sleep(0.05)
    job.on_metric("m", 20, 40, 20, 40)
    state = job.snapshot().metrics["m"]
    assert (state.computed, state.warm_computed) == (20, 10) and state.seconds >= 1.05
    # the warm pace (~5 ms a cell), not the mean since the start (>= 1.05 s / 20 = 52 ms)
    assert state.seconds_per_cell == pytest.approx(state.warm_seconds / 10) and state.seconds_per_cell < 0.04
    assert job.snapshot().eta_seconds == pytest.approx(20 * state.seconds_per_cell)
