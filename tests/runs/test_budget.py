"""`run --max-cost USD` end to end: the real CLI (in-process), the scripted OpenAI-compatible server on
127.0.0.1 reporting a known number of tokens per call, real DuckDB files. A run estimated above its budget does not
start; one that reaches it stops with its cells pending and every call in the ledger, and a resume with a higher
budget finishes it with the scores of a run without one, paying nothing twice."""
import json

import duckdb
import pytest

from evaluators.runs import budget
from evaluators.judges import prices, prompts
from evaluators.records.run_status import RunStatus
from tests.helpers.openai_server import Reply, start_server
from tests.helpers.cli import tiny_files, cli
from tests.helpers.seed_000 import SEED_000_EXTRACTION, SEED_000_VERIFICATION

N = 6  # samples: 2 calls each (extraction, verification)
CALL_USD = 0.1  # each reply reports 100,000 input tokens, at $1 per 1M
PRICES = ("--price-in", "1", "--price-out", "1")


def _files(tmp_path):
    return tiny_files(tmp_path, N)


def _run(db, *args):
    return cli("run", *args, db=db, env={"OPENAI_API_KEY": "sk-test"})


@pytest.fixture
def server():
    with start_server() as fake:
        fake.usage = (100_000, 0)
        fake.responder = lambda body: Reply.json(SEED_000_EXTRACTION if prompts.task_of(body["messages"])
                                                 == "extraction" else SEED_000_VERIFICATION)
        yield fake


def _new(tmp_path, server, db, *extra):
    golden, outputs = _files(tmp_path)
    return _run(db, "--golden", str(golden), "--outputs", str(outputs), "--judge", "openai", "--model", "test-model",
                "--base-url", server.base_url, "--metrics", "faithfulness,exact_match", "--concurrency", "1",
                *PRICES, *extra)


def _query(db, sql, *params):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def test_a_run_estimated_above_its_budget_does_not_start_and_stores_nothing(tmp_path, server):
    db = tmp_path / "over.duckdb"
    refused = _new(tmp_path, server, db, "--max-cost", "0.001")
    assert refused.returncode == 2, refused.stderr
    estimated = refused.stderr.split("cost, estimated: ~")[1].split(" ")[0]
    assert f"error: the run is estimated to cost {estimated} at $1 in, $1 out per 1M tokens, above its budget of " \
           "$0.0010" in refused.stderr
    assert not db.exists() and server.request_count == 0
    dry = _new(tmp_path, server, db, "--max-cost", "0.001", "--estimate")  # the check without a run: exit 2 too
    assert dry.returncode == 2 and "above its budget" in dry.stderr


def test_a_budget_needs_a_price_and_an_llm_judge(tmp_path, server):
    golden, outputs = _files(tmp_path)
    db = tmp_path / "unknown.duckdb"
    unknown = _run(db, "--golden", str(golden), "--outputs", str(outputs), "--judge", "openai", "--model",
                   "my-model", "--base-url", server.base_url, "--max-cost", "5")
    assert unknown.returncode == 2 and "a budget cannot be checked without a price: model 'my-model'" in unknown.stderr
    offline = _run(db, "--golden", str(golden), "--outputs", str(outputs), "--max-cost", "5")
    assert offline.returncode == 2 and "the offline judge costs nothing" in offline.stderr
    zero = _new(tmp_path, server, db, "--max-cost", "0")
    assert zero.returncode == 2 and "max_cost_usd must be a number above 0" in zero.stderr
    assert not db.exists() and server.request_count == 0


def test_a_run_that_reaches_its_budget_stops_with_its_cells_pending_and_a_resume_finishes_it(tmp_path, server):
    db, limit = tmp_path / "budget.duckdb", 0.65  # 6 extractions and 1 verification go out (concurrency 1)
    stopped = _new(tmp_path, server, db, "--max-cost", str(limit))
    assert stopped.returncode == 4, stopped.stderr
    [(run_id, status, reason, config)] = _query(db, "SELECT run_id, status, error, config FROM runs")
    sent = server.request_count
    paid = _query(db, "SELECT count(*), sum(input_tokens) FROM judge_calls WHERE run_id = ? AND NOT cached", run_id)[0]
    # every request that went out is in the ledger; the budget was reached and passed by at most the one call in flight
    assert paid[0] == sent and limit <= sent * CALL_USD < limit + CALL_USD
    assert status == RunStatus.BUDGET_REACHED and json.loads(config)[budget.CONFIG_KEY] == limit
    spent = prices.usd(prices.cost(paid[1], 0, prices.Price(1, 1)))
    assert reason == f"stopped: budget of $0.65 reached ({spent} spent)"
    assert f"{reason}; the cells not judged yet are pending: resume with a higher budget" in stopped.stderr
    assert f"--resume {run_id} --max-cost USD" in stopped.stderr
    cells = dict(_query(db, "SELECT metric, count(*) FROM scores WHERE run_id = ? GROUP BY metric", run_id))
    assert cells.get("exact_match") == N and 0 < cells.get("faithfulness", 0) < N  # the rest is pending
    assert _query(db, "SELECT count(*) FROM scores WHERE status <> 'ok'")[0][0] == 0  # no judge_error
    # a sample scored was judged whole; one left pending keeps none of its claims
    scored = _query(db, "SELECT question_id FROM scores WHERE metric = 'faithfulness'")
    with_claims = _query(db, "SELECT DISTINCT question_id FROM claims")
    assert sorted(with_claims) == sorted(scored)

    same = _run(db, "--resume", run_id)  # the same budget: nothing more goes out
    assert same.returncode == 4 and server.request_count == sent

    finished = _run(db, "--resume", run_id, "--max-cost", "5")
    assert finished.returncode == 0, finished.stderr
    assert _query(db, "SELECT status, config FROM runs")[0][0] == "finished"
    assert json.loads(_query(db, "SELECT config FROM runs")[0][0])[budget.CONFIG_KEY] == 5
    # the replies of the first session came from the judge cache: every call was paid once
    assert _query(db, "SELECT count(*) FROM judge_calls WHERE NOT cached")[0][0] == server.request_count == 2 * N

    plain = tmp_path / "plain.duckdb"
    assert _new(tmp_path, server, plain).returncode == 0
    scores = "SELECT question_id, method, metric, value, status FROM scores ORDER BY ALL"
    assert _query(db, scores) == _query(plain, scores) and len(_query(db, scores)) == 2 * N


