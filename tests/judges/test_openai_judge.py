"""The OpenAI-compatible judge (evaluators/judges/openai_protocol.py over openai_transport.py) against the scripted
server on 127.0.0.1 (tests/helpers/openai_server.py): the real openai 3.x client, real HTTP, scripted faults.

Backoff is shrunk through the constructor (`backoff_base`), so the whole file runs in seconds.
"""
from __future__ import annotations

import dataclasses
import json
import re
import threading
import time

import pytest

from evaluators.judges import openai_transport, prompts
from evaluators.judges.openai_protocol import JudgeClient
from evaluators.judges.openai_transport import BOUNDED
from evaluators.records.judgments import NOT_FOUND, SUPPORTED, ChunkRelevance, JudgeRefused
from evaluators.metrics.claims import claim_metrics
from evaluators.records import JUDGE_ERROR, OK, TIMEOUT, Chunk, GoldenItem, RagOutput, Sample
from tests.helpers.openai_server import Reply, start_server
from tests.helpers.seed_000 import KEY, SEED_000_ANSWER, SEED_000_CHUNKS, SEED_000_EXTRACTION, SEED_000_HOLISTIC, SEED_000_REFERENCE, SEED_000_REPLIES, SEED_000_VERIFICATION, make_judge, seed_000_sample


def sample_with_chunks(n: int, qid: str = "q1") -> Sample:
    contexts = tuple(Chunk(f"doc{i}", f"Chunk text number {i}.") for i in range(n))
    return Sample(GoldenItem(qid, f"Question {qid}?", "The reference."),
                  RagOutput(qid, "basic_search", "The answer.", contexts))


_ID = re.compile(r'^<(?:claim|chunk) id="([ARC]\d+)">$', re.MULTILINE)


def wrapped(task: str, result: dict) -> Reply:
    """A reply as the schema has it: the task's result under its name, null under the others'."""
    return Reply.json({t: result if t == task else None for t in prompts.TASKS})


def all_supported(body: dict) -> Reply:
    """A judge that extracts one claim per side and supports everything it is asked about, by id."""
    if prompts.task_of(body["messages"]) == prompts.EXTRACTION:
        return wrapped(prompts.EXTRACTION, {"answer_claims": ["The answer."], "reference_claims": ["The reference."],
                                            "generated_questions": ["q1?", "q2?", "q3?"]})
    user = body["messages"][1]["content"]
    task = user[user.index("TASK: "):]  # the claims, the chunks to judge and whether to compare
    ids = _ID.findall(task) + re.findall(r"\bC\d+\b", task.partition("CHUNKS TO JUDGE:")[2])
    chunks = [i for i in ids if i.startswith("C")]
    compare = "COMPARE CLAIMS: yes" in user

    def claim(claim_id, other_key):
        item = {"claim_id": claim_id, "chunk_verdicts": [{"chunk_id": c, "verdict": "supported"} for c in chunks]}
        if compare:
            item[other_key] = "supported"
            if other_key == "reference_verdict":
                item["matched_reference_claims"] = ["R1"]
        return item

    return wrapped(prompts.VERIFICATION, {
        "answer_claims": [claim(i, "reference_verdict") for i in ids if i.startswith("A")],
        "reference_claims": [claim(i, "answer_verdict") for i in ids if i.startswith("R")],
        "chunks": [{"chunk_id": c, "relevant": True, "relevance_score": 80, "reason": "on topic"} for c in chunks],
    })


@pytest.fixture
def server():
    with start_server() as s:
        yield s


def judge_one(server, sample=None, **options):
    return make_judge(server, **options).judge_sync([sample or seed_000_sample()])[0]


def statuses(judgment):
    return [(c.purpose, c.status) for c in judgment.calls]


# -- happy path ---------------------------------------------------------------------------------------

