"""`python -m evaluators judge check` (judges/check.py) against the scripted OpenAI-compatible server in its modes
(tests/helpers/openai_server.py): what it reports, its exit codes, its time on a dead server, and that it stores
nothing and never prints the key."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from tests.helpers import ROOT
from tests.helpers.cli import cli
from tests.helpers.openai_server import PromptCache, Reply, reasoning_model_rules, start_server

KEY = "sk-check-key-0123456789-never-printed"
ENV = {"OPENAI_API_KEY": KEY}


def check(*args, env=ENV):
    done = cli("judge", "check", *args, env=env)
    assert KEY not in done.stdout and KEY not in done.stderr
    return done


def statuses(done) -> dict[str, tuple[str, str]]:
    """capability -> (status, detail), from --json output."""
    return {c["name"]: (c["status"], c["detail"]) for c in json.loads(done.stdout)["capabilities"]}


def full_featured(body: dict) -> Reply:
    """A server as OpenAI's non-reasoning models answer: the schema's JSON, as many choices as asked for."""
    reply = Reply.json({"ok": True})
    return Reply.choices(reply, *[reply] * (body.get("n", 1) - 1))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_full_featured_server_supports_everything_and_the_judge_can_run():
    with start_server() as server:
        server.responder, server.prompt_cache, server.reasoning_tokens = full_featured, PromptCache(), 5
        done = check("--judge", "openai", "--model", "gpt-4o-mini", "--base-url", server.base_url, "--json")
        bodies = [r.body for r in server.requests]
    assert done.returncode == 0, done.stderr
    found = statuses(done)
    assert {s for s, _ in found.values()} == {"supported"}, found
    assert found["output limit"] == ("supported", "max_tokens")
    report = json.loads(done.stdout)
    assert report["can_run"] is True and report["dropped"] == [] and report["latency_ms"]["requests"] == 3
    assert report["latency_ms"]["median"] > 0 and report["price_usd_per_1m"]["input"] == 0.15
    # the first request carries every parameter; JSON mode and n probed apart
    assert {"temperature", "seed", "max_tokens", "response_format"} <= set(bodies[0])
    assert [b["response_format"]["type"] for b in bodies[:2]] == ["json_schema", "json_object"]
    assert bodies[2]["n"] == 2 and len(bodies) == 3


def test_the_table_names_each_capability_with_its_status_latency_and_price():
    with start_server() as server:
        done = check("--model", "some-local-model", "--base-url", server.base_url)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[2].split() == ["capability", "status", "detail"]
    row = next(line for line in lines if line.startswith("several choices (n)"))
    assert "not supported" in row and "ignored: 1 choice for n=2" in row  # the default server answers one choice
    assert any(line.startswith("latency: median ") for line in lines)
    assert "price: unknown, no list price for model 'some-local-model'" in done.stdout
    assert lines[-1] == "the judge can run"


def test_reasoning_model_rules_temperature_refused_max_completion_tokens_reasoning_tokens_reported():
    with start_server() as server:
        server.rules, server.reasoning_tokens, server.responder = reasoning_model_rules, 200, full_featured
        done = check("--model", "gpt-5-mini", "--base-url", server.base_url, "--reasoning-effort", "low", "--json")
        bodies = [r.body for r in server.requests]
    assert done.returncode == 0, done.stderr
    found = statuses(done)
    assert found["temperature 0"][0] == "not supported"
    assert found["output limit"] == ("supported", "max_completion_tokens (max_tokens refused)")
    assert found["reasoning tokens in usage"] == ("supported", "reported (200 in the first reply)")
    assert found["reasoning effort"] == ("supported", "low accepted")
    assert json.loads(done.stdout)["dropped"] == ["no temperature", "max_completion_tokens for the output limit"]
    assert all(b["reasoning_effort"] == "low" for b in bodies)
    assert all(reasoning_model_rules(b) is None for b in bodies[2:])  # learned once: the probes after are accepted


def test_a_server_that_ignores_the_schema_can_run_with_the_json_found_in_prose():
    with start_server() as server:
        server.prose = True
        done = check("--model", "claude-like", "--base-url", server.base_url, "--json")
    assert done.returncode == 0, done.stderr
    found = statuses(done)
    assert found["structured outputs (strict JSON schema)"] == ("not supported",
                                                                "schema not enforced, JSON found in prose")
    assert found["reply form"][0] == "not supported" and found["reply form"][1].startswith("prose-wrapped JSON")
    assert found["JSON mode"][0] == "not supported"


def test_a_server_answering_prose_with_no_json_cannot_run():
    with start_server() as server:
        server.responder = lambda body: Reply.text("The answer looks fine to me.")
        done = check("--model", "chatty", "--base-url", server.base_url)
    assert done.returncode == 1
    assert "the judge cannot run: no JSON at all in any reply" in done.stderr
    assert "prose with no JSON object" in done.stdout


def test_a_wrong_key_is_named_and_the_key_never_printed_even_where_the_server_echoes_it():
    with start_server() as server:
        server.responder = lambda body: Reply.status(401, f"Incorrect API key provided: {KEY}. You can find your API "
                                                          "key at ...")
        done = check("--model", "gpt-4o-mini", "--base-url", server.base_url)
        assert server.request_count == 1  # nothing else after a refusal
        json_done = check("--model", "gpt-4o-mini", "--base-url", server.base_url, "--json")
    assert done.returncode == 1 and json_done.returncode == 1
    assert "refused the API key (HTTP 401" in done.stderr and "check OPENAI_API_KEY" in done.stderr
    assert "[the API key]" in done.stdout  # check() ran KEY-free: `check` asserts it appears nowhere


def test_an_unknown_model_cannot_run():
    with start_server() as server:
        server.enqueue(Reply.status(404, "The model `gpt-nope` does not exist or you do not have access to it."))
        done = check("--model", "gpt-nope", "--base-url", server.base_url, "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["can_run"] is False and "knows no model 'gpt-nope'" in report["reason"]
    assert {c["status"] for c in report["capabilities"]} == {"unknown"}


def test_nothing_listening_is_unreachable_at_once():
    started = time.monotonic()
    done = check("--model", "m", "--base-url", f"http://127.0.0.1:{free_port()}/v1")
    assert done.returncode == 1 and "is unreachable" in done.stderr
    assert time.monotonic() - started < 10


def test_a_server_that_never_answers_times_out_within_its_deadline():
    with start_server() as server:
        server.responder = lambda body: Reply.delay(120)
        started = time.monotonic()
        done = check("--model", "m", "--base-url", server.base_url, "--timeout", "2")
        took = time.monotonic() - started
        assert server.request_count == 1
    assert done.returncode == 1 and "sent no complete reply within 2 s" in done.stderr
    assert took < 8


@pytest.mark.parametrize("args, said", [
    (("--model", "gpt-5-mini", "--reasoning-effort", "extreme"), "reasoning_effort must be one of minimal, low"),
    (("--judge", "offline",), "the offline judge makes no calls"),
    (("--judge", "nobody", "--model", "m"), "invalid choice: 'nobody'"),
    (("--base-url", "http://127.0.0.1:1/v1",), "needs --model"),
    (("--model", "m", "--timeout", "0"), "timeout must be a number above 0"),
    (("--model", "m", "--timeout", "soon"), "invalid float value"),
])
def test_bad_arguments_exit_2_before_any_request(args, said):
    with start_server() as server:
        done = check(*args, *(() if "--base-url" in args else ("--base-url", server.base_url)))
        assert server.request_count == 0
    assert done.returncode == 2 and said in done.stderr, done.stderr


def test_no_key_exits_2_before_any_request():
    with start_server() as server:
        done = check("--model", "m", "--base-url", server.base_url, env={})
        assert server.request_count == 0
    assert done.returncode == 2 and "needs OPENAI_API_KEY" in done.stderr


def test_the_process_stores_nothing_and_prints_no_key(tmp_path):
    """A real process in a folder of its own, $RAGSCOPE_DB pointing into it: no DuckDB file appears anywhere."""
    before = set(ROOT.glob("*.duckdb")) | set((ROOT / "data").glob("*.duckdb"))
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")} | ENV | {
        "RAGSCOPE_DB": str(tmp_path / "db" / "ragscope.duckdb"), "HOME": str(tmp_path),
        "PYTHONPATH": str(ROOT)}
    with start_server() as server:
        done = subprocess.run([sys.executable, "-m", "evaluators", "judge", "check", "--model", "gpt-4o-mini",
                               "--base-url", server.base_url], cwd=tmp_path, env=environ, capture_output=True,
                              text=True, timeout=120)
        assert server.request_count == 3
    assert done.returncode == 0, done.stderr
    assert KEY not in done.stdout + done.stderr
    assert list(tmp_path.rglob("*.duckdb*")) == []
    assert set(ROOT.glob("*.duckdb")) | set((ROOT / "data").glob("*.duckdb")) == before


def test_a_slow_server_s_later_probes_are_left_out_rather_than_overrunning_the_checks_time():
    from evaluators.judges import check as judge_check

    with start_server(latency=1.0) as server:
        started = time.monotonic()
        report = judge_check.check("m", server.base_url, KEY, timeout=2, budget=2.5)
        took = time.monotonic() - started
        assert server.request_count == 1
    assert report.can_run and took < 2.5
    found = {c.name: (c.status, c.detail) for c in report.capabilities}
    assert found["JSON mode"] == ("unknown", "not sent: the check's 2.5 s would have run out first")
    assert found["several choices (n)"][0] == "unknown"
    assert found["structured outputs (strict JSON schema)"][0] == "supported"


def test_a_port_that_accepts_connections_and_never_reads_times_out_too():
    """Not even an HTTP server: a socket listening (the kernel completes the connection) that never reads a byte."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        started = time.monotonic()
        done = check("--model", "m", "--base-url", f"http://127.0.0.1:{silent.getsockname()[1]}/v1", "--timeout", "2")
        took = time.monotonic() - started
    assert done.returncode == 1 and "sent no complete reply within 2 s" in done.stderr
    assert took < 8
