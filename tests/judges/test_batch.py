"""`run --batch`: the openai judge's requests through the Batch API (judges/batch_api.py), end to end: the real
CLI in a subprocess, the loopback server's /v1/files and /v1/batches, real DuckDB files."""
import json
import os
import signal
import subprocess
import sys
import time

import duckdb
import pytest

from evaluators.judges import prompts
from tests.helpers.cli import cli
from tests.helpers.openai_server import Reply, start_server
from tests.helpers import ROOT
from tests.helpers.openai_runs import BROKEN_QUESTION, KEY, openai_run_files, responder

METRICS = "faithfulness,wp_precision,wp_recall,context_precision,answer_correctness_f1,judge_correctness,verdict"
PRICES = ("--price-in", "2", "--price-out", "8")  # judge-model has no list price
SCORED = {"ok", "not_applicable"}  # q2's answer has no claims: its claim metrics do not apply


def _cli(db, *args, background=False):
    env = {"OPENAI_API_KEY": KEY, "RAGSCOPE_BATCH_POLL": "0.05"}
    if background:  # a process, to be killed mid-batch
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")} | env
        return subprocess.Popen([sys.executable, "-m", "evaluators", "run", "--db", str(db), *args], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    return cli("run", *args, db=db, env=env)


def _new_run(db, server, tmp_path, *extra):
    golden, outputs = openai_run_files(tmp_path)
    return _cli(db, "--golden", str(golden), "--outputs", f"local_search={outputs}", "--judge", "openai",
                "--model", "judge-model", "--base-url", server.base_url, "--metrics", METRICS, *PRICES, *extra)


def _query(db, sql):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _scores(db):
    return _query(db, "SELECT question_id, method, metric, value, status, label FROM scores "
                      "ORDER BY question_id, method, metric")


def _chat_requests(server):
    return [r for r in server.requests if r.path.endswith("/chat/completions")]


@pytest.fixture(scope="module")
def call_by_call(tmp_path_factory):
    """The scores and cost of the run made call by call, the reference every batch run must equal."""
    tmp_path = tmp_path_factory.mktemp("call_by_call")
    db = tmp_path / "http.duckdb"
    with start_server() as server:
        server.responder = responder(refuse_q2=False)
        done = _new_run(db, server, tmp_path)
        assert done.returncode == 0, done.stderr
        assert server.batches_created == 0
    scores = _scores(db)
    assert {s for *_, s, _ in scores} == SCORED
    return scores, _spent(db)


def _spent(db) -> dict:
    """The run's cost as the ledger prices it (queries.run_cost)."""
    from evaluators import queries
    from evaluators.store import close_store, open_store

    run_id = _query(db, "SELECT run_id FROM runs")[0][0]
    store = open_store(db)
    try:
        with store.lease():
            return queries.run_cost(store, run_id)
    finally:
        close_store(db)


def test_a_batch_run_scores_every_cell_as_the_same_run_made_call_by_call_at_half_the_price(tmp_path, call_by_call):
    db = tmp_path / "batch.duckdb"
    with start_server() as server:
        server.responder = responder(refuse_q2=False)
        server.batch_polls = 3  # in_progress for 3 polls
        done = _new_run(db, server, tmp_path, "--batch")
        assert done.returncode == 0, done.stderr
        assert _chat_requests(server) == []  # every request went through a batch
        # two rounds: extraction and holistic of both samples, then their verifications
        assert server.batches_created == 2 and server.files_uploaded == 2
        assert sorted(len(ids) for ids in server.batch_inputs.values()) == [2, 4]
    assert "Batch API" in done.stderr  # the estimate is at the batch price
    assert _scores(db) == call_by_call[0]
    # the same tokens at half the price
    spent, reference = _spent(db), call_by_call[1]
    assert (spent["input_tokens"], spent["output_tokens"]) == (reference["input_tokens"], reference["output_tokens"])
    assert spent["usd"] == pytest.approx(reference["usd"] / 2)
    calls = _query(db, "SELECT purpose, status, batch_id, latency_ms FROM judge_calls")
    assert len(calls) == 6 and {s for _, s, *_ in calls} == {"ok"}
    assert {b for _, _, b, _ in calls} == set(server.batches)
    assert _query(db, "SELECT count(*) FROM judge_batches WHERE consumed AND status = 'completed'") == [(2,)]
    assert json.loads(_query(db, "SELECT config FROM runs")[0][0])["batch"] is True


def test_failed_lines_of_a_batch_are_retried_in_the_next_and_failing_ones_become_statuses(tmp_path, call_by_call):
    db = tmp_path / "batch.duckdb"
    normal = responder(refuse_q2=False)
    throttled = []

    def reply(body):
        if BROKEN_QUESTION in json.dumps(body):
            return Reply.status(500, "the server failed")  # every attempt: the cells end judge_error
        if prompts.task_of(body["messages"]) == prompts.HOLISTIC and not throttled:
            throttled.append(body)
            return Reply.status(429, "Rate limit reached")  # once: answered in the next batch
        return normal(body)

    with start_server() as server:
        server.responder = reply
        first = _new_run(db, server, tmp_path, "--batch")
        assert first.returncode == 0, first.stderr
        assert "--retry-failed" in first.stdout
        statuses = dict(((q, m), s) for q, _, m, _, s, _ in _scores(db))
        assert {s for (q, _), s in statuses.items() if q == "q1"} == {"ok"}
        assert {s for (q, _), s in statuses.items() if q == "q2"} == {"judge_error"}
        calls = _query(db, "SELECT question_id, purpose, status, error, batch_id FROM judge_calls")
        q2 = [c for c in calls if c[0] == "q2"]
        # extraction and holistic, 4 attempts each (the default max_attempts), each in its own batch
        assert len(q2) == 8 and {c[2] for c in q2} == {"server_error"} and len({c[4] for c in q2}) == 4
        assert all("HTTP 500" in c[3] for c in q2)
        assert sorted(s for q, p, s, *_ in calls if (q, p) == ("q1", "holistic")) == ["ok", "rate_limited"]

        run_id = _query(db, "SELECT run_id FROM runs")[0][0]
        server.responder = normal
        before = set(server.batches)
        retry = _cli(db, "--retry-failed", run_id)
        assert retry.returncode == 0, retry.stderr
        new = set(server.batches) - before
        assert len(new) == 2  # q2's extraction and holistic, then its verification
        resent = [json.loads(server.files[server.batches[b]["input_file_id"]].decode().splitlines()[0])
                  for b in new]
        assert all(BROKEN_QUESTION in json.dumps(line["body"]) for line in resent)  # q1 is not asked again
    assert _scores(db) == call_by_call[0]


def test_an_expired_batch_fails_its_unanswered_requests_as_timeouts_and_the_next_batch_answers_them(
        tmp_path, call_by_call):
    db = tmp_path / "batch.duckdb"
    with start_server() as server:
        server.responder = responder(refuse_q2=False)
        server.batch_answered = 1  # the first batch expires after one line
        done = _new_run(db, server, tmp_path, "--batch")
        assert done.returncode == 0, done.stderr
        statuses = [b["status"] for b in server.batches.values()]
    assert statuses[0] == "expired" and set(statuses[1:]) == {"completed"}
    expired = _query(db, "SELECT status, error FROM judge_calls WHERE status <> 'ok'")
    assert len(expired) == 3 and {s for s, _ in expired} == {"timeout"}
    assert all("batch_expired" in e for _, e in expired)
    assert _scores(db) == call_by_call[0]


def test_a_batch_run_killed_while_its_batch_runs_resumes_with_that_batch_and_the_same_scores(tmp_path, call_by_call):
    db = tmp_path / "batch.duckdb"
    golden, outputs = openai_run_files(tmp_path)
    with start_server() as server:
        server.responder = responder(refuse_q2=False)
        server.batch_polls = 10**9  # the batch stays in progress
        proc = _cli(db, "--golden", str(golden), "--outputs", f"local_search={outputs}", "--judge", "openai",
                    "--model", "judge-model", "--base-url", server.base_url, "--metrics", METRICS, *PRICES,
                    "--batch", background=True)
        try:
            deadline = time.monotonic() + 120
            # the batch is recorded before its first poll
            while not any(r.path.startswith("/v1/batches/") for r in server.requests):
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline
                time.sleep(0.05)
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.kill()
            proc.communicate()
        (first,) = server.batches
        assert _query(db, "SELECT batch_id, consumed FROM judge_batches") == [(first, False)]
        run_id = _query(db, "SELECT run_id FROM runs")[0][0]

        server.batch_polls = 1
        resumed = _cli(db, "--resume", run_id)
        assert resumed.returncode == 0, resumed.stderr
        assert _chat_requests(server) == [] and server.batches_created == 2  # the stored one and the verifications
        (second,) = set(server.batches) - {first}
        assert not set(server.batch_inputs[first]) & set(server.batch_inputs[second])
    assert _scores(db) == call_by_call[0]
    assert _query(db, "SELECT count(DISTINCT batch_id), count(*) FROM judge_calls") == [(2, 6)]
    assert _query(db, "SELECT bool_and(consumed) FROM judge_batches") == [(True,)]


def test_batch_is_for_a_new_run_of_an_llm_judge(tmp_path):
    golden, outputs = openai_run_files(tmp_path)
    offline = _cli(tmp_path / "x.duckdb", "--golden", str(golden), "--outputs", str(outputs), "--batch")
    assert offline.returncode == 2 and "--batch apply to an LLM judge" in offline.stderr
    resumed = _cli(tmp_path / "x.duckdb", "--resume", "run-x", "--batch")
    assert resumed.returncode == 2 and "Batch API mode it was started with" in resumed.stderr


def test_in_batches_a_schema_refusal_falls_back_as_over_http_and_identical_requests_share_a_line():
    from evaluators.judges.openai_protocol import JudgeClient
    from evaluators.records import Chunk, GoldenItem, RagOutput, Sample
    from tests.helpers.seed_000 import SEED_000_HOLISTIC

    def reply(body):
        if body["response_format"]["type"] == "json_schema":
            return Reply.json_schema_unsupported()
        return Reply.json(SEED_000_HOLISTIC)

    sample = Sample(GoldenItem("q1", "Who?", "Alice."), RagOutput("q1", "m", "Alice.", (Chunk("1", "Alice did."),)))
    with start_server() as server:
        server.responder = reply
        (http,) = JudgeClient(server.base_url, "m", api_key=KEY).rate_sync([sample])
        batched = JudgeClient(server.base_url, "m", api_key=KEY, batch=True, batch_poll=0.01).rate_sync([sample] * 3)
        assert server.batches_created == 3  # bounded schema, plain schema, JSON mode: one line each
        assert [len(ids) for ids in server.batch_inputs.values()] == [1, 1, 1]
    assert {r.holistic for r in batched} == {http.holistic} and http.holistic is not None
    assert [c.status for c in batched[0].calls] == [c.status for c in http.calls] == [
        "schema_unsupported", "schema_unsupported", "ok"]
    assert len({c.batch_id for c in batched[0].calls}) == 3 and {c.batch_id for c in http.calls} == {None}
