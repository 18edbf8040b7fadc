"""How the OpenAI-compatible judge reaches its server: one request in, one usable reply (or why not) out, each HTTP
attempt recorded. What is asked and what a reply means is the protocol's (openai_protocol); a server with other
parameters or quirks is a change here.

* Requests: structured outputs with a strict JSON schema (given by the protocol) that carries its bounds; the other
  parameters are `openai_params.Params`' (temperature 0 and a seed; for a known reasoning model no temperature,
  `max_completion_tokens` and the run's reasoning effort). A 400 naming a parameter drops or renames it for the rest
  of the run (`Params.learn`); until a request has come back without teaching anything, one request per purpose is
  in flight (a sample's first round, its extraction and holistic calls, goes out together and keeps its 2 rounds),
  so concurrent calls do not each pay the 400 (not in batch mode: a round goes out whole); likewise one request
  asking several choices (`n`, only holistic and criteria calls with repeats carry it) until one has come back, and
  one asking for token log-probabilities (`logprobs`, only criteria calls carry it) likewise. A 400 saying the
  prompt and the limit exceed the context teaches nothing (that request fails). A server that rejects
  the schema with HTTP 400 gets the same schema without bounds (`prompts.plain`), and if it rejects that too, JSON
  mode (`{"type": "json_object"}`), for the rest of the transport's life; the prompts describe the shape anyway.
* No output limit is sent at first (the server's default applies). A reply cut off by it (finish_reason "length")
  is asked again with `max_tokens` raised to twice what it had produced (at least 1,024, at most
  `max_output_tokens`, default `MAX_OUTPUT_TOKENS`), up to `LENGTH_RETRIES` times; a server that wants
  `max_completion_tokens` instead (OpenAI's reasoning models) gets that (`Params.limit_field`).
* `timeout` is a deadline per reply as a whole (connect, wait, the full body), enforced around the request:
  the client's own timeouts are per read, so a server trickling a byte at a time would never trip them.
* Retries are ours (`AsyncOpenAI(max_retries=0)`), so every HTTP attempt is recorded: 408, 409,
  429, 5xx, timeouts, connection errors and non-completion 200 bodies are retried up to
  `max_attempts` times with exponential backoff and full-range jitter (base `backoff_base`,
  at most `backoff_max`). A Retry-After (or retry-after-ms) header is honoured as sent, also above
  the openai client's own 120 s limit, up to `max_retry_after` (default 600 s): a server asking
  for longer is not waited for, and the call ends as judge_error with the reason.
  Other 4xx are not retried. A refused key or an unknown model (401, 403, 404) can never succeed: the
  first one raises `JudgeRefused` (the cause and what to do), and no request goes out after it (those in
  flight end), so a run stops at once instead of failing every cell.
* A semaphore bounds concurrent HTTP requests (not samples); backoff sleeps do not hold it. With `batch`, requests
  go through the Batch API instead (batch_api), with no semaphore and no backoff.
* Several choices per request (`n`) where the server gives them; a server that refuses or ignores `n` is asked
  one choice per request from then on (`n_supported`).
* With a `cache` (get(key) -> dict | None, put(key, **fields); `openai_judge.StoreCache` keeps it in
  DuckDB), a request whose key (`cache_key`: the server's base URL, the protocol's version and the request
  body: model, messages and the parameters sent, temperature, seed, reasoning effort, response_format; not the
  output limit) was answered
  before makes no HTTP request: its record says cached=True, latency 0. Only replies whose record
  ends "ok" are kept (`remember`: validated and complete; never an error, an invalid or an incomplete reply),
  each under its own request's key.
* With a `budget` (`evaluators.runs.budget.Budget`), each reply's tokens are charged to it, and once it is reached
  no request goes out (those in flight end; in batch mode a round goes out whole): the call fails with status
  "not_sent" and the engine leaves its sample's cells to do.
* Every attempt becomes a `CallRecord` (the `judge_calls` row without run/sample keys); the API key
  is only ever passed to the client, never into a record, a message or repr().
* The client is `openai.AsyncOpenAI` at `base_url`, the key from OPENAI_API_KEY; a kind of judge whose server the SDK
  reaches with another client (azure_judge: `AsyncAzureOpenAI`) gives its `client_factory` and `key_env`: everything
  above is the same for it (retries stay ours: the factory makes its client with max_retries=0).
"""
from __future__ import annotations

