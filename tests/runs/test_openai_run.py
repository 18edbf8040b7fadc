"""`python -m evaluators run --judge openai` end to end: the real CLI (in-process), the scripted
OpenAI-compatible server on 127.0.0.1, a real DuckDB file."""
import json
import re
import threading

import duckdb

from evaluators.judges import prompts
from tests.helpers.openai_server import Reply, start_server
from tests.helpers.seed_000 import SEED_000_EXTRACTION, SEED_000_QUESTION
from tests.helpers.openai_runs import BROKEN_QUESTION, KEY, cli_with_key, openai_run_files, responder


def _stored_run(tmp_path, monkeypatch, name="run.duckdb"):
    """A store on a real DuckDB file holding the two samples of `openai_run_files` (the caller closes it)."""
    from evaluators import loaders
    from evaluators.store import open_store

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    golden, outputs = openai_run_files(tmp_path)
    store = open_store(tmp_path / name)
    golden_id = store.save_dataset(loaders.load(golden, role="golden")).dataset_id
    outputs_id = store.save_dataset(loaders.load(outputs, role="outputs")).dataset_id
    return store, golden_id, outputs_id


def test_a_judge_server_that_trickles_its_replies_times_out_and_the_run_ends(tmp_path, monkeypatch):
    """Headers, then a byte every 0.1 s: each reply has the run's `timeout` as a whole, then the usual retries,
    then the cell is a timeout and the run finishes (it used to stay running for ever)."""
    from evaluators.runs import engine, lifecycle
    from evaluators.judges import OpenAIJudge
    from evaluators.store import close_store

    store, golden_id, outputs_id = _stored_run(tmp_path, monkeypatch)
    try:
        with start_server() as server:
            server.responder = lambda body: Reply.trickle(0.1)
            run_id = lifecycle.start_stored(store, golden_id, [outputs_id],
                                            lifecycle.RunSpec(metrics=["faithfulness", "exact_match"],
                                                              judge=OpenAIJudge("m", server.base_url, timeout=0.5,
                                                                                max_attempts=2)))
            ended: list = []
            worker = threading.Thread(target=lambda: ended.append(engine.execute_run(store, run_id)), daemon=True)
            worker.start()
            worker.join(10)
            assert ended == ["finished"], "the run was still waiting for the judge after 10 s"
        cur = store.cursor()
        cells = cur.execute("SELECT metric, status, detail FROM scores ORDER BY question_id, metric").fetchall()
        calls = cur.execute("SELECT DISTINCT status FROM judge_calls").fetchall()
    finally:
        close_store(tmp_path / "run.duckdb")
    assert [(m, s) for m, s, _ in cells] == [("exact_match", "ok"), ("faithfulness", "timeout")] * 2
    assert all("no complete reply within 0.5 s (after 2 attempts)" in d for m, _, d in cells if m == "faithfulness")
    assert calls == [("timeout",)]


def test_a_wrong_key_stops_the_run_at_once_and_a_resume_with_the_right_key_finishes_it(tmp_path):
    """401 on every call: the run stops at the first refusal with the cause and what to do, exits 1, keeps its
    cells to do, and `--resume` with the right key scores them (it used to send 2 requests a sample and exit 0
    with every judged cell failed)."""
    golden, outputs = openai_run_files(tmp_path)
    db = tmp_path / "key.duckdb"
    with start_server() as server:
        server.api_key = KEY
        server.responder = responder(refuse_q2=False)
        first = cli_with_key(db, "--golden", str(golden), "--outputs", str(outputs), "--judge", "openai", "--model", "m",
                     "--base-url", server.base_url, "--metrics", "faithfulness,exact_match", "--concurrency", "1",
                     "--timeout", "5", key="sk-wrong")
        refused = server.request_count
        assert first.returncode == 1, first.stderr
        assert "the judge server refused the API key (HTTP 401" in first.stderr
        assert "check OPENAI_API_KEY" in first.stderr
        run_id = re.search(r"^run (\S+)$", first.stderr, re.MULTILINE).group(1)
        assert f"--resume {run_id}" in first.stderr and "sk-wrong" not in first.stderr
        con = duckdb.connect(str(db), read_only=True)
        status, error, config = con.execute("SELECT status, error, config FROM runs").fetchall()[0]
        n_scores = con.execute("SELECT count(*) FROM scores").fetchall()[0][0]
        con.close()
        assert status == "failed" and error.startswith("the judge server refused the API key")
        assert n_scores == 0 and json.loads(config)["timeout"] == 5  # every cell still to do
        assert refused == 1  # one call in flight (concurrency 1), none after the refusal

        again = cli_with_key(db, "--resume", run_id)
        assert again.returncode == 0, again.stderr
    con = duckdb.connect(str(db), read_only=True)
    cells = con.execute("SELECT status, count(*) FROM scores GROUP BY status").fetchall()
    status, = con.execute("SELECT status FROM runs").fetchall()[0]
    con.close()
    assert status == "finished" and cells == [("ok", 4)]


