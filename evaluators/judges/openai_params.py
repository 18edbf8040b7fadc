"""Which request parameters the judge's server is sent, and what it was found to refuse (no I/O).

* Known reasoning models (OpenAI's gpt-5 family, o1/o3/o4 families; PITFALLS.md): no `temperature` (only the
  default is accepted: a 0 is refused with HTTP 400), `max_completion_tokens` for the output limit, and
  `reasoning_effort` when the run gives one. Their requests are accepted from the first call.
* Any other model: temperature 0, a seed and `max_tokens`, as the judge always sent (a reasoning effort given is sent
  too, and dropped if refused).
* Token log-probabilities (`logprobs`, `top_logprobs`) go only on a criteria call with a 1-5 criterion (G-Eval's
  weighted score, judges/geval.py), never to a known reasoning model (OpenAI refuses them there); a server that refuses
  either is sent neither from then on (plain scores).
* A 400 that names a parameter the request carried (OpenAI's error `param`, else the name quoted in its message; a
  reasoning effort also by its value: Gemini's and Ollama's words; the error body also as Gemini's list of errors)
  drops it, or renames the output limit (`learn`), for the rest of the run: the `Params` object is shared by the
  transports of a run's batches, and the run's config keeps it (`to_config`), so a resume starts from it.
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass

CONFIG_KEY = "server_params"  # in a run's config: the parameters its judge's server was found to take
LIMITS = ("max_tokens", "max_completion_tokens")
# The parameters a refusal may name and the judge can do without (a limit is renamed or dropped).
LOGPROBS = ("logprobs", "top_logprobs")
LEARNABLE = ("temperature", "seed", "n", "reasoning_effort", "response_format", *LIMITS, *LOGPROBS)
# gpt-5, gpt-5-mini, gpt-5.1, gpt-5-nano-2025-08-07, o1, o1-preview, o3-mini, o4-mini, openai/o3 (a router's prefix)
_REASONING_MODEL = re.compile(r"(?:^|/)(?:gpt-5(?:\.\d+)?|o[134])(?:-|$)")
# "Unrecognized request argument supplied: seed", "Extra inputs are not permitted ... 'seed'"
_ARGUMENT = re.compile(r"(?:argument|parameter|field|property|key)s?(?: supplied)?:?\s+['\"`]?(\w+)", re.IGNORECASE)
# A reasoning effort refused by value, the name unquoted: Gemini's "Invalid reasoning_effort: minimal. Valid values
# are: ...", Ollama's "invalid reasoning value: 'minimal' (must be ...)"
_REASONING = re.compile(r"\breasoning(?:_effort)?\b", re.IGNORECASE)


def is_reasoning(model: str | None) -> bool:
    """Whether `model` names a known reasoning model."""
    return bool(model) and bool(_REASONING_MODEL.search(model.strip().lower()))


@dataclass
class Params:
    """What the server is sent besides the model, the messages and the output: one object per run, changed by
    `learn` (the event loop is single-threaded: no lock)."""

    temperature: float | None = 0  # None: not sent (the server's default)
    seed: bool = True
    limit_field: str | None = "max_tokens"  # None: no output limit can be sent
    n: bool = True  # several choices per request
    reasoning_effort: bool = True  # sent when the run gives one
    response_format: bool = True
    logprobs: bool = True  # token log-probabilities on the calls that ask for them (both parameters)
    settled: bool = False  # a request went out and taught nothing: concurrent requests need not wait (transport)

    @classmethod
    def of(cls, model: str | None, recorded: dict | None = None) -> Params:
        """The parameters for `model`: those a run recorded (`to_config`), else the model's known ones."""
        if recorded:
            fields = {k: v for k, v in recorded.items() if k in cls.__dataclass_fields__}
            return cls(**fields)
        if is_reasoning(model):
            return cls(temperature=None, limit_field="max_completion_tokens", logprobs=False)
        return cls()

    def to_config(self) -> dict:
        return {CONFIG_KEY: asdict(self)}

    def learn(self, text: str, body: dict) -> str | None:
        """What the 400 whose body is `text` teaches about the request `body` (its parameter dropped or renamed, for
        good), as words for the call's record; None when it names no parameter the request carried."""
        name = next((p for p in refused_parameters(text) if p in body), None)
        if name is None:
            return None
        if name in LIMITS:
            other = LIMITS[1 - LIMITS.index(name)]
            self.limit_field = other if other in _message(text) else None
            return f"sending {other}" if self.limit_field else f"sending no {name}"
        if name in LOGPROBS:  # one without the other is of no use
            self.logprobs = False
            return "dropping logprobs and top_logprobs (criteria scores as written, not G-Eval weighted)"
        if name == "temperature":
            self.temperature = None
            return "dropping temperature (the server's default applies)"
        setattr(self, name, False)
        return f"dropping {name}"


def refused_parameters(text: str) -> list[str]:
    """The parameters the judge can do without that a 400's body names: its `param`, then those quoted or named in
    its message, in order ("'max_tokens' is not supported ... Use 'max_completion_tokens'": the request's is the
    refused one)."""
    error = _error(text)
    param = error.get("param") if error else None
    message = _message(text)
    quoted = re.findall(r"['\"`](\w+)['\"`]", message) + _ARGUMENT.findall(message)
    effort = ["reasoning_effort"] if _REASONING.search(message) else []
    return list(dict.fromkeys(p for p in (param, *quoted, *effort) if p in LEARNABLE))


def _error(text: str) -> dict | None:
    """The error object of an error body: OpenAI's {"error": {...}}, or Gemini's OpenAI-compatible endpoint's list of
    them ([{"error": {...}}]); None for any other body."""
    try:
        body = json.loads(text)
    except ValueError:
        return None
    if isinstance(body, list) and body:
        body = body[0]
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else None


def _message(text: str) -> str:
    error = _error(text)
    return str(error["message"]) if error and "message" in error else text

