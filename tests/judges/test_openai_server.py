"""The OpenAI test double is faithful: the real openai 3.x client (sync and async) sees, on
loopback, what it would see from a real server, including its faults.

These tests also pin the client behaviours the judge relies on (retries, Retry-After, timeouts,
error classes), so an openai upgrade that changes them fails here first.
"""

import asyncio
import json
import time

import openai
import pytest
from openai import AsyncOpenAI, OpenAI
from pydantic import BaseModel

from tests.helpers.openai_server import Reply, count_tokens, start_server

# openai 3.x waits 0.5 s * (0.75..1) before its first retry when Retry-After is absent.
MIN_BACKOFF = 0.375


class Verdicts(BaseModel):
    verdicts: list[str]


@pytest.fixture
def openai_server():
    with start_server() as server:
        yield server


def make_client(server, **options) -> OpenAI:
    options.setdefault("max_retries", 0)
    return OpenAI(base_url=server.base_url, api_key="sk-secret", **options)


def ask(client, text="Is the sky blue today?", **params):
    return client.chat.completions.create(
        model="judge-model", messages=[{"role": "user", "content": text}], **params
    )


def test_completion_round_trip_counts_tokens_and_records_the_request(openai_server):
    openai_server.enqueue(Reply.json({"verdicts": ["supported"]}), Reply.text("second reply"))
    with make_client(openai_server) as client:
        first = ask(client, "one two three four five")
        second = ask(client)

    assert first.object == "chat.completion" and first.id.startswith("chatcmpl-")
    assert first.model == "judge-model"
    assert first.choices[0].message.role == "assistant"
    assert json.loads(first.choices[0].message.content) == {"verdicts": ["supported"]}
    assert first.choices[0].finish_reason == "stop"
    # The usage estimate is whitespace words: 5 in the prompt, 2 in '{"verdicts": ["supported"]}'.
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (5, 2)
    assert first.usage.total_tokens == 7
    assert second.choices[0].message.content == "second reply"  # the queue is consumed in order

    recorded = openai_server.requests
    assert openai_server.request_count == 2
    assert recorded[0].method == "POST" and recorded[0].path == "/v1/chat/completions"
    assert recorded[0].body["messages"] == [{"role": "user", "content": "one two three four five"}]
    assert recorded[0].headers["authorization"] == "<redacted>"
    assert "sk-secret" not in repr(recorded)
    assert recorded[0].arrived <= recorded[1].arrived


def test_default_responder_and_models_endpoint(openai_server):
    with make_client(openai_server) as client:
        assert json.loads(ask(client).choices[0].message.content) == {"ok": True}
        openai_server.responder = lambda body: Reply.text(body["messages"][-1]["content"].upper())
        assert ask(client, "echo me").choices[0].message.content == "ECHO ME"
        assert [m.id for m in client.models.list()] == ["test-model"]
    assert openai_server.requests[-1].path == "/v1/models"


def test_json_schema_response_format_arrives_and_parse_reads_the_reply(openai_server):
    schema = {"name": "verdicts", "strict": True, "schema": Verdicts.model_json_schema()}
    openai_server.responder = lambda body: Reply.json({"verdicts": ["supported", "not_found"]})
    with make_client(openai_server) as client:
        response_format = {"type": "json_schema", "json_schema": schema}
        ask(client, response_format=response_format, temperature=0, seed=7)
        parsed = client.chat.completions.parse(
            model="judge-model",
            messages=[{"role": "user", "content": "verify"}],
            response_format=Verdicts,
        )

    sent_dict, sent_by_parse = (r.body for r in openai_server.requests)
    assert sent_dict["response_format"] == {"type": "json_schema", "json_schema": schema}
    assert (sent_dict["temperature"], sent_dict["seed"]) == (0, 7)
    # parse() turns the Pydantic model into a strict schema that forbids extra keys.
    assert sent_by_parse["response_format"]["type"] == "json_schema"
    parse_schema = sent_by_parse["response_format"]["json_schema"]
    assert parse_schema["strict"] is True
    assert parse_schema["schema"]["additionalProperties"] is False
    assert parsed.choices[0].message.parsed == Verdicts(verdicts=["supported", "not_found"])


