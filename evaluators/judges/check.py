"""`judge check`: what an OpenAI-compatible judge server supports, found with a handful of tiny requests before a run
spends anything (`python -m evaluators judge check`, the Evaluate screen's "Check the judge").

Two halves:
* `probe` sends the requests over the judge's own transport (openai_transport: its deadline per reply, its learning
  of refused parameters from HTTP 400s, its stop at a refused key or an unknown model) and keeps what came back
  (`Observed`). A first request carries every parameter the judge may send (a strict JSON schema, temperature 0, a
  seed, `max_tokens`, the reasoning effort given); what the server refuses by name is dropped or renamed as in a run.
  Then one request in JSON mode and one asking for 2 choices (`n`). A request that fails for want of a server (it
  is unreachable, never answers, refuses the key or the model) ends the check: nothing else would answer either.
* `report` is pure: one row per capability (supported / not supported / unknown, with the detail), the median latency
  of the requests answered, the model's list price (prices.py), and whether the judge can run: a reply held usable
  JSON (as a whole or in prose), with whatever parameters had to be dropped.

Nothing is stored, and the key appears in no text of the report (`CheckReport.redacted`): a server may echo it in an
error message. Another kind of OpenAI judge is checked over its own server settings (its `server()`: an Azure
deployment through the SDK's Azure client, its key from AZURE_OPENAI_API_KEY), and a name that is no model's
(`listed` False) gets no list price.
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import statistics
import time
from dataclasses import dataclass, field

from evaluators.judges import prices, reply_json
from evaluators.threads import BackgroundJob
from evaluators.judges.openai_params import Params
from evaluators.judges.openai_transport import BOUNDED, JSON_MODE, KEY_ENV, CallFailed, Transport
from evaluators.judges.protocol import CallRecord
from evaluators.records import CALL_TIMEOUT, CONNECTION_ERROR, OK
from evaluators.records.judgments import JudgeRefused

SUPPORTED, NOT_SUPPORTED, UNKNOWN = "supported", "not supported", "unknown"
DEFAULT_TIMEOUT = 30.0  # seconds a reply may take: a dead server is told within it (a run's default is 60)
BUDGET = 60.0  # seconds: a probe that could end past them (started + its timeout) is not sent, but reported unknown
LIMIT = 2048  # the output limit sent: a reasoning model's hidden tokens count in it
CHOICES = 2  # asked for in the `n` probe
PURPOSE = "check"
# The schema every check request carries (no bounds: what is checked is whether a schema is held to at all)
SCHEMA = {"name": "judge_check", "strict": True,
          "schema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
                     "additionalProperties": False}}
MESSAGES = [{"role": "system", "content": "You check that a JSON reply arrives. Reply with JSON only."},
            {"role": "user", "content": 'Reply with the JSON object {"ok": true} and nothing else.'}]


@dataclass
class Probe:
    """One probe: its HTTP attempts, the contents of the reply's choices, or why no reply came."""

    records: list[CallRecord] = field(default_factory=list)
    contents: tuple[str | None, ...] = ()
    failure: str | None = None  # why no reply (the last attempt's error)
    failure_status: str | None = None  # that attempt's status (connection_error, timeout, bad_request...)

    @property
    def answered(self) -> bool:
        return self.failure is None and bool(self.contents)


@dataclass
class Observed:
    """What the server did with the check's requests (`probe`); `report` reads it."""

    model: str
    base_url: str | None
    timeout: float
    reasoning_effort: str | None = None
    baseline: Probe = field(default_factory=Probe)
    params: Params = field(default_factory=Params)  # what the server was found to take, after the first request
    schema_level: int = BOUNDED  # the response_format level the first request ended at
    json_mode: Probe | None = None  # None: not sent (the first request was in JSON mode already, or none was taken)
    choices: Probe | None = None
    refused: str | None = None  # a refused key or model (HTTP 401/403/404): why no call can succeed
    listed: bool = True  # the model's name is a model's, so its list price applies (not an Azure deployment's)

    @property
    def records(self) -> list[CallRecord]:
        return [r for p in (self.baseline, self.json_mode, self.choices) if p is not None for r in p.records]


