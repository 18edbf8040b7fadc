"""Benchmark: reading a big OTLP JSON trace file (loaders.load: in parts, a process per usable core, each streamed by
line; loaders/traces/parts.py) against reading the equivalent JSONL outputs file (the same answers and chunks,
RAGScope's own columns), time, CPU time and peak memory, in one run: a JSONL read then a trace read, `runs` times
(the machine is shared: one pair can be off either way).

    .venv/bin/python bench/traces.py [--mb 1024] [--runs 3] [--no-write]

Inputs, made in a temporary folder with a fixed seed: a golden set of Q questions and a trace file of about `mb` MB
as opentelemetry-exporter-otlp-json-file writes it with a SimpleSpanProcessor (one ExportTraceServiceRequest per span
a line): per trace a root CHAIN span (question, answer), a RETRIEVER span with 3-5 documents of 500-800 characters
(id, content, score) and an LLM span (model, tokens, the prompt's input messages: the chunks again, as real LLM spans
carry them), two services (methods); each question answered once per method. The JSONL file holds the same outputs
as {question_id, method, answer, contexts: [{id, text, score}], latency_ms, input_tokens, output_tokens, model}: the
two reads must give the same outputs, usage and chunk scores included (a digest of each, compared). Each read is a
fresh child process (its peak RSS from os.wait4; a trace read's part processes' largest beside it; CPU time of all
its processes, the read alone); the JSONL read runs with the loaders' up-front memory bound raised,
as the traces are never bound by it.
Writes bench/results/traces.md unless --no-write.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "traces.md"
METHODS = ("bm25_top3", "dense_top5")
WORDS = ("the cornish coast granite harbour pilchard fishing village chapel mine engine house moor tor cliff "
         "lighthouse tide church tower legend giant saint well cross valley river estuary boat sail net").split()

CHILD = """
import hashlib, json, resource, sys, time
from evaluators import loaders
from evaluators.loaders.formats import Source
from evaluators.loaders.traces import parts
golden = loaders.load(sys.argv[2], role="golden")
cpu = lambda who: (lambda u: u.ru_utime + u.ru_stime)(resource.getrusage(who))
start, started = time.perf_counter(), cpu(resource.RUSAGE_SELF)
if sys.argv[1] == "traces":
    ds = loaders.load(sys.argv[3], role="outputs", golden=golden)
else:
    ds = loaders.load(sys.argv[3], role="outputs")
seconds = time.perf_counter() - start
cpu_seconds = cpu(resource.RUSAGE_SELF) - started + cpu(resource.RUSAGE_CHILDREN)
cut = parts.cuts(Source(sys.argv[3])) if sys.argv[1] == "traces" else None
# what both reads must agree on, whole: every answer with its chunks (ids, texts, scores) and its usage (hashed an
# output at a time, so the check adds nothing to the peak memory measured)
same = hashlib.sha256()
for o in sorted(ds.outputs, key=lambda o: (o.question_id, o.method)):
    same.update(repr((o.question_id, o.method, o.answer, o.contexts, o.usage)).encode())
print(json.dumps({"seconds": seconds, "outputs": len(ds.outputs), "chunks": sum(len(o.contexts) for o in ds.outputs),
                  "digest": same.hexdigest(), "cpu": cpu_seconds, "parts": len(cut) - 1 if cut else 1,
                  "part_peak_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def text(rng: random.Random, lo: int, hi: int) -> str:
    n, words = rng.randint(lo, hi), []
    size = 0
    while size < n:
        words.append(rng.choice(WORDS))
        size += len(words[-1]) + 1
    return " ".join(words)[:n]


def av(value) -> dict:
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": value}


def line(service: str, trace: str, span: str, parent: str | None, name: str, start: int, ms: int, attrs: dict) -> str:
    body = {"traceId": trace, "spanId": span, "name": name, "kind": 1, "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(start + ms * 1_000_000),
            "attributes": [{"key": k, "value": av(v)} for k, v in attrs.items()]}
    if parent:
        body["parentSpanId"] = parent
    return json.dumps({"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": av(service)}]},
                                          "scopeSpans": [{"scope": {"name": "bench"}, "spans": [body]}]}]}) + "\n"