def test_seed_000_case_study_builds_the_matrix_and_the_seed_scores(server):
    server.enqueue(*SEED_000_REPLIES)
    judgment = judge_one(server)

    assert (judgment.status, judgment.error) == (OK, None)
    m = judgment.matrix
    assert m.answer_claims == tuple(SEED_000_EXTRACTION["answer_claims"])
    assert m.reference_claims == tuple(SEED_000_EXTRACTION["reference_claims"])
    assert m.chunk_ids == ("1", "2", "3")
    assert m.answer_vs_chunks == ((SUPPORTED, NOT_FOUND, NOT_FOUND), (NOT_FOUND, SUPPORTED, NOT_FOUND))
    assert m.reference_vs_chunks == m.answer_vs_chunks
    assert m.answer_vs_reference == (SUPPORTED, SUPPORTED) and m.reference_vs_answer == (SUPPORTED, SUPPORTED)
    assert m.chunk_relevance == (ChunkRelevance(True, 90, "names a benefit"),
                                 ChunkRelevance(True, 85, "names a downside"),
                                 ChunkRelevance(False, 10, "about timing only"))
    assert m.answer_matches == ((0,), (1,))
    assert judgment.generated_questions == tuple(SEED_000_EXTRACTION["generated_questions"])

    scores = claim_metrics(m)
    assert scores["faithfulness"].value == 1.0
    assert scores["wp_precision"].value == pytest.approx(2 / 3)
    assert statuses(judgment) == [("extraction", OK), ("verification", OK)]


def test_requests_carry_the_schema_temperature_seed_and_static_instructions_first(server):
    server.responder = all_supported
    make_judge(server, seed=7).judge_sync([seed_000_sample(), sample_with_chunks(2, "q2")])

    bodies = [r.body for r in server.requests]
    assert len(bodies) == 4
    for body in bodies:
        assert (body["temperature"], body["seed"], body["model"]) == (0, 7, "judge-model")
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["strict"] is True
        system, user = body["messages"]
        assert system["role"] == "system" and user["role"] == "user"
        # The schema and the system message are the same for every call (a cacheable prefix); the data comes after.
        assert body["response_format"]["json_schema"] == prompts.SCHEMA and system["content"] == prompts.SYSTEM
    extraction, verification = (next(b for b in bodies if SEED_000_ANSWER in b["messages"][1]["content"]
                                     and prompts.task_of(b["messages"]) == task)
                                for task in (prompts.EXTRACTION, prompts.VERIFICATION))
    user = verification["messages"][1]["content"]
    # the sample's calls start alike: question, reference and answer, then (but the extraction's) the chunks
    head = extraction["messages"][1]["content"].partition("TASK: ")[0]
    assert user.startswith(head + "CONTEXT:\n") and SEED_000_CHUNKS[0] not in head
    assert user.index(f'<chunk id="C1">\n{SEED_000_CHUNKS[0]}\n</chunk>') < user.index("TASK: verification")
    assert '<claim id="A1">\nThe answer.\n</claim>' in user and '<claim id="R1">\nThe reference.\n</claim>' in user
    assert user.endswith("CHUNKS TO JUDGE: C1, C2, C3\n\nCOMPARE CLAIMS: yes")


@pytest.mark.parametrize("n_chunks, n_calls", [(0, 2), (16, 2), (17, 3), (32, 3), (33, 4)])
def test_one_verification_call_per_16_chunks_merged_by_id(server, n_chunks, n_calls):
    server.responder = all_supported
    judgment = judge_one(server, sample_with_chunks(n_chunks))

    assert judgment.status == OK and server.request_count == n_calls == len(judgment.calls)
    m = judgment.matrix
    assert m.chunk_ids == tuple(f"doc{i}" for i in range(n_chunks))
    assert m.answer_vs_chunks == ((SUPPORTED,) * n_chunks,)
    assert all(c.relevant for c in m.chunk_relevance)
    assert m.answer_vs_reference == (SUPPORTED,)  # from the first batch only
    users = [r.body["messages"][1]["content"] for r in server.requests[1:]]
    assert sum("COMPARE CLAIMS: yes" in u for u in users) == 1
    if n_chunks > 16:
        assert any(u.endswith("CHUNKS TO JUDGE: " + ", ".join(f"C{j}" for j in range(17, min(n_chunks, 32) + 1))
                              + "\n\nCOMPARE CLAIMS: no") for u in users)


# -- transient faults: retried ----------------------------------------------------------------------

def test_rate_limit_waits_for_retry_after_then_succeeds(server):
    server.enqueue(Reply.status(429, retry_after=0.3), *SEED_000_REPLIES)
    judgment = judge_one(server)

    assert judgment.status == OK
    assert statuses(judgment) == [("extraction", "rate_limited"), ("extraction", OK), ("verification", OK)]
    first, retry = server.requests[:2]
    assert retry.arrived - first.arrived >= 0.3  # Retry-After, not the 0.01 s backoff


