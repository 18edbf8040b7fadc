"""Reasoning models and servers that refuse parameters: the OpenAI-compatible judge against the scripted server's rules
(tests/helpers/openai_server.py: `reasoning_model_rules`, `refusing`), through the real engine on a real DuckDB file."""
from __future__ import annotations

import json

import pytest

from evaluators import queries
from evaluators.judges import OpenAIJudge, openai_estimate, openai_params, prices, prompts
from evaluators.judges.openai_protocol import JudgeClient
from evaluators.records import OK
from evaluators.runs import engine, lifecycle
from tests.helpers.openai_runs import cli_with_key, openai_run_files, responder
from tests.helpers.openai_server import Reply, reasoning_model_rules, refusing, start_server
from tests.helpers.seed_000 import KEY, SEED_000_EXTRACTION, seed_000_sample
from tests.helpers.seed_runs import (METRICS, calls, cells, judged_run, question_of, seed_reply,  # noqa: F401
                                     store, stored_inputs)  # store: a fixture


def chat_bodies(server) -> list[dict]:
    return [r.body for r in server.requests if r.path.endswith("/chat/completions")]


def refused(server) -> list[dict]:
    """The requests the reasoning-model rules refused (HTTP 400)."""
    return [b for b in chat_bodies(server) if reasoning_model_rules(b) is not None]


@pytest.mark.parametrize("model, reasoning", [
    ("gpt-5-mini", True), ("gpt-5", True), ("gpt-5-nano-2025-08-07", True), ("gpt-5.1", True), ("o1", True),
    ("o3-mini", True), ("o4-mini", True), ("openai/o3", True),
    ("gpt-4o-mini", False), ("gpt-4.1", False), ("o10-model", False), ("qwen2.5-7b-instruct", False), (None, False)])
def test_known_reasoning_models(model, reasoning):
    assert openai_params.is_reasoning(model) is reasoning


def test_a_gpt_5_mini_run_scores_every_cell_with_no_refused_request(store, tmp_path):
    with start_server() as server:
        server.rules, server.reasoning_tokens = reasoning_model_rules, 250
        server.responder = seed_reply
        run_id, status = judged_run(store, tmp_path, OpenAIJudge("gpt-5-mini", server.base_url, concurrency=4,
                                                                 reasoning_effort="low"))
        bodies = chat_bodies(server)
    assert status == "finished" and refused(server) == []
    assert {s for _, _, s, _ in cells(store, run_id)} == {OK} and len(cells(store, run_id)) == 6 * len(METRICS)
    assert len(bodies) == 6 * 3  # extraction, verification, holistic: no request paid twice
    assert all("temperature" not in b and b["reasoning_effort"] == "low" and "max_tokens" not in b for b in bodies)
    config = json.loads(store.run(run_id)["config"])
    assert config["reasoning_effort"] == "low"
    assert config[openai_params.CONFIG_KEY]["temperature"] is None  # what was sent: none, the model's default


def test_a_reasoning_models_cut_off_reply_is_asked_again_with_max_completion_tokens_at_once():
    with start_server() as server:
        server.rules = reasoning_model_rules
        server.enqueue(Reply.truncated(SEED_000_EXTRACTION))
        server.responder = seed_reply
        judge = JudgeClient(server.base_url, "o4-mini", api_key=KEY, backoff_base=0.01)
        judgment = judge.judge_sync([seed_000_sample()])[0]
    assert judgment.status == OK and refused(server) == []
    assert chat_bodies(server)[1]["max_completion_tokens"] >= 1024


def test_reasoning_tokens_are_stored_per_call_and_billed_as_output(store, tmp_path):
    with start_server() as server:
        server.rules, server.reasoning_tokens = reasoning_model_rules, 400
        server.responder = seed_reply
        run_id, _ = judged_run(store, tmp_path, OpenAIJudge("gpt-5-mini", server.base_url), n=2)
    rows = calls(store, run_id, "input_tokens, output_tokens, reasoning_tokens, cached_input_tokens")
    assert len(rows) == 6 and all(r == 400 for _, _, r, _ in rows)
    assert all(out > 400 for _, out, _, _ in rows)  # the visible reply's tokens and the reasoning
    spent = queries.run_cost(store, run_id)
    price = prices.LIST_PRICES["gpt-5-mini"]
    in_tokens, out_tokens = sum(r[0] for r in rows), sum(r[1] for r in rows)
    assert spent["reasoning_tokens"] == 6 * 400 and spent["output_tokens"] == out_tokens
    assert spent["usd"] == pytest.approx((in_tokens * price.input + out_tokens * price.output) / 1e6)
    assert spent["usd"] > (in_tokens * price.input + (out_tokens - 2400) * price.output) / 1e6


