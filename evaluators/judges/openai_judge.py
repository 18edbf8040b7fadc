"""The OpenAI-compatible LLM judge, through the `openai` package, against OpenAI, Azure, vLLM, Ollama
or llama.cpp: each sample's claim matrix in 2 calls (1 + one more per further 16 chunks) and its
holistic rubric ratings in 1 more, in 2 rounds: the holistic call goes out with the extraction
(it needs no claims), the verification calls follow the extraction. Every call of a sample starts with
the same text (`prompts`), so the verification calls find the sample and its chunks in the provider's
prompt cache; the server says how much it served from there (`usage.prompt_tokens_details.cached_tokens`,
kept as `CallRecord.cached_input_tokens`).

    judge = JudgeClient(base_url="http://localhost:8000/v1", model="qwen2.5-7b-instruct")
    both = judge.assess_sync(samples)   # [(Judgment, HolisticJudgment)]; or: await judge.assess(samples)
    judgments = judge.judge_sync(samples)          # claim matrices only
    ratings = judge.rate_sync(samples)             # holistic ratings only

Policy (the issue's, and why):
* Requests: structured outputs with a strict JSON schema (`prompts`) that carries its bounds,
  temperature 0 and a seed. A server that rejects the schema with HTTP 400 gets the same schema
  without bounds (`prompts.plain`), and if it rejects that too, JSON mode (`{"type": "json_object"}`),
  for the rest of the judge's life; the prompts describe the shape anyway.
* No output limit is sent at first (the server's default applies). A reply cut off by it
  (finish_reason "length") is asked again with `max_tokens` raised to twice what it had produced
  (at least 1,024, at most `max_output_tokens`, default `MAX_OUTPUT_TOKENS`), up to `LENGTH_RETRIES`
  times; a server that wants `max_completion_tokens` instead (OpenAI's reasoning models) gets that.
* `timeout` is a deadline per reply as a whole (connect, wait, the full body), enforced around the request:
  the client's own timeouts are per read, so a server trickling a byte at a time would never trip them.
* Retries are ours (`AsyncOpenAI(max_retries=0)`), so every HTTP attempt is recorded: 408, 409,
  429, 5xx, timeouts, connection errors and non-completion 200 bodies are retried up to
  `max_attempts` times with exponential backoff and full-range jitter (base `backoff_base`,
  at most `backoff_max`). A Retry-After (or retry-after-ms) header is honoured as sent, also above
  the openai client's own 120 s limit, up to `max_retry_after` (default 600 s): a server asking
  for longer is not waited for, and the call ends as judge_error with the reason.
  Other 4xx are not retried. A refused key or an unknown model (401, 403, 404) can never succeed: the
  first one raises `JudgeRefused` (the cause and what to do) out of `assess`, and no request goes out
  after it (those in flight end), so a run stops at once instead of failing every cell.
* Replies that do not parse, do not validate or are empty get one repair call: the start of the bad
  output (`REPAIR_EXCERPT_CHARS`, never all of it) goes back with the error and a request for corrected
  JSON. A reply longer than `MAX_REPLY_CHARS` is such a reply, refused unread, and its record keeps
  only its start.
* A verification reply that misses verdicts keeps the matrix: the missing cells are None, so
  `evaluators.metrics.claims` gives judge_error on exactly the metrics that need them; the call's status
  is "incomplete". A failed verification call leaves its chunks' cells None and sets the
  Judgment's status; a failed extraction leaves no matrix.
* A semaphore bounds concurrent HTTP requests (not samples); backoff sleeps do not hold it.
* With a `cache` (get(key) -> dict | None, put(key, **fields); `judges.StoreCache` keeps it in
  DuckDB), a request whose key (`cache_key`: the server's base URL, PROMPT_VERSION and the request
  body: model, messages, temperature, seed, response_format; not the output limit) was answered
  before makes no HTTP request: its record says cached=True, latency 0. Only replies whose record
  ends "ok" are kept (validated and complete; never an error, an invalid or an incomplete reply),
  each under its own request's key.
* Repeats (`repeats` N > 1): the holistic call is asked N times per sample, as N choices of one
  request (`n`; input tokens paid once) where the server gives them, else one request per reply,
  reply k with seed + k (so each is its own cache entry). The ratings are averaged and the labels go
  by majority (`judgments.aggregate`, which keeps every reply for the spread). The temperature stays 0:
  the spread is the judge's own variation at the run's settings.
* With a `budget` (`evaluators.runs.budget.Budget`), each reply's tokens are charged to it, and once it is reached
  no request goes out (those in flight end; in batch mode a round goes out whole): the call fails with status
  "not_sent" and the engine leaves its sample's cells to do.
* Every attempt becomes a `CallRecord` (the `judge_calls` row without run/sample keys); the API key
  is only ever passed to the client, never into a record, a message or repr().
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import openai
from openai.types.chat import ChatCompletion
from pydantic import BaseModel, ValidationError, field_validator

from evaluators.judges import batch_api, prompts
from evaluators.records.judgments import (UNKNOWN, VERDICTS, ChunkRelevance, ClaimMatrix, Holistic, JudgeRefused, Verdict,
                                  aggregate)
from evaluators.judges.options import check_numbers
from evaluators.records import (BAD_REQUEST, BAD_RESPONSE, CALL_TIMEOUT, CONNECTION_ERROR, INCOMPLETE, INVALID,
                               JUDGE_ERROR, NOT_SENT, OK, RATE_LIMITED, SCHEMA_UNSUPPORTED, SERVER_ERROR, TIMEOUT,
                               Sample)

JUDGE = "openai"  # the judge name scores carry (the twin of offline.JUDGE), for the registry

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
# The schema levels a judge steps down through on refusals (see the module doc).
BOUNDED, PLAIN, JSON_MODE = 2, 1, 0
LENGTH_RETRIES = 2
MAX_OUTPUT_TOKENS = 32_768
# 8 characters per token of the longest reply ever asked for (~4 a token in English): more than that is a
# runaway model, refused unread, so no 10 MB reply is parsed, kept in memory twice or sent back.
MAX_REPLY_CHARS = 8 * MAX_OUTPUT_TOKENS
# What a repair call shows the model of its bad reply: enough to see what went wrong, never a runaway reply.
REPAIR_EXCERPT_CHARS = 4_000


@dataclass(frozen=True)
class CallRecord:
    """One HTTP attempt, as the `judge_calls` table keeps it (run and sample keys added by the caller)."""

    purpose: str  # extraction, verification, holistic; with _repair for a repair call
    model: str
    prompt_hash: str  # sha256 of the request's messages (prompts.prompt_json)
    request: str  # the request body as JSON text (never holds the key: it travels in a header)
    response: str | None  # the raw response body, or None when none came back
    input_tokens: int | None
    output_tokens: int | None
    latency_ms: float
    status: str
    error: str | None
    cached: bool = False  # set by the judge cache, once there is one
    # input tokens the server served from its prompt cache (usage.prompt_tokens_details.cached_tokens), billed at the
    # cached-input price; None where the server does not say
    cached_input_tokens: int | None = None
    batch_id: str | None = None  # the Batch API batch the request went in (batch mode), else None


@dataclass
class Judgment:
    """The judge's output for one sample. With status != ok the matrix may still be there, with the
    cells of the failed call as None; with a failed extraction it is None."""

    matrix: ClaimMatrix | None
    generated_questions: tuple[str, ...]
    status: str  # ok, judge_error or timeout (evaluators.records)
    error: str | None
    calls: list[CallRecord] = field(default_factory=list)


@dataclass
class HolisticJudgment:
    """The holistic ratings of one sample, or why there are none (status judge_error or timeout)."""

    holistic: Holistic | None
    status: str
    error: str | None
    calls: list[CallRecord] = field(default_factory=list)


# -- reply models: lenient on purpose (verdict strings are mapped, not rejected); the holistic reply's is
# `judgments.Holistic`, the record the rubric family reads.

class _Extraction(BaseModel):
    answer_claims: list[str]
    reference_claims: list[str]
    generated_questions: list[str]

    @field_validator("answer_claims", "reference_claims", "generated_questions")
    @classmethod
    def _no_placeholders(cls, texts: list[str]) -> list[str]:
        # Small models copy the prompt's "..." examples: text without a letter or digit is no claim.
        if any(t.strip() and not any(c.isalnum() for c in t) for t in texts):
            raise ValueError("holds a placeholder such as '...' instead of text from the input")
        return texts


class _ChunkVerdict(BaseModel):
    chunk_id: str | int
    verdict: str | None


class _AnswerClaim(BaseModel):
    claim_id: str | int
    chunk_verdicts: list[_ChunkVerdict]
    reference_verdict: str | None = None
    matched_reference_claims: list[str | int] = []


class _ReferenceClaim(BaseModel):
    claim_id: str | int
    chunk_verdicts: list[_ChunkVerdict]
    answer_verdict: str | None = None


class _ChunkRelevanceReply(BaseModel):
    chunk_id: str | int
    relevant: bool
    relevance_score: float | None = None
    reason: str | None = None


class _Verification(BaseModel):
    answer_claims: list[_AnswerClaim]
    reference_claims: list[_ReferenceClaim]
    chunks: list[_ChunkRelevanceReply]


class CallFailed(Exception):
    """A logical call that produced nothing usable; `status` is judge_error or timeout."""

    def __init__(self, status: str, reason: str):
        super().__init__(reason)
        self.status = status


@dataclass
class _Attempt:
    """What one HTTP attempt gave back (success: content; failure: retryable or not)."""

    record: CallRecord
    content: str | None = None
    finish_reason: str | None = None
    retry: bool = False
    retry_after: float | None = None
    resend: bool = False  # a fallback (schema level, limit parameter): the same request again, not a retry
    choices: tuple[tuple[str | None, str | None], ...] = ()  # (content, finish_reason) of every choice


class JudgeClient:
    def __init__(self, base_url: str | None, model: str, api_key: str | None = None, concurrency: int = 8,
                 timeout: float = 60, max_attempts: int = 4, seed: int = 0, backoff_base: float = 1.0,
                 backoff_max: float = 60.0, max_retry_after: float = 600.0, cache=None, repeats: int = 1,
                 batch: bool = False, batches=None, batch_poll: float | None = None, budget=None,
                 max_output_tokens: int = MAX_OUTPUT_TOKENS):
        check_numbers({"concurrency": concurrency, "repeats": repeats, "max_attempts": max_attempts,
                       "timeout": timeout, "max_output_tokens": max_output_tokens})  # a concurrency of 0: wait for ever
        self._api_key = api_key or os.environ.get("OPENAI_API_KEY")
        if not self._api_key:
            raise ValueError("no API key: pass api_key or set OPENAI_API_KEY "
                             "(servers without authentication accept any value, e.g. 'none')")
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        self.model = model
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.seed = seed
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.max_retry_after = max_retry_after
        self.schema_level = BOUNDED  # lowered by refusals (module doc)
        self.limit_field = "max_tokens"  # or max_completion_tokens, for servers that want that name
        self.cache = cache  # get(key) -> dict | None and put(key, **fields); None: every request goes out
        self.repeats = repeats  # holistic replies per sample (module doc)
        self.n_supported = True  # cleared when a server refuses or ignores `n` (several choices per request)
        self.batch = batch  # requests go through the Batch API (batch_api), not one HTTP call each
        self.batches = batches  # the run's record of its batches (batch_api.Batcher's ledger), or None
        self.batch_poll = batch_api.POLL_SECONDS if batch_poll is None else batch_poll
        self.budget = budget  # evaluators.runs.budget.Budget: once reached, no request goes out (module doc)
        # the most a cut-off reply is asked again with (a small server's own cap: asking for more only costs time)
        self.max_output_tokens = max_output_tokens

    def __repr__(self) -> str:  # the key stays out of logs
        return f"JudgeClient(base_url={self.base_url!r}, model={self.model!r})"

    # -- public API ---------------------------------------------------------------------------------

    async def assess(self, samples: Sequence[Sample], claims: bool = True, holistic: bool = True,
                     on_sample: Callable[[], None] | None = None
                     ) -> list[tuple[Judgment | None, HolisticJudgment | None]]:
        """Per sample, in order, its claim matrix (when `claims`) and its holistic ratings (when
        `holistic`), both started at once; None for a part not asked for. `on_sample()` is called as
        each sample is done. Never raises for a judge fault."""
        semaphore = asyncio.Semaphore(self.concurrency)
        # One client per event loop: asyncio.run() in the *_sync methods makes a new loop each time.
        async with openai.AsyncOpenAI(base_url=self.base_url, api_key=self._api_key, timeout=self.timeout,
                                      max_retries=0) as client:
            batcher = batch_api.Batcher(client, self.base_url, self.batches, self.batch_poll) if self.batch else None
            session = _Session(self, client, semaphore, batcher)

            async def one(sample: Sample):
                text = _sample_text(sample)
                parts = await asyncio.gather(session.judge_sample(sample, text) if claims else _nothing(),
                                             session.rate_sample(text) if holistic else _nothing())
                if on_sample is not None:
                    on_sample()
                return tuple(parts)

            judged = list(await asyncio.gather(*(one(s) for s in samples)))
            if batcher is not None:
                batcher.consume()
            return judged

    def assess_sync(self, samples: Sequence[Sample], claims: bool = True, holistic: bool = True,
                    on_sample: Callable[[], None] | None = None
                    ) -> list[tuple[Judgment | None, HolisticJudgment | None]]:
        """`assess` for synchronous callers (CLI, a Streamlit worker thread); not inside a running loop."""
        return asyncio.run(self.assess(samples, claims, holistic, on_sample))

    def judge_sync(self, samples: Sequence[Sample]) -> list[Judgment]:
        """The claim matrix of every sample, in order."""
        return [j for j, _ in self.assess_sync(samples, holistic=False)]

    def rate_sync(self, samples: Sequence[Sample]) -> list[HolisticJudgment]:
        """The holistic ratings of every sample, in order (one call each)."""
        return [r for _, r in self.assess_sync(samples, claims=False)]

    # -- retry policy -------------------------------------------------------------------------------

    def retry_delay(self, retry: int, retry_after: float | None) -> float | None:
        """Seconds to wait before retry number `retry` (1-based); None: the server asked for more
        than `max_retry_after`, so do not retry."""
        if retry_after is not None:
            return retry_after if retry_after <= self.max_retry_after else None
        ceiling = min(self.backoff_max, self.backoff_base * 2 ** (retry - 1))
        return random.uniform(ceiling / 2, ceiling)  # jitter spreads out clients that failed together

    def response_format(self, level: int) -> dict:
        if level == BOUNDED:
            return {"type": "json_schema", "json_schema": prompts.SCHEMA}
        if level == PLAIN:
            return {"type": "json_schema", "json_schema": prompts.plain(prompts.SCHEMA)}
        return {"type": "json_object"}


async def _nothing() -> None:
    return None


def _sample_text(sample: Sample) -> prompts.SampleText:
    golden, output = sample.golden, sample.output
    return prompts.sample_text(golden.question, golden.reference, output.answer, [c.text for c in output.contexts])


class _Session:
    """The judge's work within one `judge()` call: one client, one semaphore."""

    def __init__(self, judge: JudgeClient, client: openai.AsyncOpenAI, semaphore: asyncio.Semaphore,
                 batcher: batch_api.Batcher | None = None):
        self.judge = judge
        self.client = client
        self.semaphore = semaphore
        self.batcher = batcher  # batch mode: requests wait for their batch, with no semaphore and no backoff
        self.refusal: str | None = None  # set by the first 401/403/404: no request goes out after it

    async def judge_sample(self, sample: Sample, text: prompts.SampleText) -> Judgment:
        judgment = await self._judge_sample(sample, text)
        if self.judge.cache is not None:
            self.remember(judgment.calls)
        return judgment

    async def rate_sample(self, text: prompts.SampleText) -> HolisticJudgment:
        """`judge.repeats` holistic replies, aggregated (`judgments.aggregate`): first as the choices of
        one request (`n`), then one request per missing reply, reply k with seed + k. A sample with a
        failed reply fails as a whole: a retry asks again, and the replies that came are cached."""
        calls: list[CallRecord] = []
        messages = prompts.holistic_messages(text)
        n = self.judge.repeats
        replies = await self.choices(messages, n, calls) if n > 1 and self.judge.n_supported else []
        outcomes = await asyncio.gather(*(self.rate_once(messages, k) for k in range(len(replies), n)))
        replies += [reply for reply, _, _ in outcomes if reply is not None]
        calls += [record for _, records, _ in outcomes for record in records]
        failures = [failed for _, _, failed in outcomes if failed is not None]
        if failures:
            status = TIMEOUT if all(f.status == TIMEOUT for f in failures) else JUDGE_ERROR
            reason = str(failures[0]) if n == 1 else f"{len(failures)} of {n} replies failed: {failures[0]}"
            judgment = HolisticJudgment(None, status, reason, calls)
        else:
            judgment = HolisticJudgment(aggregate(replies), OK, None, calls)
        if self.judge.cache is not None:
            self.remember(calls)
        return judgment

    async def rate_once(self, messages: prompts.Messages, k: int):
        """Reply k (with seed + k) -> (reply or None, its records, None or why it failed)."""
        records: list[CallRecord] = []
        try:
            reply = await self.call(prompts.HOLISTIC, messages, _parse_holistic, records, seed_offset=k)
            return reply, records, None
        except CallFailed as failed:
            return None, records, failed

    async def choices(self, messages: prompts.Messages, n: int, calls: list[CallRecord]) -> list[Holistic]:
        """The usable replies among the `n` choices of one request (none on any failure: the missing
        replies are asked one by one). A server that answers with fewer choices ignores `n`."""
        try:
            attempt = await self.request(prompts.HOLISTIC, messages, calls, n=n)
        except CallFailed:
            return []
        if len(attempt.choices) < n:
            self.judge.n_supported = False
        usable, errors = [], []
        for content, finish_reason in attempt.choices:
            try:
                if finish_reason == "length":
                    raise ValueError("cut off (finish_reason 'length')")
                usable.append(_checked(content, _parse_holistic))
            except ValueError as bad:
                errors.append(str(bad))
        if errors:  # the request is kept (and cached) for its usable choices; the others are asked again
            calls[-1] = _replace_status(calls[-1], OK, f"{len(errors)} of {len(attempt.choices)} choices unusable: "
                                                       f"{errors[0]}")
        return usable

    def remember(self, calls: list[CallRecord]) -> None:
        """Cache the replies that came over HTTP and ended "ok": parsed, validated and complete."""
        for record in calls:
            if record.status == OK and not record.cached and record.response is not None:
                self.judge.cache.put(cache_key(json.loads(record.request), self.judge.base_url), model=record.model,
                                     prompt_version=prompts.PROMPT_VERSION, purpose=record.purpose,
                                     response=record.response, input_tokens=record.input_tokens,
                                     output_tokens=record.output_tokens)

    async def _judge_sample(self, sample: Sample, text: prompts.SampleText) -> Judgment:
        output = sample.output
        calls: list[CallRecord] = []
        try:
            extraction = await self.call(prompts.EXTRACTION, prompts.extraction_messages(text), _parse_extraction,
                                         calls)
        except CallFailed as failed:
            return Judgment(None, (), failed.status, f"extraction: {failed}", calls)
        answer_claims, reference_claims = _clean(extraction.answer_claims), _clean(extraction.reference_claims)
        questions = tuple(_clean(extraction.generated_questions)[:prompts.N_GENERATED_QUESTIONS])
        n_chunks = len(output.contexts)
        # Nothing to verify without chunks and claims; otherwise one call per 16 chunks (at least one).
        batches = _batches(n_chunks) if (n_chunks or answer_claims or reference_claims) else []
        outcomes = await asyncio.gather(*(self.verify(text, answer_claims, reference_claims, batch, first=i == 0)
                                          for i, batch in enumerate(batches)))
        merged = _Merge(answer_claims, reference_claims, n_chunks)
        failures = []
        for i, (batch, (reply, records)) in enumerate(zip(batches, outcomes)):
            if isinstance(reply, CallFailed):
                failures.append(reply)
            else:
                merged.add(reply, batch, compare_claims=i == 0)
                if missing := merged.missing_count(batch, compare_claims=i == 0):
                    # The reply is used as it is; its record says it was short.
                    records[-1] = _replace_status(records[-1], INCOMPLETE, f"{missing} verdicts missing")
            calls.extend(records)
        if failures:
            status = TIMEOUT if all(f.status == TIMEOUT for f in failures) else JUDGE_ERROR
            error = "; ".join(f"verification: {f}" for f in failures)
        else:
            status, error = OK, merged.missing_description()
        # The cells a failed call left None carry its status and reason to the metrics that need them.
        matrix = merged.matrix(tuple(c.chunk_id for c in output.contexts), status if failures else JUDGE_ERROR, error)
        return Judgment(matrix, questions, status, error, calls)

    async def verify(self, text: prompts.SampleText, answer_claims: list[str], reference_claims: list[str],
                     batch: range, first: bool):
        """One verification call -> (reply or CallFailed, its records). The failure is returned, not
        raised, so the other batches survive; each batch keeps its own records (they run concurrently)."""
        messages = prompts.verification_messages(text, answer_claims, reference_claims, batch, compare_claims=first)
        records: list[CallRecord] = []
        try:
            reply = await self.call(prompts.VERIFICATION, messages, _parse_verification, records)
        except CallFailed as failed:
            return failed, records
        return reply, records

    # -- one logical call: retries, schema fallback, one repair --------------------------------------

    async def call(self, purpose: str, messages: prompts.Messages, parse: Callable[[str], BaseModel],
                   records: list[CallRecord], seed_offset: int = 0):
        content, limit = await self.complete(purpose, messages, records, seed_offset=seed_offset)
        try:
            return _checked(content, parse)
        except ValueError as bad:
            records[-1] = _replace_status(records[-1], INVALID, str(bad))
            repair = prompts.repair_messages(messages, _excerpt(content or ""), str(bad))
            content, _ = await self.complete(f"{purpose}_repair", repair, records, limit, seed_offset)
            try:
                return _checked(content, parse)
            except ValueError as still_bad:
                records[-1] = _replace_status(records[-1], INVALID, str(still_bad))
                raise CallFailed(JUDGE_ERROR, f"unusable reply after one repair: {still_bad}") from None

    async def complete(self, purpose: str, messages: prompts.Messages, records: list[CallRecord],
                       limit: int | None = None, seed_offset: int = 0) -> tuple[str | None, int | None]:
        """(content, the output limit it was produced under) of a reply that was not cut off: one cut
        off is asked again with a raised limit (module doc); raises CallFailed."""
        for _ in range(LENGTH_RETRIES + 1):
            attempt = await self.request(purpose, messages, records, limit, seed_offset)
            content = attempt.content
            if attempt.finish_reason != "length":
                return content, limit
            produced = records[-1].output_tokens or math.ceil(len(content or "") / 4)
            cap = self.judge.max_output_tokens
            if produced >= cap or (limit is not None and limit >= cap):
                break
            limit = min(cap, max(1024, 2 * produced, 2 * (limit or 0)))
            records[-1] = _replace_status(records[-1], INVALID, f"the reply was cut off after {produced} tokens "
                                                                f"(finish_reason 'length'); asking again with "
                                                                f"{self.judge.limit_field} {limit}")
        records[-1] = _replace_status(records[-1], INVALID, "the reply was cut off (finish_reason 'length')")
        raise CallFailed(JUDGE_ERROR, f"the reply was cut off (finish_reason 'length') "
                                      f"at {self.judge.limit_field} {limit}")

    async def request(self, purpose: str, messages: prompts.Messages, records: list[CallRecord],
                      limit: int | None = None, seed_offset: int = 0, n: int = 1) -> _Attempt:
        """The attempt that got a reply, retrying transient faults; raises CallFailed."""
        retries = 0
        while True:
            attempt = await self.attempt(purpose, messages, limit, seed_offset, n)
            records.append(attempt.record)
            if attempt.record.status == OK:
                return attempt
            if attempt.resend:
                continue  # a fallback is not a retry: the same request, as the server wants it
            if not attempt.retry:
                raise CallFailed(JUDGE_ERROR, attempt.record.error or attempt.record.status)
            retries += 1
            failed_as = TIMEOUT if attempt.record.status == CALL_TIMEOUT else JUDGE_ERROR
            if retries >= self.judge.max_attempts:
                raise CallFailed(failed_as, f"{attempt.record.error} (after {retries} attempts)")
            delay = self.judge.retry_delay(retries, attempt.retry_after)
            if delay is None:
                asked, cap = attempt.retry_after, self.judge.max_retry_after
                raise CallFailed(JUDGE_ERROR, f"{attempt.record.error}; the server asked to wait {asked:.0f} s, "
                                              f"more than {cap:.0f} s")
            if self.batcher is None:  # a batch takes long enough: the retry goes in the next one
                await asyncio.sleep(delay)

    async def attempt(self, purpose: str, messages: prompts.Messages, limit: int | None,
                      seed_offset: int = 0, n: int = 1) -> _Attempt:
        judge = self.judge
        level = judge.schema_level
        body = {"model": judge.model, "messages": messages, "temperature": 0, "seed": judge.seed + seed_offset,
                "response_format": judge.response_format(level)}
        if limit is not None:
            body[judge.limit_field] = limit
        if n > 1:
            body["n"] = n
        record = _RecordBuilder(purpose, judge.model, messages, body)
        if judge.cache is not None and (hit := self.cached(body, record)) is not None:
            return hit
        send = self.batched if self.batcher is not None else self.sent
        attempt = await send(body, record, level, limit, n)
        if judge.budget is not None and attempt.record.status == OK:
            judge.budget.charge(attempt.record.input_tokens, attempt.record.output_tokens,
                                attempt.record.cached_input_tokens)
        return attempt

    def not_sent(self, record: _RecordBuilder) -> _Attempt | None:
        """A request the run's budget holds back (a failure, not a raise: the calls made so far are kept)."""
        budget = self.judge.budget
        return _Attempt(record.failed(NOT_SENT, budget.reason())) if budget is not None and budget.reached else None

    async def sent(self, body: dict, record: _RecordBuilder, level: int, limit: int | None, n: int) -> _Attempt:
        """The attempt as the server answered it over HTTP."""
        judge = self.judge
        async with self.semaphore:
            if self.refusal is not None:
                raise JudgeRefused(self.refusal)
            record.start()
            if (held := self.not_sent(record)) is not None:
                return held
            try:
                async with asyncio.timeout(judge.timeout):  # the whole reply (module doc)
                    raw = await self.client.chat.completions.with_raw_response.create(**body)
            except (openai.APITimeoutError, TimeoutError):
                return _Attempt(record.failed(CALL_TIMEOUT, f"no complete reply within {judge.timeout} s"), retry=True)
            except openai.APIConnectionError as e:
                return _Attempt(record.failed(CONNECTION_ERROR, f"connection error: {e}"), retry=True)
            except openai.APIStatusError as e:
                return self.status_error(record, e.status_code, e.response.text, e.message, e.response.headers,
                                         level, limit, n)
        return _completed(record, raw.http_response.text, raw.parse)

    async def batched(self, body: dict, record: _RecordBuilder, level: int, limit: int | None, n: int) -> _Attempt:
        """The attempt as its batch answered it (batch_api): the same _Attempt an HTTP reply gives, and the
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
            return _Attempt(record.failed(CALL_TIMEOUT, f"the batch ended before running the request: {result.error}"),
                            retry=True)
        return _Attempt(record.failed(SERVER_ERROR, f"batch: {result.error}"), retry=True)

    def cached(self, body: dict, record: _RecordBuilder) -> _Attempt | None:
        """The cached reply to `body` as an attempt that made no request, or None (a miss)."""
        reply = self.judge.cache.get(cache_key(body, self.judge.base_url))
        if reply is None:
            return None
        try:
            choices = tuple((c["message"]["content"], c.get("finish_reason"))
                            for c in json.loads(reply["response"])["choices"])
            content, finish_reason = choices[0]
        except (ValueError, KeyError, IndexError, TypeError):
            return None  # an unreadable entry is a miss: the request goes out and replaces nothing
        return _Attempt(CallRecord(**record.fields, response=reply["response"], input_tokens=reply["input_tokens"],
                                   output_tokens=reply["output_tokens"], latency_ms=0.0, status=OK, error=None,
                                   cached=True),
                        content=content, finish_reason=finish_reason, choices=choices)

    def status_error(self, record: _RecordBuilder, code: int, text: str, message: str, headers, level: int,
                     limit: int | None, n: int) -> _Attempt:
        """The attempt an HTTP error status makes (`message`: openai's "Error code: 429 - {...}")."""
        judge = self.judge
        if code in REFUSAL_STATUS_CODES:
            self.refusal = self.refusal or _refusal(code, message, judge.model, judge.base_url)
            raise JudgeRefused(self.refusal)
        if code == 400 and n > 1 and judge.n_supported and _N_REFUSAL.search(text):  # one choice per request now
            judge.n_supported = False
            return _Attempt(record.failed(BAD_REQUEST, f"HTTP 400: {message}; asking for one choice per request",
                                          text))
        if code == 400 and level > JSON_MODE and _SCHEMA_REFUSAL.search(text) and not _TOO_LONG.search(text):
            # Concurrent refusals of one level step down once, not once each.
            judge.schema_level = min(judge.schema_level, level - 1)
            then = "the schema without bounds" if level == BOUNDED else "JSON mode"
            return _Attempt(record.failed(SCHEMA_UNSUPPORTED, f"HTTP 400: {message}; switching to {then}", text),
                            resend=True)
        if code == 400 and limit is not None and judge.limit_field == "max_tokens" and "max_completion_tokens" in text:
            judge.limit_field = "max_completion_tokens"
            return _Attempt(record.failed(BAD_REQUEST, f"HTTP 400: {message}; sending max_completion_tokens",
                                          text), resend=True)
        if code in RETRYABLE_STATUS_CODES or code >= 500:
            status = RATE_LIMITED if code == 429 else SERVER_ERROR
            return _Attempt(record.failed(status, f"HTTP {code}: {message}", text), retry=True,
                            retry_after=_retry_after(headers))
        return _Attempt(record.failed(BAD_REQUEST, f"HTTP {code}: {message}", text))


def _completed(record: _RecordBuilder, text: str, parse: Callable) -> _Attempt:
    """The attempt of a 200 reply whose body is `text` (`parse()` -> the ChatCompletion)."""
    try:
        completion = parse()
        choices = tuple((c.message.content, c.finish_reason) for c in completion.choices)
        content, finish_reason = choices[0]
    except (ValueError, ValidationError, AttributeError, IndexError, TypeError) as e:
        # openai 3.x hands non-JSON bodies back as str or lets the decoder's error escape.
        return _Attempt(record.failed(BAD_RESPONSE, f"not a chat completion: {type(e).__name__}", text), retry=True)
    usage = completion.usage
    details = getattr(usage, "prompt_tokens_details", None)
    return _Attempt(record.done(OK, None, text, usage.prompt_tokens if usage else None,
                                usage.completion_tokens if usage else None, getattr(details, "cached_tokens", None)),
                    content=content, finish_reason=finish_reason, choices=choices)


class _RecordBuilder:
    """Times one attempt and builds its CallRecord."""

    def __init__(self, purpose: str, model: str, messages: prompts.Messages, body: dict):
        self.fields = {"purpose": purpose, "model": model, "prompt_hash": _prompt_hash(messages),
                       "request": json.dumps(body, ensure_ascii=False)}
        self.started = 0.0

    def start(self) -> None:  # after the semaphore: latency is the server's, not the queue's
        self.started = time.perf_counter()

    def done(self, status: str, error: str | None, response: str | None, input_tokens: int | None = None,
             output_tokens: int | None = None, cached_input_tokens: int | None = None) -> CallRecord:
        latency_ms = (time.perf_counter() - self.started) * 1000
        return CallRecord(**self.fields, response=response, input_tokens=input_tokens, output_tokens=output_tokens,
                          latency_ms=round(latency_ms, 1), status=status, error=error,
                          cached_input_tokens=cached_input_tokens)

    def failed(self, status: str, error: str, response: str | None = None) -> CallRecord:
        return self.done(status, error, response)


def _refusal(code: int, said: str, model: str, base_url: str | None) -> str:
    """Why no call can succeed and what to do, in the terms of both the CLI and the app."""
    where = base_url or "the OpenAI API"
    said = said.removeprefix(f"Error code: {code} - ")  # openai's prefix: the code is said already
    if code == 401:
        return (f"the judge server refused the API key (HTTP 401: {said}): check OPENAI_API_KEY (or the key "
                f"entered for the run): it must be a valid key for {where}")
    if code == 403:
        return (f"the judge server refused this API key access (HTTP 403: {said}): check that the key may use "
                f"model {model!r} on {where} (its project, organisation, region or tier)")
    return (f"the judge server knows no model {model!r} at {where} (HTTP {code}: {said}): check the model name "
            f"and the base URL")


def cache_key(body: dict, base_url: str | None) -> str:
    """sha256 over the server's base URL, the prompt version and the request body (model, messages,
    temperature, seed, response_format): anything that could change the reply changes the key. The
    output limit is left out: only complete replies are cached, and a limit does not change those."""
    request = {k: v for k, v in body.items() if k not in ("max_tokens", "max_completion_tokens")}
    text = json.dumps({"base_url": base_url, "prompt_version": prompts.PROMPT_VERSION, "request": request},
                      ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _prompt_hash(messages: prompts.Messages) -> str:
    return hashlib.sha256(prompts.prompt_json(messages).encode()).hexdigest()


def _replace_status(record: CallRecord, status: str, error: str) -> CallRecord:
    """`record` with another status and error. An invalid reply longer than MAX_REPLY_CHARS keeps only its
    start: a runaway reply is not worth megabytes in judge_calls (its error says how long it was)."""
    response = record.response
    if status == INVALID and response is not None and len(response) > MAX_REPLY_CHARS:
        response = _excerpt(response)
    return CallRecord(**{**record.__dict__, "status": status, "error": error, "response": response})


def _retry_after(headers) -> float | None:
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


# -- reply checking ----------------------------------------------------------------------------------

def _checked(content: str | None, parse: Callable[[str], BaseModel]):
    """The parsed reply; ValueError (with what to tell the model in a repair) when unusable."""
    if not content or not content.strip():
        raise ValueError("the reply was empty")
    if len(content) > MAX_REPLY_CHARS:
        raise ValueError(f"the reply is {len(content):,} characters, over the {MAX_REPLY_CHARS:,}-character limit "
                         f"(not read): answer with the JSON only, as short as the task allows")
    try:
        return parse(content)
    except json.JSONDecodeError as e:
        raise ValueError(f"the reply is not valid JSON ({e})") from None
    except ValidationError as e:
        raise ValueError(f"the JSON does not match the required format: {_short(e)}") from None


def _excerpt(text: str) -> str:
    """`text`, or its first REPAIR_EXCERPT_CHARS and how much was left out."""
    if len(text) <= REPAIR_EXCERPT_CHARS:
        return text
    return f"{text[:REPAIR_EXCERPT_CHARS]} [... {len(text) - REPAIR_EXCERPT_CHARS:,} more characters not shown]"


def _short(e: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors()[:5])


def _parse_extraction(content: str) -> _Extraction:
    return _Extraction.model_validate(prompts.part(json.loads(content), prompts.EXTRACTION))


def _parse_verification(content: str) -> _Verification:
    return _Verification.model_validate(prompts.part(json.loads(content), prompts.VERIFICATION))


def _parse_holistic(content: str) -> Holistic:
    return Holistic.model_validate(prompts.part(json.loads(content), prompts.HOLISTIC))


def _clean(texts: list[str]) -> list[str]:
    return [t.strip() for t in texts if t and t.strip()]


def _batches(n_chunks: int) -> list[range]:
    size = prompts.CHUNKS_PER_CALL
    return [range(start, min(start + size, n_chunks)) for start in range(0, n_chunks, size)] or [range(0)]


def _verdict(raw: str | None) -> Verdict:
    """A reply's verdict string as a matrix verdict; strings outside the vocabulary are unknown."""
    if raw is None:
        return None
    value = raw.strip().lower().replace(" ", "_").replace("-", "_")
    return value if value in VERDICTS else UNKNOWN


def _norm_id(prefix: str, raw: str | int) -> str:
    """"C3", "c3", "3", 3 -> "C3": models drop or recase the prefix."""
    text = str(raw).strip().upper().strip("[]")
    return text if text.startswith(prefix) else f"{prefix}{text}"


def _by_id(items, prefix: str, id_of: Callable) -> dict:
    """Reply items keyed by their normalised id; the first of duplicates wins."""
    out = {}
    for item in items:
        out.setdefault(_norm_id(prefix, id_of(item)), item)
    return out


def _chunk_verdicts(claim) -> dict[str, Verdict]:
    out: dict[str, Verdict] = {}
    for v in claim.chunk_verdicts:
        out.setdefault(_norm_id("C", v.chunk_id), _verdict(v.verdict))
    return out


class _Merge:
    """Verification replies -> one ClaimMatrix, aligned by id; a cell no reply filled stays None."""

    def __init__(self, answer_claims: list[str], reference_claims: list[str], n_chunks: int):
        self.answer_claims, self.reference_claims = answer_claims, reference_claims
        self.answer_vs_chunks = [[None] * n_chunks for _ in answer_claims]
        self.reference_vs_chunks = [[None] * n_chunks for _ in reference_claims]
        self.answer_vs_reference: list[Verdict] = [None] * len(answer_claims)
        self.reference_vs_answer: list[Verdict] = [None] * len(reference_claims)
        self.matched: list[tuple[int, ...]] = [() for _ in answer_claims]
        self.relevance = [ChunkRelevance(None) for _ in range(n_chunks)]

    def add(self, reply: _Verification, batch: range, compare_claims: bool) -> None:
        answer = _by_id(reply.answer_claims, "A", lambda c: c.claim_id)
        reference = _by_id(reply.reference_claims, "R", lambda c: c.claim_id)
        for i in range(len(self.answer_claims)):
            claim = answer.get(prompts.answer_claim_id(i))
            if claim is None:
                continue
            self._fill(self.answer_vs_chunks[i], _chunk_verdicts(claim), batch)
            if compare_claims:
                self.answer_vs_reference[i] = _verdict(claim.reference_verdict)
                self.matched[i] = self._reference_indexes(claim.matched_reference_claims)
        for i in range(len(self.reference_claims)):
            claim = reference.get(prompts.reference_claim_id(i))
            if claim is None:
                continue
            self._fill(self.reference_vs_chunks[i], _chunk_verdicts(claim), batch)
            if compare_claims:
                self.reference_vs_answer[i] = _verdict(claim.answer_verdict)
        chunks = _by_id(reply.chunks, "C", lambda c: c.chunk_id)
        for j in batch:
            if (c := chunks.get(prompts.chunk_id(j))) is not None:
                score = None if c.relevance_score is None else min(max(c.relevance_score, 0.0), 100.0)
                self.relevance[j] = ChunkRelevance(c.relevant, score, c.reason)

    @staticmethod
    def _fill(row: list[Verdict], verdicts: dict[str, Verdict], batch: range) -> None:
        for j in batch:
            row[j] = verdicts.get(prompts.chunk_id(j))

    def _reference_indexes(self, ids: list[str | int]) -> tuple[int, ...]:
        wanted = {_norm_id("R", i) for i in ids}
        return tuple(i for i in range(len(self.reference_claims)) if prompts.reference_claim_id(i) in wanted)

    def missing_count(self, batch: range, compare_claims: bool) -> int:
        cells = [row[j] for rows in (self.answer_vs_chunks, self.reference_vs_chunks) for row in rows for j in batch]
        cells += [self.relevance[j].relevant for j in batch]
        if compare_claims:
            cells += [*self.answer_vs_reference, *self.reference_vs_answer]
        return sum(v is None for v in cells)

    def missing_description(self) -> str | None:
        n = self.missing_count(range(len(self.relevance)), compare_claims=True)
        if not n:
            return None
        return f"the judge gave no verdict for {n} cells (left None: judge_error on the metrics needing them)"

    def matrix(self, chunk_ids: tuple[str, ...], missing_status: str, missing_reason: str | None) -> ClaimMatrix:
        return ClaimMatrix(
            answer_claims=tuple(self.answer_claims), reference_claims=tuple(self.reference_claims),
            chunk_ids=chunk_ids,
            answer_vs_chunks=tuple(map(tuple, self.answer_vs_chunks)),
            reference_vs_chunks=tuple(map(tuple, self.reference_vs_chunks)),
            answer_vs_reference=tuple(self.answer_vs_reference), reference_vs_answer=tuple(self.reference_vs_answer),
            chunk_relevance=tuple(self.relevance), answer_matches=tuple(self.matched),
            missing_status=missing_status, missing_reason=missing_reason)