def test_server_error_then_ok(server):
    server.enqueue(Reply.status(500), Reply.json(SEED_000_EXTRACTION), Reply.status(503),
                   Reply.json(SEED_000_VERIFICATION))
    judgment = judge_one(server)
    assert judgment.status == OK and claim_metrics(judgment.matrix)["faithfulness"].value == 1.0
    assert [c.status for c in judgment.calls] == ["server_error", OK, "server_error", OK]


def test_a_non_json_body_is_retried(server):
    server.enqueue(Reply.not_json(), Reply.not_json("{bad", content_type="application/json"),
                   *SEED_000_REPLIES)
    judgment = judge_one(server)
    assert judgment.status == OK
    assert [c.status for c in judgment.calls] == ["bad_response", "bad_response", OK, OK]
    assert judgment.calls[0].response == "<html><body>upstream error</body></html>"


def test_persistent_server_error_is_a_judge_error(server):
    server.responder = lambda body: Reply.status(500)
    judgment = judge_one(server, max_attempts=3)
    assert (judgment.status, judgment.matrix) == (JUDGE_ERROR, None)
    assert "HTTP 500" in judgment.error and "after 3 attempts" in judgment.error
    assert server.request_count == 3


def test_failed_verification_keeps_the_claims_and_leaves_its_cells_open(server):
    server.enqueue(Reply.json(SEED_000_EXTRACTION))
    server.responder = lambda body: Reply.status(502)
    judgment = judge_one(server, max_attempts=2)

    assert judgment.status == JUDGE_ERROR and judgment.error.startswith("verification: HTTP 502")
    assert judgment.matrix.answer_claims == tuple(SEED_000_EXTRACTION["answer_claims"])
    scores = claim_metrics(judgment.matrix)
    assert scores["faithfulness"].status == JUDGE_ERROR and scores["context_precision"].status == JUDGE_ERROR
    assert "HTTP 502" in scores["faithfulness"].detail  # the cell says which call failed and how


def test_a_verification_that_times_out_leaves_timeout_cells(server):
    server.enqueue(Reply.json(SEED_000_EXTRACTION))
    server.responder = lambda body: Reply.delay(2)
    judgment = judge_one(server, timeout=0.2, max_attempts=2)

    assert judgment.status == TIMEOUT and judgment.matrix is not None
    scores = claim_metrics(judgment.matrix)
    assert scores["faithfulness"].status == TIMEOUT
    assert "no complete reply within 0.2 s" in scores["faithfulness"].detail
    assert scores["completeness"].status == TIMEOUT
    # A matrix that is whole is not touched by the failure bookkeeping.
    assert claim_metrics(dataclasses.replace(judgment.matrix, missing_status=JUDGE_ERROR, missing_reason=None)
                         )["faithfulness"].status == JUDGE_ERROR


def test_timeout_after_the_last_attempt_is_a_timeout(server):
    server.responder = lambda body: Reply.delay(2)
    started = time.monotonic()
    judgment = judge_one(server, timeout=0.2, max_attempts=2)

    assert (judgment.status, judgment.matrix) == (TIMEOUT, None)
    assert [c.status for c in judgment.calls] == ["timeout", "timeout"]
    assert time.monotonic() - started < 1.5


def test_a_reply_that_trickles_in_times_out_as_a_whole(server):
    """Headers at once, then a byte every 0.1 s: no single read waits 0.5 s, but the reply does."""
    server.responder = lambda body: Reply.trickle(0.1)
    done: list = []
    worker = threading.Thread(target=lambda: done.append(judge_one(server, timeout=0.5, max_attempts=2)), daemon=True)
    started = time.monotonic()
    worker.start()
    worker.join(5)
    assert done, "the judge was still waiting for the reply after 5 s"
    judgment = done[0]
    assert (judgment.status, judgment.matrix) == (TIMEOUT, None)
    assert [c.status for c in judgment.calls] == ["timeout", "timeout"]
    assert "no complete reply within 0.5 s" in judgment.error
    assert server.request_count == 2 and time.monotonic() - started < 2.5


def test_retry_after_beyond_the_cap_is_not_waited_for(server):
    server.responder = lambda body: Reply.status(429, retry_after=900)
    started = time.monotonic()
    judgment = judge_one(server)
    assert judgment.status == JUDGE_ERROR and "asked to wait 900 s, more than 600 s" in judgment.error
    assert server.request_count == 1 and time.monotonic() - started < 1


