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
`server.responder(request_body) -> Reply` (default: `DEFAULT_CONTENT`). Faults and odd contents:

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

A fallback from json_schema to json_object is scripted with a responder:

    server.responder = lambda body: (Reply.json_schema_unsupported()
        if body.get("response_format", {}).get("type") == "json_schema" else Reply.json(obj))
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

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

    @classmethod
    def text(cls, content: str, finish_reason: str = "stop") -> Reply:
        return cls(content=content, finish_reason=finish_reason)

    @classmethod
    def json(cls, obj: Any) -> Reply:
        return cls.text(json.dumps(obj))

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
        cls, code: int, message: str | None = None, retry_after: float | None = None
    ) -> Reply:
        """An HTTP error with OpenAI's error body; `retry_after` (seconds) sets Retry-After."""
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
                "param": None,
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
        self.responder: Callable[[dict], Reply] = lambda body: Reply.json(DEFAULT_CONTENT)
        self.api_key: str | None = None  # set: requests with another key (or none) get 401
        self.usage: tuple[int, int] | None = None  # set: every completion reports these (prompt, completion) tokens
        self.base_url = ""  # set once the port is bound
        self._queue: collections.deque[Reply] = collections.deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()  # handler threads run concurrently
        self._stopping = threading.Event()  # cuts delays short so shutdown is instant

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

    def _completion(self, body: dict, reply: Reply) -> dict:
        choices = (reply, *reply.more)
        prompt_tokens, completion_tokens = self.usage or (count_tokens(_prompt_text(body)),
                                                          sum(count_tokens(c.content) for c in choices))
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
            "choices": [
                {
                    "index": i,
                    "message": {"role": "assistant", "content": c.content, "refusal": None},
                    "logprobs": None,
                    "finish_reason": c.finish_reason,
                }
                for i, c in enumerate(choices)
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
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
            if self.path.rstrip("/") == "/v1/models":
                model = {"id": state.model, "object": "model", "created": 0, "owned_by": "tests"}
                self._send(Reply(raw_body=json.dumps({"object": "list", "data": [model]}).encode()))
            else:
                self._send(Reply.status(404, f"no route for GET {self.path}"))

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            self._record(body, len(raw))
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(Reply.status(404, f"no route for POST {self.path}"))
            elif state.api_key is not None and self.headers.get("Authorization") != f"Bearer {state.api_key}":
                self._send(Reply.status(401, "Incorrect API key provided"))
            elif not isinstance(body, dict):
                self._send(Reply.status(400, "the request body is not a JSON object"))
            else:
                reply = state._next_reply(body)
                if state._stopping.wait(reply.delay_seconds + state.latency):
                    return
                self._send(reply, state._completion(body, reply))

        def _record(self, body: Any, size: int = 0) -> None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            if "authorization" in headers:
                headers["authorization"] = "<redacted>"
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


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a client's idle keep-alive connection must not block shutdown
    request_queue_size = 128  # the default backlog of 5 stalls bursts of parallel connections


@contextlib.contextmanager
def start_server(model: str = DEFAULT_MODEL, latency: float = 0.0) -> Iterator[FakeOpenAI]:
    """Run a FakeOpenAI on 127.0.0.1 (a free port) for the duration of the block."""
    state = FakeOpenAI(model=model, latency=latency)
    server = _Server(("127.0.0.1", 0), _handler_for(state))
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
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
