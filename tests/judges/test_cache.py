"""The judge cache (`judge_cache` table, migration 2): a re-run of the same inputs with the same model
and prompt version makes no request. The real CLI (in-process) against the scripted server on
127.0.0.1 (tests/helpers/openai_server.py), a real DuckDB file, as in tests/runs/test_openai_run.py."""
import json

import duckdb

from evaluators.judges import prompts
from evaluators.judges.openai_transport import cache_key
from evaluators.store import MIGRATIONS, SCHEMA_VERSION, Store
from tests.helpers.openai_server import Reply, start_server
from tests.helpers.seed_000 import (SEED_000_ANSWER, SEED_000_EXTRACTION, SEED_000_REPLIES, SEED_000_VERIFICATION,
                                    make_judge, seed_000_sample)
from tests.helpers.openai_runs import BROKEN_QUESTION, cli_with_key, openai_run_files, responder

METRICS = "faithfulness,wp_precision,context_precision,exact_match"


def _run(db, golden, outputs, server, model="judge-model", method="local_search", metrics=METRICS):
    out = cli_with_key(db, "--golden", str(golden), "--outputs", f"{method}={outputs}", "--judge", "openai",
               "--model", model, "--base-url", server.base_url, "--metrics", metrics)
    assert out.returncode == 0, out.stderr
    return out


def _query(db, sql, params=()):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def _latest_run(db):
    return _query(db, "SELECT run_id FROM runs ORDER BY created_at DESC, run_id DESC LIMIT 1")[0][0]


def _scores(db, run_id):
    return sorted(_query(db, "SELECT question_id, method, metric, value, status FROM scores WHERE run_id = ?",
                         [run_id]))


def test_a_rerun_with_the_same_inputs_and_model_makes_no_request(tmp_path):
    golden, outputs = openai_run_files(tmp_path)
    db = tmp_path / "cache.duckdb"
    with start_server() as server:
        server.responder = responder(refuse_q2=False)
        every_call = METRICS + ",judge_overall,answer_relevance"  # the holistic call and the generated questions too
        _run(db, golden, outputs, server, metrics=every_call)
        first_run, first_requests = _latest_run(db), server.request_count
        assert first_requests == 6  # extraction, verification and holistic for q1 and q2

        _run(db, golden, outputs, server, metrics=every_call)
        second_run = _latest_run(db)
        assert second_run != first_run
        assert server.request_count == first_requests  # zero requests

    assert _scores(db, second_run) == _scores(db, first_run)
    first_calls = _query(db, "SELECT question_id, purpose, status, response, input_tokens, output_tokens, cached "
                             "FROM judge_calls WHERE run_id = ? ORDER BY question_id, purpose", [first_run])
    second_calls = _query(db, "SELECT question_id, purpose, status, response, input_tokens, output_tokens, cached, "
                              "latency_ms FROM judge_calls WHERE run_id = ? ORDER BY question_id, purpose",
                          [second_run])
    assert len(first_calls) == len(second_calls) == 6
    assert not any(c[-1] for c in first_calls)
    assert all(c[-2] is True and c[-1] == 0 for c in second_calls)  # cached, no latency
    # same replies and token counts as the calls that paid for them
    assert [c[:6] for c in second_calls] == [c[:6] for c in first_calls]
    cache = _query(db, "SELECT model, prompt_version, purpose FROM judge_cache ORDER BY purpose")
    assert cache == [("judge-model", prompts.PROMPT_VERSION, purpose)
                     for purpose in ("extraction", "holistic", "verification") for _ in range(2)]


