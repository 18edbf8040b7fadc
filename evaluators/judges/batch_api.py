"""The OpenAI Batch API as the LLM judge's transport (`run --batch`): half the price, results within 24 h.

The judge keeps all its logic (rounds, retries, fallbacks, repairs, cache, statuses: openai_protocol and
openai_transport); only where a request goes changes. `Batcher.submit(body)` waits for the request's result instead of an HTTP
reply. The requests submitted while the event loop has nothing else to do make one round: one JSONL file
(`POST /v1/files`, purpose "batch"), one batch (`POST /v1/batches`), polled every `poll` seconds until it
ends, then its output and error files are downloaded and each request is answered by its custom_id. So a
run's samples go out as all their extraction and holistic requests, then all verifications, then the
repairs and retries.

custom_id: a hash of the request body and of the server, and the round it goes out in ("-0", "-1", ...:
a retry of the same body is a new request). Identical requests of one round share one line.

Restarts: a batch is recorded (`ledger.add`: batch id, input file, custom ids) before it is polled, and
marked consumed once the judge session that used its results has ended (their replies are in the judge
cache and its calls are returned to be stored). A new session (`run --resume`) loads its run's
unconsumed batches, and a request whose custom_id one holds is answered from that batch (polled and
downloaded again: the server keeps its files) instead of going out twice. Retries replay the same way,
round by round, so a resumed run makes the records the first session would have made.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from collections import Counter
from dataclasses import dataclass

import openai

ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"  # the only window the Batch API offers
def poll_seconds() -> float:
    """Seconds between polls of a batch (tests: 0.05), read when a run starts."""
    return float(os.environ.get("RAGSCOPE_BATCH_POLL", 20))
# A batch the server has not ended within this is given up (its requests fail): the window is 24 h, the
# server expires it then; an hour more for finalising.
MAX_WAIT_SECONDS = 25 * 3600
MAX_REQUESTS = 50_000  # OpenAI's limits on one batch's input file
MAX_BYTES = 150_000_000  # (200 MB; room for JSONL framing)
FILE_SECONDS = 900  # to upload or download one file (up to 200 MB), not the judge's per-reply timeout
POLL_FAILURES = 5  # consecutive failed polls (connection, 5xx) before a batch's requests are failed
SETTLE_TURNS = 20  # event-loop turns without a new request before a round goes out
EXPIRED = "batch_expired"  # the error code of a request an expired batch did not run
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})


@dataclass(frozen=True)
class BatchResult:
    """One request's outcome in a batch: its HTTP status and body, or why there is none."""

    batch_id: str | None
    status_code: int | None = None
    body: str | None = None  # the response body as JSON text
    error: str | None = None  # set when there is no response
    expired: bool = False  # the batch ended (expired, cancelled) before running the request