def test_json_schema_rejection_is_a_bad_request_and_json_object_still_works(openai_server):
    def without_structured_outputs(body):
        if body.get("response_format", {}).get("type") == "json_schema":
            return Reply.json_schema_unsupported()
        return Reply.json({"verdicts": []})

    openai_server.responder = without_structured_outputs
    schema = {"name": "verdicts", "schema": Verdicts.model_json_schema()}
    with make_client(openai_server, max_retries=2) as client:
        with pytest.raises(openai.BadRequestError) as rejected:
            ask(client, response_format={"type": "json_schema", "json_schema": schema})
        fallback = ask(client, response_format={"type": "json_object"})

    assert rejected.value.status_code == 400
    assert "response_format json_schema is not supported" in rejected.value.message
    assert rejected.value.body["type"] == "invalid_request_error"
    assert json.loads(fallback.choices[0].message.content) == {"verdicts": []}
    # A 400 is never retried, whatever max_retries says.
    assert [r.body["response_format"]["type"] for r in openai_server.requests] == [
        "json_schema",
        "json_object",
    ]


def test_rate_limit_is_retried_after_the_servers_retry_after(openai_server):
    openai_server.enqueue(Reply.status(429, retry_after=0.15), Reply.json({"ok": "retried"}))
    with make_client(openai_server, max_retries=1) as client:
        reply = ask(client)

    assert json.loads(reply.choices[0].message.content) == {"ok": "retried"}
    first, retry = openai_server.requests
    assert first.headers["x-stainless-retry-count"] == "0"
    assert retry.headers["x-stainless-retry-count"] == "1"
    # The client waited the server's 0.15 s, not its own exponential backoff.
    assert 0.15 <= retry.arrived - first.arrived < MIN_BACKOFF


def test_rate_limit_surfaces_without_retries(openai_server):
    openai_server.enqueue(Reply.status(429, retry_after=1))
    with make_client(openai_server, max_retries=0) as client:
        with pytest.raises(openai.RateLimitError) as raised:
            ask(client)
    assert raised.value.status_code == 429 and raised.value.code == "rate_limit_exceeded"
    assert raised.value.response.headers["retry-after"] == "1"
    assert openai_server.request_count == 1


@pytest.mark.parametrize("code", [500, 502, 503])
def test_server_errors_surface_as_internal_server_error(openai_server, code):
    openai_server.enqueue(Reply.status(code))
    with make_client(openai_server) as client:
        with pytest.raises(openai.InternalServerError) as raised:
            ask(client)
    assert raised.value.status_code == code
    assert f"scripted HTTP {code}" in raised.value.message


def test_a_late_reply_is_a_timeout_and_timeouts_are_retried(openai_server):
    openai_server.enqueue(Reply.delay(0.5))
    with make_client(openai_server, timeout=0.1) as client:
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            ask(client)
        assert time.monotonic() - started < 0.5
    assert openai_server.requests[0].headers["x-stainless-read-timeout"] == "0.1"

    openai_server.enqueue(Reply.delay(0.5), Reply.text("in time"))
    with make_client(openai_server, timeout=0.1, max_retries=1) as client:
        assert ask(client).choices[0].message.content == "in time"
    assert openai_server.request_count == 3


def test_a_trickling_reply_never_trips_the_clients_timeout(openai_server):
    """The client's timeout is per read: a body trickling one byte per 0.2 s takes 1.6 s to arrive, past
    a timeout of 0.5 s, without an error (which is why the judge sets a deadline of its own)."""
    openai_server.enqueue(Reply.trickle(0.2, then=Reply.not_json('{"a": 1}', "application/json")))
    with make_client(openai_server, timeout=0.5) as client:
        started = time.monotonic()
        raw = client.chat.completions.with_raw_response.create(model="m", messages=[{"role": "user", "content": "x"}])
        assert raw.http_response.text == '{"a": 1}' and time.monotonic() - started > 1.5