import asyncio
import email.utils
import hashlib
import json
import math
import os
import random
import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import openai
from openai.types.chat import ChatCompletion
from pydantic import ValidationError

from evaluators.judges import batch_api, prompts
from evaluators.judges.openai_params import Params
from evaluators.judges.options import check_choices, check_numbers
from evaluators.judges.protocol import CallRecord
from evaluators.records import (BAD_REQUEST, BAD_RESPONSE, CALL_TIMEOUT, CONNECTION_ERROR, INVALID, JUDGE_ERROR,
                                NOT_SENT, OK, RATE_LIMITED, SCHEMA_UNSUPPORTED, SERVER_ERROR, TIMEOUT)
from evaluators.records.judgments import JudgeRefused

Messages = list[dict]
KEY_ENV = "OPENAI_API_KEY"  # where the key comes from when none is given
# (api_key, timeout) -> the SDK client a transport sends through (Transport.openai_client by default)
ClientFactory = Callable[[str, float], openai.AsyncOpenAI]

RETRYABLE_STATUS_CODES = frozenset({408, 409, 429})  # and every 5xx
REFUSAL_STATUS_CODES = frozenset({401, 403, 404})  # a wrong key, a key without access, an unknown model
# How servers without structured outputs, or without a schema keyword, word their 400 (OpenAI, vLLM,
# llama.cpp, Ollama).
_SCHEMA_REFUSAL = re.compile(r"json_schema|response_format|structured output|minimum|maximum|minItems|maxItems",
                             re.IGNORECASE)
# How servers say a prompt is too long for the model ("This model's maximum context length is 8192 tokens"): a
# 400 of that one request, not a refusal of the schema, though it says "maximum".
_TOO_LONG = re.compile(r"context length|context_length|context window|too many tokens|too long|reduce the length",
                       re.IGNORECASE)
# How servers refuse several choices per request (`n`): "Invalid 'n'", "Only one completion choice is allowed".
_N_REFUSAL = re.compile(r"\bn\b|choice", re.IGNORECASE)
# The schema levels a transport steps down through on refusals (see the module doc).
BOUNDED, PLAIN, JSON_MODE = 2, 1, 0
LENGTH_RETRIES = 2
TOP_LOGPROBS = 5  # alternatives per token: the five scores of a 1-5 scale (judges/geval.py)
MAX_OUTPUT_TOKENS = 32_768
# 8 characters per token of the longest reply ever asked for (~4 a token in English): more than that is a
# runaway model, refused unread, so no 10 MB reply is parsed, kept in memory twice or sent back.
MAX_REPLY_CHARS = 8 * MAX_OUTPUT_TOKENS
# What a repair call shows the model of its bad reply, and what an invalid runaway reply's record keeps: enough to see
# what went wrong, never a runaway reply.
REPAIR_EXCERPT_CHARS = 4_000


class CallFailed(Exception):
    """A logical call that produced nothing usable; `status` is judge_error or timeout."""

    def __init__(self, status: str, reason: str):
        super().__init__(reason)
        self.status = status


@dataclass
class Attempt:
    """What one HTTP attempt gave back (success: content; failure: retryable or not)."""

    record: CallRecord
    content: str | None = None
    finish_reason: str | None = None
    retry: bool = False
    retry_after: float | None = None
    resend: bool = False  # a fallback (schema level, limit parameter): the same request again, not a retry
    choices: tuple[tuple[str | None, str | None], ...] = ()  # (content, finish_reason) of every choice