@dataclass(frozen=True)
class Capability:
    name: str
    status: str  # SUPPORTED, NOT_SUPPORTED or UNKNOWN
    detail: str


@dataclass(frozen=True)
class CheckReport:
    model: str
    base_url: str | None
    can_run: bool
    reason: str | None  # why it cannot run (None when it can)
    capabilities: tuple[Capability, ...]
    latency_ms: float | None  # median over the requests answered
    requests: int  # HTTP requests sent
    price: prices.Price | None  # the model's list price (None: unknown)
    dropped: tuple[str, ...] = ()  # what the judge sends this server differently (parameters dropped, renamed)

    def to_dict(self) -> dict:
        return {"model": self.model, "base_url": self.base_url, "can_run": self.can_run, "reason": self.reason,
                "capabilities": [dataclasses.asdict(c) for c in self.capabilities],
                "latency_ms": {"median": self.latency_ms, "requests": self.requests},
                "price_usd_per_1m": None if self.price is None else dataclasses.asdict(self.price),
                "price_as_of": prices.AS_OF if self.price is not None else None,
                "dropped": list(self.dropped)}

    def rows(self) -> list[dict]:
        """The table: one row per capability."""
        return [{"capability": c.name, "status": c.status, "detail": c.detail} for c in self.capabilities]

    def text(self) -> str:
        """The table and the lines under it, as the command prints them."""
        rows = [("capability", "status", "detail")] + [(c.name, c.status, c.detail) for c in self.capabilities]
        widths = [max(len(r[i]) for r in rows) for i in range(2)]
        table = "\n".join(f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c}".rstrip() for a, b, c in rows)
        return "\n".join([f"judge check: model {self.model} at {self.base_url or 'the OpenAI API'}", "", table, "",
                          *self.lines()])

    def lines(self) -> list[str]:
        """Latency, price and the verdict, one line each."""
        latency = (f"latency: median {self.latency_ms:,.0f} ms over {self.requests} request(s)"
                   if self.latency_ms is not None else f"latency: unknown (no reply; {self.requests} request(s) sent)")
        price = (f"price: {self.price.describe()} (list price as of {prices.AS_OF})" if self.price is not None else
                 f"price: unknown, no list price for model {self.model!r}: give --price-in and --price-out to a run "
                 "(0 for a server of your own)")
        verdict = ("the judge can run" + (f" (sending this server: {'; '.join(self.dropped)})" if self.dropped else "")
                   if self.can_run else f"the judge cannot run: {self.reason}")
        return [latency, price, verdict]

    def redacted(self, secret: str | None) -> CheckReport:
        """The report with `secret` (the API key) replaced wherever a server's message echoed it."""
        if not secret:
            return self

        def clean(text: str | None) -> str | None:
            return None if text is None else text.replace(secret, "[the API key]")

        return dataclasses.replace(
            self, reason=clean(self.reason), dropped=tuple(clean(d) for d in self.dropped),
            capabilities=tuple(dataclasses.replace(c, detail=clean(c.detail)) for c in self.capabilities))


# -- the requests -------------------------------------------------------------------------------------------------

def probe(model: str, base_url: str | None, api_key: str | None = None, *, timeout: float | None = None,
          reasoning_effort: str | None = None, budget: float = BUDGET, listed: bool = True, **server) -> Observed:
    """Send the check's requests (module doc) and keep what came back. `server`: how the transport reaches it (a
    judge's `server()`: key_env, client_factory). ValueError for options no request can use (no key, a reasoning
    effort no server takes, a timeout <= 0) before any request."""
    timeout = DEFAULT_TIMEOUT if timeout is None else timeout
    # one attempt per request: a check says what happened rather than retrying it; every parameter tried first
    transport = Transport(base_url, model, schema=SCHEMA, version="judge-check", api_key=api_key, concurrency=1,
                          timeout=timeout, max_attempts=1, reasoning_effort=reasoning_effort, params=Params(), **server)
    observed = Observed(model, transport.base_url, timeout, reasoning_effort, listed=listed)
    asyncio.run(_probe(transport, observed, budget))
    return observed