@pytest.mark.parametrize("code, error", [(401, openai.AuthenticationError), (403, openai.PermissionDeniedError),
                                         (404, openai.NotFoundError)])
def test_refusals_surface_as_their_error_classes(openai_server, code, error):
    openai_server.enqueue(Reply.status(code))
    with make_client(openai_server) as client, pytest.raises(error):
        ask(client)


def test_huge_replies_arrive_whole_and_request_sizes_are_recorded(openai_server):
    openai_server.enqueue(Reply.huge(1_000_000))
    with make_client(openai_server) as client:
        assert len(ask(client, "abc").choices[0].message.content) == 1_000_000
    assert 50 < openai_server.requests[0].size < 500  # the bytes of the request body: a short prompt


def test_truncated_reply_has_finish_reason_length(openai_server):
    full = {"verdicts": ["supported", "contradicted", "not_found"]}
    openai_server.enqueue(Reply.truncated(full), Reply.truncated(full))
    with make_client(openai_server) as client:
        reply = ask(client)
        with pytest.raises(openai.LengthFinishReasonError):
            client.chat.completions.parse(
                model="judge-model",
                messages=[{"role": "user", "content": "x"}],
                response_format=Verdicts,
            )

    content = reply.choices[0].message.content
    assert reply.choices[0].finish_reason == "length"
    assert content and json.dumps(full).startswith(content) and content != json.dumps(full)
    assert reply.usage.completion_tokens == count_tokens(content)


def test_broken_contents_reach_the_client_as_sent(openai_server):
    openai_server.enqueue(
        Reply.text('{"verdicts": ['),
        Reply.text(""),
        Reply.not_json(),
        Reply.not_json("{not json", content_type="application/json"),
    )
    with make_client(openai_server) as client:
        assert ask(client).choices[0].message.content == '{"verdicts": ['
        empty = ask(client)
        assert empty.choices[0].message.content == "" and empty.usage.completion_tokens == 0
        # openai 3.x hands back a non-JSON 200 body as a plain str instead of raising...
        assert ask(client) == "<html><body>upstream error</body></html>"
        # ...and lets the decoder's error escape when the body claims to be JSON.
        with pytest.raises(json.JSONDecodeError):
            ask(client)


def test_parallel_async_requests_overlap():
    parallel, latency = 8, 0.25

    async def ask_all(base_url):
        async with AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0) as client:
            return await asyncio.gather(
                *(
                    client.chat.completions.create(
                        model="m", messages=[{"role": "user", "content": f"question {i}"}]
                    )
                    for i in range(parallel)
                )
            )

    with start_server(latency=latency) as server:
        server.responder = lambda body: Reply.text(body["messages"][0]["content"])
        started = time.monotonic()
        replies = asyncio.run(ask_all(server.base_url))
        elapsed = time.monotonic() - started

    assert sorted(r.choices[0].message.content for r in replies) == sorted(
        f"question {i}" for i in range(parallel)
    )
    assert server.request_count == parallel
    # The latency was applied, yet the requests overlapped instead of queueing one by one.
    assert latency <= elapsed < 0.5 * parallel * latency
    arrivals = [r.arrived for r in server.requests]
    assert max(arrivals) - min(arrivals) < latency


def test_async_client_sees_the_same_faults(openai_server):
    async def scenario():
        async with AsyncOpenAI(
            base_url=openai_server.base_url, api_key="k", max_retries=0, timeout=0.1
        ) as client:
            messages = [{"role": "user", "content": "x"}]
            openai_server.enqueue(
                Reply.status(503), Reply.delay(0.5), Reply.status(429, retry_after=1)
            )
            expected = (openai.InternalServerError, openai.APITimeoutError, openai.RateLimitError)
            for error in expected:
                with pytest.raises(error):
                    await client.chat.completions.create(model="m", messages=messages)
            return await client.chat.completions.create(model="m", messages=messages)

    reply = asyncio.run(scenario())
    assert json.loads(reply.choices[0].message.content) == {"ok": True}
    assert openai_server.request_count == 4
    assert openai_server.requests[0].headers["x-stainless-async"].startswith("async")