def test_openai_judge_run_scores_stores_calls_and_retries_only_failed_cells(tmp_path):
    golden, outputs = openai_run_files(tmp_path)
    db = tmp_path / "openai.duckdb"
    metrics = "faithfulness,wp_precision,context_precision,exact_match"
    with start_server() as server:
        server.responder = responder(refuse_q2=True)
        first = cli_with_key(db, "--golden", str(golden), "--outputs", f"local_search={outputs}", "--judge", "openai",
                     "--model", "judge-model", "--base-url", server.base_url, "--metrics", metrics)
        assert first.returncode == 0, first.stderr
        assert "failed" in first.stdout and "--retry-failed" in first.stdout

        con = duckdb.connect(str(db), read_only=True)
        run_id, judge, model, config = con.execute("SELECT run_id, judge, judge_model, config FROM runs").fetchall()[0]
        cells = {(q, m): (v, s, j) for q, m, v, s, j in con.execute(
            "SELECT question_id, metric, value, status, judge FROM scores").fetchall()}
        calls = con.execute("SELECT question_id, purpose, status, request, response, input_tokens FROM judge_calls").fetchall()
        n_claims = con.execute("SELECT count(*) FROM claims WHERE question_id = 'q1'").fetchall()[0][0]
        con.close()
        assert (judge, model) == ("openai", "judge-model") and KEY not in config
        assert cells[("q1", "faithfulness")] == (1.0, "ok", "openai")
        assert abs(cells[("q1", "wp_precision")][0] - 2 / 3) < 1e-12
        assert cells[("q2", "faithfulness")][:2] == (None, "judge_error")
        assert cells[("q2", "exact_match")][1] == "ok"  # deterministic cells do not depend on the judge
        assert n_claims == 4
        assert {(q, p, s) for q, p, s, *_ in calls} >= {("q1", "extraction", "ok"), ("q1", "verification", "ok")}
        assert all(KEY not in (req or "") + (resp or "") for *_, req, resp, _ in calls)
        assert all(tokens for q, p, s, *_, tokens in calls if s == "ok")

        server.responder = responder(refuse_q2=False)
        before = server.request_count
        retry = cli_with_key(db, "--retry-failed", run_id)
        assert retry.returncode == 0, retry.stderr
        assert all(BROKEN_QUESTION in json.dumps(r.body) for r in server.requests[before:])  # q1 not re-judged

    con = duckdb.connect(str(db), read_only=True)
    statuses = con.execute("SELECT question_id, metric, status FROM scores WHERE status <> 'ok'").fetchall()
    con.close()
    assert [s for s in statuses if s[2] != "not_applicable"] == []


def test_openai_judge_needs_a_model_and_a_key(tmp_path):
    golden, outputs = openai_run_files(tmp_path)
    out = cli_with_key(tmp_path / "x.duckdb", "--golden", str(golden), "--outputs", str(outputs), "--judge", "openai")
    assert out.returncode == 2 and "--model" in out.stderr