class Transport:
    """One OpenAI-compatible server and model, with what it was found to accept (`schema_level`, which lasts as long
    as the transport; `params`, the run's `openai_params.Params`, which may outlast it). `schema`: the
    response_format JSON schema of every request; `version`: the protocol's version, part of every cache key."""

    def __init__(self, base_url: str | None, model: str, *, schema: dict, version: str, api_key: str | None = None,
                 concurrency: int = 8, timeout: float = 60, max_attempts: int = 4, seed: int = 0,
                 backoff_base: float = 1.0, backoff_max: float = 60.0, max_retry_after: float = 600.0, cache=None,
                 batch: bool = False, batches=None, batch_poll: float | None = None, budget=None,
                 max_output_tokens: int = MAX_OUTPUT_TOKENS, reasoning_effort: str | None = None,
                 params: Params | None = None, client_factory: ClientFactory | None = None,
                 key_env: str = KEY_ENV):
        check_numbers({"concurrency": concurrency, "max_attempts": max_attempts, "timeout": timeout,
                       "max_output_tokens": max_output_tokens})  # a concurrency of 0: wait for ever
        check_choices({"reasoning_effort": reasoning_effort})
        self._api_key = api_key or os.environ.get(key_env)
        if not self._api_key:
            raise ValueError(f"no API key: pass api_key or set {key_env} "
                             "(servers without authentication accept any value, e.g. 'none')")
        self.key_env = key_env  # where the key comes from, for the messages that say what to check
        # None: an OpenAI-compatible client at `base_url` (the module doc)
        self.client_factory = client_factory
        self.base_url = base_url or (os.environ.get("OPENAI_BASE_URL") if client_factory is None else None)
        self.model = model
        self.schema, self.version = schema, version
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.seed = seed
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.max_retry_after = max_retry_after
        self.schema_level = BOUNDED  # lowered by refusals (module doc)
        self.params = params if params is not None else Params.of(model)  # what is sent; learned from 400s
        self.reasoning_effort = reasoning_effort  # None: the server's default
        self.cache = cache  # get(key) -> dict | None and put(key, **fields); None: every request goes out
        self.batch = batch  # requests go through the Batch API (batch_api), not one HTTP call each
        self.batches = batches  # the run's record of its batches (batch_api.Batcher's ledger), or None
        self.batch_poll = batch_api.poll_seconds() if batch_poll is None else batch_poll
        self.budget = budget  # evaluators.runs.budget.Budget: once reached, no request goes out (module doc)
        # the most a cut-off reply is asked again with (a small server's own cap: asking for more only costs time)
        self.max_output_tokens = max_output_tokens

    def __repr__(self) -> str:  # the key stays out of logs
        return f"Transport(base_url={self.base_url!r}, model={self.model!r})"

    @property
    def limit_field(self) -> str | None:
        """max_tokens, or max_completion_tokens for servers that want that name; None: none is taken."""
        return self.params.limit_field

    @property
    def n_supported(self) -> bool:
        """False once a server refused or ignored `n` (several choices per request)."""
        return self.params.n

    @n_supported.setter
    def n_supported(self, value: bool) -> None:
        self.params.n = value

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[Connection]:
        """A connection for the running event loop (asyncio.run() makes a new loop each time: one client each)."""
        factory = self.client_factory or self.openai_client
        async with factory(self._api_key, self.timeout) as client:
            batcher = batch_api.Batcher(client, self.base_url, self.batches, self.batch_poll) if self.batch else None
            yield Connection(self, client, asyncio.Semaphore(self.concurrency), batcher)
            if batcher is not None:
                batcher.consume()

    def openai_client(self, api_key: str, timeout: float) -> openai.AsyncOpenAI:
        """The default client: OpenAI-compatible at `base_url`, our retries only."""
        return openai.AsyncOpenAI(base_url=self.base_url, api_key=api_key, timeout=timeout, max_retries=0)

    def retry_delay(self, retry: int, retry_after: float | None) -> float | None:
        """Seconds to wait before retry number `retry` (1-based); None: the server asked for more
        than `max_retry_after`, so do not retry."""
        if retry_after is not None:
            return retry_after if retry_after <= self.max_retry_after else None
        ceiling = min(self.backoff_max, self.backoff_base * 2 ** (retry - 1))
        return random.uniform(ceiling / 2, ceiling)  # jitter spreads out clients that failed together

    def body(self, messages: Messages, level: int, limit: int | None, seed_offset: int = 0, n: int = 1,
             logprobs: bool = False) -> dict:
        """The request body this server is sent (the one place its parameters are chosen): `level` the schema level,
        `limit` the output limit (None: the server's default), `n` the choices asked for, `logprobs` whether the
        tokens' log-probabilities are wanted (sent while the server takes them)."""
        params = self.params
        body = {"model": self.model, "messages": messages}
        if params.temperature is not None:
            body["temperature"] = params.temperature
        if params.seed:
            body["seed"] = self.seed + seed_offset
        if params.response_format:
            body["response_format"] = self.response_format(level)
        if self.reasoning_effort is not None and params.reasoning_effort:
            body["reasoning_effort"] = self.reasoning_effort
        if limit is not None and params.limit_field is not None:
            body[params.limit_field] = limit
        if n > 1 and params.n:
            body["n"] = n
        if logprobs and params.logprobs:
            body |= {"logprobs": True, "top_logprobs": TOP_LOGPROBS}
        return body

    def response_format(self, level: int) -> dict:
        if level == BOUNDED:
            return {"type": "json_schema", "json_schema": self.schema}
        if level == PLAIN:
            return {"type": "json_schema", "json_schema": prompts.plain(self.schema)}
        return {"type": "json_object"}

    def remember(self, calls: list[CallRecord]) -> None:
        """Cache the replies that came over HTTP and ended "ok": parsed, validated and complete (the protocol
        says so: call this once a sample's records are final)."""
        if self.cache is None:
            return
        for record in calls:
            if record.status == OK and not record.cached and record.response is not None:
                self.cache.put(cache_key(json.loads(record.request), self.base_url, self.version), model=record.model,
                               prompt_version=self.version, purpose=record.purpose, response=record.response,
                               input_tokens=record.input_tokens, output_tokens=record.output_tokens)