def test_the_estimate_states_its_reasoning_allowance(store, tmp_path):
    golden_id, outputs_id = stored_inputs(store, tmp_path, 3)
    inputs = lifecycle.Inputs.stored(store, golden_id, [outputs_id])
    plain = lifecycle.prepare(inputs, lifecycle.RunSpec(OpenAIJudge("gpt-4o-mini"), metrics=METRICS)).estimate
    for effort, per_call in (("high", 4_000), (None, 1_500)):
        reasoning = lifecycle.prepare(inputs, lifecycle.RunSpec(OpenAIJudge("gpt-5-mini", reasoning_effort=effort),
                                                                metrics=METRICS)).estimate
        assert per_call == openai_estimate.REASONING_TOKENS[effort]
        assert f"reasoning: ~{per_call:,} tokens per call assumed" in reasoning.summary()
        assert reasoning.total_output_tokens - plain.total_output_tokens == per_call * reasoning.total_calls
    assert "reasoning" not in plain.summary()


def test_an_unknown_reasoning_model_learns_once_per_run_and_a_resume_does_not_learn_again(store, tmp_path):
    """Model "acme-reasoner" is unknown: its first round's 2 requests (extraction and holistic, sent together) pay the
    temperature's 400, a cut-off reply the limit's; the other requests wait for them (concurrency 4), so 3 refusals in
    the run. The resume of its failed cells
    (q6's server errors) starts from what the run's config recorded: no refusal at all."""
    phase = {"resume": False, "cut": False}

    def reply(body):
        if question_of(body) == "q6" and not phase["resume"]:
            return Reply.status(500)
        if question_of(body) == "q2" and not phase["cut"]:  # once a phase: the limit goes out with the next asking
            phase["cut"] = True
            return Reply.truncated(SEED_000_EXTRACTION)
        return seed_reply(body)

    with start_server() as server:
        server.rules, server.responder = reasoning_model_rules, reply
        run_id, status = judged_run(store, tmp_path, OpenAIJudge("acme-reasoner", server.base_url, concurrency=4,
                                                                 max_attempts=1))
        first = len(server.requests)
        assert status == "finished" and len(refused(server)) == 2 + 1
        assert {s for q, _, s, _ in cells(store, run_id) if q != "q6"} == {OK}
        assert {s for q, m, s, _ in cells(store, run_id) if q == "q6" and m != "exact_match"} == {"judge_error"}
        learned = json.loads(store.run(run_id)["config"])[openai_params.CONFIG_KEY]
        assert learned["temperature"] is None and learned["limit_field"] == "max_completion_tokens"

        phase.update(resume=True, cut=False)
        server.responder = lambda body: (Reply.truncated(SEED_000_EXTRACTION) if not phase["cut"] and
                                         not phase.update(cut=True) else seed_reply(body))
        assert engine.execute_run(store, run_id) == "finished"
        again = chat_bodies(server)[first:]
    assert len(again) == 4 and [b for b in again if reasoning_model_rules(b)] == []
    assert [b["max_completion_tokens"] >= 1024 for b in again if "max_completion_tokens" in b] == [True]  # as learned
    assert {s for _, _, s, _ in cells(store, run_id)} == {OK}