async def _probe(transport: Transport, observed: Observed, budget: float) -> None:
    started = time.monotonic()

    def in_time() -> bool:  # a slow server's later probes are left out rather than the check running on (BUDGET)
        return time.monotonic() - started + transport.timeout <= max(budget, transport.timeout)

    async with transport.connect() as connection:
        try:
            observed.baseline = await _complete(connection, observed.baseline)
            observed.params = dataclasses.replace(transport.params)
            observed.schema_level = transport.schema_level
            if not observed.baseline.answered:
                return  # unreachable, no reply in time, or a fault every request would meet
            if transport.schema_level > JSON_MODE and transport.params.response_format:
                transport.schema_level = JSON_MODE
                observed.json_mode = await _single(connection, transport) if in_time() else _late(budget)
                transport.schema_level = observed.schema_level
            observed.choices = await _single(connection, transport, n=CHOICES) if in_time() else _late(budget)
        except JudgeRefused as refused:
            observed.refused = str(refused)


def _late(budget: float) -> Probe:
    return Probe(failure=f"not sent: the check's {budget:g} s would have run out first", failure_status="not_sent")


async def _complete(connection, probe_: Probe) -> Probe:
    """The first request as a run sends it: refused parameters dropped or renamed and sent again, a cut-off reply
    asked again with a raised limit."""
    try:
        content, _ = await connection.complete(PURPOSE, MESSAGES, probe_.records, limit=LIMIT)
    except CallFailed as failed:
        last = probe_.records[-1] if probe_.records else None
        return dataclasses.replace(probe_, failure=str(failed), failure_status=last.status if last else None)
    attempt = probe_.records[-1]
    return dataclasses.replace(probe_, contents=_contents(attempt) or (content,))


async def _single(connection, transport: Transport, n: int = 1) -> Probe:
    """One attempt (no retry, no resend), whatever it teaches the transport undone: the probe says what happened."""
    params = dataclasses.replace(transport.params)
    try:
        attempt = await connection.attempt(PURPOSE, MESSAGES, LIMIT, n=n)
    finally:
        transport.params = params
    record = attempt.record
    if record.status != OK:
        return Probe([record], failure=record.error or record.status, failure_status=record.status)
    return Probe([record], contents=tuple(content for content, _ in attempt.choices))


def _contents(record: CallRecord) -> tuple[str | None, ...]:
    """Every choice's content of a reply's raw body."""
    try:
        return tuple(c["message"]["content"] for c in json.loads(record.response)["choices"])
    except (TypeError, ValueError, KeyError):
        return ()


# -- the report (pure) --------------------------------------------------------------------------------------------

def reply_form(content: str | None) -> str:
    """"json" (the reply is the JSON alone), "prose" (JSON found in prose) or "none" (no JSON object)."""
    found = reply_json.found(content or "")
    if found is None or not found[0].lstrip().startswith("{"):
        return "none"
    return "json" if found[1] else "prose"


def _held_to_schema(content: str | None) -> bool:
    try:
        reply = json.loads(content or "")
    except ValueError:
        return False
    return isinstance(reply, dict) and set(reply) == {"ok"} and isinstance(reply["ok"], bool)


def report(observed: Observed) -> CheckReport:
    """What `observed` says the server supports, and whether the judge can run on it."""
    base = observed.baseline
    answered = [r for r in observed.records if r.status == OK]
    latency = statistics.median(r.latency_ms for r in answered) if answered else None
    usable = any(reply_form(c) != "none" for p in (base, observed.json_mode, observed.choices)
                 if p is not None and p.answered for c in p.contents)
    reason = None if usable else _why_not(observed)
    if not base.answered:
        why = "the server refused the request" if observed.refused else "the first request got no reply"
        rows = tuple(Capability(name, UNKNOWN, f"not checked: {why}") for name in _names(observed))
    else:
        rows = tuple(_capabilities(observed))
    sent = len(observed.records) + (observed.refused is not None)  # a refusal raises: the request has no record
    return CheckReport(observed.model, observed.base_url, usable, reason, rows, latency, sent,
                       prices.list_price(observed.model) if observed.listed else None,
                       tuple(_dropped(observed)) if base.answered else ())


