"""Benchmark: the LLM judge's calls, tokens and throughput, against the loopback test server.

    .venv/bin/python bench/bench_judge.py [--latency 0.1] [--repeat 3] [--no-write]

Server: `tests/helpers/openai_server.start_server`, a real OpenAI-compatible HTTP server on 127.0.0.1, run
in a forked child process (`child_server`: the judge's process runs only the client, as against a
real server). Its `responder` answers every
request with a valid, plausible reply built from the request itself (`reply` below): extraction -> the answer's and the
reference's claims as `offline.segment_claims` splits them, and 3 questions made from the answer
claims; verification -> a verdict for every claim id x chunk id of the request (supported /
not_found alternating), the claims comparison when the message says "COMPARE CLAIMS: yes", every
chunk's relevance with a short reason; holistic -> one fixed reply (`HOLISTIC_REPLY`). Every run is
checked to be healthy: every call "ok" at the first attempt, no repair, every sample with a full
matrix, 3 generated questions and holistic ratings. No network beyond 127.0.0.1; OPENAI_API_KEY is
set to a dummy value inside the script.

The judge is driven exactly as the engine drives it per batch: `judges.judge_samples(OpenAIJudge(...),
samples, (CLAIMS, HOLISTIC), ...)` over the whole set (per sample the extraction and the holistic call
at once, then one verification call per 16 chunks), no store (so no judge cache).

1. Calls and tokens per sample, over the demo data (data/demo/novel_44557_*, 206 samples), server
   latency 0, concurrency 32. Tokens are `estimate.approx_tokens` (ceil(characters / 4)) of the
   request's message contents and of the reply's content, read back from the CallRecords: the unit
   of the pre-run estimate (`estimate.estimate(samples, OpenAIJudge(...), metrics.resolve(None))`), printed
   next to them. Next to those, ragas' per-sample pattern for its 5 metrics (9 + k calls for k
   chunks) and a lower bound of the input tokens those calls must carry (`ragas_lower_bound`).
2. Rounds: 10 samples judged one after another (one sample in flight, the judge's concurrency 8 so
   its first two calls can be in flight together), with a fixed server latency (--latency, default
   0.1 s): each sample's wall time in units of the latency, and its rounds counted from the server's
   arrival times of its requests.
3. Throughput at concurrency 1, 8 and 32 at the same latency: demo samples reused under new question
   ids where a level needs more than 206; each level --repeat times against a fresh server, the median
   run (by wall) reported. Wall clock (`time.perf_counter`); samples/s against the bound
   concurrency / (calls per sample x latency); calls' mean latency and occupancy (from the
   CallRecords), the judge thread's CPU time (`time.thread_time`) and the server's (`RUSAGE_CHILDREN`).
Writes the markdown to bench/results/judge.md unless --no-write.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import json
import multiprocessing
import os
import platform
import re
import resource
import statistics
import sys
import time
import types
from collections import Counter
from http.server import BaseHTTPRequestHandler
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import openai  # noqa: E402

from evaluators.runs.planning import plan  # noqa: E402
from evaluators.judges import CLAIMS, HOLISTIC, OpenAIJudge, judge_samples, offline, prompts  # noqa: E402
from evaluators.judges.openai_estimate import HOLISTIC_TOKENS, approx_tokens  # noqa: E402
from evaluators.runs.estimate import estimate  # noqa: E402
from evaluators.records.judgments import ClaimMatrix, Holistic  # noqa: E402
from evaluators.loaders import load  # noqa: E402
from evaluators.metrics import resolve  # noqa: E402
from evaluators.records import OK, Sample  # noqa: E402
from bench import prompt_cache  # noqa: E402
from tests.helpers.openai_server import PromptCache, Reply, start_server  # noqa: E402

DEMO = ROOT / "data" / "demo"
MODEL = "bench-model"
PURPOSES = ("extraction", "verification", "holistic")
# (concurrency, samples): each level runs ~3-8 s at 0.1 s latency.
LEVELS = ((1, 10), (8, 100), (32, 618))
ROUND_SAMPLES = 10

# -- the scripted judge ---------------------------------------------------------------------------

# A holistic reply of the length the prompt asks for: one or two sentences of reasoning per part,
# two or three sentences of explanation (the test suite's SEED_000_HOLISTIC, with fuller reasoning).
HOLISTIC_REPLY = {
    "correctness": 4, "completeness": 3, "faithfulness": 5, "relevance": 4, "clarity": 4, "overall_score": 4,
    "verdict": "pass",
    "explanation": "The answer names the right plant and its common name, as the reference does, and every "
                   "statement is backed by the retrieved chunks. It adds background the question did not ask "
                   "for and leaves out one detail of the reference.",
    "alignment": {"reasoning": "The answer states the same fact as the reference, with extra background that "
                               "does not contradict it.", "score": 4},
    "question_relevance": {"reasoning": "It answers the question directly in its first sentence, then drifts "
                                        "into related detail.", "score": 4},
    "step1_correctness": {"reasoning": "Every factual claim matches the reference or the context; no errors "
                                       "were found.", "score": 90},
    "step2_completeness": {"reasoning": "The core fact is present, but one qualifier of the reference is "
                                        "missing.", "score": 70},
    "step3_consistency": {"reasoning": "The answer is internally consistent and never contradicts itself.",
                          "score": 95},
    "classification": "CORRECT",
}

# The blocks of `prompts`' user messages: <tag> or <tag id="X1">, the text, </tag>.
_BLOCK = re.compile(r'<(question|answer|reference|claim|chunk)(?: id="([ARC]\d+)")?>\n(.*?)\n</\1>', re.DOTALL)
_QUESTION = re.compile(r"<question>\n(.*?)\n</question>", re.DOTALL)
_QUESTION_STEMS = ("What does the book say about ", "Which detail is given about ", "What is known about ")


def reply(body: dict) -> Reply:
    """The server's answer to one chat completion: valid for the schema (the task's result under its name), sized
    like a real one. An unknown task kills the handler, the connection drops, the call fails: check_healthy stops
    the run."""
    user, task = body["messages"][1]["content"], prompts.task_of(body["messages"])
    result = {prompts.EXTRACTION: extraction_reply, prompts.VERIFICATION: verification_reply,
              prompts.HOLISTIC: lambda _: HOLISTIC_REPLY}[task](user)
    return Reply.json({t: result if t == task else None for t in prompts.TASKS})


def extraction_reply(user: str) -> dict:
    """`prompts.extraction_messages`' user message holds question, reference and answer blocks."""
    blocks = {tag: text for tag, _, text in _BLOCK.findall(user)}
    question, answer, reference = blocks["question"], blocks["answer"], blocks["reference"]
    answer_claims = list(offline.segment_claims(answer))
    topics = [c.rstrip(".!") for c in answer_claims] or [question.rstrip("?")]
    questions = [stem + " ".join(topics[i % len(topics)].split()[:10]) + "?"
                 for i, stem in enumerate(_QUESTION_STEMS)]
    return {"answer_claims": answer_claims, "reference_claims": list(offline.segment_claims(reference)),
            "generated_questions": questions}


