"""The servers people self-host or route through, as the scripted OpenAI-compatible server (openai_server.FakeOpenAI)
plays them: each function sets a FakeOpenAI's rules (what it refuses, with which status and error body), its prose
mode and its responder from what the server's documentation (or, where the docs do not word an error, its source)
says. Only documented behaviour is modelled; each docstring cites its pages and says what is assumed.

    with start_server() as server:
        mode = ollama(server, seed_reply)      # seed_reply: body -> Reply, the judge's answers
        ...                                    # the judge against `server`
        [b for b in bodies if mode.refuses(b)] # the requests the server refused

What every mode shares, as none of these servers reports them: no `usage.prompt_tokens_details.cached_tokens` and no
`usage.completion_tokens_details.reasoning_tokens` (FakeOpenAI reports neither unless asked to).
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from tests.helpers.openai_server import FakeOpenAI, Reply, count_tokens

Answer = Callable[[dict], Reply]


@dataclass(frozen=True)
class Mode:
    """A server's mode: its name, the doc pages it follows, and its rules (body -> the refusal, or None)."""

    name: str
    docs: tuple[str, ...]
    rules: Callable[[dict], Reply | None]

    def refuses(self, body: dict) -> bool:
        return self.rules(body) is not None


def error(code: int, body) -> Reply:
    """An HTTP error whose body is `body` as the server words it (not OpenAI's shape)."""
    return Reply(http_status=code, raw_body=json.dumps(body).encode())


def _choices(answer: Answer) -> Answer:
    """`answer` as a server that honours `n` gives it: as many choices as asked for."""
    def respond(body: dict) -> Reply:
        reply = answer(body)
        return Reply.choices(reply, *[reply] * (int(body.get("n") or 1) - 1))
    return respond


# -- vLLM ---------------------------------------------------------------------------------------------------------

VLLM_DOCS = ("https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html",
             "https://docs.vllm.ai/en/latest/features/structured_outputs/",
             "vllm/entrypoints/openai/serving_engine.py (vllm-project/vllm: the context-length check's message)")


def vllm(server: FakeOpenAI, answer: Answer, max_model_len: int | None = None) -> Mode:
    """vLLM's OpenAI-compatible server: "We support all parameters except" tools (docs): temperature, seed, `n` and
    max_tokens are taken, structured outputs (`response_format` json_schema) are enforced by its grammar backends, so
    replies are the schema's JSON; usage is modelled without cached-token details.
    With `max_model_len`, a request whose prompt (counted in words) plus its output limit exceeds it is refused as
    serving_engine.py does: HTTP 400, "'max_tokens' or 'max_completion_tokens' is too large: N. This model's maximum
    context length is M tokens and your request has P input tokens (N > M - P)." in vLLM's error body
    ({"error": {"message", "type": "BadRequestError", "param", "code": 400}})."""
    def rules(body: dict) -> Reply | None:
        limit = body.get("max_tokens") or body.get("max_completion_tokens")
        if max_model_len is None or limit is None:
            return None
        prompt = sum(count_tokens(m["content"]) for m in body["messages"] if isinstance(m.get("content"), str))
        if prompt + limit <= max_model_len:
            return None
        message = (f"'max_tokens' or 'max_completion_tokens' is too large: {limit}. This model's maximum context "
                   f"length is {max_model_len} tokens and your request has {prompt} input tokens ({limit} > "
                   f"{max_model_len} - {prompt}).")
        return error(400, {"error": {"message": message, "type": "BadRequestError", "param": None, "code": 400}})

    server.rules, server.responder = rules, _choices(answer)
    return Mode("vllm", VLLM_DOCS, rules)


# -- Ollama -------------------------------------------------------------------------------------------------------

OLLAMA_DOCS = ("https://docs.ollama.com/api/openai-compatibility",
               "openai/openai.go (ollama/ollama: FromChatRequest, the reasoning check and the error body)")
OLLAMA_EFFORTS = ("high", "medium", "low", "none")


def ollama(server: FakeOpenAI, answer: Answer) -> Mode:
    """Ollama's /v1/chat/completions: its supported request fields are model, messages, response_format (json_object
    and json_schema, passed to Ollama's `format`, so replies are JSON), seed, temperature, max_tokens and
    reasoning_effort "high", "medium", "low" or "none"; `n` is listed unsupported (Go's decoder drops it: one choice).
    A reasoning effort outside those four (e.g. "minimal") is refused with HTTP 400 and the message
    `invalid reasoning value: 'minimal' (must be "high", "medium", "low", or "none")` in its error body
    ({"error": {"message", "type": "invalid_request_error", "param": null, "code": null}}); usage is prompt and
    completion tokens only."""
    def rules(body: dict) -> Reply | None:
        effort = body.get("reasoning_effort")
        if effort is None or effort in OLLAMA_EFFORTS:
            return None
        message = f"invalid reasoning value: '{effort}' (must be \"high\", \"medium\", \"low\", or \"none\")"
        return error(400, {"error": {"message": message, "type": "invalid_request_error", "param": None,
                                     "code": None}})

    server.rules, server.responder = rules, answer  # one choice, whatever `n` asks
    return Mode("ollama", OLLAMA_DOCS, rules)


