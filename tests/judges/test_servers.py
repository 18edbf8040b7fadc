"""The OpenAI-compatible judge against the servers people self-host or route through, each played by the scripted
server in the mode its documentation describes (tests/helpers/providers.py: every mode cites its pages; vLLM's
serving docs and serving_engine.py, Ollama's OpenAI-compatibility page and openai.go, LiteLLM's drop_params page,
Gemini's OpenAI-compatibility page, Anthropic's OpenAI SDK compatibility page): a real run through the engine on a
real DuckDB file scores every cell, learning what the server refuses once per run, and `judge check` says what the
server supports. Then the faults of a server that is not what it claims (HTML with HTTP 200, JSON of another API,
refusing everything): clear statuses, retries as ever, and `judge check` saying which.

llama.cpp is tested against a real server (tests/judges/test_llamacpp.py); OpenAI's own API and its reasoning models
in tests/judges/test_openai_judge.py and test_reasoning_models.py."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass

import pytest

from evaluators.judges import OpenAIJudge, openai_params
from evaluators.judges import check as judge_check
from evaluators.judges.openai_protocol import JudgeClient
from evaluators.records import BAD_REQUEST, BAD_RESPONSE, JUDGE_ERROR, OK
from tests.helpers import providers
from tests.helpers.cli import cli
from tests.helpers.openai_server import Reply, start_server
from tests.helpers.seed_000 import KEY, SEED_000_EXTRACTION, seed_000_sample
from tests.helpers.seed_runs import METRICS, calls, cells, judged_run, seed_reply, store  # noqa: F401 (store: fixture)

N = 6  # samples per run


@dataclass(frozen=True)
class Case:
    """A server, the judge's settings against it, and what the server refuses of them (the parameters a run learns
    to leave out)."""

    mode: str
    model: str
    options: dict  # the judge's
    refused: tuple[str, ...] = ()  # parameters the server refuses by name: each learned once per run
    n_refused: bool = False  # `n` refused with a 400 (not learned by name: asked one choice per request after)
    prose: bool = False  # the server ignores response_format
    server: tuple = ()  # the mode's options, as (name, value) pairs

    @property
    def id(self) -> str:
        return self.mode + "".join(f"-{k}" for k, v in self.server if v is True)

    def start(self, server, answer):
        return providers.MODES[self.mode](server, answer, **dict(self.server))


CASES = [
    # vllm serving docs: every parameter taken, structured outputs enforced, n honoured
    Case("vllm", "Qwen/Qwen2.5-7B-Instruct", {"repeats": 2}),
    # docs.ollama.com/api/openai-compatibility + openai.go: reasoning_effort only high/medium/low/none; n unsupported
    Case("ollama", "llama3.1:8b", {"repeats": 2, "reasoning_effort": "minimal"}, refused=("reasoning_effort",)),
    # docs.litellm.ai drop_params: an unsupported parameter is an UnsupportedParamsError (HTTP 400) by default...
    Case("litellm", "backend-model", {"reasoning_effort": "low"}, refused=("seed", "reasoning_effort"),
         server=(("unsupported", ("seed", "reasoning_effort")),)),
    # ... and dropped silently with drop_params: true
    Case("litellm", "backend-model", {"reasoning_effort": "low"},
         server=(("unsupported", ("seed", "reasoning_effort")), ("drop_params", True))),
    # ai.google.dev/gemini-api/docs/openai (+ the forum's 400): "minimal" refused, in a list-shaped error body
    Case("gemini", "gemini-2.5-flash", {"reasoning_effort": "minimal"}, refused=("reasoning_effort",)),
    # docs.claude.com/en/api/openai-sdk: response_format and seed ignored, n must be exactly 1
    Case("anthropic", "claude-sonnet-4-5", {"repeats": 2}, n_refused=True, prose=True),
]


def chat_bodies(server) -> list[dict]:
    return [r.body for r in server.requests if r.path.endswith("/chat/completions")]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_run_scores_every_cell_learning_what_the_server_refuses_once(case, store, tmp_path):
    with start_server() as server:
        mode = case.start(server, seed_reply)
        run_id, status = judged_run(store, tmp_path, OpenAIJudge(case.model, server.base_url, concurrency=4,
                                                                 **case.options), n=N)
        bodies = chat_bodies(server)
    refusals = [b for b in bodies if mode.refuses(b)]
    assert status == "finished"
    assert {s for _, _, s, _ in cells(store, run_id)} == {OK} and len(cells(store, run_id)) == N * len(METRICS)
    # once per run, not per cell: a parameter refused by name costs at most the first round's 2 requests (extraction
    # and holistic go out together, the others wait for what they teach); a refused n one holistic request
    assert len(refusals) <= 2 * len(case.refused) + case.n_refused
    assert (len(refusals) > 0) is bool(case.refused or case.n_refused)
    assert not [b for b in bodies[-N:] if mode.refuses(b) or set(case.refused) & set(b)]
    # extraction, verification and the holistic replies (one request, or one per reply where n is not honoured)
    assert len(bodies) <= N * (2 + case.options.get("repeats", 1)) + len(refusals)
    enforced = {e for (e,) in calls(store, run_id, "schema_enforced") if e is not None}
    assert enforced == {not case.prose}
    learned = json.loads(store.run(run_id)["config"])[openai_params.CONFIG_KEY]
    assert all(learned[name] is False for name in case.refused)


def test_a_refused_n_costs_one_request_per_run_even_when_the_refusal_comes_back_last(store, tmp_path):
    """Anthropic's "n must be exactly 1", its refusal slower than the extraction's reply: the extraction settles the
    other parameters, but `n` goes only on holistic requests, so those waited for the first of them; they used to
    go out together, each with n=2, and each paid the 400."""
    with start_server() as server:
        mode = providers.anthropic(server, seed_reply)

        def slow_refusal(body):
            refused = mode.rules(body)
            if refused is not None:
                time.sleep(0.3)
            return refused

        server.rules = slow_refusal
        run_id, status = judged_run(store, tmp_path, OpenAIJudge("claude-sonnet-4-5", server.base_url, concurrency=4,
                                                                 repeats=2), n=N)
        bodies = chat_bodies(server)
    assert status == "finished" and {s for _, _, s, _ in cells(store, run_id)} == {OK}
    assert [b.get("n") for b in bodies if mode.refuses(b)] == [2]
    assert len(bodies) == 1 + N * (2 + 2)  # the refusal; extraction, verification and 2 holistic requests a sample


# What `judge check` reports for each server (capability -> (status, a part of the detail)); its seed row says
# "supported" wherever the seed is accepted, ignored or not: a check cannot see that (Anthropic documents it ignored).
CHECKED = {
    "vllm": {"structured outputs (strict JSON schema)": ("supported", "the schema's JSON alone"),
             "several choices (n)": ("supported", "2 choices in one reply"),
             "seed": ("supported", "accepted"), "cached tokens in usage": ("not supported", "cached_tokens")},
    "ollama": {"structured outputs (strict JSON schema)": ("supported", "the schema's JSON alone"),
               "several choices (n)": ("not supported", "ignored: 1 choice for n=2"),
               "reasoning effort": ("not supported", "refused by name (HTTP 400)")},
    "litellm": {"seed": ("not supported", "refused by name (HTTP 400)"),
                "reasoning effort": ("not supported", "refused by name (HTTP 400)"),
                "structured outputs (strict JSON schema)": ("supported", "the schema's JSON alone")},
    "litellm-drop_params": {"seed": ("supported", "accepted"), "reasoning effort": ("supported", "low accepted")},
    "gemini": {"reasoning effort": ("not supported", "refused by name (HTTP 400)"),
               "structured outputs (strict JSON schema)": ("supported", "the schema's JSON alone")},
    "anthropic": {"structured outputs (strict JSON schema)": ("not supported", "JSON found in prose"),
                  "JSON mode": ("not supported", "JSON found in prose"),
                  "reply form": ("not supported", "prose-wrapped JSON"),
                  "several choices (n)": ("not supported", "HTTP 400"),
                  "seed": ("supported", "accepted (the replies' determinism is not tested)"),
                  "reasoning tokens in usage": ("not supported", "reasoning_tokens")},
}
DROPPED = {"ollama": ["no reasoning effort"], "litellm": ["no seed", "no reasoning effort"],
           "gemini": ["no reasoning effort"]}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_judge_check_says_what_the_server_supports(case):
    with start_server() as server:
        case.start(server, lambda body: Reply.json({"ok": True}))
        report = judge_check.check(case.model, server.base_url, KEY, timeout=10,
                                   reasoning_effort=case.options.get("reasoning_effort"))
    found = {c.name: (c.status, c.detail) for c in report.capabilities}
    assert report.can_run, report.reason
    for name, (status, detail) in CHECKED[case.id].items():
        assert found[name][0] == status and detail in found[name][1], (name, found[name])
    assert list(report.dropped) == DROPPED.get(case.id, [])


@pytest.mark.parametrize("body, refused", [
    # Gemini: a list of errors, the parameter named bare in the message
    ('[{"error": {"code": 400, "message": "Invalid reasoning_effort: minimal. Valid values are: high, low, medium, '
     'none", "status": "INVALID_ARGUMENT"}}]', ["reasoning_effort"]),
    # Ollama: "reasoning value", the value quoted, not the name
    ('{"error": {"message": "invalid reasoning value: \'minimal\' (must be \\"high\\", \\"medium\\", \\"low\\", or '
     '\\"none\\")", "type": "invalid_request_error", "param": null, "code": null}}', ["reasoning_effort"]),
    # LiteLLM: every unsupported parameter in one dict
    ('{"error": {"message": "litellm.UnsupportedParamsError: x does not support parameters: {\'seed\': 0, '
     '\'reasoning_effort\': \'low\'}, for model=m. To drop these, set `litellm.drop_params=True`", "code": "400"}}',
     ["seed", "reasoning_effort"]),
    ('{"error": {"message": "Invalid request", "type": "invalid_request_error"}}', []),
])
def test_the_parameters_a_refusal_names_in_each_servers_words(body, refused):
    assert openai_params.refused_parameters(body) == refused


def test_a_vllm_context_too_small_for_the_raised_limit_ends_the_call_once_not_in_a_loop():
    """vLLM refuses a limit that does not fit the context with "'max_tokens' or 'max_completion_tokens' is too large"
    (serving_engine.py): that names both limits, and learning from it flipped the limit's name for ever. A too-long
    refusal teaches nothing: the cut-off reply's call ends as judge_error with the server's reason, after 1 refusal."""
    with start_server() as server:
        mode = providers.vllm(server, seed_reply, max_model_len=1500)
        vllm_rules = server.rules
        refusals = []

        def rules(body):  # a guard so the loop this test caught ends: a 500 after 20 refusals
            refused = vllm_rules(body)
            if refused is not None:
                refusals.append(body)
                return refused if len(refusals) <= 20 else Reply.status(500, "loop guard")
            return None

        server.rules = rules
        server.enqueue(Reply.truncated(SEED_000_EXTRACTION))
        judgment = JudgeClient(server.base_url, "Qwen/Qwen2.5-7B-Instruct", api_key=KEY, backoff_base=0.01,
                               max_attempts=2).judge_sync([seed_000_sample()])[0]
        bodies = chat_bodies(server)
    assert judgment.status == JUDGE_ERROR and "maximum context length is 1500 tokens" in judgment.error
    assert len(refusals) == 1 and mode.refuses(bodies[1]) and len(bodies) == 2
    assert [c.status for c in judgment.calls] == ["invalid", BAD_REQUEST]


# -- servers that are not what they claim ---------------------------------------------------------------------------

HTML = Reply.not_json("<!DOCTYPE html><html><head><title>Sign in</title></head><body>Proxy login</body></html>")
# Ollama's native /api/chat reply: what a base URL without /v1 on a router that maps it gets back
OTHER_API = Reply.not_json(json.dumps({"model": "llama3.1:8b", "created_at": "2026-11-28T10:00:00Z",
                                       "message": {"role": "assistant", "content": "{}"}, "done": True}),
                           content_type="application/json")


@pytest.mark.parametrize("reply, said", [
    (HTML, "the server answered HTTP 200 with an HTML page ('<!DOCTYPE html><html><head><title>Sign in"),
    (OTHER_API, "the server answered HTTP 200 with JSON of another shape (no choices; model, created_at, message, "
                "done)"),
])
def test_a_server_that_answers_no_chat_completion_fails_each_call_after_its_retries_saying_what_it_got(
        reply, said, store, tmp_path):
    with start_server() as server:
        server.responder = lambda body: reply
        run_id, status = judged_run(store, tmp_path, OpenAIJudge("m", server.base_url, max_attempts=2), n=2)
        sent = len(chat_bodies(server))
    judged = [(s, d) for _, m, s, d in cells(store, run_id) if m != "exact_match"]
    assert status == "finished" and len(judged) == 2 * 2
    assert all(s == JUDGE_ERROR and said in d and "its /v1" in d and "after 2 attempts" in d for s, d in judged)
    assert {s for (s,) in calls(store, run_id, "status")} == {BAD_RESPONSE}
    assert sent == 2 * 2 * 2  # 2 samples, extraction and holistic, 2 attempts each; no verification without claims


@pytest.mark.parametrize("reply, said", [
    (HTML, "HTTP 200 with an HTML page"),
    (OTHER_API, "HTTP 200 with JSON of another shape (no choices; model, created_at, message, done)"),
    (Reply.status(503, "no healthy upstream"), "HTTP 503"),
    (Reply.status(400, "Invalid request"), "HTTP 400"),
])
def test_judge_check_says_which_fault_a_server_that_refuses_everything_has(reply, said):
    with start_server() as server:
        server.responder = lambda body: reply
        done = cli("judge", "check", "--model", "m", "--base-url", server.base_url, "--timeout", "5",
                   env={"OPENAI_API_KEY": KEY})
        sent = server.request_count
    assert done.returncode == 1 and "the judge cannot run: the request failed: " in done.stderr
    assert said in done.stderr and sent == 1  # one attempt: a check says what happened rather than retrying it
    assert KEY not in done.stdout + done.stderr


def test_judge_check_says_when_a_reply_is_json_of_another_schema():
    with start_server() as server:
        server.responder = lambda body: Reply.json({"verdict": "supported", "confidence": 0.9})
        report = judge_check.check("m", server.base_url, KEY, timeout=5)
    found = {c.name: (c.status, c.detail) for c in report.capabilities}
    assert found["structured outputs (strict JSON schema)"] == ("not supported", "schema not enforced: the reply's "
                                                                                 "JSON does not match it")
    assert report.can_run  # JSON came back: a run validates it and repairs it once (tests/judges/test_prose_json.py)