def verification_reply(user: str) -> dict:
    """Every claim x chunk to judge of `prompts.verification_messages`' user message, read by id."""
    ids = [block_id for _, block_id, _ in _BLOCK.findall(user) if block_id]
    answer_ids, reference_ids = [i for i in ids if i[0] == "A"], [i for i in ids if i[0] == "R"]
    chunk_ids = re.findall(r"C\d+", user.rpartition("CHUNKS TO JUDGE: ")[2].partition("\n")[0])
    compare_claims = user.endswith("COMPARE CLAIMS: yes")

    def verdict(i: int, j: int) -> str:
        return "supported" if (i + j) % 2 == 0 else "not_found"

    def cells(i: int) -> list[dict]:
        return [{"chunk_id": c, "verdict": verdict(i, int(c[1:]))} for c in chunk_ids]

    answer_claims = []
    for i, claim_id in enumerate(answer_ids):
        item = {"claim_id": claim_id, "chunk_verdicts": cells(i)}
        if compare_claims:
            item["reference_verdict"] = verdict(i, 0)
            item["matched_reference_claims"] = ([reference_ids[i % len(reference_ids)]]
                                                if reference_ids and verdict(i, 0) == "supported" else [])
        answer_claims.append(item)
    reference_claims = []
    for i, claim_id in enumerate(reference_ids):
        item = {"claim_id": claim_id, "chunk_verdicts": cells(i + 1)}
        if compare_claims:
            item["answer_verdict"] = verdict(i, 0)
        reference_claims.append(item)
    chunks = [{"chunk_id": c, "relevant": int(c[1:]) % 2 == 1, "relevance_score": 80 if int(c[1:]) % 2 else 15,
               "reason": ("Names the place and the plant the question asks about." if int(c[1:]) % 2
                          else "Describes another part of the journey.")} for c in chunk_ids]
    return {"answer_claims": answer_claims, "reference_claims": reference_claims, "chunks": chunks}


