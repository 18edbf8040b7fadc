"""Benchmark: the worst samples the offline judge still judges, and what it does beyond its limits.

    .venv/bin/python bench/bench_limits.py [--no-write]

One sample each (a question and reference about the Thames), the whole catalogue, `python -m evaluators run` in a
fresh process on a new DuckDB file: a plain sample (12 chunks of ~1,000 characters; the process's start and the
models' loading, the baseline), both limits at once (evaluators.judges: MAX_CHUNKS distinct chunks filling
OfflineJudge.max_chars; one chunk filling OfflineJudge.max_chars), and beyond them (10,000 chunks; one chunk of
999,000 characters: stored `skipped`). Time is wall-clock, memory the child's peak resident set. Then the sentence splitter
on 20,000 and 200,000 characters (ratio of the two, in one run).
Writes bench/results/limits.md unless --no-write.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluators.judges import MAX_CHUNKS, OfflineJudge, offline  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "limits.md"
QUESTION, REFERENCE = "How long is the Thames?", "The Thames is 346 km long and flows through London."
ANSWER = "The Thames is 346 km long; it flows through Oxford and London."
PROSE = ("The river Thames flows through Oxford and London. It is 346 km long and rises in Gloucestershire. "
         "Dr. Smith studied its floods in 1953, after the North Sea flood. The barrier at Woolwich opened in 1984. ")


def _chunk(i: int, chars: int) -> str:
    return (f"Passage {i}. " + PROSE * (chars // len(PROSE) + 1))[:chars]


def cases() -> dict[str, list[str]]:
    room = OfflineJudge.max_chars - len(QUESTION) - len(REFERENCE) - len(ANSWER)
    return {
        "plain: 12 chunks of 1,000 characters": [_chunk(i, 1000) for i in range(12)],
        f"at the limit: {MAX_CHUNKS:,} chunks of {room // MAX_CHUNKS} characters":
            [_chunk(i, room // MAX_CHUNKS) for i in range(MAX_CHUNKS)],
        f"at the limit: one chunk of {room:,} characters": [_chunk(0, room)],
        "beyond: 10,000 chunks of 190 characters": [_chunk(i, 190) for i in range(10_000)],
        "beyond: one chunk of 999,000 characters": [_chunk(0, 999_000)],
    }


def run(chunks: list[str], folder: Path) -> tuple[float, float, str]:
    """(seconds, peak MB of the child, its summary line) of one `run` over one sample."""
    (folder / "golden.json").write_text(json.dumps([{"id": "q1", "question": QUESTION, "reference": REFERENCE}]))
    (folder / "outputs.json").write_text(json.dumps([{"id": "q1", "method": "rag", "answer": ANSWER,
                                                      "contexts": chunks}]))
    db = folder / f"{time.monotonic_ns()}.duckdb"
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "evaluators", "run", "--db", str(db), "--golden",
                          str(folder / "golden.json"), "--outputs", str(folder / "outputs.json")],
                         cwd=ROOT, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    seconds = time.perf_counter() - start
    if out.returncode != 0:
        raise SystemExit(out.stderr)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # the largest child so far
    return seconds, peak, out.stdout.strip().splitlines()[-1].split(": ", 1)[1]


def splitter_ratio() -> tuple[float, float]:
    times = []
    for n in (20_000, 200_000):
        text = (PROSE * (n // len(PROSE) + 1))[:n]
        best = float("inf")
        for i in range(3):
            start = time.perf_counter()
            offline.sentences(f"{text} {i}")
            best = min(best, time.perf_counter() - start)
        times.append(best)
    return times[0], times[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, chunks in cases().items():
            seconds, peak, said = run(chunks, Path(tmp))
            rows.append(f"| {name} | {seconds:.1f} | {peak:,.0f} | {said} |")
            print(rows[-1], flush=True)
    small, large = splitter_ratio()
    lines = [
        "# Offline judge: the worst samples within its limits, and beyond them",
        "",
        f"`bench/bench_limits.py`, {dt.date.today()}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, one torch thread. One sample, the whole catalogue, `python -m evaluators run` "
        "in a fresh process (its start and the models' loading included: the plain sample is that baseline). "
        "Peak MB: the largest child process so far.",
        "",
        "| sample | seconds | peak MB (so far) | the run's summary |",
        "|---|---|---|---|",
        *rows,
        "",
        f"Sentence splitter (`offline.sentences`), best of 3: 20,000 characters {small * 1000:.1f} ms, "
        f"200,000 characters {large * 1000:.1f} ms: 10x the text, {large / small:.1f}x the time "
        "(before: 0.37 s at 25,000 and 22.8 s at 200,000 characters, the square of the length; one chunk of "
        "a million characters ran over ten minutes, 10,000 chunks over 500 s).",
        "",
    ]
    if not args.no_write:
        RESULTS.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