def make(folder: Path, megabytes: int) -> tuple[Path, Path, Path, int]:
    rng = random.Random(37)
    golden, traces, outputs = folder / "golden.jsonl", folder / "traces.jsonl", folder / "outputs.jsonl"
    target, n, t0 = megabytes * 2**20, 0, 1_790_000_000_000_000_000
    with golden.open("w") as g, traces.open("w") as t, outputs.open("w") as o:
        while t.tell() < target:
            n += 1
            question = f"Question {n}: " + text(rng, 60, 120)
            g.write(json.dumps({"question_id": f"q{n}", "question": question, "reference": text(rng, 50, 150)}) + "\n")
            for m, method in enumerate(METHODS):
                trace, start = f"{n:024x}{m:08x}", t0 + (n * 10 + m) * 10**9
                docs = [(f"doc-{rng.randrange(10**6)}", text(rng, 500, 800), rng.random() * 20)
                        for _ in range(rng.randint(3, 5))]
                answer = text(rng, 300, 600)
                doc_attrs = {"openinference.span.kind": "RETRIEVER", "input.value": question}
                for i, (doc_id, content, score) in enumerate(docs):
                    doc_attrs |= {f"retrieval.documents.{i}.document.id": doc_id,
                                  f"retrieval.documents.{i}.document.content": content,
                                  f"retrieval.documents.{i}.document.score": score}
                prompt = "\n".join(c for _, c, _ in docs) + "\n" + question
                t.write(line(method, trace, "0000000000000002", "0000000000000001", "retrieve", start + 1000, 30,
                             doc_attrs))
                t.write(line(method, trace, "0000000000000003", "0000000000000001", "llm", start + 40_000_000, 800, {
                    "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini",
                    "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": prompt,
                    "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": answer,
                    "llm.token_count.prompt": len(prompt) // 4, "llm.token_count.completion": len(answer) // 4}))
                t.write(line(method, trace, "0000000000000001", None, "rag", start, 900, {
                    "openinference.span.kind": "CHAIN", "input.value": question, "output.value": answer}))
                o.write(json.dumps({"question_id": f"q{n}", "method": method, "answer": answer,
                                    "contexts": [{"id": i, "text": c, "score": sc} for i, c, sc in docs],
                                    "latency_ms": 900.0, "input_tokens": len(prompt) // 4,
                                    "output_tokens": len(answer) // 4, "model": "gpt-4o-mini"}) + "\n")
    return golden, traces, outputs, n


def measure(kind: str, golden: Path, path: Path) -> dict:
    env = os.environ | {"RAGSCOPE_INPUT_MEMORY_MB": str(10**9), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, kind, str(golden), str(path)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    start = time.perf_counter()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    out, err = proc.stdout.read(), proc.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{kind} child failed: {err}")
    return json.loads(out) | {"peak_mb": usage.ru_maxrss / 1024, "wall": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=1024, help="the trace file's size in MB (default 1024)")
    parser.add_argument("--runs", type=int, default=3, help="pairs of reads, JSONL then traces (default 3)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ragscope-traces-bench-") as tmp:
        made = time.perf_counter()
        golden, traces, outputs, questions = make(Path(tmp), args.mb)
        os.sync()  # the inputs on disk before the reads: no write-back of 1.4 GB competes with them
        made = time.perf_counter() - made
        sizes = {p.name: p.stat().st_size / 2**20 for p in (traces, outputs)}
        pairs = [(measure("jsonl", golden, outputs), measure("traces", golden, traces)) for _ in range(args.runs)]
    rows, ratios = [], []
    for run, (jsonl, trace) in enumerate(pairs, 1):
        assert trace["digest"] == jsonl["digest"], ("the two files do not read as the same outputs", trace, jsonl)
        ratios.append(trace["seconds"] / jsonl["seconds"])
        rows += [f"| {run} | OTLP JSON traces ({_parts(trace)}) | {sizes['traces.jsonl']:,.0f} | "
                 f"{trace['seconds']:.1f} | {trace['cpu']:.1f} | {trace['wall']:.1f} | {_peak(trace)} | "
                 f"{trace['outputs']:,} | {trace['chunks']:,} |",
                 f"| {run} | equivalent JSONL outputs (read whole) | {sizes['outputs.jsonl']:,.0f} | "
                 f"{jsonl['seconds']:.1f} | {jsonl['cpu']:.1f} | {jsonl['wall']:.1f} | {jsonl['peak_mb']:,.0f} | "
                 f"{jsonl['outputs']:,} | {jsonl['chunks']:,} |"]
    table = "\n".join(["| run | file | size (MB) | read (s) | CPU (s) | child wall (s) | peak RSS (MB) | outputs | "
                       "chunks |", "|---:|---|---:|---:|---:|---:|---:|---:|---:|", *rows])
    cpu = statistics.median(t["cpu"] / j["cpu"] for j, t in pairs)
    jsonl, trace = pairs[-1]
    report = (f"# Reading trace files (bench/traces.py)\n\n{dt.date.today()}, {platform.machine()}, {os.cpu_count()} "
              f"cores (shared with other jobs), Python {platform.python_version()}; inputs made in {made:.0f} s: "
              f"{questions:,} golden questions, {len(METHODS)} methods; {args.runs} runs, each a JSONL read then a "
              f"trace read.\n\n{table}\n\n"
              f"Time ratio, traces / equivalent JSONL, by run: {', '.join(f'{r:.2f}' for r in ratios)}; median "
              f"**{statistics.median(ratios):.2f}** (target <= 1.0). CPU time ratio (median): {cpu:.2f}. Peak RSS "
              f"ratio (the reading process): {trace['peak_mb'] / jsonl['peak_mb']:.2f}; the trace file is "
              f"{sizes['traces.jsonl'] / sizes['outputs.jsonl']:.1f}x the size of the JSONL file it is equivalent to.\n")
    print(report)
    if not args.no_write:
        RESULTS.write_text(report, encoding="utf-8")


def _parts(read: dict) -> str:
    return "streamed by line" if read["parts"] == 1 else f"{read['parts']} parts, a process each, streamed by line"


def _peak(read: dict) -> str:
    """The reading process's peak RSS, and its part processes' largest."""
    if read["parts"] == 1:
        return f"{read['peak_mb']:,.0f}"
    return f"{read['peak_mb']:,.0f} + {read['part_peak_mb']:,.0f} a part process"


if __name__ == "__main__":
    main()