def test_another_model_or_a_changed_answer_misses_the_cache(tmp_path):
    golden, outputs = openai_run_files(tmp_path)
    db = tmp_path / "cache.duckdb"
    with start_server() as server:
        server.responder = responder(refuse_q2=False)
        _run(db, golden, outputs, server)
        before = server.request_count

        _run(db, golden, outputs, server, model="other-model")
        assert server.request_count == before + 4  # every request goes out again
        assert {r.body["model"] for r in server.requests[before:]} == {"other-model"}

        changed = tmp_path / "changed.jsonl"
        rows = [json.loads(line) for line in outputs.read_text().splitlines()]
        rows[0]["answer"] = SEED_000_ANSWER + " Changed."
        changed.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
        before = server.request_count
        _run(db, golden, changed, server)
        new = server.requests[before:]
        # q1's extraction carries the new answer, so it is asked again; q2 is unchanged and fully cached.
        assert any("Changed." in json.dumps(r.body) for r in new)
        assert not any(BROKEN_QUESTION in json.dumps(r.body) for r in new)


def test_an_error_reply_is_not_cached_and_a_retry_reaches_the_server(tmp_path):
    golden, outputs = openai_run_files(tmp_path)
    db = tmp_path / "cache.duckdb"
    with start_server() as server:
        server.responder = responder(refuse_q2=True)  # q2: HTTP 401
        _run(db, golden, outputs, server)
        run_id = _latest_run(db)
        assert _query(db, "SELECT count(*) FROM judge_calls WHERE status = 'bad_request'")[0][0] >= 1
        assert _query(db, "SELECT count(*) FROM judge_cache WHERE response LIKE '%Incorrect API key%'")[0][0] == 0
        assert _query(db, "SELECT count(*) FROM judge_cache")[0][0] == 2  # q1's two replies only

        server.responder = responder(refuse_q2=False)
        before = server.request_count
        retry = cli_with_key(db, "--retry-failed", run_id)
        assert retry.returncode == 0, retry.stderr
        new = server.requests[before:]
        assert new and all(BROKEN_QUESTION in json.dumps(r.body) for r in new)  # q2 asked again, q1 not
    assert _query(db, "SELECT count(*) FROM scores WHERE run_id = ? AND status = 'judge_error'", [run_id])[0][0] == 0


class DictCache:
    def __init__(self):
        self.entries: dict[str, dict] = {}

    def get(self, key):
        return self.entries.get(key)

    def put(self, key, **fields):
        self.entries.setdefault(key, fields)


def test_only_each_requests_own_validated_complete_reply_is_cached(tmp_path):
    short = json.loads(json.dumps(SEED_000_VERIFICATION))
    del short["answer_claims"][1]["chunk_verdicts"][2]  # incomplete: validated, but a verdict is missing
    cache = DictCache()
    with start_server() as server:
        server.enqueue(Reply.text('{"answer_claims": ['), Reply.json(SEED_000_EXTRACTION), Reply.json(short))
        first = make_judge(server, cache=cache).judge_sync([seed_000_sample()])[0]
        assert [(c.purpose, c.status) for c in first.calls] == [
            ("extraction", "invalid"), ("extraction_repair", "ok"), ("verification", "incomplete")]
        # only the repair's own reply, under the repair request's own key
        repair_request = json.loads(first.calls[1].request)
        repair_key = cache_key(repair_request, server.base_url, prompts.PROMPT_VERSION)
        assert list(cache.entries) == [repair_key]
        assert cache.entries[repair_key]["purpose"] == "extraction_repair"

        # again: the original extraction and the incomplete verification go out, the repair does not
        before = server.request_count
        server.enqueue(Reply.text('{"answer_claims": ['), Reply.json(SEED_000_VERIFICATION))
        second = make_judge(server, cache=cache).judge_sync([seed_000_sample()])[0]
        assert server.request_count == before + 2
        assert [(c.purpose, c.status, c.cached) for c in second.calls] == [
            ("extraction", "invalid", False), ("extraction_repair", "ok", True), ("verification", "ok", False)]
        assert second.matrix is not None and second.status == "ok"