class Connection:
    """A transport's work within one event loop: one client, one semaphore, the Batch API's rounds."""

    def __init__(self, transport: Transport, client: openai.AsyncOpenAI, semaphore: asyncio.Semaphore,
                 batcher: batch_api.Batcher | None = None):
        self.transport = transport
        self.client = client
        self.semaphore = semaphore
        self.batcher = batcher  # batch mode: requests wait for their batch, with no semaphore and no backoff
        self.refusal: str | None = None  # set by the first 401/403/404: no request goes out after it
        # while the parameters are unsettled, the purposes with a request in flight: one each (module doc)
        self.learning: set[str] = set()
        self.learned = asyncio.Condition()  # notified as each of them comes back
        # `n` goes only on holistic requests with repeats, so the requests that settle the parameters do not test it:
        # until one such request has come back, one at a time (a server that refuses n would refuse each in flight);
        # `logprobs` likewise, on criteria requests only
        self.n_checked = False
        self.logprobs_checked = False

    async def complete(self, purpose: str, messages: Messages, records: list[CallRecord],
                       limit: int | None = None, seed_offset: int = 0,
                       logprobs: bool = False) -> tuple[str | None, int | None]:
        """(content, the output limit it was produced under) of a reply that was not cut off: one cut
        off is asked again with a raised limit (module doc); raises CallFailed."""
        transport = self.transport
        for _ in range(LENGTH_RETRIES + 1):
            attempt = await self.request(purpose, messages, records, limit, seed_offset, logprobs=logprobs)
            content = attempt.content
            if attempt.finish_reason != "length":
                return content, limit
            produced = records[-1].output_tokens or math.ceil(len(content or "") / 4)
            cap = transport.max_output_tokens
            if produced >= cap or (limit is not None and limit >= cap):
                break
            limit = min(cap, max(1024, 2 * produced, 2 * (limit or 0)))
            records[-1] = with_status(records[-1], INVALID, f"the reply was cut off after {produced} tokens "
                                                            f"(finish_reason 'length'); asking again with "
                                                            f"{transport.limit_field} {limit}")
        records[-1] = with_status(records[-1], INVALID, "the reply was cut off (finish_reason 'length')")
        raise CallFailed(JUDGE_ERROR, f"the reply was cut off (finish_reason 'length') "
                                      f"at {transport.limit_field} {limit}")

    async def request(self, purpose: str, messages: Messages, records: list[CallRecord],
                      limit: int | None = None, seed_offset: int = 0, n: int = 1, logprobs: bool = False) -> Attempt:
        """The attempt that got a reply, retrying transient faults; raises CallFailed."""
        transport = self.transport
        retries = 0
        while True:
            attempt = await self.attempt(purpose, messages, limit, seed_offset, n, logprobs)
            records.append(attempt.record)
            if attempt.record.status == OK:
                if len(attempt.choices) < n:  # the server ignores `n`
                    transport.n_supported = False
                return attempt
            if attempt.resend:
                continue  # a fallback is not a retry: the same request, as the server wants it
            if not attempt.retry:
                raise CallFailed(JUDGE_ERROR, attempt.record.error or attempt.record.status)
            retries += 1
            failed_as = TIMEOUT if attempt.record.status == CALL_TIMEOUT else JUDGE_ERROR
            if retries >= transport.max_attempts:
                raise CallFailed(failed_as, f"{attempt.record.error} (after {retries} attempts)")
            delay = transport.retry_delay(retries, attempt.retry_after)
            if delay is None:
                asked, cap = attempt.retry_after, transport.max_retry_after
                raise CallFailed(JUDGE_ERROR, f"{attempt.record.error}; the server asked to wait {asked:.0f} s, "
                                              f"more than {cap:.0f} s")
            if self.batcher is None:  # a batch takes long enough: the retry goes in the next one
                await asyncio.sleep(delay)

    async def attempt(self, purpose: str, messages: Messages, limit: int | None,
                      seed_offset: int = 0, n: int = 1, logprobs: bool = False) -> Attempt:
        """One attempt; while the run's parameters are unsettled, one per purpose at a time (module doc), each built
        with what the ones before it learned."""
        params = self.transport.params

        def settled() -> bool:
            return params.settled and not (n > 1 and params.n and not self.n_checked) and not (
                logprobs and params.logprobs and not self.logprobs_checked)

        if settled() or self.batcher is not None:
            return await self._attempt(purpose, messages, limit, seed_offset, n, logprobs)
        async with self.learned:
            await self.learned.wait_for(lambda: settled() or purpose not in self.learning)
            if settled():
                learning = False
            else:
                learning = True
                self.learning.add(purpose)
        if not learning:
            return await self._attempt(purpose, messages, limit, seed_offset, n, logprobs)
        try:
            attempt = await self._attempt(purpose, messages, limit, seed_offset, n, logprobs)
            if not attempt.resend and not attempt.record.cached:
                params.settled = True
                self.n_checked = self.n_checked or n > 1
                self.logprobs_checked = self.logprobs_checked or logprobs
            return attempt
        finally:
            async with self.learned:
                self.learning.discard(purpose)
                self.learned.notify_all()

    async def _attempt(self, purpose: str, messages: Messages, limit: int | None,
                       seed_offset: int = 0, n: int = 1, logprobs: bool = False) -> Attempt:
        transport = self.transport
        level = transport.schema_level
        body = transport.body(messages, level, limit, seed_offset, n, logprobs)
        record = _RecordBuilder(purpose, transport.model, messages, body)
        if transport.cache is not None and (hit := self.cached(body, record)) is not None:
            return hit
        send = self.batched if self.batcher is not None else self.sent
        attempt = await send(body, record, level, limit, n)
        if transport.budget is not None and attempt.record.status == OK:
            transport.budget.charge(attempt.record.input_tokens, attempt.record.output_tokens,
                                    attempt.record.cached_input_tokens)
        return attempt

    def not_sent(self, record: _RecordBuilder) -> Attempt | None:
        """A request the run's budget holds back (a failure, not a raise: the calls made so far are kept)."""
        budget = self.transport.budget
        return Attempt(record.failed(NOT_SENT, budget.reason())) if budget is not None and budget.reached else None

    async def sent(self, body: dict, record: _RecordBuilder, level: int, limit: int | None, n: int) -> Attempt:
        """The attempt as the server answered it over HTTP."""
        transport = self.transport
        async with self.semaphore:
            if self.refusal is not None:
                raise JudgeRefused(self.refusal)
            record.start()
            if (held := self.not_sent(record)) is not None:
                return held
            try:
                async with asyncio.timeout(transport.timeout):  # the whole reply (module doc)
                    raw = await self.client.chat.completions.with_raw_response.create(**body)
            except (openai.APITimeoutError, TimeoutError):
                return Attempt(record.failed(CALL_TIMEOUT, f"no complete reply within {transport.timeout} s"),
                               retry=True)
            except openai.APIConnectionError as e:
                return Attempt(record.failed(CONNECTION_ERROR, f"connection error: {e}"), retry=True)
            except openai.APIStatusError as e:
                return self.status_error(record, e.status_code, e.response.text, e.message, e.response.headers,
                                         level, limit, n)
        return _completed(record, raw.http_response.text, raw.parse)

    async def batched(self, body: dict, record: _RecordBuilder, level: int, limit: int | None, n: int) -> Attempt:
        """The attempt as its batch answered it (batch_api): the same Attempt an HTTP reply gives, and the
        record's latency is the time the request spent in its batch."""
        if self.refusal is not None:
            raise JudgeRefused(self.refusal)
        record.start()
        if (held := self.not_sent(record)) is not None:  # checked as a round forms: a round goes out whole
            return held
        result = await self.batcher.submit(body)
        record.fields["batch_id"] = result.batch_id
        if result.status_code == 200:
            return _completed(record, result.body, lambda: ChatCompletion.model_validate_json(result.body))
        if result.status_code is not None:
            try:
                said = json.loads(result.body or "")
            except ValueError:
                said = result.body
            return self.status_error(record, result.status_code, result.body or "",
                                     f"Error code: {result.status_code} - {said}", {}, level, limit, n)
        if result.expired:
            return Attempt(record.failed(CALL_TIMEOUT, f"the batch ended before running the request: {result.error}"),
                           retry=True)
        return Attempt(record.failed(SERVER_ERROR, f"batch: {result.error}"), retry=True)

    def cached(self, body: dict, record: _RecordBuilder) -> Attempt | None:
        """The cached reply to `body` as an attempt that made no request, or None (a miss)."""
        transport = self.transport
        reply = transport.cache.get(cache_key(body, transport.base_url, transport.version))
        if reply is None:
            return None
        try:
            choices = tuple((c["message"]["content"], c.get("finish_reason"))
                            for c in json.loads(reply["response"])["choices"])
            content, finish_reason = choices[0]
        except (ValueError, KeyError, IndexError, TypeError):
            return None  # an unreadable entry is a miss: the request goes out and replaces nothing
        return Attempt(CallRecord(**record.fields, response=reply["response"], input_tokens=reply["input_tokens"],
                                  output_tokens=reply["output_tokens"], latency_ms=0.0, status=OK, error=None,
                                  cached=True),
                       content=content, finish_reason=finish_reason, choices=choices)

    def status_error(self, record: _RecordBuilder, code: int, text: str, message: str, headers, level: int,
                     limit: int | None, n: int) -> Attempt:
        """The attempt an HTTP error status makes (`message`: openai's "Error code: 429 - {...}")."""
        transport = self.transport
        if code in REFUSAL_STATUS_CODES:
            self.refusal = self.refusal or _refusal(code, message, transport.model, transport.base_url,
                                                  transport.key_env)
            raise JudgeRefused(self.refusal)
        if code == 400 and n > 1 and transport.n_supported and _N_REFUSAL.search(text):  # one choice per request now
            transport.n_supported = False
            return Attempt(record.failed(BAD_REQUEST, f"HTTP 400: {message}; asking for one choice per request",
                                         text))
        if code == 400 and level > JSON_MODE and _SCHEMA_REFUSAL.search(text) and not _TOO_LONG.search(text):
            # Concurrent refusals of one level step down once, not once each.
            transport.schema_level = min(transport.schema_level, level - 1)
            then = "the schema without bounds" if level == BOUNDED else "JSON mode"
            return Attempt(record.failed(SCHEMA_UNSUPPORTED, f"HTTP 400: {message}; switching to {then}", text),
                           resend=True)
        # a prompt too long for the model's context is that request's fault, never a parameter to drop or rename (vLLM
        # words it "'max_tokens' or 'max_completion_tokens' is too large: ..."; learning from it would flip the limit's
        # name back and forth for ever)
        if code == 400 and not _TOO_LONG.search(text) and (
                learned := transport.params.learn(text, json.loads(record.fields["request"]))):
            return Attempt(record.failed(BAD_REQUEST, f"HTTP 400: {message}; {learned}", text), resend=True)
        if code in RETRYABLE_STATUS_CODES or code >= 500:
            status = RATE_LIMITED if code == 429 else SERVER_ERROR
            return Attempt(record.failed(status, f"HTTP {code}: {message}", text), retry=True,
                           retry_after=retry_after(headers))
        return Attempt(record.failed(BAD_REQUEST, f"HTTP {code}: {message}", text))