# -- running and checking ---------------------------------------------------------------------------

def _serve(conn, latency: float, prompt_cache: bool) -> None:
    """The child process: the test server with `reply` (and OpenAI's prompt cache rule, `prompt_cache`) until the
    parent says stop; then the arrival time (time.monotonic, one clock for both processes) and the question id of
    every request."""
    with start_server(model=MODEL, latency=latency) as server:
        server.responder = reply
        server.prompt_cache = PromptCache() if prompt_cache else None
        conn.send(server.base_url)
        conn.recv()
        conn.send([(r.arrived, question_of(r.body)) for r in server.requests])


@contextlib.contextmanager
def child_server(latency: float, prompt_cache: bool = False):
    """`start_server` in a forked child process, so this process (the judge's) runs only the client, as
    against a real server, and the two do not share one GIL. Yields a namespace with `base_url`;
    `arrivals` ((time, question) per request) and `request_count` are set when the block ends."""
    ctx = multiprocessing.get_context("fork")
    ours, theirs = ctx.Pipe()
    process = ctx.Process(target=_serve, args=(theirs, latency, prompt_cache), daemon=True)
    process.start()
    theirs.close()  # ours.recv() raises EOFError, not hangs, if the child dies
    handle = types.SimpleNamespace(base_url=ours.recv(), arrivals=None, request_count=None)
    try:
        yield handle
    finally:
        ours.send("stop")
        handle.arrivals = ours.recv()
        handle.request_count = len(handle.arrivals)
        process.join(timeout=10)


def question_of(body: dict) -> str:
    """The question block of a request (every prompt starts with it)."""
    return _QUESTION.search(body["messages"][1]["content"]).group(1)