def test_retry_delay_honours_long_retry_after_and_backs_off_with_jitter():
    judge = JudgeClient(None, "m", api_key=KEY, backoff_base=1, backoff_max=60, max_retry_after=600)
    assert judge.transport.retry_delay(1, 300.0) == 300.0  # above openai's own 120 s limit
    assert judge.transport.retry_delay(1, 601.0) is None
    for retry, ceiling in ((1, 1), (2, 2), (3, 4), (10, 60)):
        delays = {judge.transport.retry_delay(retry, None) for _ in range(20)}
        assert all(ceiling / 2 <= d <= ceiling for d in delays) and len(delays) > 1
    assert openai_transport.retry_after({"retry-after-ms": "1500"}) == 1.5
    assert openai_transport.retry_after({"retry-after": "120"}) == 120.0
    assert openai_transport.retry_after({"retry-after": "soon"}) is None


def test_a_request_the_server_refuses_is_not_retried(server):
    server.responder = lambda body: Reply.status(400, "The prompt was filtered by the content management policy")
    judgment = judge_one(server)
    assert judgment.status == JUDGE_ERROR and "HTTP 400" in judgment.error and server.request_count == 1


def test_a_prompt_too_long_for_the_model_fails_that_call_and_keeps_the_schema(server):
    """ "maximum context length" is no refusal of the schema's bounds: stepping down would cost every later
    request its bounds and a resend, and the prompt would still be too long."""
    server.responder = lambda body: Reply.status(
        400, "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.")
    judge = make_judge(server)
    judgment = judge.judge_sync([sample_with_chunks(3)])[0]
    assert judgment.status == JUDGE_ERROR and "maximum context length" in judgment.error
    assert judge.transport.schema_level == BOUNDED and server.request_count == 1


@pytest.mark.parametrize("code, cause, remedy", [
    (401, "the judge server refused the API key (HTTP 401", "check OPENAI_API_KEY"),
    (403, "the judge server refused this API key access (HTTP 403", "may use model 'judge-model'"),
    (404, "the judge server knows no model 'judge-model' at http://127.0.0.1",
     "check the model name and the base URL")])
def test_a_refused_key_or_an_unknown_model_stops_every_call_at_once(server, code, cause, remedy):
    """No call can succeed: the first refusal ends the whole request, with the cause and what to do;
    no request goes out after it (only those already in flight)."""
    server.responder = lambda body: Reply.status(code, "scripted refusal")
    judge = make_judge(server, concurrency=2)
    with pytest.raises(JudgeRefused) as refused:
        judge.judge_sync([sample_with_chunks(3, f"q{i}") for i in range(10)])
    message = str(refused.value)
    assert cause in message and remedy in message and "scripted refusal" in message and KEY not in message
    assert server.request_count <= 2  # the two in flight at once, nothing after


# -- unusable replies: one repair ---------------------------------------------------------------------

def test_malformed_json_is_repaired_on_the_second_call(server):
    server.enqueue(Reply.text('{"answer_claims": ['), *SEED_000_REPLIES)
    judgment = judge_one(server)

    assert judgment.status == OK
    assert statuses(judgment) == [("extraction", "invalid"), ("extraction_repair", OK), ("verification", OK)]
    repair = server.requests[1].body["messages"]
    assert repair[:2] == server.requests[0].body["messages"]
    assert repair[2] == {"role": "assistant", "content": '{"answer_claims": ['}
    assert "not valid JSON" in repair[3]["content"]


def test_a_huge_reply_is_invalid_unread_and_the_repair_sends_only_its_start(server):
    """A 10 MB reply (a runaway model) is refused by size, without parsing, and the repair call carries a
    bounded excerpt of it: it used to send the 10 MB back (a 10.5 MB request)."""
    server.enqueue(Reply.huge(10_000_000), *SEED_000_REPLIES)
    judgment = judge_one(server)

    assert judgment.status == OK
    assert statuses(judgment) == [("extraction", "invalid"), ("extraction_repair", OK), ("verification", OK)]
    assert f"over the {openai_transport.MAX_REPLY_CHARS:,}-character limit" in judgment.calls[0].error
    assert len(judgment.calls[0].response) < openai_transport.REPAIR_EXCERPT_CHARS + 100  # its record keeps the start
    first, repair = server.requests[:2]
    assert repair.size - first.size < openai_transport.REPAIR_EXCERPT_CHARS + 2_000  # the excerpt and the instruction
    shown = repair.body["messages"][2]["content"]
    assert shown.startswith('{"answer_claims": ["a claim", ') and "9,996,000 more characters not shown" in shown