def _names(observed: Observed) -> list[str]:
    names = ["structured outputs (strict JSON schema)", "JSON mode", "reply form", "several choices (n)", "seed",
             "output limit", "temperature 0"]
    if observed.reasoning_effort is not None:
        names.append("reasoning effort")
    return names + ["reasoning tokens in usage", "cached tokens in usage"]


def _why_not(observed: Observed) -> str:
    base = observed.baseline
    where = observed.base_url or "the OpenAI API"
    if observed.refused:
        return observed.refused
    if base.failure_status == CONNECTION_ERROR:
        return f"the server at {where} is unreachable ({base.failure})"
    if base.failure_status == CALL_TIMEOUT:
        return f"the server at {where} sent no complete reply within {observed.timeout:g} s"
    if base.failure is not None:
        return f"the request failed: {base.failure}"
    return ("no JSON at all in any reply (prose only): this server's model does not answer in JSON, so no verdict "
            "could be read from it")


def _capabilities(observed: Observed) -> list[Capability]:
    base, params = observed.baseline, observed.params
    first = base.contents[0] if base.contents else None
    form = reply_form(first)
    refused_format = not params.response_format
    rows = []
    # structured outputs
    if refused_format:
        rows.append(Capability(_names(observed)[0], NOT_SUPPORTED, "response_format refused by name: the judge sends "
                                                                   "none, and reads the JSON from the reply"))
    elif observed.schema_level < BOUNDED:
        rows.append(Capability(_names(observed)[0], NOT_SUPPORTED, "json_schema refused (HTTP 400): the judge falls "
                                                                   "back to JSON mode"))
    elif form == "json" and _held_to_schema(first):
        rows.append(Capability(_names(observed)[0], SUPPORTED, "the reply was the schema's JSON alone"))
    elif form == "json":
        rows.append(Capability(_names(observed)[0], NOT_SUPPORTED, "schema not enforced: the reply's JSON does not "
                                                                   "match it"))
    elif form == "prose":
        rows.append(Capability(_names(observed)[0], NOT_SUPPORTED, "schema not enforced, JSON found in prose"))
    else:
        rows.append(Capability(_names(observed)[0], NOT_SUPPORTED, "schema not enforced: no JSON in the reply"))
    # JSON mode
    rows.append(_json_mode(observed, form, refused_format))
    # the reply's form
    rows.append(Capability("reply form", SUPPORTED if form == "json" else NOT_SUPPORTED, {
        "json": "JSON alone",
        "prose": "prose-wrapped JSON: the judge takes the JSON from the prose (its calls say schema not enforced)",
        "none": "prose with no JSON object: no verdict can be read from such a reply"}[form]))
    rows.append(_n(observed))
    rows.append(Capability("seed", SUPPORTED, "accepted (the replies' determinism is not tested)") if params.seed else
                Capability("seed", NOT_SUPPORTED, "refused by name (HTTP 400): the judge sends none"))
    if params.limit_field == "max_tokens":
        rows.append(Capability("output limit", SUPPORTED, "max_tokens"))
    elif params.limit_field is not None:
        rows.append(Capability("output limit", SUPPORTED, f"{params.limit_field} (max_tokens refused)"))
    else:
        rows.append(Capability("output limit", NOT_SUPPORTED, "max_tokens refused and no other named: the judge sends "
                                                              "no output limit"))
    rows.append(Capability("temperature 0", SUPPORTED, "accepted") if params.temperature is not None else
                Capability("temperature 0", NOT_SUPPORTED, "refused (HTTP 400): the judge sends no temperature (the "
                                                           "server's default applies)"))
    if observed.reasoning_effort is not None:
        rows.append(Capability("reasoning effort", SUPPORTED, f"{observed.reasoning_effort} accepted")
                    if params.reasoning_effort else
                    Capability("reasoning effort", NOT_SUPPORTED, "refused by name (HTTP 400): the judge sends none"))
    answered = [r for r in observed.records if r.status == OK]
    reasoning = [r.reasoning_tokens for r in answered if r.reasoning_tokens is not None]
    rows.append(Capability("reasoning tokens in usage", SUPPORTED, f"reported ({reasoning[0]:,} in the first reply)")
                if reasoning else
                Capability("reasoning tokens in usage", NOT_SUPPORTED, "usage has no completion_tokens_details."
                                                                       "reasoning_tokens"))
    cached = [r.cached_input_tokens for r in answered if r.cached_input_tokens is not None]
    rows.append(Capability("cached tokens in usage", SUPPORTED, f"reported ({cached[0]:,} in the first reply)")
                if cached else
                Capability("cached tokens in usage", NOT_SUPPORTED, "usage has no prompt_tokens_details.cached_tokens: "
                                                                    "cached input is priced as input"))
    return rows


