"""Benchmark: the offline judge with the whole catalogue, samples of 12 chunks of ~1,000 characters.

    .venv/bin/python bench/offline_speed.py [--samples 120] [--no-write]

Samples: the demo golden set's questions and references (GraphRAG-Bench Novel-44557) with the demo
outputs' answers, each given 12 chunks of ~1,000 characters cut from the book (../shared/data/
graphrag_bench_novel44557, MIT): its retrieved chunks first, then consecutive passages. Every metric
of the catalogue runs through `engine.execute_run` on a DuckDB file, with the offline judge. Warm:
a first run of 10 other samples loads the models and pays the first forward passes; the timed run
is the second. Peak memory is the process's maximum resident set size (`resource.getrusage`).
Writes bench/results/offline_speed.md unless --no-write.
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from calibration.engine_scores import score_items  # noqa: E402
from calibration.sets import DATA, Item  # noqa: E402
from evaluators.metrics import REGISTRY  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "offline_speed.md"
CHUNKS, CHUNK_CHARS = 12, 1000


def samples(n: int) -> list[Item]:
    book = json.loads((DATA / "graphrag_bench_novel44557" / "novel_44557_corpus.json").read_text())[0]["context"]
    passages = [book[i:i + CHUNK_CHARS] for i in range(0, len(book) - CHUNK_CHARS, CHUNK_CHARS)]
    with open(ROOT / "data" / "demo" / "novel_44557_golden.csv", newline="", encoding="utf-8") as f:
        golden = {row["id"]: row for row in csv.DictReader(f)}
    items = []
    with open(ROOT / "data" / "demo" / "novel_44557_outputs.jsonl", encoding="utf-8") as f:
        for k, line in enumerate(f):
            out = json.loads(line)
            g = golden[out["question_id"]]
            own = [c["text"][:CHUNK_CHARS] for c in out["contexts"]]
            fill = [passages[(7 * k + j) % len(passages)] for j in range(CHUNKS)]
            items.append(Item("speed", f"{out['question_id']}:{out['method']}", out["question_id"], g["question"],
                              g["answer"], out["answer"], tuple((own + fill)[:CHUNKS]), None, ""))
    return items[:n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=120)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    every = list(REGISTRY)
    items = samples(args.samples + 10)
    with tempfile.TemporaryDirectory() as tmp:
        warm = time.perf_counter()
        score_items(items[-10:], every, Path(tmp) / "warm.duckdb", name="warm-up")
        warm = time.perf_counter() - warm
        started = time.perf_counter()
        scored = score_items(items[:args.samples], every, Path(tmp) / "timed.duckdb", name="timed")
        seconds = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    n = len(scored.scores)
    chars = sum(len(c) for i in items[:args.samples] for c in i.contexts) / args.samples
    text = "\n".join([
        "# The offline judge's speed: whole catalogue, 12 chunks of ~1,000 characters per sample",
        "",
        f"Command: `python bench/offline_speed.py --samples {args.samples}` ({dt.date.today().isoformat()}, "
        f"{platform.machine()}, 2 shared cores). {n} samples x {len(every)} metrics through `engine.execute_run` "
        f"(DuckDB file, offline judge), {CHUNKS} chunks per sample, {chars:,.0f} characters of chunks per sample "
        "on average.",
        "",
        "| what | value | target |",
        "|---|---|---|",
        f"| warm-up (model loads + 10 samples) | {warm:.1f} s | |",
        f"| timed run | {seconds:.1f} s | |",
        f"| samples per second, warm | {n / seconds:.2f} | >= 8 |",
        f"| peak resident memory | {peak_mb:,.0f} MB | <= 2,048 MB |",
        "",
    ])
    print(text)
    if not args.no_write:
        RESULTS.write_text(text)


if __name__ == "__main__":
    main()