def test_a_long_malformed_reply_under_the_limit_is_repaired_from_an_excerpt(server):
    server.enqueue(Reply.huge(100_000), *SEED_000_REPLIES)
    judgment = judge_one(server)
    assert judgment.status == OK and "not valid JSON" in judgment.calls[0].error
    assert server.requests[1].size - server.requests[0].size < openai_transport.REPAIR_EXCERPT_CHARS + 2_000


def test_malformed_twice_is_a_judge_error(server):
    server.enqueue(Reply.text("{nope"), Reply.text("still {nope"))
    judgment = judge_one(server)
    assert (judgment.status, judgment.matrix) == (JUDGE_ERROR, None)
    assert "after one repair" in judgment.error and server.request_count == 2


def test_a_reply_not_matching_the_schema_is_repaired(server):
    server.enqueue(Reply.json({"claims": []}), *SEED_000_REPLIES)
    judgment = judge_one(server)
    assert judgment.status == OK
    assert "answer_claims: Field required" in server.requests[1].body["messages"][3]["content"]


def test_placeholder_claims_copied_from_the_prompt_are_repaired(server):
    copied = {"answer_claims": ["..."], "reference_claims": ["..."], "generated_questions": ["...", "...", "..."]}
    server.enqueue(Reply.json(copied), Reply.json(SEED_000_EXTRACTION), Reply.json(SEED_000_VERIFICATION))
    judgment = judge_one(server)
    assert judgment.status == OK and judgment.matrix.answer_claims == tuple(SEED_000_EXTRACTION["answer_claims"])
    assert "placeholder" in judgment.calls[0].error and judgment.calls[0].status == "invalid"


def test_a_reply_cut_off_is_asked_again_with_a_raised_output_limit(server):
    server.enqueue(Reply.json(SEED_000_EXTRACTION), Reply.truncated(SEED_000_VERIFICATION),
                   Reply.json(SEED_000_VERIFICATION))
    judgment = judge_one(server)
    assert judgment.status == OK and [c.status for c in judgment.calls] == [OK, "invalid", OK]
    assert "cut off" in judgment.calls[1].error
    cut, again = server.requests[1].body, server.requests[2].body
    assert "max_tokens" not in cut  # the server's own limit at first
    assert again["max_tokens"] >= 1024 and again["messages"] == cut["messages"]  # the same request, not a repair


def test_replies_cut_off_every_time_end_as_a_judge_error_with_growing_limits(server):
    server.enqueue(*[Reply.truncated(SEED_000_EXTRACTION)] * 3)
    judgment = judge_one(server)
    assert judgment.status == JUDGE_ERROR and "cut off" in judgment.error and judgment.matrix is None
    limits = [r.body.get("max_tokens") for r in server.requests]
    assert limits[0] is None and 1024 <= limits[1] < limits[2] <= openai_transport.MAX_OUTPUT_TOKENS
    assert [c.status for c in judgment.calls] == ["invalid"] * 3


def test_a_reply_cut_off_at_the_judges_own_output_cap_is_not_asked_again(server):
    # Reply.truncated reports as many tokens as it has words: its cut-off half of the extraction's ~30
    server.enqueue(*[Reply.truncated(SEED_000_EXTRACTION)] * 4)
    judgment = judge_one(server, max_output_tokens=8)
    assert judgment.status == JUDGE_ERROR and "cut off" in judgment.error
    assert server.request_count == 1 and [c.status for c in judgment.calls] == ["invalid"]
    capped = judge_one(server, max_output_tokens=2048)  # above what was produced: asked again, up to the cap
    assert [r.body.get("max_tokens") for r in server.requests[1:]] == [None, 1024, 2048]
    assert capped.status == JUDGE_ERROR
    with pytest.raises(ValueError, match="max_output_tokens must be a whole number of 1 or more"):
        make_judge(server, max_output_tokens=0)


def test_a_server_that_wants_max_completion_tokens_gets_it(server):
    refusal = Reply.status(400, "Unsupported parameter: 'max_tokens' is not supported with this model. "
                                "Use 'max_completion_tokens' instead.")
    server.enqueue(Reply.truncated(SEED_000_EXTRACTION), refusal, Reply.json(SEED_000_EXTRACTION),
                   Reply.json(SEED_000_VERIFICATION))
    judgment = judge_one(server)
    assert judgment.status == OK
    resent = server.requests[2].body
    assert "max_tokens" not in resent and resent["max_completion_tokens"] >= 1024