def _completed(record: _RecordBuilder, text: str, parse) -> Attempt:
    """The attempt of a 200 reply whose body is `text` (`parse()` -> the ChatCompletion)."""
    try:
        completion = parse()
        choices = tuple((c.message.content, c.finish_reason) for c in completion.choices)
        content, finish_reason = choices[0]
    except (ValueError, ValidationError, AttributeError, IndexError, TypeError):
        # openai 3.x hands non-JSON bodies back as str or lets the decoder's error escape.
        return Attempt(record.failed(BAD_RESPONSE, f"not a chat completion: {_what_body(text)}", text), retry=True)
    usage = completion.usage
    details = getattr(usage, "prompt_tokens_details", None)
    # hidden reasoning, part of completion_tokens as OpenAI counts them (billed as output)
    reasoning = getattr(getattr(usage, "completion_tokens_details", None), "reasoning_tokens", None)
    return Attempt(record.done(OK, None, text, usage.prompt_tokens if usage else None,
                               usage.completion_tokens if usage else None, getattr(details, "cached_tokens", None),
                               reasoning),
                   content=content, finish_reason=finish_reason, choices=choices)


def _what_body(text: str) -> str:
    """What a 200 body that is no chat completion is, for the call's error: HTML (a proxy's or a web server's page),
    JSON of another API (e.g. Ollama's native /api/chat), or other text; and where to look."""
    hint = "is the base URL the server's OpenAI-compatible one (its /v1)?"
    try:
        body = json.loads(text)
    except ValueError:
        start = " ".join(text.split())[:80]
        kind = "an HTML page" if start.lower().startswith(("<!doctype", "<html")) else "not JSON"
        return f"the server answered HTTP 200 with {kind} ({start!r}): {hint}"
    if isinstance(body, dict) and body.get("choices"):
        return "its choices hold no readable message"
    keys = ", ".join(map(str, list(body)[:6])) if isinstance(body, dict) else type(body).__name__
    return f"the server answered HTTP 200 with JSON of another shape (no choices; {keys or 'empty'}): {hint}"