def run_queue_wait() -> float:
    """Seconds this thread has spent runnable but waiting for a CPU (Linux schedstat; 0 elsewhere)."""
    try:
        return int(Path("/proc/thread-self/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def cpu_pressure() -> str:
    """The kernel's CPU pressure (PSI "some", 60 s average): the share of time some task waited for a CPU."""
    try:
        some = Path("/proc/pressure/cpu").read_text().splitlines()[0]
        return re.search(r"avg60=([\d.]+)", some).group(1) + "%"
    except (OSError, IndexError, AttributeError):
        return "n/a"


def judge_run(samples: list[Sample], base_url: str, concurrency: int, one_at_a_time: bool = False):
    """Both parts of every sample, as the engine asks per batch (or sample by sample); (judged, wall
    seconds, (CPU seconds of this thread: the client's work, seconds it waited for a CPU), the
    time.monotonic() at which each sample was done when one at a time)."""
    judge = OpenAIJudge(MODEL, base_url, concurrency=concurrency)
    t, cpu, waited = time.perf_counter(), time.thread_time(), run_queue_wait()
    judged, done = [], []
    if one_at_a_time:
        for s in samples:
            judged += judge_samples(judge, [s], (CLAIMS, HOLISTIC))
            done.append(time.monotonic())
    else:
        judged = judge_samples(judge, samples, (CLAIMS, HOLISTIC))
    return judged, time.perf_counter() - t, (time.thread_time() - cpu, run_queue_wait() - waited), done


def check_healthy(samples: list[Sample], judged) -> list:
    """Every judgment complete, every call ok at its first attempt; the run's CallRecords."""
    calls = []
    for s, c in zip(samples, judged, strict=True):
        h = c
        assert isinstance(c.matrix, ClaimMatrix), (s.key, c.matrix)
        m = c.matrix
        cells = [v for rows in (m.answer_vs_chunks, m.reference_vs_chunks) for row in rows for v in row]
        cells += [*m.answer_vs_reference, *m.reference_vs_answer, *(r.relevant for r in m.chunk_relevance)]
        assert None not in cells and m.missing_reason is None, (s.key, m.missing_reason)
        assert isinstance(c.generated_questions, tuple) and len(c.generated_questions) == 3, s.key
        assert isinstance(h.holistic, Holistic), (s.key, h.holistic)
        got = Counter(r.purpose for r in c.calls)
        n_chunks = len(s.output.contexts)  # without chunks, one verification call or none (nothing to verify)
        verifications = -(-n_chunks // prompts.CHUNKS_PER_CALL) if n_chunks else min(got["verification"], 1)
        expected = {"extraction": 1, "verification": verifications, "holistic": 1}
        expected = {k: v for k, v in expected.items() if v}
        assert got == expected, (s.key, got)
        calls += c.calls
    bad = [(r.purpose, r.status, r.error) for r in calls if r.status != OK or r.cached]
    assert not bad, bad[:5]
    return calls


def measured_run(samples: list[Sample], concurrency: int, latency: float, one_at_a_time: bool = False):
    """One healthy run against a fresh child server: (calls, wall seconds, (client CPU seconds, its
    run-queue wait), server CPU seconds: the child's whole life, start-up included, the server's
    (arrival time, question) per request)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    with child_server(latency) as server:
        judged, wall, cpu, done = judge_run(samples, server.base_url, concurrency, one_at_a_time)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_cpu = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    calls = check_healthy(samples, judged)
    assert server.request_count == len(calls), (server.request_count, len(calls))  # no hidden retries
    return calls, wall, cpu, server_cpu, (server.arrivals, done)


def sample_timings(arrivals: list[tuple[float, str]], done: list[float], latency: float) -> list[tuple[float, int]]:
    """(seconds from its first request's arrival to its judgment in hand, rounds) of each sample judged
    one at a time: its requests are those that arrived before it was done and after the sample before.
    A request that arrived a latency or more after its round's first waited for a reply: a new round."""
    out, previous = [], 0.0
    for end in done:
        times = sorted(t for t, _ in arrivals if previous < t <= end)
        count, start = 0, None
        for t in times:
            if start is None or t - start >= latency:
                count, start = count + 1, t
        out.append((end - times[0], count))
        previous = end
    return out


def tokens(record) -> tuple[int, int, int]:
    """(input, of which system message and schema, output) in approx_tokens, from the record's request and response
    (the schema is billed as input: the estimate counts it)."""
    request = json.loads(record.request)
    messages, schema = request["messages"], approx_tokens(json.dumps(request["response_format"]["json_schema"]))
    content = json.loads(record.response)["choices"][0]["message"]["content"]
    return (sum(approx_tokens(m["content"]) for m in messages) + schema,
            sum(approx_tokens(m["content"]) for m in messages if m["role"] == "system") + schema,
            approx_tokens(content))


def replicate(samples: list[Sample], n: int) -> list[Sample]:
    """`n` samples: the demo samples in order, again and again under new question ids (q~1, q~2, ...)."""
    out = []
    for i in range(n):
        s, round_ = samples[i % len(samples)], i // len(samples)
        if round_:
            qid = f"{s.golden.question_id}~{round_}"
            s = Sample(dataclasses.replace(s.golden, question_id=qid), dataclasses.replace(s.output, question_id=qid))
        out.append(s)
    return out


# -- ragas' pattern, for comparison ----------------------------------------------------------------------

def ragas_lower_bound(s: Sample) -> dict[str, tuple[int, int]]:
    """ragas' (calls, input tokens) per metric for one sample: only the sample's data each call must
    carry, no instructions, no few-shot examples, no output-format text (a lower bound)."""
    q, a, r = (approx_tokens(t) for t in (s.golden.question, s.output.answer, s.golden.reference))
    chunks = [approx_tokens(c.text) for c in s.output.contexts]
    k, all_chunks = len(chunks), sum(chunks)
    return {
        "faithfulness": (2, (q + a) + (a + all_chunks)),  # statements from q+a; then statements (~a) vs all chunks
        "context_precision": (k, sum(q + r + c for c in chunks)),  # one call per chunk: q, reference, that chunk
        "context_recall": (1, q + all_chunks + r),
        "answer_relevancy": (3, 3 * a),  # strictness 3: one question generated per call from the answer
        "answer_correctness": (3, (q + a) + (q + r) + (q + a + r)),  # statements x2, then TP/FP/FN
    }


RAGAS_SOURCES = """ragas' pattern, from its source (explodinggradients/ragas on GitHub) and documentation:
- faithfulness, `src/ragas/metrics/_faithfulness.py` (commit 00b7ae7): `_ascore` makes two `llm.generate`
  calls: `long_form_answer` (question + answer -> statements), then `nli_statements` (all contexts
  joined + the statements -> a verdict each). docs.ragas.io, Faithfulness: "Identify all the claims in
  the response", then "Check each claim to see if it can be inferred from the retrieved context".
- context precision, `_context_precision.py` (commit 0413a11): `for context in retrieved_contexts:`
  one `generate_multiple` call with question, that context and the reference (n = `reproducibility`,
  default 1): k calls for k chunks.
- context recall, `_context_recall.py` (commit 077d484): one call with question, all contexts joined
  and the reference (ground truth), classifying each reference sentence.
- answer relevancy, `_answer_relevance.py` (commit 05835a0): `for _ in range(self.strictness)` one
  question-generation call from the response, `strictness = 3` (docs.ragas.io, Response Relevancy:
  "Generate a set of artificial questions (default is 3)"); other versions of the file call
  `generate_multiple(..., n=self.strictness)`, one request for 3 completions, hence "up to 3".
- answer correctness, `_answer_correctness.py` (commit 05835a0): `_create_simplified_statements` for
  the response and for the reference (question + text each), then one `CorrectnessClassifier` call
  (question + both statement lists -> TP/FP/FN); the similarity part uses embeddings, not the LLM.
These match the call counts given in our issue (2 + k + 1 + 3 + 3 = 9 + k)."""


# -- report -------------------------------------------------------------------------------------------

def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--latency", type=float, default=0.1, help="server latency per chat completion, seconds")
    ap.add_argument("--repeat", type=int, default=3, help="runs per throughput level; the median (by wall) is shown")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    os.environ["OPENAI_API_KEY"] = "bench-dummy-key"  # the loopback server takes any key; never a real one
    started, load_before, pressure_before = time.perf_counter(), os.getloadavg(), cpu_pressure()

    golden = load(DEMO / "novel_44557_golden.csv", role="golden").golden
    outputs = load(DEMO / "novel_44557_outputs.jsonl", role="outputs").outputs
    samples = plan(golden, outputs).samples
    n = len(samples)
    ks = [len(s.output.contexts) for s in samples]

    # 1. calls and tokens per sample
    calls, *_ = measured_run(samples, 32, 0.0)
    measured = {p: [0, 0, 0, 0] for p in PURPOSES}  # calls, input, system part of input, output
    for record in calls:
        row = measured[record.purpose]
        row[0] += 1
        for i, value in enumerate(tokens(record), start=1):
            row[i] += value
    est = estimate(samples, OpenAIJudge(MODEL), resolve(None))
    assert est.samples == n

    rows = ["| call | calls / sample | estimated | input tokens / sample | estimated | measured / estimate | "
            "output tokens / sample | estimated | measured / estimate |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    totals = [0, 0, 0, 0]
    for p in PURPOSES:
        c, i, _, o = measured[p]
        totals = [t + v for t, v in zip(totals, measured[p])]
        ec, ei, eo = est.calls.get(p, 0), est.input_tokens.get(p, 0), est.output_tokens.get(p, 0)
        rows.append(f"| {p} | {c / n:.2f} | {ec / n:.2f} | {i / n:,.0f} | {ei / n:,.0f} | {ratio(i, ei)} | "
                    f"{o / n:,.0f} | {eo / n:,.0f} | {ratio(o, eo)} |")
    c, i, system_part, o = totals
    ec, ei, eo = est.total_calls, est.total_input_tokens, est.total_output_tokens
    rows.append(f"| **all** | **{c / n:.2f}** | {ec / n:.2f} | **{i / n:,.0f}** | {ei / n:,.0f} | {ratio(i, ei)} | "
                f"**{o / n:,.0f}** | {eo / n:,.0f} | {ratio(o, eo)} |")
    ours_calls, ours_input, ours_data = c / n, i / n, (i - system_part) / n
    ours_table = "\n".join(rows)

    ragas = [ragas_lower_bound(s) for s in samples]
    ragas_rows = ["| ragas metric | LLM calls / sample | data each call carries | input tokens / sample, lower bound |",
                  "|---|---:|---|---:|"]
    carried = {"faithfulness": "question + answer; then statements (~ answer) + all chunks",
               "context_precision": "question + reference + one chunk, once per chunk",
               "context_recall": "question + all chunks + reference",
               "answer_relevancy": "answer, 3 times",
               "answer_correctness": "question + answer; question + reference; question + answer + reference"}
    for metric in carried:
        ragas_rows.append(f"| {metric} | {statistics.mean(r[metric][0] for r in ragas):.2f} | {carried[metric]} | "
                          f"{statistics.mean(r[metric][1] for r in ragas):,.0f} |")
    ragas_calls = statistics.mean(sum(c for c, _ in r.values()) for r in ragas)
    ragas_input = statistics.mean(sum(t for _, t in r.values()) for r in ragas)
    ragas_rows.append(f"| **all 5** | **{ragas_calls:.2f}** | 9 + k, k = {statistics.mean(ks):g} chunks | "
                      f"**{ragas_input:,.0f}** |")
    ragas_table = "\n".join(ragas_rows)
    ragas_input_n3 = ragas_input - 2 * statistics.mean(approx_tokens(s.output.answer) for s in samples)

    # 2. rounds: one sample in flight at a time
    batch = replicate(samples, ROUND_SAMPLES)
    round_calls, round_wall, _, _, (arrivals, done) = measured_run(batch, 8, args.latency, one_at_a_time=True)
    measured_samples = sample_timings(arrivals, done, args.latency)
    sample_rounds = Counter(r for _, r in measured_samples)
    walls_each = [w for w, _ in measured_samples]
    round_rows = "\n".join([
        "| samples | calls | per sample, first request to judgment (s): median, max | in latencies (median) | "
        "target | rounds | per sample with the client's set-up (s) |",
        "|---:|---:|---:|---:|---:|---|---:|",
        f"| {ROUND_SAMPLES} | {len(round_calls)} | {statistics.median(walls_each):.3f}, {max(walls_each):.3f} | "
        f"**{statistics.median(walls_each) / args.latency:.2f}** | ≤ 2.2 | "
        + ", ".join(f"{k} rounds: {v} samples" for k, v in sorted(sample_rounds.items()))
        + f" | {round_wall / ROUND_SAMPLES:.3f} |"])

    # 3. throughput
    throughput = []
    for concurrency, n_samples in LEVELS:
        batch = replicate(samples, n_samples)
        runs = sorted((measured_run(batch, concurrency, args.latency) for _ in range(args.repeat)),
                      key=lambda run: run[1])
        level_calls, wall, (cpu, waited), server_cpu, _ = runs[len(runs) // 2]  # median, by wall
        per_sample = len(level_calls) / n_samples
        bound = concurrency / (per_sample * args.latency)
        call_s = statistics.mean(r.latency_ms for r in level_calls) / 1000
        in_flight = sum(r.latency_ms for r in level_calls) / 1000 / wall  # Little's law
        throughput.append(Level(concurrency, n_samples, len(level_calls), wall, bound, call_s, in_flight, cpu,
                                server_cpu, [run[1] for run in runs], waited))
    t_rows = ["| concurrency | samples | calls | wall (s) | calls/s | samples/s | bound (samples/s) | "
              "measured / bound | target | mean call (ms) | mean in flight | client CPU / call (ms) | "
              "client CPU / wall | client waiting for a CPU / wall | server CPU / call (ms) |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for lv in throughput:
        target = "≥ 0.8" if lv.concurrency in (8, 32) else ""
        t_rows.append(f"| {lv.concurrency} | {lv.samples} | {lv.calls:,} | {lv.wall:.2f} | {lv.calls / lv.wall:.0f} | "
                      f"{lv.samples / lv.wall:.1f} | {lv.bound:.1f} | **{lv.samples / lv.wall / lv.bound:.2f}** | "
                      f"{target} | {lv.call_s * 1000:.0f} | {lv.in_flight:.1f} | {lv.cpu / lv.calls * 1000:.1f} | "
                      f"{lv.cpu / lv.wall:.0%} | {lv.waited / lv.wall:.0%} | {lv.server_cpu / lv.calls * 1000:.1f} |")
    throughput_table = "\n".join(t_rows)

    # 4. the provider's prompt cache
    with child_server(0.0, prompt_cache=True) as server:
        cache_section = prompt_cache.section(samples, server.base_url)
    walls = "; ".join(f"{lv.concurrency}: " + ", ".join(f"{w:.2f}" for w in lv.walls) for lv in throughput)
    total_s, load_after, pressure_after = time.perf_counter() - started, os.getloadavg(), cpu_pressure()

    cmd = (".venv/bin/python bench/bench_judge.py" + ("" if args.latency == 0.1 else f" --latency {args.latency}")
           + ("" if args.repeat == 3 else f" --repeat {args.repeat}"))
    holistic_tokens = approx_tokens(json.dumps(HOLISTIC_REPLY))
    chunks_each = (f"{ks[0]} chunks each" if min(ks) == max(ks)
                   else f"{min(ks)}-{max(ks)} chunks each (mean {statistics.mean(ks):.1f})")
    report = f"""# LLM judge benchmark: calls, tokens, throughput

Command, from the repository root: `{cmd}` (the whole script: {total_s:.0f} s)

Date: {dt.datetime.now().astimezone().isoformat(timespec="seconds")} · `nproc`: {os.cpu_count()} ·
Python {platform.python_version()} on {platform.machine()} ({platform.system()}) · openai {openai.__version__} ·
prompts {prompts.PROMPT_VERSION} · the machine is shared, other processes ran during the benchmark: load
average (1 min) {load_before[0]:.1f} at the start, {load_after[0]:.1f} at the end; CPU pressure (PSI "some", 60 s)
{pressure_before} at the start, {pressure_after} at the end

The judge is called as the engine calls it per batch: `judge_samples(OpenAIJudge(...), samples, (CLAIMS, HOLISTIC))`
(per sample: the extraction and the holistic call at once, then one verification call per
{prompts.CHUNKS_PER_CALL} chunks); no store, so no judge cache. The server is `tests/helpers/openai_server.py` on
127.0.0.1 (TCP_NODELAY on, as real servers), in a forked child process (so the judge's process runs only
the client, as against a real server). It builds every reply
from its request: the claims `offline.segment_claims` finds in the answer and the reference, 3 questions
from the answer, a verdict for every claim x chunk (supported / not_found alternating) with the claims
comparison in the first verification call, every chunk's relevance with a one-sentence reason, and one
fixed holistic reply ({holistic_tokens} tokens). Every run below is checked healthy: each call "ok" at
its first attempt (the server saw exactly the recorded calls: no retry, no repair), every sample with a
complete matrix, 3 generated questions and holistic ratings.

## 1. Calls and tokens per sample

{n} samples: the demo data (data/demo/novel_44557_*), {len({s.golden.question_id for s in samples})} questions x
{len({s.output.method for s in samples})} methods, {chunks_each}.
Concurrency 32, server latency 0. Tokens are `estimate.approx_tokens` (ceil(characters / 4)) of
every message content of the request and of the reply's content, from the CallRecords: the unit of
the pre-run estimate (`estimate.estimate(samples, OpenAIJudge(...), metrics.resolve(None))`, all 34 metrics).

{ours_table}

- Calls match the estimate exactly: with at most {max(ks)} chunks a sample takes 1 extraction, 1
  verification and 1 holistic call.
- Input: of the {ours_input:,.0f} input tokens per sample, {ours_input - ours_data:,.0f} are the instructions (the
  system message and the schema, the same in every call, which a provider's prompt cache serves: section 4) and
  {ours_data:,.0f} the sample's data. The estimate leaves out the user message's block tags and section
  headers and counts the answer and the reference in place of the extracted claims.
- Output: the verification reply is the big one (a JSON verdict per claim and chunk). It is
  generated here by the script, so its size follows the script's choices (JSON with Python's default
  separators, one-sentence reasons); a real model's replies will differ by its verbosity. The
  holistic output is the fixed reply above ({holistic_tokens} tokens, where the estimate assumes
  {HOLISTIC_TOKENS}).

### Next to ragas' pattern for the same samples

ragas computes its 5 LLM metrics (faithfulness, context precision, context recall, answer
relevancy, answer correctness) with 9 + k LLM calls for a sample with k chunks. The input tokens
below count only the data each of those calls must carry (same approx_tokens unit); ragas' instructions,
few-shot examples and output-format text are NOT counted, so the real figure is higher: **a lower
bound**.

{ragas_table}

answer_relevancy counts 3 calls as in the version cited below; a ragas version that asks for
3 completions in one request sends the answer once, and the lower bound becomes {ragas_input_n3:,.0f}.

| per sample | LLM calls | input tokens | of which the sample's data |
|---|---:|---:|---:|
| this judge, whole catalogue (measured) | {ours_calls:.2f} | {ours_input:,.0f} | {ours_data:,.0f} |
| ragas, 5 metrics (lower bound: data only) | {ragas_calls:.2f} | ≥ {ragas_input:,.0f} | {ragas_input:,.0f} |

Our 3 calls cover the whole judged catalogue (the 9 claim metrics, answer relevance, the 13
rubric ids and the composite), not only ragas' 5 metrics: {ragas_calls / ours_calls:.1f}x fewer calls, and
{ragas_input / ours_data:.1f}x less of the sample's data sent; even with our instructions counted and ragas' not,
{ours_input:,.0f} vs ≥ {ragas_input:,.0f} input tokens. ragas sends the chunks 3 times (faithfulness, context
precision, context recall), we send them twice (verification and holistic).

{RAGAS_SOURCES}

## 2. Rounds per sample

Server latency {args.latency:g} s per chat completion; {ROUND_SAMPLES} demo samples judged one after another
(`judge_samples` per sample), the judge's concurrency 8. A sample takes 3 calls in 2 rounds: the
extraction and the holistic call together, then the verification, which needs the extracted claims.
Rounds are counted from the server's arrival times (a request that arrives a latency or more after
its round's first starts the next round); a sample's time runs from its first request's arrival at the
server to its judgment in the judge's hands (one clock, `time.monotonic`, for both processes). The last
column divides the whole wall by the samples: it adds the set-up a `judge_samples` call pays once (an
`AsyncOpenAI` client and its connection), once per sample here, once per batch in the engine.
`concurrency` bounds the HTTP requests in flight, so at concurrency 1 the 3 calls go one after another
(3 latencies) by definition; one sample in flight with room for its two first-round calls is what the
per-sample latency target is about.

{round_rows}

## 3. Throughput

Server latency {args.latency:g} s per chat completion. Demo samples reused under new question ids
where a level needs more than {n}. Both parts asked for together, as in the engine. Bound:
concurrency / (calls per sample x latency), i.e. every slot of the semaphore busy all the time with
nothing but server latency. Each level ran {args.repeat} times against a fresh server; the table shows the
median run by wall time (all walls, s: {walls}).

{throughput_table}

- **mean call**: a CallRecord's latency, timed after the semaphore is acquired (server latency plus
  the client's and the server's own work per call). **mean in flight**: the calls' summed latency /
  wall time (Little's law), how many of the `concurrency` slots were busy on average; measured /
  bound = (mean in flight / concurrency) x (latency / mean call). **client CPU**: CPU time of the
  judge's thread (the event loop: the judge and the openai client; the server is another process);
  **waiting for a CPU**: the time that thread was runnable but not running (Linux schedstat), i.e.
  taken by other processes.
{{gap_note}}
"""
    report = report.replace("{gap_note}", gap_note(throughput, args.latency)) + "\n" + cache_section
    print(report)
    if not args.no_write:
        out = ROOT / "bench" / "results" / "judge.md"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(report)
        print(f"written to {out}")


@dataclasses.dataclass
class Level:
    concurrency: int
    samples: int
    calls: int
    wall: float
    bound: float
    call_s: float
    in_flight: float
    cpu: float
    server_cpu: float
    walls: list[float]
    waited: float  # seconds the judge's thread was runnable but waited for a CPU


def gap_note(throughput: list[Level], latency: float) -> str:
    """Where the gap from the bound comes from, in this run's numbers (found by profiling the
    concurrency-32 level with cProfile)."""
    ms = 1000
    top = max(throughput, key=lambda lv: lv.concurrency)
    c, ratio_top = top.concurrency, top.samples / top.wall / top.bound
    busy, extra, cpu_call = top.in_flight / c, (top.call_s - latency) * ms, top.cpu / top.calls
    spread = (max(top.walls) - min(top.walls)) / min(top.walls)
    saturation = 1 / cpu_call
    low = min(throughput, key=lambda lv: lv.concurrency)
    return f"""- **Gap at concurrency {c}**: measured / bound {ratio_top:.2f} = {busy:.2f} of the slots busy x
  {latency * ms:.0f} ms / {top.call_s * ms:.0f} ms per call:
  1. {1 - busy:.0%} of the slots idle: the run starts by creating the client and opening {c} connections
     and ends with a partial last wave; the semaphore serves waiting calls in order, so the first
     round's calls (extraction, holistic) go first and the last verifications form a tail.
  2. {extra:.0f} ms per call on top of the server's {latency * ms:.0f} ms: the client's work,
     {cpu_call * ms:.1f} ms of CPU per call, all on the one event-loop thread, which ran
     {top.cpu / top.wall:.0%} of the wall time and waited for a CPU another {top.waited / top.wall:.0%}. Most of
     that CPU is the openai package and its HTTP stack (cProfile: its typed-parameter transform walking
     every message and the JSON schema, httpx2 / httpcore2 / h11, building the completion model), not
     the judge's own code. The server, in its own process, spent {top.server_cpu / top.calls * ms:.1f} ms of CPU
     per call. This level's walls varied by {spread:.0%} across its runs.
  At a real model's latency (1-10 s a call) the same {c} slots need only {c / 10:.0f}-{c:.0f} calls/s, i.e.
  {c / 10 * cpu_call:.0%}-{c * cpu_call:.0%} of a core at {cpu_call * ms:.1f} ms each: the overhead fades and the ratio
  tends to the slots' occupancy. At {latency:g} s, the loop would saturate near {saturation:.0f} calls/s on a free
  core ({saturation * top.samples / top.calls:.0f} samples/s), whatever the concurrency.
- At concurrency {low.concurrency}: {(low.call_s - latency) * ms:.0f} ms per call on top of the latency, the client's
  CPU ({low.cpu / low.calls * ms:.1f} ms a call; it includes creating the `AsyncOpenAI` client, ~30 ms for its
  TLS context even over plain HTTP, spread over only {low.calls} calls)."""


if __name__ == "__main__":
    main()
