"""`run --max-cost USD` end to end: the real CLI in a subprocess, the scripted OpenAI-compatible server on
127.0.0.1 reporting a known number of tokens per call, real DuckDB files. A run estimated above its budget does not
start; one that reaches it stops with its cells pending and every call in the ledger, and a resume with a higher
budget finishes it with the scores of a run without one, paying nothing twice."""
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from evaluators import budget
from evaluators.judges import prices
from evaluators.schema import BUDGET_REACHED
from tests.openai_server import Reply, start_server
from tests.test_openai_judge import SEED_000_EXTRACTION, SEED_000_VERIFICATION

ROOT = Path(__file__).resolve().parent.parent
N = 6  # samples: 2 calls each (extraction, verification)
CALL_USD = 0.1  # each reply reports 100,000 input tokens, at $1 per 1M
PRICES = ("--price-in", "1", "--price-out", "1")


def _files(tmp_path):
    golden, outputs = tmp_path / "gold.jsonl", tmp_path / "out.jsonl"
    golden.write_text("".join(json.dumps({"question_id": f"q{i}", "question": f"What is {i} plus {i}?",
                                          "reference": f"It is {2 * i}."}) + "\n" for i in range(N)))
    outputs.write_text("".join(json.dumps({"question_id": f"q{i}", "answer": f"The sum is {2 * i}.",
                                           "contexts": [f"{i} plus {i} makes {2 * i}."]}) + "\n" for i in range(N)))
    return golden, outputs


def _run(db, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")} | {"OPENAI_API_KEY": "sk-test"}
    return subprocess.run([sys.executable, "-m", "evaluators", "run", "--db", str(db), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture
def server():
    with start_server() as fake:
        fake.usage = (100_000, 0)
        fake.responder = lambda body: Reply.json(SEED_000_EXTRACTION if body["response_format"]["json_schema"]["name"]
                                                 == "claim_extraction" else SEED_000_VERIFICATION)
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
    assert status == BUDGET_REACHED and json.loads(config)[budget.CONFIG_KEY] == limit
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