class _RecordBuilder:
    """Times one attempt and builds its CallRecord."""

    def __init__(self, purpose: str, model: str, messages: Messages, body: dict):
        self.fields = {"purpose": purpose, "model": model,
                       "prompt_hash": hashlib.sha256(prompts.prompt_json(messages).encode()).hexdigest(),
                       "request": json.dumps(body, ensure_ascii=False)}
        self.started = 0.0

    def start(self) -> None:  # after the semaphore: latency is the server's, not the queue's
        self.started = time.perf_counter()

    def done(self, status: str, error: str | None, response: str | None, input_tokens: int | None = None,
             output_tokens: int | None = None, cached_input_tokens: int | None = None,
             reasoning_tokens: int | None = None) -> CallRecord:
        latency_ms = (time.perf_counter() - self.started) * 1000
        return CallRecord(**self.fields, response=response, input_tokens=input_tokens, output_tokens=output_tokens,
                          latency_ms=round(latency_ms, 1), status=status, error=error,
                          cached_input_tokens=cached_input_tokens, reasoning_tokens=reasoning_tokens)

    def failed(self, status: str, error: str, response: str | None = None) -> CallRecord:
        return self.done(status, error, response)


def _refusal(code: int, said: str, model: str, base_url: str | None, key_env: str = KEY_ENV) -> str:
    """Why no call can succeed and what to do, in the terms of both the CLI and the app."""
    where = base_url or "the OpenAI API"
    said = said.removeprefix(f"Error code: {code} - ")  # openai's prefix: the code is said already
    if code == 401:
        return (f"the judge server refused the API key (HTTP 401: {said}): check {key_env} (or the key "
                f"entered for the run): it must be a valid key for {where}")
    if code == 403:
        return (f"the judge server refused this API key access (HTTP 403: {said}): check that the key may use "
                f"model {model!r} on {where} (its project, organisation, region or tier)")
    return (f"the judge server knows no model {model!r} at {where} (HTTP {code}: {said}): check the model name "
            f"and the base URL")


