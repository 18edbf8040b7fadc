"""A scripted OpenAI-compatible HTTP server for tests (a real server on 127.0.0.1).

openai 3.x runs on httpx2, so transport-level mocks (respx) cannot intercept it; the test double
has to be an actual HTTP server that the real client talks to.

    with start_server() as server:
        client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        server.enqueue(Reply.status(429, retry_after=0.1), Reply.json({"verdicts": []}))
        ...
        assert server.request_count == 2
        assert server.requests[0].body["response_format"]["type"] == "json_schema"

Replies for POST /v1/chat/completions come from the queue first (consumed in order), then from
`server.responder(request_body) -> Reply` (default: `DEFAULT_CONTENT`, but for a TASK: criteria request the
criteria it names scored on their scales, `criteria_reply`). Faults and odd contents:

    Reply.text('{"verdicts": [')          malformed JSON content (finish_reason "stop")
    Reply.text("")                        empty content
    Reply.truncated({"verdicts": [...]})  content cut in half, finish_reason "length"
    Reply.status(429, retry_after=1)      an OpenAI-shaped error body; 500/502/503 likewise
    Reply.json_schema_unsupported()       HTTP 400, as servers without structured outputs answer
    Reply.not_json()                      HTTP 200 whose body is not JSON at all
    Reply.delay(5, then=Reply.json(...))  answers late: a timeout for a client with timeout < 5
    Reply.trickle(10)                     headers at once, then the body one byte every 10 s
    Reply.status(401) / 403 / 404         a wrong key, a key without access, an unknown model
    server.api_key = "sk-right"           every request with another key gets 401, as a real server does
    server.usage = (1000, 10)             every completion reports these prompt and completion tokens (a known cost)
    Reply.huge(10_000_000)                a 200 whose content is 10 MB (a runaway model)
    Reply.choices(Reply.json(a), Reply.json(b))  several choices, as for a request with n = 2

Servers with rules of their own (checked before the queue: a request they refuse consumes no scripted reply):

    server.rules = reasoning_model_rules   OpenAI's reasoning models (gpt-5 family, o-series), as OpenAI documents
                                          them: a temperature other than the default 1 and `max_tokens` refused with
                                          HTTP 400 naming the parameter (`param`); reasoning_effort checked
    server.reasoning_tokens = 300         every completion spends this many hidden reasoning tokens: in
                                          usage.completion_tokens and usage.completion_tokens_details.reasoning_tokens
    server.rules = refusing("seed")       refuses a parameter it does not know by name, as many servers do
                                          ("Unrecognized request argument supplied: seed")
    server.prose = True                   ignores response_format (as Anthropic's OpenAI-compatible endpoint documents)
                                          and answers prose with the JSON in a fenced ```json block

With `server.prompt_cache = PromptCache()` the server bills prompts as OpenAI does with its prompt cache: it
counts tokens (`PromptCache.tokens`) of the schema and the messages in order and reports in
`usage.prompt_tokens_details.cached_tokens` the longest prefix it saw in the last minutes (>= 1,024 tokens, in
128-token steps).

The Batch API (`/v1/files`, `/v1/batches`) answers each line of an uploaded JSONL file as the chat
endpoint would (queue, then responder) once the batch has been polled `batch_polls` times (in_progress
until then); a reply with an HTTP error status goes to the batch's error file, as OpenAI's does:

    server.batch_polls = 3                 polls that see "in_progress" before the batch completes
    server.batch_answered = 2              the next batch to run expires: its first 2 lines answered,
                                           the rest in the error file with code "batch_expired"
    server.batches_created, server.files_uploaded, server.batch_inputs   (counters and the custom ids)

Azure OpenAI's route (what `openai.AsyncAzureOpenAI` calls, with the server's root as its azure_endpoint:
`server.azure_endpoint`) is answered as /v1/chat/completions is, the deployment being the model:

    POST /openai/deployments/<deployment>/chat/completions?api-version=<v>
                                          without api-version: 404, as Azure answers; with `server.api_key` set the
                                          key must come in the `api-key` header (Azure takes no Authorization:
                                          Bearer), else 401; recorded with the api-key header redacted

The judge's criteria task (prompts.criteria_messages) and G-Eval's token log-probabilities:

    criteria_reply(body, {"plain": 2})    the reply to a criteria request: every criterion block it holds scored (the
                                          given scores, else 4 on 1-5, 1 on pass/fail, 0.8 on 0-1), reasoning first
    server.criteria_scores = {"plain": 2} the default responder's scores (the same defaults otherwise)
    server.logprobs = {"4": 0.6, "5": 0.4}  a request with `logprobs` true gets each choice's tokens' log-probabilities
                                          (`choices[k].logprobs.content`, OpenAI's shape, `top_logprobs` alternatives):
                                          the score digit after each "score": has these digits as alternatives (and
                                          its own probability from them), every other token probability 1
    Reply.with_logprobs(reply, {"4": 0.6, "5": 0.4})   the same for one reply
    server.rules = refusing("logprobs")   a server that does not take them (HTTP 400 naming the parameter)

A fallback from json_schema to json_object is scripted with a responder:

    server.responder = lambda body: (Reply.json_schema_unsupported()
        if body.get("response_format", {}).get("type") == "json_schema" else Reply.json(obj))
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import email.parser
import email.policy
import json
import math
import re
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from evaluators.judges import prompts


DEFAULT_MODEL = "test-model"
DEFAULT_CONTENT = {"ok": True}


@dataclasses.dataclass(frozen=True)
class Reply:
    """One scripted answer. Build it with the class-method constructors, not by hand.

    (Field names differ from the constructors' on purpose: a dataclass field named like a
    classmethod would take the method as its default.)
    """

    http_status: int = 200
    content: str = ""
    finish_reason: str = "stop"
    headers: tuple[tuple[str, str], ...] = ()
    # Sent verbatim instead of a chat completion (error bodies, non-JSON bodies).
    raw_body: bytes | None = None
    content_type: str = "application/json"
    delay_seconds: float = 0.0
    more: tuple[Reply, ...] = ()  # further choices of the completion (a request with n > 1)
    trickle_seconds: float = 0.0  # > 0: the body goes out one byte at a time, this long apart
    levels: tuple[tuple[str, float], ...] = ()  # a score digit's alternatives with their probabilities (logprobs)

    @classmethod
    def text(cls, content: str, finish_reason: str = "stop") -> Reply:
        return cls(content=content, finish_reason=finish_reason)

    @classmethod
    def json(cls, obj: Any) -> Reply:
        return cls.text(json.dumps(obj))

    @classmethod
    def with_logprobs(cls, reply: Reply, levels: dict[str, float]) -> Reply:
        """`reply` with its tokens' log-probabilities for a request that asks for them (module doc)."""
        return dataclasses.replace(reply, levels=tuple(levels.items()))

    @classmethod
    def choices(cls, first: Reply, *others: Reply) -> Reply:
        """One completion with several choices, as a server that honours `n` answers."""
        return dataclasses.replace(first, more=others)

    @classmethod
    def truncated(cls, obj_or_text: Any) -> Reply:
        """What a model cut off by max_tokens returns: the first half of the text, "length"."""
        text = obj_or_text if isinstance(obj_or_text, str) else json.dumps(obj_or_text)
        return cls.text(text[: len(text) // 2], finish_reason="length")

    @classmethod
    def status(
        cls, code: int, message: str | None = None, retry_after: float | None = None, param: str | None = None
    ) -> Reply:
        """An HTTP error with OpenAI's error body (`param`: the request parameter it is about); `retry_after`
        (seconds) sets Retry-After."""
        # type/code as api.openai.com sends them; clients surface them as err.type / err.code.
        error_type, error_code = {
            400: ("invalid_request_error", None),
            401: ("invalid_request_error", "invalid_api_key"),
            403: ("permission_denied", "unsupported_country_region_territory"),
            404: ("invalid_request_error", "model_not_found"),
            429: ("requests", "rate_limit_exceeded"),
        }.get(code, ("server_error", None))
        body = {
            "error": {
                "message": message or f"scripted HTTP {code}",
                "type": error_type,
                "param": param,
                "code": error_code,
            }
        }
        headers = () if retry_after is None else (("Retry-After", _seconds(retry_after)),)
        return cls(http_status=code, raw_body=json.dumps(body).encode(), headers=headers)

    @classmethod
    def json_schema_unsupported(cls) -> Reply:
        return cls.status(400, "response_format json_schema is not supported")

    @classmethod
    def not_json(
        cls, body: str = "<html><body>upstream error</body></html>", content_type: str = "text/html"
    ) -> Reply:
        """HTTP 200 with a body that is not JSON (a misconfigured proxy or server)."""
        return cls(raw_body=body.encode(), content_type=content_type)

    @classmethod
    def trickle(cls, every: float, then: Reply | None = None) -> Reply:
        """`then` (default: the default content): the headers at once (with the full Content-Length), then
        the body one byte every `every` seconds, so no single read waits long but the reply never ends."""
        return dataclasses.replace(then if then is not None else cls.json(DEFAULT_CONTENT), trickle_seconds=every)

    @classmethod
    def huge(cls, n_chars: int) -> Reply:
        """A 200 whose content is `n_chars` characters of JSON-looking text that never closes."""
        return cls.text(('{"answer_claims": [' + '"a claim", ' * (n_chars // 11 + 1))[:n_chars])

    @classmethod
    def delay(cls, seconds: float, then: Reply | None = None) -> Reply:
        """`then` (default: the default content), sent after `seconds`."""
        base = then if then is not None else cls.json(DEFAULT_CONTENT)
        return dataclasses.replace(base, delay_seconds=base.delay_seconds + seconds)


REASONING_EFFORTS = ("minimal", "low", "medium", "high")


def reasoning_model_rules(body: dict) -> Reply | None:
    """What OpenAI's reasoning models refuse (their 400s as the API words them), or None for a request they take."""
    if "temperature" in body and body["temperature"] != 1:
        return Reply.status(400, f"Unsupported value: 'temperature' does not support {body['temperature']} with this "
                                 "model. Only the default (1) value is supported.", param="temperature")
    if "max_tokens" in body:
        return Reply.status(400, "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                                 "'max_completion_tokens' instead.", param="max_tokens")
    if body.get("reasoning_effort", "medium") not in REASONING_EFFORTS:
        return Reply.status(400, f"Unsupported value: 'reasoning_effort' does not support "
                                 f"{body['reasoning_effort']!r} with this model.", param="reasoning_effort")
    return None


_CRITERION = re.compile(r'^<criterion id="(\w+)" scale="([^"]+)">$', re.MULTILINE)
DEFAULT_SCORES = {"1-5": 4, "pass/fail": 1, "0-1": 0.8}


def criteria_reply(body: dict, scores: dict | None = None) -> Reply:
    """The reply to a criteria request: each criterion its blocks name scored (`scores` by id, else
    DEFAULT_SCORES by its scale), reasoning first, under "criteria" as the schema has it."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    items = [{"id": cid, "reasoning": f"The answer is judged on {cid}.",
              "score": (scores or {}).get(cid, DEFAULT_SCORES[scale])} for cid, scale in _CRITERION.findall(user)]
    return Reply.json({task: items if task == prompts.CRITERIA else None for task in prompts.TASKS})


# A tokenizer of the shape OpenAI's have: words and single digits with their leading space, runs of punctuation.
_LOGPROB_TOKEN = re.compile(r" ?[A-Za-z]+| ?\d| ?[^\sA-Za-z\d]+|\s+")


def token_logprobs(content: str, levels: dict[str, float], top: int) -> list[dict]:
    """`choices[k].logprobs.content` for `content`: the digit after each "score": has the digits of `levels` as
    alternatives (probabilities), every other token is certain."""
    out, start = [], 0
    for token in _LOGPROB_TOKEN.findall(content):
        score = token.strip() in tuple("12345") and content[:start].rstrip().endswith('"score":')
        space = token[:len(token) - len(token.lstrip())]
        alternatives = (sorted(levels.items(), key=lambda kv: -kv[1]) if score else [(token.strip(), 1.0)])
        own = levels.get(token.strip(), 1e-9) if score else 1.0
        out.append({"token": token, "logprob": math.log(own), "bytes": list(token.encode()),
                    "top_logprobs": [{"token": space + t, "logprob": math.log(p), "bytes": list((space + t).encode())}
                                     for t, p in alternatives][:top]})
        start += len(token)
    return out


def refusing(*names: str) -> Callable[[dict], Reply | None]:
    """Rules of a server that refuses the parameters `names` by name (no `param` in its error body)."""
    def rules(body: dict) -> Reply | None:
        for name in names:
            if name in body:
                return Reply.status(400, f"Unrecognized request argument supplied: {name}")
        return None
    return rules


def in_prose(content: str) -> str:
    """A reply as a chat model that was not held to a schema writes it: prose around a fenced JSON block."""
    return (f"Here is my assessment of the sample.\n\n```json\n{content}\n```\n\n"
            "Let me know if you need anything else {or more detail}.")


def _seconds(value: float) -> str:
    # "1" for whole seconds as servers send; fractions are non-standard but openai 3.x reads them,
    # which keeps retry tests fast.
    return str(int(value)) if float(value).is_integer() else str(value)


def count_tokens(text: str) -> int:
    """The server's deterministic token estimate: whitespace-separated words."""
    return len(text.split())


def _prompt_text(body: dict) -> str:
    parts = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
            parts.extend(p.get("text", "") for p in content if isinstance(p, dict))
    return "\n".join(parts)


class PromptCache:
    """OpenAI's prompt cache as its guide describes it (developers.openai.com/api/docs/guides/prompt-caching): a
    prompt of `min_tokens` or more is served from the cache for the longest prefix it shares with a prompt seen in
    the last `ttl` seconds, counted in whole `step`-token steps from `min_tokens` on. The prompt is the structured
    output schema (a prefix to the system message) and then each message. Tokens are approximated (a word with
    its leading space, a number of up to 3 digits, a run of punctuation): no tokenizer ships offline."""

    _TOKEN = re.compile(r" ?[A-Za-z]+| ?\d{1,3}| ?[^\sA-Za-z\d]+|\s+")

    def __init__(self, min_tokens: int = 1024, step: int = 128, ttl: float = 300.0) -> None:
        self.min_tokens, self.step, self.ttl = min_tokens, step, ttl
        self._seen: list[tuple[float, list[str]]] = []
        self._lock = threading.Lock()

    @classmethod
    def count(cls, text: str) -> int:
        return len(cls._TOKEN.findall(text))

    @classmethod
    def tokens(cls, body: dict) -> list[str]:
        response_format = body.get("response_format") or {}
        schema = json.dumps(response_format.get("json_schema")) if "json_schema" in response_format else ""
        messages = "".join(f"<|{m.get('role')}|>{m.get('content')}<|end|>" for m in body.get("messages") or [])
        return cls._TOKEN.findall(schema + messages)

    def serve(self, tokens: list[str]) -> int:
        """The cached tokens of a prompt of `tokens`, which is then cached itself."""
        now = time.monotonic()
        with self._lock:
            self._seen = [(t, seen) for t, seen in self._seen if now - t <= self.ttl]
            longest = max((_common_prefix(tokens, seen) for _, seen in self._seen), default=0)
            self._seen.append((now, tokens))
        if longest < self.min_tokens:
            return 0
        return self.min_tokens + (longest - self.min_tokens) // self.step * self.step


def _common_prefix(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


@dataclasses.dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names; the Authorization value is redacted
    body: Any  # parsed JSON, or None for no / unparseable body
    arrived: float  # time.monotonic()
    size: int = 0  # bytes of the request body as received


class FakeOpenAI:
    """The server's state: scripted replies, options and the record of requests."""

    def __init__(self, model: str = DEFAULT_MODEL, latency: float = 0.0) -> None:
        self.model = model
        self.latency = latency  # added to every chat completion, for benchmarks
        self.responder: Callable[[dict], Reply] = self.default_reply
        self.api_key: str | None = None  # set: requests with another key (or none) get 401
        self.usage: tuple[int, int] | None = None  # set: every completion reports these (prompt, completion) tokens
        self.base_url = ""  # set once the port is bound
        self.azure_endpoint = ""  # the same server as Azure OpenAI's endpoint (module doc)
        self.prompt_cache: PromptCache | None = None  # set: usage reports cached tokens as OpenAI's cache would
        self.rules: Callable[[dict], Reply | None] | None = None  # set: a request it returns a Reply for is refused
        self.reasoning_tokens = 0  # hidden reasoning tokens every completion spends (module doc)
        self.prose = False  # set: replies are prose around a fenced JSON block, whatever response_format says
        self.criteria_scores: dict[str, float] = {}  # the default reply's scores of a criteria request, by id
        self.logprobs: dict[str, float] | None = None  # set: score digits' alternatives, when a request asks (doc)
        self._queue: collections.deque[Reply] = collections.deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()  # handler threads run concurrently
        self._stopping = threading.Event()  # cuts delays short so shutdown is instant
        # The Batch API (module doc)
        self.batch_polls = 1  # retrieves answered "in_progress" before a batch completes (math.inf: never)
        self.batch_answered: int | None = None  # set: the next batch to run expires after this many lines
        self.files: dict[str, bytes] = {}  # file id -> content (uploaded inputs, produced outputs and errors)
        self.batches: dict[str, dict] = {}  # batch id -> the batch object as retrieved
        self.batch_inputs: dict[str, list[str]] = {}  # batch id -> the custom ids of its lines, in order
        self._polls: collections.Counter[str] = collections.Counter()

    def default_reply(self, body: dict) -> Reply:
        """DEFAULT_CONTENT, but for a criteria request (module doc)."""
        if prompts.task_of(body.get("messages") or []) == prompts.CRITERIA:
            return criteria_reply(body, self.criteria_scores)
        return Reply.json(DEFAULT_CONTENT)

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self._requests)

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _next_reply(self, body: dict) -> Reply:
        with self._lock:
            queued = self._queue.popleft() if self._queue else None
        return queued if queued is not None else self.responder(body)

    @property
    def batches_created(self) -> int:
        with self._lock:
            return len(self.batches)

    @property
    def files_uploaded(self) -> int:
        with self._lock:
            return sum(1 for file_id in self.files if file_id.startswith("file-in-"))

    def _upload(self, content: bytes) -> dict:
        with self._lock:
            file_id = f"file-in-{len(self.files)}-{uuid.uuid4().hex[:8]}"
            self.files[file_id] = content
        return {"id": file_id, "object": "file", "bytes": len(content), "created_at": int(time.time()),
                "filename": "input.jsonl", "purpose": "batch"}

    def _create_batch(self, body: dict) -> Reply:
        with self._lock:
            content = self.files.get(body.get("input_file_id"))
        if content is None:
            return Reply.status(404, f"no file {body.get('input_file_id')!r}")
        batch_id = f"batch_{uuid.uuid4().hex[:16]}"
        lines = [json.loads(line) for line in content.decode().splitlines() if line.strip()]
        batch = {"id": batch_id, "object": "batch", "endpoint": body.get("endpoint"), "errors": None,
                 "input_file_id": body["input_file_id"], "completion_window": body.get("completion_window"),
                 "status": "validating", "output_file_id": None, "error_file_id": None,
                 "created_at": int(time.time()), "metadata": body.get("metadata"),
                 "request_counts": {"total": len(lines), "completed": 0, "failed": 0}}
        with self._lock:
            self.batches[batch_id] = batch
            self.batch_inputs[batch_id] = [line["custom_id"] for line in lines]
        return Reply(raw_body=json.dumps(batch).encode())

    def _retrieve_batch(self, batch_id: str) -> Reply:
        with self._lock:
            batch = self.batches.get(batch_id)
            if batch is None:
                return Reply.status(404, f"no batch {batch_id!r}")
            self._polls[batch_id] += 1
            due = batch["status"] in ("validating", "in_progress") and self._polls[batch_id] > self.batch_polls
            if not due and batch["status"] == "validating":
                batch["status"] = "in_progress"
        if due:
            self._run_batch(batch)
        with self._lock:
            return Reply(raw_body=json.dumps(batch).encode())

    def _run_batch(self, batch: dict) -> None:
        """Answer the batch's lines with the chat endpoint's replies; the rest expire (`batch_answered`)."""
        with self._lock:
            lines = [json.loads(line) for line in self.files[batch["input_file_id"]].decode().splitlines() if line]
            answered = len(lines) if self.batch_answered is None else self.batch_answered
            self.batch_answered = None
        out, errors = [], []
        for i, line in enumerate(lines):
            result = {"id": f"batch_req_{uuid.uuid4().hex[:16]}", "custom_id": line["custom_id"], "response": None,
                      "error": None}
            if i >= answered:
                result["error"] = {"code": "batch_expired",
                                   "message": "This request could not be executed before the completion window "
                                              "expired."}
                errors.append(result)
                continue
            reply = self._next_reply(line["body"])
            if reply.raw_body is not None:
                try:
                    body = json.loads(reply.raw_body)
                except ValueError:
                    body = reply.raw_body.decode()
            else:
                body = self._completion(line["body"], reply)
            result["response"] = {"status_code": reply.http_status, "request_id": uuid.uuid4().hex, "body": body}
            (out if reply.http_status == 200 else errors).append(result)
        with self._lock:
            for kind, results in (("output", out), ("error", errors)):
                if results:
                    file_id = f"file-{kind}-{uuid.uuid4().hex[:8]}"
                    self.files[file_id] = "".join(json.dumps(r) + "\n" for r in results).encode()
                    batch[f"{kind}_file_id"] = file_id
            batch["status"] = "completed" if answered >= len(lines) else "expired"
            batch["request_counts"] = {"total": len(lines), "completed": len(out), "failed": len(errors)}

    def _logprobs(self, body: dict, reply: Reply) -> dict | None:
        """A choice's `logprobs`: only for a request that asks for them (module doc)."""
        levels = dict(reply.levels) or self.logprobs
        if not body.get("logprobs") or levels is None:
            return None
        return {"content": token_logprobs(reply.content, levels, int(body.get("top_logprobs") or 0)), "refusal": None}

    def _completion(self, body: dict, reply: Reply) -> dict:
        choices = (reply, *reply.more)
        prompt_tokens, completion_tokens = self.usage or (count_tokens(_prompt_text(body)),
                                                          sum(count_tokens(c.content) for c in choices))
        details = {}
        if self.prompt_cache is not None:  # OpenAI's billing, in the cache's token unit
            tokens = self.prompt_cache.tokens(body)
            prompt_tokens, details = len(tokens), {"prompt_tokens_details": {"cached_tokens": self.prompt_cache.serve(tokens)}}
            completion_tokens = sum(PromptCache.count(c.content) for c in choices)
        if self.reasoning_tokens:  # part of completion_tokens, as OpenAI counts them
            completion_tokens += self.reasoning_tokens * len(choices)
            details["completion_tokens_details"] = {"reasoning_tokens": self.reasoning_tokens * len(choices)}
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
            "choices": [
                {
                    "index": i,
                    "message": {"role": "assistant", "content": c.content, "refusal": None},
                    "logprobs": self._logprobs(body, c),
                    "finish_reason": c.finish_reason,
                }
                for i, c in enumerate(choices)
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                **details,
            },
        }


def _handler_for(state: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # HTTP/1.1 keeps connections alive as real servers do, so the client's pool is exercised.
        protocol_version = "HTTP/1.1"
        # TCP_NODELAY, as real servers set it: headers and body go out in two writes, and with Nagle's
        # algorithm on the body would wait ~40 ms for the client's delayed ACK of the headers.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
            pass

        def do_GET(self) -> None:
            self._record(None)
            path = self.path.rstrip("/")
            if path == "/v1/models":
                model = {"id": state.model, "object": "model", "created": 0, "owned_by": "tests"}
                self._send(Reply(raw_body=json.dumps({"object": "list", "data": [model]}).encode()))
            elif m := re.fullmatch(r"/v1/batches/([\w-]+)", path):
                self._send(state._retrieve_batch(m.group(1)))
            elif (m := re.fullmatch(r"/v1/files/([\w-]+)/content", path)) and m.group(1) in state.files:
                self._send(Reply(raw_body=state.files[m.group(1)], content_type="application/octet-stream"))
            else:
                self._send(Reply.status(404, f"no route for GET {self.path}"))

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.rstrip("/") == "/v1/files":
                self._record(None, len(raw))
                content = _multipart_file(self.headers.get("Content-Type", ""), raw)
                if content is None:
                    self._send(Reply.status(400, "no file in the upload"))
                else:
                    self._send(Reply(raw_body=json.dumps(state._upload(content)).encode()))
                return
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            self._record(body, len(raw))
            deployment = _azure_route(self.path)  # Azure OpenAI's chat route (module doc), else None
            if deployment and isinstance(body, dict):
                body = {**body, "model": deployment}
            if self.path.rstrip("/") == "/v1/batches" and isinstance(body, dict):
                self._send(state._create_batch(body))
            elif self.path.rstrip("/") != "/v1/chat/completions" and not deployment:
                self._send(Reply.status(404, f"no route for POST {self.path}"))
            elif state.api_key is not None and not _key_accepted(self.headers, state.api_key, bool(deployment)):
                self._send(Reply.status(401, "Incorrect API key provided"))
            elif not isinstance(body, dict):
                self._send(Reply.status(400, "the request body is not a JSON object"))
            elif state.rules is not None and (refused := state.rules(body)) is not None:
                self._send(refused)
            else:
                reply = state._next_reply(body)
                if state.prose and reply.raw_body is None:
                    reply = dataclasses.replace(reply, content=in_prose(reply.content),
                                                more=tuple(dataclasses.replace(c, content=in_prose(c.content))
                                                           for c in reply.more))
                completion = state._completion(body, reply)  # on arrival: the prompt is in the cache from then on
                if state._stopping.wait(reply.delay_seconds + state.latency):
                    return
                self._send(reply, completion)

        def _record(self, body: Any, size: int = 0) -> None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            for secret in ("authorization", "api-key"):  # OpenAI's and Azure's way of sending the key
                if secret in headers:
                    headers[secret] = "<redacted>"
            state._record(RecordedRequest(self.command, self.path, headers, body, time.monotonic(), size))

        def _send(self, reply: Reply, completion: dict | None = None) -> None:
            payload = reply.raw_body
            if payload is None:
                payload = json.dumps(completion).encode()
            try:
                self.send_response(reply.http_status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(payload)))
                for name, value in reply.headers:
                    self.send_header(name, value)
                self.end_headers()
                if not reply.trickle_seconds:
                    self.wfile.write(payload)
                    return
                self.wfile.flush()
                for i in range(len(payload)):
                    if state._stopping.wait(reply.trickle_seconds):
                        return
                    self.wfile.write(payload[i:i + 1])
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client timed out and hung up: expected for delay faults

    return Handler


# -- Azure OpenAI (module doc) --------------------------------------------------------------------------------------

_AZURE_CHAT = re.compile(r"/openai/deployments/([^/?]+)/chat/completions")


def _azure_route(path: str) -> str | None:
    """The deployment a request to Azure's chat route names, if it gives an api-version; None for any other path."""
    route, _, query = path.partition("?")
    found = _AZURE_CHAT.fullmatch(route.rstrip("/"))
    return found.group(1) if found and urllib.parse.parse_qs(query).get("api-version") else None


def _key_accepted(headers, api_key: str, azure: bool) -> bool:
    """Azure takes the key in an `api-key` header, OpenAI as `Authorization: Bearer`."""
    return headers.get("api-key") == api_key if azure else headers.get("Authorization") == f"Bearer {api_key}"


def _multipart_file(content_type: str, raw: bytes) -> bytes | None:
    """The bytes of the part named "file" of a multipart/form-data body, or None."""
    message = email.parser.BytesParser(policy=email.policy.default).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
    for part in message.iter_parts() if message.is_multipart() else ():
        if part.get_param("name", header="content-disposition") == "file":
            return part.get_payload(decode=True)
    return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a client's idle keep-alive connection must not block shutdown
    request_queue_size = 128  # the default backlog of 5 stalls bursts of parallel connections


@contextlib.contextmanager
def start_server(model: str = DEFAULT_MODEL, latency: float = 0.0) -> Iterator[FakeOpenAI]:
    """Run a FakeOpenAI on 127.0.0.1 (a free port) for the duration of the block."""
    state = FakeOpenAI(model=model, latency=latency)
    server = _Server(("127.0.0.1", 0), _handler_for(state))
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    state.azure_endpoint = state.base_url.removesuffix("/v1")
    # A short poll interval: shutdown() waits up to one interval, paid by every test's teardown.
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True
    )
    thread.start()
    try:
        yield state
    finally:
        state._stopping.set()
        server.shutdown()
        server.server_close()
        thread.join()