# -- LiteLLM proxy ------------------------------------------------------------------------------------------------

LITELLM_DOCS = ("https://docs.litellm.ai/docs/completion/drop_params",
                "litellm/utils.py (BerriAI/litellm: the UnsupportedParamsError message)",
                "https://github.com/BerriAI/litellm/pull/33738 (the proxy's HTTP 400 body for it)")


def litellm_proxy(server: FakeOpenAI, answer: Answer, unsupported: tuple[str, ...] = ("seed",),
                  drop_params: bool = False, model: str = "backend-model") -> Mode:
    """The LiteLLM proxy in front of a provider that lacks the OpenAI parameters `unsupported`. By default LiteLLM
    "raises an exception if you send a parameter to a model that doesn't support it"; the proxy answers it with HTTP
    400, {"error": {"message": "litellm.UnsupportedParamsError: <provider> does not support parameters:
    {'seed': 0}, for model=... To drop these, set `litellm.drop_params=True` ...", "type": "invalid_request_error",
    "param": null, "code": "400"}}, every unsupported parameter of the request in one dict. With `drop_params: true`
    (litellm_settings) they are dropped silently and the request goes through. The backend answers as given (one
    choice)."""
    def rules(body: dict) -> Reply | None:
        found = {name: body[name] for name in unsupported if name in body}
        if drop_params or not found:
            return None
        message = (f"litellm.UnsupportedParamsError: backend does not support parameters: {found!r}, for "
                   f"model={model}. To drop these, set `litellm.drop_params=True` or for proxy:\n\n"
                   f"`litellm_settings:\n drop_params: true`\n\nReceived Model Group={model}\n"
                   "Available Model Group Fallbacks=None")
        return error(400, {"error": {"message": message, "type": "invalid_request_error", "param": None,
                                     "code": "400"}})

    server.rules, server.responder = rules, answer
    return Mode("litellm" + ("-drop-params" if drop_params else ""), LITELLM_DOCS, rules)


# -- Gemini -------------------------------------------------------------------------------------------------------

GEMINI_DOCS = ("https://ai.google.dev/gemini-api/docs/openai",
               "https://discuss.ai.google.dev/t/title-reasoning-effort-minimal-not-working-for-gemini-3-flash-despite-"
               "documentation/117875 (the 400 and its body, as the endpoint answers it)")
GEMINI_EFFORTS = ("high", "low", "medium", "none")


def gemini(server: FakeOpenAI, answer: Answer) -> Mode:
    """Gemini's OpenAI-compatible endpoint (base URL https://generativelanguage.googleapis.com/v1beta/openai/):
    structured outputs with a JSON schema (the docs' `parse` example), so replies are JSON; `reasoning_effort` maps to
    Gemini's thinking, and a value the model does not take is refused with HTTP 400 and an error body that is a LIST,
    [{"error": {"code": 400, "message": "Invalid reasoning_effort: minimal. Valid values are: high, low, medium,
    none", "status": "INVALID_ARGUMENT"}}]. Not modelled (not confirmed in the docs at hand): what it does with `n` and
    `seed` (one choice is answered, a seed accepted)."""
    def rules(body: dict) -> Reply | None:
        effort = body.get("reasoning_effort")
        if effort is None or effort in GEMINI_EFFORTS:
            return None
        message = f"Invalid reasoning_effort: {effort}. Valid values are: {', '.join(GEMINI_EFFORTS)}"
        return error(400, [{"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}])

    server.rules, server.responder = rules, answer
    return Mode("gemini", GEMINI_DOCS, rules)


# -- Anthropic ----------------------------------------------------------------------------------------------------

ANTHROPIC_DOCS = ("https://docs.claude.com/en/api/openai-sdk",
                  "https://docs.anthropic.com/en/api/errors (the error body's shape; that page itself was not at hand, "
                  "the shape is as third-party pages quote it)")


def anthropic(server: FakeOpenAI, answer: Answer) -> Mode:
    """Anthropic's OpenAI SDK compatibility (base URL https://api.anthropic.com/v1/): `response_format`, `seed` and
    `reasoning_effort` are "Ignored" (replies are prose, here with the JSON in a fenced block: `server.prose`),
    temperature is taken between 0 and 1, `n` "Must be exactly 1" and `choices[]` "Will always have a length of 1";
    prompt caching is not supported (no cached tokens in usage). Assumed, as the docs word no error text: a request
    with n > 1 is refused with HTTP 400 in Anthropic's error body ({"type": "error", "error": {"type":
    "invalid_request_error", "message": ...}}) whose message names `n`."""
    def rules(body: dict) -> Reply | None:
        if int(body.get("n") or 1) == 1:
            return None
        return error(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                      "message": "n: must be exactly 1"}})

    server.rules, server.responder, server.prose = rules, answer, True
    return Mode("anthropic", ANTHROPIC_DOCS, rules)


MODES = {"vllm": vllm, "ollama": ollama, "litellm": litellm_proxy, "gemini": gemini, "anthropic": anthropic}