def cache_key(body: dict, base_url: str | None, version: str) -> str:
    """sha256 over the server's base URL, the protocol's version and the request body (model, messages and the
    parameters sent: temperature, seed, reasoning effort, response_format): anything that could change the reply
    changes the key. The output limit is left out: only complete replies are cached, and a limit does not change
    those."""
    request = {k: v for k, v in body.items() if k not in ("max_tokens", "max_completion_tokens")}
    text = json.dumps({"base_url": base_url, "prompt_version": version, "request": request},
                      ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def with_status(record: CallRecord, status: str, error: str) -> CallRecord:
    """`record` with another status and error. An invalid reply longer than MAX_REPLY_CHARS keeps only its
    start: a runaway reply is not worth megabytes in judge_calls (its error says how long it was)."""
    response = record.response
    if status == INVALID and response is not None and len(response) > MAX_REPLY_CHARS:
        response = excerpt(response)
    return CallRecord(**{**record.__dict__, "status": status, "error": error, "response": response})


def excerpt(text: str) -> str:
    """`text`, or its first REPAIR_EXCERPT_CHARS and how much was left out."""
    if len(text) <= REPAIR_EXCERPT_CHARS:
        return text
    return f"{text[:REPAIR_EXCERPT_CHARS]} [... {len(text) - REPAIR_EXCERPT_CHARS:,} more characters not shown]"


def retry_after(headers) -> float | None:
    """Seconds from retry-after-ms or Retry-After (seconds or an HTTP date); None if absent or odd."""
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return max(float(ms) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        return max(email.utils.parsedate_to_datetime(value).timestamp() - time.time(), 0.0)
    except (TypeError, ValueError):
        return None
