"""Replies that are not strict JSON: a server that ignores response_format (tests/helpers/openai_server.py's
`server.prose`: prose around a fenced ```json block, as Anthropic's OpenAI-compatible endpoint answers) is read for
its JSON, validated by the same reply model and repaired once; its calls say the schema was not enforced. Prose with
no JSON is a recorded failure, never a verdict."""
from __future__ import annotations

import json

import pytest

from evaluators.judges import OpenAIJudge, reply_json
from evaluators.judges.openai_protocol import JudgeClient
from evaluators.records import JUDGE_ERROR, OK
from tests.helpers.openai_server import Reply, in_prose, start_server
from tests.helpers.seed_000 import (KEY, SEED_000_EXTRACTION, SEED_000_HOLISTIC, SEED_000_REPLIES,
                                     SEED_000_VERIFICATION, seed_000_sample)
from tests.helpers.seed_runs import calls, cells, judged_run, seed_reply, store  # noqa: F401 (store: a fixture)

PROSE_ONLY = "Having read the context carefully, I believe the answer is mostly supported, though one claim is not."


def judge_one(server, **options):
    client = JudgeClient(server.base_url, "claude-sonnet-4-5", api_key=KEY, backoff_base=0.01, **options)
    return client.judge_sync([seed_000_sample()])[0]


@pytest.mark.parametrize("content, found", [
    ('{"a": 1}', ('{"a": 1}', True)),
    ('  {"a": [1, 2]}\n', ('{"a": [1, 2]}', True)),
    ("Sure.\n```json\n{\"a\": {\"b\": \"a } in a string\"}}\n```\nDone {really}.",
     ('{"a": {"b": "a } in a string"}}', False)),
    ("```\nno json here\n```\nBut here: {\"a\": 2} and {\"b\": 3}", ('{"a": 2}', False)),  # the first object
    ("Braces {like these} are prose; the JSON is {\"a\": {\"b\": 1}}.", ('{"a": {"b": 1}}', False)),  # outermost
    (PROSE_ONLY, None),
    ('{"answer_claims": [', None),  # JSON cut short: nothing to read, the caller says why
    ("{" * 10_000, None),
])
def test_the_json_of_a_reply(content, found):
    assert reply_json.found(content) == found


def test_prose_wrapped_json_is_read_and_the_calls_say_the_schema_was_not_enforced(store, tmp_path):
    with start_server() as server:
        server.prose, server.responder = True, seed_reply
        run_id, status = judged_run(store, tmp_path, OpenAIJudge("claude-sonnet-4-5", server.base_url), n=3)
    assert status == "finished" and {s for _, _, s, _ in cells(store, run_id)} == {OK}
    rows = calls(store, run_id, "status, schema_enforced, response")
    assert len(rows) == 9 and {(status, enforced) for status, enforced, _ in rows} == {(OK, False)}
    assert all("```json" in json.loads(r)["choices"][0]["message"]["content"] for _, _, r in rows)  # raw, as sent
    claims = store.cursor().execute("SELECT count(*) FROM claims WHERE run_id = ?", [run_id]).fetchall()[0][0]
    assert claims == 3 * 4  # the claims of the JSON inside the prose


def test_a_server_that_enforces_the_schema_is_recorded_so(store, tmp_path):
    with start_server() as server:
        server.responder = seed_reply
        run_id, _ = judged_run(store, tmp_path, OpenAIJudge("gpt-4o-mini", server.base_url), n=1)
    assert [e for (e,) in calls(store, run_id, "schema_enforced")] == [True] * 3


def test_json_mode_is_not_an_enforced_schema():
    with start_server() as server:
        server.responder = lambda body: (Reply.json_schema_unsupported()
                                         if body["response_format"]["type"] == "json_schema" else seed_reply(body))
        judgment = judge_one(server)
    assert judgment.status == OK
    assert [(c.status, c.schema_enforced) for c in judgment.calls] == [
        ("schema_unsupported", None), ("schema_unsupported", None), (OK, False), (OK, False)]


def test_prose_whose_json_does_not_validate_is_repaired_once():
    with start_server() as server:
        server.prose = True
        server.enqueue(Reply.json({"claims": ["not the schema"]}), *SEED_000_REPLIES)
        judgment = judge_one(server)
        repair = server.requests[1].body["messages"]
    assert judgment.status == OK
    assert [(c.purpose, c.status) for c in judgment.calls] == [
        ("extraction", "invalid"), ("extraction_repair", OK), ("verification", OK)]
    assert "answer_claims: Field required" in repair[-1]["content"] and "```json" in repair[-2]["content"]
    assert judgment.matrix.answer_claims == tuple(SEED_000_EXTRACTION["answer_claims"])


def test_prose_with_no_json_is_a_recorded_failure_never_a_verdict(store, tmp_path):
    with start_server() as server:
        server.responder = lambda body: Reply.text(PROSE_ONLY)
        run_id, status = judged_run(store, tmp_path, OpenAIJudge("claude-sonnet-4-5", server.base_url), n=2)
    judged = [(m, s, d) for _, m, s, d in cells(store, run_id) if m != "exact_match"]
    assert status == "finished" and len(judged) == 2 * 2
    assert all(s == JUDGE_ERROR and "holds no JSON object" in d and "after one repair" in d for _, s, d in judged)
    assert store.cursor().execute("SELECT count(*) FROM claims WHERE run_id = ?", [run_id]).fetchall()[0][0] == 0
    rows = calls(store, run_id, "purpose, status, schema_enforced")
    assert {(s, e) for _, s, e in rows} == {("invalid", None)}  # each call and its repair, kept
    assert sorted(p for p, _, _ in rows) == sorted(["extraction", "extraction_repair", "holistic",
                                                    "holistic_repair"] * 2)


def test_holistic_ratings_in_prose_are_read():
    with start_server() as server:
        server.prose = True
        server.enqueue(Reply.json(SEED_000_HOLISTIC))
        rated = JudgeClient(server.base_url, "m", api_key=KEY).rate_sync([seed_000_sample()])[0]
    assert rated.status == OK and rated.holistic.ratings["overall"] == SEED_000_HOLISTIC["overall_score"]
    assert rated.calls[0].schema_enforced is False


def test_a_verification_in_prose_fills_the_matrix():
    with start_server() as server:
        server.prose = True
        server.enqueue(Reply.json(SEED_000_EXTRACTION), Reply.json(SEED_000_VERIFICATION))
        judgment = judge_one(server)
    assert judgment.status == OK and judgment.error is None and all(None not in row for row in
                                                                     judgment.matrix.answer_vs_chunks)
    assert in_prose("{}").startswith("Here is my assessment")