def body_key(body: dict, base_url: str | None) -> str:
    """The request's identity in custom ids: the server and the whole body (the output limit included)."""
    text = json.dumps({"base_url": base_url, "body": body}, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class Batcher:
    """Gathers a session's requests into batches and answers each by its custom_id (module doc).

    `ledger` (None: nothing survives a restart) has open() -> {custom_id: batch_id} of the run's unconsumed
    batches, add(batch_id, input_file_id, custom_ids), update(batch_id, status) and consume(batch_ids)."""

    def __init__(self, client: openai.AsyncOpenAI, base_url: str | None, ledger=None, poll: float | None = None,
                 max_wait: float = MAX_WAIT_SECONDS):
        self.client, self.base_url, self.ledger = client, base_url, ledger
        self.poll, self.max_wait = poll_seconds() if poll is None else poll, max_wait
        self._stored: dict[str, str] = ledger.open() if ledger is not None else {}
        self._pending: dict[str, tuple[dict, list[asyncio.Future]]] = {}
        self._rounds: Counter[str] = Counter()  # per body key, the rounds it went out in
        self._flusher: asyncio.Task | None = None
        self._results: dict[str, asyncio.Task] = {}  # batch id -> its download (once per batch)
        self.used: set[str] = set()  # batches this session took results from

    async def submit(self, body: dict) -> BatchResult:
        future = asyncio.get_running_loop().create_future()
        self._pending.setdefault(body_key(body, self.base_url), (body, []))[1].append(future)
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._round())
        return await future

    def consume(self) -> None:
        """The session is over and its results are used: a later session must not replay these batches."""
        if self.ledger is not None and self.used:
            self.ledger.consume(sorted(self.used))

    async def _round(self) -> None:
        seen, quiet = len(self._pending), 0
        while quiet < SETTLE_TURNS:  # until no task has added a request for SETTLE_TURNS turns of the loop
            await asyncio.sleep(0)
            quiet = quiet + 1 if len(self._pending) == seen else 0
            seen = len(self._pending)
        pending, self._pending, self._flusher = self._pending, {}, None  # later requests start the next round
        stored: dict[str, list] = {}
        fresh: list[tuple[str, dict, list[asyncio.Future]]] = []
        for key, (body, futures) in pending.items():
            custom_id = f"{key}-{self._rounds[key]}"
            self._rounds[key] += 1
            if (batch_id := self._stored.get(custom_id)) is not None:
                stored.setdefault(batch_id, []).append((custom_id, futures))
            else:
                fresh.append((custom_id, body, futures))
        try:
            await asyncio.gather(*(self._answer(batch_id, items) for batch_id, items in stored.items()),
                                 *(self._send(part) for part in _parts(fresh)))
        except Exception as e:  # no request may wait for ever: each gets the error (a store fault, ...)
            for _, futures in pending.values():
                for future in futures:
                    if not future.done():
                        future.set_exception(e)

    async def _send(self, items: list[tuple[str, dict, list[asyncio.Future]]]) -> None:
        """Upload one JSONL file of `items`, create its batch, record it, then answer its requests."""
        lines = "".join(_line(custom_id, body) for custom_id, body, _ in items).encode()
        try:
            uploaded = await self.client.files.create(file=("ragscope-batch.jsonl", lines, "application/jsonl"),
                                                      purpose="batch", timeout=FILE_SECONDS)
            batch = await self.client.batches.create(input_file_id=uploaded.id, endpoint=ENDPOINT,
                                                     completion_window=COMPLETION_WINDOW,
                                                     metadata={"created_by": "ragscope"})
        except openai.APIStatusError as e:  # as if each request had been answered so (a 429 is retried, ...)
            return _settle([f for *_, fs in items for f in fs], BatchResult(None, e.status_code, e.response.text))
        except openai.APIConnectionError as e:
            return _settle([f for *_, fs in items for f in fs], BatchResult(None, error=f"connection error: {e}"))
        if self.ledger is not None:
            self.ledger.add(batch.id, uploaded.id, [custom_id for custom_id, *_ in items])
        await self._answer(batch.id, [(custom_id, futures) for custom_id, _, futures in items])

    async def _answer(self, batch_id: str, items: list[tuple[str, list[asyncio.Future]]]) -> None:
        if batch_id not in self._results:
            self._results[batch_id] = asyncio.create_task(self._download(batch_id))
        results, status, ended = await self._results[batch_id]
        if ended:
            self.used.add(batch_id)
        for custom_id, futures in items:
            _settle(futures, results.get(custom_id) or BatchResult(
                batch_id, error=f"batch {batch_id} ended {status} without a result for this request",
                expired=status in ("expired", "cancelled")))

    async def _download(self, batch_id: str) -> tuple[dict[str, BatchResult], str, bool]:
        """({custom_id: result}, the batch's last status, whether it ended) once the batch has ended, or was
        given up (not ended: a later session may still take its results)."""
        deadline, failures, seen = time.monotonic() + self.max_wait, 0, None
        while True:
            try:
                batch = await self.client.batches.retrieve(batch_id)
                failures = 0
                if self.ledger is not None and batch.status != seen:  # judge_batches shows where it is
                    self.ledger.update(batch_id, batch.status)
                    seen = batch.status
            except (openai.APIConnectionError, openai.InternalServerError, openai.RateLimitError) as e:
                failures += 1
                if failures >= POLL_FAILURES:
                    return {}, f"unknown (polling failed {failures} times: {e})", False
                batch = None
            except openai.APIStatusError as e:
                return {}, f"unknown (polling failed: HTTP {e.status_code})", False
            if batch is not None and batch.status in TERMINAL:
                break
            if time.monotonic() > deadline:
                return {}, f"still {batch.status if batch else 'unknown'} after {self.max_wait:.0f} s (given up)", False
            await asyncio.sleep(self.poll)
        results: dict[str, BatchResult] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                try:
                    content = await self.client.files.content(file_id, timeout=FILE_SECONDS)
                except openai.APIError as e:
                    return results, f"{batch.status} (its file {file_id} could not be downloaded: {e})", False
                results |= _results(batch_id, content.text)
        status = batch.status
        if batch.errors and batch.errors.data:  # why a failed batch failed (its input did not validate, ...)
            status += f" ({batch.errors.data[0].message})"
        return results, status, True


def _line(custom_id: str, body: dict) -> str:
    return json.dumps({"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body},
                      ensure_ascii=False) + "\n"


def _parts(items: list) -> list[list]:
    """`items` in batches within the Batch API's limits on requests and bytes per file."""
    parts, size = [], 0
    for item in items:
        n = len(_line(item[0], item[1]).encode())
        if not parts or len(parts[-1]) >= MAX_REQUESTS or size + n > MAX_BYTES:
            parts.append([])
            size = 0
        parts[-1].append(item)
        size += n
    return parts


def _results(batch_id: str, text: str) -> dict[str, BatchResult]:
    """An output or error file's lines by custom_id."""
    out = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            custom_id = item["custom_id"]
        except (ValueError, KeyError, TypeError):
            continue  # an unreadable line answers nothing: its request fails as one without a result
        response, error = item.get("response"), item.get("error")
        if response and response.get("status_code") is not None:
            body = response.get("body")
            out[custom_id] = BatchResult(batch_id, int(response["status_code"]),
                                         body if isinstance(body, str) else json.dumps(body, ensure_ascii=False))
        else:
            code = (error or {}).get("code")
            out[custom_id] = BatchResult(batch_id, error=f"{code}: {(error or {}).get('message')}",
                                         expired=code == EXPIRED)
    return out


def _settle(futures: list[asyncio.Future], result: BatchResult) -> None:
    for future in futures:
        if not future.done():
            future.set_result(result)
