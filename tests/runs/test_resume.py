"""A run killed with SIGKILL mid-way resumes without redoing finished samples or duplicating rows."""
import json
import os
import signal
import subprocess
import sys
import time

from evaluators.runs import engine
from evaluators.judges import prompts
from evaluators.store import close_store, open_store
from tests.helpers.openai_server import Reply, start_server
from tests.helpers.seed_000 import SEED_000_CHUNKS, SEED_000_EXTRACTION, SEED_000_VERIFICATION
from tests.helpers import ROOT

N = 8
METRICS = ["faithfulness", "context_precision", "exact_match"]
RUNNER = """
import sys
from evaluators import loaders
from evaluators.runs import engine, lifecycle
from evaluators.judges import OpenAIJudge
from evaluators.store import open_store
db, golden, outputs, base_url = sys.argv[1:5]
store = open_store(db)
g = store.save_dataset(loaders.load(golden, role="golden")).dataset_id
o = store.save_dataset(loaders.load(outputs, role="outputs")).dataset_id
run_id = lifecycle.start_stored(store, g, [o],
                                lifecycle.RunSpec(metrics=%r, judge=OpenAIJudge("m", base_url, concurrency=1)))
print(run_id, flush=True)
engine.execute_run(store, run_id, batch_size=2)
""" % METRICS


def _reply(body):
    schema = prompts.task_of(body["messages"])
    return Reply.json(SEED_000_EXTRACTION if schema == "extraction" else SEED_000_VERIFICATION)


def test_a_killed_run_resumes_where_it_stopped(tmp_path, monkeypatch):
    golden, outputs = tmp_path / "g.jsonl", tmp_path / "o.jsonl"
    golden.write_text("".join(json.dumps({"question_id": f"q{i}", "question": f"Question {i}?",
                                          "reference": "Mostly exciting."}) + "\n" for i in range(N)))
    outputs.write_text("".join(json.dumps({"question_id": f"q{i}", "method": "local", "answer": "Game changer.",
                                           "contexts": list(SEED_000_CHUNKS)}) + "\n" for i in range(N)))
    db = tmp_path / "killed.duckdb"
    env = dict(os.environ, OPENAI_API_KEY="sk-test")
    with start_server(latency=0.15) as server:
        server.responder = _reply
        proc = subprocess.Popen([sys.executable, "-c", RUNNER, str(db), str(golden), str(outputs), server.base_url],
                                cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
        run_id = proc.stdout.readline().strip()
        deadline = time.monotonic() + 120
        while server.request_count < 6 and time.monotonic() < deadline:  # batch 1 done, batch 2 under way
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert server.request_count < 2 * N, "the run finished before it could be killed"

        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        store = open_store(db)
        try:
            cur = store.cursor()
            before = dict(((q, m), t) for q, m, t in cur.execute(
                "SELECT question_id, metric, created_at FROM scores WHERE run_id = ?", [run_id]).fetchall())
            done_samples = {q for q, _ in before}
            assert 0 < len(done_samples) < N and len(before) == len(done_samples) * len(METRICS)
            assert store.run(run_id)["status"] == "running"  # SIGKILL left no chance to say otherwise

            requests_before = server.request_count
            engine.execute_run(store, run_id, batch_size=2)
            rows = cur.execute("SELECT question_id, metric, created_at, status FROM scores WHERE run_id = ?",
                               [run_id]).fetchall()
            assert len(rows) == N * len(METRICS) and {s for *_, s in rows} == {"ok"}
            assert all(before[(q, m)] == t for q, m, t, _ in rows if (q, m) in before)  # not recomputed
            assert server.request_count - requests_before <= 2 * (N - len(done_samples))
            assert cur.execute("SELECT count(*), count(DISTINCT (question_id, source, claim_idx)) FROM claims "
                               "WHERE run_id = ?", [run_id]).fetchall() == [(N * 4, N * 4)]
            assert store.run(run_id)["status"] == "finished"
        finally:
            close_store(db)