def _json_mode(observed: Observed, form: str, refused_format: bool) -> Capability:
    name = "JSON mode"
    if refused_format:
        return Capability(name, NOT_SUPPORTED, "response_format refused by name")
    if observed.schema_level == JSON_MODE:  # the first request ended in JSON mode: its reply says
        probe_, shown = observed.baseline, form
    else:
        probe_ = observed.json_mode
        if probe_ is None or not probe_.answered:
            failure = "not sent" if probe_ is None else probe_.failure
            status = NOT_SUPPORTED if probe_ is not None and probe_.failure_status == "bad_request" else UNKNOWN
            return Capability(name, status, failure or "no reply")
        shown = reply_form(probe_.contents[0])
    return {"json": Capability(name, SUPPORTED, "the reply was JSON alone"),
            "prose": Capability(name, NOT_SUPPORTED, "accepted but not enforced: JSON found in prose"),
            "none": Capability(name, NOT_SUPPORTED, "accepted but not enforced: no JSON in the reply")}[shown]


def _n(observed: Observed) -> Capability:
    name, probe_ = "several choices (n)", observed.choices
    if probe_ is None:
        return Capability(name, UNKNOWN, "not sent")
    if not probe_.answered:
        status = NOT_SUPPORTED if probe_.failure_status == "bad_request" else UNKNOWN
        return Capability(name, status, probe_.failure or "no reply")
    got = len(probe_.contents)
    if got >= CHOICES:
        return Capability(name, SUPPORTED, f"{got} choices in one reply")
    return Capability(name, NOT_SUPPORTED, f"ignored: {got} choice for n={CHOICES}: the judge asks one reply per "
                                           "request (repeats cost their input each)")


def _dropped(observed: Observed) -> list[str]:
    """What the judge sends this server otherwise than it first tries, as found by the first request."""
    params, out = observed.params, []
    if params.temperature is None:
        out.append("no temperature")
    if not params.seed:
        out.append("no seed")
    if params.limit_field != "max_tokens":
        out.append(f"{params.limit_field} for the output limit" if params.limit_field else "no output limit")
    if observed.reasoning_effort is not None and not params.reasoning_effort:
        out.append("no reasoning effort")
    if not params.response_format:
        out.append("no response_format")
    elif observed.schema_level == JSON_MODE:
        out.append("JSON mode instead of the schema")
    return out


def check(model: str, base_url: str | None, api_key: str | None = None, *, timeout: float | None = None,
          reasoning_effort: str | None = None, budget: float = BUDGET, listed: bool = True, **server) -> CheckReport:
    """`probe` then `report`, the key kept out of the report's texts. ValueError for options no request can use."""
    secret = api_key or os.environ.get(server.get("key_env") or KEY_ENV)
    observed = probe(model, base_url, api_key, timeout=timeout, reasoning_effort=reasoning_effort, budget=budget,
                     listed=listed, **server)
    return report(observed).redacted(secret)


class CheckJob(BackgroundJob):
    """A check in a background thread (the Evaluate screen); the page polls `done` and reads `result` (a CheckReport)
    or `error`. The key goes to the thread only, for the check's duration."""

    name = "ragscope-judge-check"

    def __init__(self, model: str, base_url: str | None, *, listed: bool = True, **server):
        super().__init__()
        self.model, self.base_url = model, base_url
        self._options = dict(listed=listed, **server)  # how to reach the server (`check`); never the key

    def start(self, api_key: str | None, *, timeout: float | None = None,
              reasoning_effort: str | None = None) -> CheckJob:
        return super().start(check, self.model, self.base_url, api_key, timeout=timeout,
                             reasoning_effort=reasoning_effort, secret=api_key, **self._options)