def test_empty_reply_is_a_judge_error(server):
    server.enqueue(Reply.text(""), Reply.text("  "))
    judgment = judge_one(server)
    assert (judgment.status, judgment.matrix) == (JUDGE_ERROR, None) and "empty" in judgment.error


def test_wrong_number_of_verdicts_leaves_only_those_cells_open(server):
    short = json.loads(json.dumps(SEED_000_VERIFICATION))
    del short["answer_claims"][1]["chunk_verdicts"][2]  # A2 x C3 missing
    short["answer_claims"][1]["chunk_verdicts"][0]["verdict"] = "probably"  # not a verdict -> unknown
    server.enqueue(Reply.json(SEED_000_EXTRACTION), Reply.json(short))
    judgment = judge_one(server)

    assert judgment.status == OK and "no verdict for 1 cells" in judgment.error
    assert judgment.matrix.answer_vs_chunks[1] == ("unknown", SUPPORTED, None)
    assert statuses(judgment)[-1] == ("verification", "incomplete")
    scores = claim_metrics(judgment.matrix)
    assert scores["wp_precision"].status == JUDGE_ERROR  # needs every answer claim x chunk pair
    assert scores["faithfulness"].value == 1.0  # A2 is supported by C2 whatever C3 says
    assert scores["context_precision"].status == OK and scores["answer_correctness_f1"].status == OK


def test_json_schema_refusal_falls_back_to_json_mode_for_good(server):
    def without_structured_outputs(body):
        if body["response_format"]["type"] == "json_schema":
            return Reply.json_schema_unsupported()
        return all_supported(body)

    server.responder = without_structured_outputs
    judge = make_judge(server)
    first = judge.judge_sync([sample_with_chunks(2)])[0]
    assert first.status == OK
    assert [c.status for c in first.calls] == ["schema_unsupported", "schema_unsupported", OK, OK]
    assert judge.transport.schema_level == openai_transport.JSON_MODE

    again = judge.judge_sync([sample_with_chunks(2, "q2")])[0]
    assert again.status == OK and len(again.calls) == 2
    assert [r.body["response_format"]["type"] for r in server.requests] == ["json_schema"] * 2 + ["json_object"] * 4


def test_a_server_that_rejects_schema_bounds_gets_the_plain_schema(server):
    def without_bounds(body):
        if "minimum" in json.dumps(body["response_format"]) or "minItems" in json.dumps(body["response_format"]):
            return Reply.status(400, "Invalid schema for response_format: 'minItems' is not permitted")
        return all_supported(body)

    server.responder = without_bounds
    judge = make_judge(server)
    judgment = judge.judge_sync([sample_with_chunks(2)])[0]
    assert judgment.status == OK and judge.transport.schema_level == openai_transport.PLAIN
    sent = [r.body["response_format"]["json_schema"] for r in server.requests]
    assert sent == [prompts.SCHEMA, prompts.plain(prompts.SCHEMA), prompts.plain(prompts.SCHEMA)]


def test_the_schema_carries_its_bounds_and_plain_drops_every_one():
    schema = prompts.SCHEMA["schema"]
    assert schema["required"] == list(prompts.TASKS)

    def result(task):  # each task's result, or null
        one, null = schema["properties"][task]["anyOf"]
        assert null == {"type": "null"}
        return one["properties"]

    holistic = result(prompts.HOLISTIC)
    assert holistic["overall_score"] == {"type": "integer", "minimum": 1, "maximum": 5}
    assert holistic["alignment"]["properties"]["score"] == {"type": "integer", "minimum": 1, "maximum": 5}
    assert holistic["step1_correctness"]["properties"]["score"] == {"type": "number", "minimum": 0, "maximum": 100}
    questions = result(prompts.EXTRACTION)["generated_questions"]
    assert questions["minItems"] == questions["maxItems"] == prompts.N_GENERATED_QUESTIONS
    chunk = result(prompts.VERIFICATION)["chunks"]["items"]["properties"]
    assert chunk["relevance_score"] == {"type": "number", "minimum": 0, "maximum": 100}
    text = json.dumps(prompts.plain(prompts.SCHEMA))
    assert not any(f'"{bound}"' in text for bound in prompts.BOUNDS)
    assert prompts.plain(prompts.SCHEMA)["schema"]["required"] == schema["required"]