def test_the_whole_catalogue_under_the_llm_judge(tmp_path):
    """Every metric of the white paper's case study with scripted judge replies: the claim matrix, the
    generated questions and the holistic ratings all reach the scores and their tables."""
    golden, outputs = openai_run_files(tmp_path)
    db = tmp_path / "all.duckdb"
    with start_server() as server:
        server.responder = responder(refuse_q2=False)
        out = cli_with_key(db, "--golden", str(golden), "--outputs", f"local_search={outputs}", "--judge", "openai",
                   "--model", "judge-model", "--base-url", server.base_url)
        assert out.returncode == 0, out.stderr
        purposes = sorted(prompts.task_of(r.body["messages"]) for r in server.requests)
    assert purposes == ["extraction", "extraction", "holistic", "holistic", "verification",
                        "verification"]  # 3 calls per sample
    assert "judge calls: 6 (3.0 per sample: 2 extraction, 2 verification, 2 holistic)" in out.stderr  # estimated before

    estimated = cli_with_key(tmp_path / "none.duckdb", "--golden", str(golden), "--outputs", str(outputs), "--judge", "openai",
                     "--metrics", "faithfulness", "--estimate")
    assert estimated.returncode == 0 and "judge calls: 4 (2.0 per sample" in estimated.stderr
    assert not (tmp_path / "none.duckdb").exists()  # an estimate stores nothing

    con = duckdb.connect(str(db), read_only=True)
    cells = {m: (v, s, j, d) for m, v, s, j, d in con.execute(
        "SELECT metric, value, status, judge, detail FROM scores WHERE question_id = 'q1'").fetchall()}
    questions = con.execute("SELECT text FROM generated_questions WHERE question_id = 'q1' ORDER BY idx").fetchall()
    matched = con.execute("SELECT claim_idx, matched_claims FROM claims WHERE question_id = 'q1' AND source = 'answer' "
                          "ORDER BY claim_idx").fetchall()
    con.close()
    # seed 000's case study: faithfulness 5.0, precision 3.7, recall 5.0 on its 1-5 projection
    assert (cells["faithfulness"][0], round(1 + 4 * cells["wp_precision"][0], 1), cells["wp_recall"][0]) == (1.0, 3.7, 1.0)
    assert cells["wp_correctness"][:3] == (3.0, "ok", "openai") and cells["wp_relevance"][0] == 4.0
    assert cells["wp_overall"][0] == 3.93
    assert cells["judge_clarity"][:3] == (4.0, "ok", "openai")  # the offline judge cannot rate it; an LLM does
    assert cells["factual_accuracy"][0] == 82.5 and cells["accuracy_grade"][3].startswith("A")
    assert cells["verdict"][3].startswith("pass") and "the judge said 'partial'" in cells["verdict"][3]
    assert cells["answer_class"][3] == "CORRECT (LLM judge)"
    assert [q for q, in questions] == SEED_000_EXTRACTION["generated_questions"]
    relevance = cells["answer_relevance"]
    assert relevance[1:3] == ("ok", "openai") and "generated questions" in relevance[3] and 0 < relevance[0] <= 100
    assert matched == [(0, [0]), (1, [1])]
    assert cells["exact_match"][2] == "deterministic"


def test_a_run_needing_both_parts_judges_each_sample_in_two_rounds(tmp_path, monkeypatch):
    """The engine asks for the claims and the holistic part together: the holistic request goes out
    before the extraction's reply is back, the verification after it."""
    from evaluators import loaders
    from evaluators.runs import engine, lifecycle
    from evaluators.judges import OpenAIJudge
    from evaluators.store import close_store, open_store

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    golden, outputs = openai_run_files(tmp_path)
    path = tmp_path / "rounds.duckdb"
    store = open_store(path)
    try:
        golden_id = store.save_dataset(loaders.load(golden, role="golden")).dataset_id
        outputs_id = store.save_dataset(loaders.load(outputs, role="outputs")).dataset_id
        latency = 0.4
        with start_server(latency=latency) as server:
            server.responder = responder(refuse_q2=False)
            run_id = lifecycle.start_stored(store, golden_id, [outputs_id],
                                            lifecycle.RunSpec(metrics=["faithfulness", "judge_overall"],
                                                              judge=OpenAIJudge("m", server.base_url)))
            judged = []
            assert engine.execute_run(store, run_id, on_sample=lambda: judged.append(1)) == "finished"
            requests = server.requests
        assert len(judged) == 2  # each sample reported once, claims and holistic together
        for question in (SEED_000_QUESTION, BROKEN_QUESTION):
            mine = {prompts.task_of(r.body["messages"]): r.arrived
                    for r in requests if question in json.dumps(r.body)}
            assert set(mine) == {"extraction", "holistic", "verification"}
            assert mine["holistic"] < mine["extraction"] + latency  # round 1, with the extraction
            assert mine["verification"] >= mine["extraction"] + latency  # round 2
        statuses = store.cursor().execute("SELECT DISTINCT status FROM scores WHERE run_id = ?", [run_id]).fetchall()
        assert statuses == [("ok",)]
    finally:
        close_store(path)