def test_a_server_that_refuses_parameters_by_name_is_sent_them_no_more(store, tmp_path):
    with start_server() as server:
        server.rules, server.responder = refusing("seed", "reasoning_effort"), seed_reply
        run_id, status = judged_run(store, tmp_path, OpenAIJudge("local-model", server.base_url, concurrency=4,
                                                                 reasoning_effort="high"))
        bodies = chat_bodies(server)
    assert status == "finished" and {s for _, _, s, _ in cells(store, run_id)} == {OK}
    refusals = [b for b in bodies if "seed" in b or "reasoning_effort" in b]
    # each refused by the first round's extraction and holistic requests only (at most 2 each), whatever the
    # concurrency; in arrival order a first-round request built before the lesson may come after one built after it
    assert 2 <= len(refusals) <= 2 * 2 and len(bodies) == 6 * 3 + len(refusals)
    refused_tasks = [prompts.task_of(b["messages"]) for b in refusals]
    assert set(refused_tasks) <= {prompts.EXTRACTION, prompts.HOLISTIC}
    assert max(refused_tasks.count(t) for t in set(refused_tasks)) <= 2
    assert bodies[0]["temperature"] == 0 and all(b["temperature"] == 0 for b in bodies)  # not refused: still sent
    errors = " ".join(e for (e,) in calls(store, run_id, "error") if e)
    assert "dropping seed" in errors and "dropping reasoning_effort" in errors


def test_a_gpt_4o_mini_request_is_what_it_was():
    """Non-reasoning models: temperature 0, a seed, max_tokens; no reasoning effort unless given."""
    with start_server() as server:
        server.enqueue(Reply.truncated(SEED_000_EXTRACTION))
        server.responder = seed_reply
        judgment = JudgeClient(server.base_url, "gpt-4o-mini", api_key=KEY).judge_sync([seed_000_sample()])[0]
        first, again = chat_bodies(server)[:2]
    # the request as recorded (judge_calls.request) has the keys in the order it always had
    assert list(json.loads(judgment.calls[0].request)) == ["model", "messages", "temperature", "seed",
                                                           "response_format"]
    assert (first["temperature"], first["seed"]) == (0, 0) and again["max_tokens"] >= 1024


@pytest.mark.parametrize("effort", ["extreme", "", "LOW"])
def test_a_reasoning_effort_no_server_takes_is_a_problem_of_the_run(effort):
    found = lifecycle.RunSpec(OpenAIJudge("gpt-5-mini", reasoning_effort=effort)).problems()
    assert [p.about for p in found] == ["reasoning_effort"]
    assert "reasoning_effort must be one of minimal, low, medium, high" in found[0].message
    with pytest.raises(ValueError, match="reasoning_effort must be one of"):
        JudgeClient("http://127.0.0.1:1/v1", "gpt-5-mini", api_key=KEY, reasoning_effort=effort)


def test_the_cli_runs_a_reasoning_model_with_its_effort_and_checks_it(tmp_path):
    golden, outputs = openai_run_files(tmp_path)
    db = tmp_path / "cli.duckdb"
    with start_server() as server:
        server.rules, server.reasoning_tokens = reasoning_model_rules, 120
        server.responder = responder(refuse_q2=False)
        args = ("--golden", str(golden), "--outputs", str(outputs), "--judge", "openai", "--model", "gpt-5-nano",
                "--base-url", server.base_url, "--metrics", "faithfulness,judge_overall")
        bad = cli_with_key(db, *args, "--reasoning-effort", "extreme")
        assert bad.returncode == 2 and "reasoning_effort must be one of minimal, low, medium, high" in bad.stderr
        assert server.request_count == 0 and not db.exists()
        estimate = cli_with_key(db, *args, "--reasoning-effort", "minimal", "--estimate")
        assert estimate.returncode == 0 and "reasoning: ~100 tokens per call assumed" in estimate.stderr
        done = cli_with_key(db, *args, "--reasoning-effort", "minimal")
        bodies = chat_bodies(server)
    assert done.returncode == 0, done.stderr
    assert refused(server) == [] and {b["reasoning_effort"] for b in bodies} == {"minimal"}
    assert f"({len(bodies) * 120:,} of them reasoning)" in done.stdout
    offline = cli_with_key(tmp_path / "offline.duckdb", "--golden", str(golden), "--outputs", str(outputs),
                           "--reasoning-effort", "low")
    assert offline.returncode == 2 and "--reasoning-effort applies to an LLM judge" in offline.stderr
    resumed = cli_with_key(db, "--resume", "run-x", "--reasoning-effort", "high")
    assert resumed.returncode == 2 and "reasoning effort it was started with" in resumed.stderr