@pytest.mark.parametrize("reply, read", [
    ({"extraction": SEED_000_EXTRACTION, "verification": None, "holistic": None}, True),  # the schema's shape
    (SEED_000_EXTRACTION, True),  # the result alone (JSON mode, a model that left out the wrapper)
    ({"extraction": None, "verification": None, "holistic": SEED_000_HOLISTIC}, False),  # another task's result
    ({"extraction": "the claims", "verification": None, "holistic": None}, False),
])
def test_a_reply_is_read_for_its_tasks_result_only(server, reply, read):
    server.enqueue(Reply.json(reply), Reply.json(SEED_000_EXTRACTION), Reply.json(SEED_000_VERIFICATION))
    judgment = judge_one(server)
    assert judgment.status == OK and judgment.matrix.answer_claims == tuple(SEED_000_EXTRACTION["answer_claims"])
    first = judgment.calls[0]
    assert (first.status == OK) is read
    if not read:  # asked again, saying why
        assert "extraction" in first.error and server.requests[1].body["messages"][-1]["role"] == "user"


# -- the holistic call ---------------------------------------------------------------------------------

def test_holistic_ratings_in_one_call_with_the_schema_and_the_whole_context(server):
    server.enqueue(Reply.json(SEED_000_HOLISTIC))
    rated = make_judge(server).rate_sync([seed_000_sample()])[0]

    assert (rated.status, rated.error) == (OK, None) and [c.purpose for c in rated.calls] == ["holistic"]
    h = rated.holistic
    assert h.ratings == {"correctness": 3, "completeness": 3, "faithfulness": 5, "relevance": 4, "clarity": 4,
                         "overall": 4}
    assert (h.verdict, h.classification) == ("partial", "CORRECT")
    assert (h.alignment.score, h.alignment.reasoning) == (3, "The answer overlaps partially with the reference.")
    assert (h.step2_completeness.score, h.step2_completeness.reasoning) == (70, "Misses 'mostly exciting'.")
    body = server.requests[0].body
    assert body["response_format"]["json_schema"] == prompts.SCHEMA
    assert body["messages"][0]["content"] == prompts.SYSTEM  # static instructions first
    user = body["messages"][1]["content"]
    assert all(chunk in user for chunk in SEED_000_CHUNKS) and SEED_000_REFERENCE in user and SEED_000_ANSWER in user
    assert user.endswith("\n\nTASK: holistic") and prompts.task_of(body["messages"]) == prompts.HOLISTIC


@pytest.mark.parametrize("bad", [
    {"overall_score": 7},  # outside the 1-5 scale: never clipped
    {"classification": "MAYBE"},
    {"step1_correctness": {"reasoning": "", "score": 140}},
])
def test_a_holistic_reply_off_the_scale_is_repaired_then_a_judge_error(server, bad):
    server.enqueue(Reply.json({**SEED_000_HOLISTIC, **bad}), Reply.json(SEED_000_HOLISTIC))
    repaired = make_judge(server).rate_sync([seed_000_sample()])[0]
    assert repaired.status == OK and [c.status for c in repaired.calls] == ["invalid", OK]
    assert [c.purpose for c in repaired.calls] == ["holistic", "holistic_repair"]

    server.enqueue(Reply.json({**SEED_000_HOLISTIC, **bad}), Reply.json({**SEED_000_HOLISTIC, **bad}))
    failed = make_judge(server).rate_sync([seed_000_sample()])[0]
    assert failed.holistic is None and failed.status == JUDGE_ERROR and "after one repair" in failed.error


def test_a_holistic_timeout_is_a_timeout(server):
    server.responder = lambda body: Reply.delay(2)
    rated = make_judge(server, timeout=0.2, max_attempts=2).rate_sync([seed_000_sample()])[0]
    assert (rated.holistic, rated.status) == (None, TIMEOUT)


# -- records and concurrency --------------------------------------------------------------------------

def test_call_records_hold_tokens_latency_status_and_never_the_key(server):
    server.enqueue(Reply.status(429, retry_after=0.01), *SEED_000_REPLIES)
    judge = make_judge(server)
    judgment = judge.judge_sync([seed_000_sample()])[0]

    rate_limited, extraction, verification = judgment.calls
    assert rate_limited.status == "rate_limited" and "429" in rate_limited.error and rate_limited.input_tokens is None
    for record in (extraction, verification):
        assert record.status == OK and record.error is None and not record.cached
        assert record.input_tokens > 0 and record.output_tokens > 0 and record.latency_ms > 0
        assert json.loads(record.response)["object"] == "chat.completion"
        assert json.loads(record.request)["messages"][0]["role"] == "system"
        assert len(record.prompt_hash) == 64
    assert extraction.prompt_hash == rate_limited.prompt_hash != verification.prompt_hash
    records = json.dumps([c.__dict__ for c in judgment.calls])
    assert KEY not in records and KEY not in repr(judgment) and KEY not in repr(judge)