def _responder(body):
    return Reply.json(SEED_000_EXTRACTION if prompts.task_of(body["messages"]) == "extraction"
                      else SEED_000_VERIFICATION)


def test_the_evaluate_screen_refuses_a_start_above_its_stop_at_cost_and_shows_the_budget(app_at, tmp_path, server,
                                                                                          monkeypatch):
    from evaluators.runs.estimate import estimate
    from evaluators.judges import OpenAIJudge
    from evaluators.metrics import resolve
    from evaluators.store import open_store
    from tests.helpers.evaluate_screen import metric_checkbox, tiny_judged_data, until_done, choose_openai, start_and_wait
    from ui.common import md_escape

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    at = app_at("pages/evaluate.py")
    store = open_store(app_at.db)
    golden, outputs = tiny_judged_data(store, tmp_path)
    choose_openai(at, golden, server.base_url)
    at.run()  # a new model prefills its prices
    at.number_input(key="eval-price-in").set_value(1.0)
    at.number_input(key="eval-price-out").set_value(1.0)
    at.run()
    assert at.number_input(key="eval-max-cost").value is None and not at.button(key="eval-start").disabled
    judge = OpenAIJudge("test-model", price_in=1, price_out=1)
    cost = estimate(engine_samples(store, golden, outputs), judge, resolve(["exact_match", "faithfulness"])).cost(
        judge.price)
    assert metric_checkbox(at, "Cost (estimate)") == prices.usd(cost)

    at.number_input(key="eval-max-cost").set_value(0.01)  # below the estimate
    at.run()
    assert at.button(key="eval-start").disabled
    assert [e.value for e in at.error] == ["The run would not start: " + md_escape(
        f"the run is estimated to cost {prices.usd(cost)} at $1 in, $1 out per 1M tokens, above its budget of $0.01: "
        "raise the budget, or choose fewer samples or metrics") + "."]
    assert any("keep the estimate within the budget (Stop at cost)" in c.value for c in at.caption)

    at.number_input(key="eval-max-cost").set_value(0.65)  # above the estimate; 7 replies at $0.10 reach it
    at.run()
    assert not at.error and not at.button(key="eval-start").disabled
    at.number_input(key="eval-concurrency").set_value(1)
    run_id, run = start_and_wait(at, store)
    assert run["status"] == RunStatus.BUDGET_REACHED and json.loads(run["config"])[budget.CONFIG_KEY] == 0.65
    assert [w.value for w in at.warning][0].startswith(md_escape(run["error"]) + ". The ")
    assert md_escape("Budget: $0.70 spent of $0.65 (the run stops when its judge calls reach it).") in [
        c.value for c in at.caption]
    assert not at.error  # a budget is no error
    at.number_input(key="eval-resume-max-cost").set_value(10.0)
    at.button(key="eval-resume").click()
    at.run()
    run = until_done(at, store, run_id)
    assert run["status"] == "finished" and json.loads(run["config"])[budget.CONFIG_KEY] == 10.0
    assert metric_checkbox(at, "Not computed yet") == "0" and server.request_count == 24  # nothing paid twice


def engine_samples(store, golden, outputs):
    from evaluators.runs import planning

    return planning.plan(store.golden_items(golden), store.rag_outputs([outputs])).samples


def test_evaluate_refuses_a_run_above_its_budget_before_storing_anything(tmp_path):
    from evaluators import evaluate
    from evaluators.judges import OpenAIJudge

    golden, outputs = _files(tmp_path)
    db = tmp_path / "api.duckdb"
    with pytest.raises(budget.OverBudget, match=r"^the run is estimated to cost \$0\.\d+ at \$1 in, \$1 out per 1M "
                                                r"tokens, above its budget of \$0\.0010: raise the budget"):
        evaluate(golden, outputs, metrics=["faithfulness"], db=db, max_cost=0.001,
                 judge=OpenAIJudge("test-model", base_url="http://127.0.0.1:9/v1", price_in=1, price_out=1))
    assert not db.exists()