def test_cache_key_covers_server_model_seed_format_messages_and_prompt_version_not_the_output_limit():
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": 0, "seed": 0,
            "response_format": {"type": "json_object"}}
    url, version = "http://127.0.0.1:8000/v1", prompts.PROMPT_VERSION
    key = cache_key(body, url, version)
    assert cache_key(json.loads(json.dumps(body)), url, version) == key
    for change in ({"model": "n"}, {"seed": 1}, {"temperature": 0.5}, {"response_format": {"type": "text"}},
                   {"messages": [{"role": "user", "content": "y"}]}):
        assert cache_key({**body, **change}, url, version) != key
    # the same model name on another server is another judge; other prompts are other questions
    assert cache_key(body, "http://127.0.0.1:9000/v1", version) != key and cache_key(body, None, version) != key
    assert cache_key(body, url, version + "-next") != key
    # a raised output limit asks the same question: a complete reply to it answers both
    assert (cache_key({**body, "max_tokens": 4096}, url, version)
            == cache_key({**body, "max_completion_tokens": 99}, url, version) == key)


def test_the_same_model_on_two_servers_does_not_share_replies(tmp_path):
    cache = DictCache()
    with start_server() as one, start_server() as two:
        one.enqueue(*SEED_000_REPLIES)
        two.enqueue(*SEED_000_REPLIES)
        make_judge(one, cache=cache).judge_sync([seed_000_sample()])
        second = make_judge(two, cache=cache).judge_sync([seed_000_sample()])[0]
        assert two.request_count == 2 and not any(c.cached for c in second.calls)
        third = make_judge(one, cache=cache).judge_sync([seed_000_sample()])[0]
        assert one.request_count == 2 and all(c.cached for c in third.calls)


def test_migration_from_version_1_to_the_latest_keeps_the_data(tmp_path):
    db = tmp_path / "v1.duckdb"
    con = duckdb.connect(str(db))  # what Store._migrate did when MIGRATIONS held one entry
    con.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER, applied_at TIMESTAMP)")
    con.execute("BEGIN")
    con.execute(MIGRATIONS[0])
    con.execute("INSERT INTO schema_version VALUES (1, now())")
    con.execute("COMMIT")
    con.execute("INSERT INTO runs (run_id, name, created_at, golden_dataset_id, outputs_dataset_ids, judge, metrics, "
                "status) VALUES ('run-1', 'old', now(), 'ds_g', ['ds_o'], 'offline', ['exact_match'], 'finished')")
    con.execute("INSERT INTO scores VALUES ('run-1', 'q1', 'basic', 'exact_match', 1.0, 1.0, 'ok', "
                "'deterministic', NULL, now())")
    con.execute("INSERT INTO scores VALUES ('run-1', 'q1', 'basic', 'verdict', 0.5, 0.5, 'ok', "
                "'offline', 'partial (offline judge_overall 3.4)', now())")
    con.close()

    store = Store(db)
    try:
        assert store.schema_version() == SCHEMA_VERSION == len(MIGRATIONS)
        cur = store.cursor()
        assert cur.execute("SELECT run_id, name, status FROM runs").fetchall() == [("run-1", "old", "finished")]
        assert cur.execute("SELECT metric, value, label, repeats FROM scores ORDER BY metric").fetchall() == [
            ("exact_match", 1.0, None, None), ("verdict", 0.5, "partial", None)]  # migration 9 reads the label
        assert cur.execute("SELECT count(*) FROM judge_cache").fetchall() == [(0,)]
        assert cur.execute("SELECT count(*) FROM generated_questions").fetchall() == [(0,)]  # migration 3

        assert store.cached_reply("k") is None
        store.cache_reply("k", model="m", prompt_version="v", purpose="extraction", response="{}",
                          input_tokens=3, output_tokens=4)
        store.cache_reply("k", model="m", prompt_version="v", purpose="extraction", response="other")  # ignored
        assert store.cached_reply("k") == {"response": "{}", "input_tokens": 3, "output_tokens": 4}
    finally:
        store.close()