def test_concurrency_bound_is_respected():
    in_flight, peak, lock = 0, 0, threading.Lock()

    def slow(body):
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        time.sleep(0.05)  # handler threads overlap here, as the judge's requests do
        with lock:
            in_flight -= 1
        return all_supported(body)

    with start_server() as server:
        server.responder = slow
        judgments = make_judge(server, concurrency=3).judge_sync([sample_with_chunks(20, f"q{i}") for i in range(6)])
    assert all(j.status == OK for j in judgments) and server.request_count == 18
    assert peak == 3


def test_a_missing_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        JudgeClient("http://127.0.0.1:1/v1", "m")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert KEY not in repr(JudgeClient("http://127.0.0.1:1/v1", "m"))


# -- repeats ---------------------------------------------------------------------------------------------

def _rated(overall: int, classification: str = "CORRECT") -> Reply:
    return Reply.json({**SEED_000_HOLISTIC, "overall_score": overall, "correctness": overall,
                       "classification": classification})


def test_repeats_come_as_the_choices_of_one_request_where_the_server_gives_them(server):
    server.responder = lambda body: Reply.choices(_rated(3, "WRONG"), _rated(4), _rated(5))
    rated = make_judge(server, repeats=3).rate_sync([seed_000_sample()])[0]

    assert rated.status == OK and server.request_count == 1 and server.requests[0].body["n"] == 3
    h = rated.holistic
    assert h.ratings["overall"] == 4 and h.ratings["correctness"] == 4  # the mean of 3, 4, 5
    assert h.classification == "CORRECT"  # two of three
    assert [r.ratings["overall"] for r in h.repeats] == [3, 4, 5]


def test_repeats_go_one_request_each_with_their_own_seed_where_n_is_ignored(server):
    overall = {0: 2, 1: 3, 2: 3}
    server.responder = lambda body: _rated(overall[body["seed"]])  # one choice whatever n says
    judge = make_judge(server, repeats=3)
    rated = judge.rate_sync([seed_000_sample()])[0]

    assert rated.status == OK and judge.transport.n_supported is False
    assert [(r.body["seed"], r.body.get("n")) for r in server.requests] == [(0, 3), (1, None), (2, None)]
    assert rated.holistic.ratings["overall"] == 2.67  # the mean of 2, 3, 3, half up to 2 digits
    again = judge.rate_sync([sample_with_chunks(1)])[0]
    assert again.status == OK and [r.body.get("n") for r in server.requests[3:]] == [None] * 3


def test_a_refused_n_falls_back_to_one_request_per_reply(server):
    def refuse_n(body):
        return Reply.status(400, "Invalid 'n': only 1 is supported") if body.get("n") else _rated(4)
    server.responder = refuse_n
    judge = make_judge(server, repeats=2)
    rated = judge.rate_sync([seed_000_sample()])[0]
    assert rated.status == OK and judge.transport.n_supported is False and server.request_count == 3
    assert [c.status for c in rated.calls] == ["bad_request", OK, OK]


def test_one_failed_repeat_fails_the_sample_so_a_retry_asks_again(server):
    server.responder = lambda body: Reply.status(400, "no") if body["seed"] == 1 else _rated(4)
    rated = make_judge(server, repeats=3, max_attempts=1).rate_sync([seed_000_sample()])[0]
    assert rated.status == JUDGE_ERROR and rated.holistic is None
    assert rated.error.startswith("1 of 3 replies failed")


def test_unusable_choices_are_asked_again_one_by_one(server):
    def reply(body):
        if body.get("n"):
            return Reply.choices(_rated(5), Reply.text("{not json"))
        return _rated(3)
    server.responder = reply
    rated = make_judge(server, repeats=2).rate_sync([seed_000_sample()])[0]
    assert rated.status == OK and rated.holistic.ratings["overall"] == 4
    assert "1 of 2 choices unusable" in rated.calls[0].error
    assert server.requests[1].body["seed"] == 1
