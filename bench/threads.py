"""Benchmark: the thread policy (evaluators/threads.py) on idle cores and beside two CPU-bound processes.

    .venv/bin/python bench/threads.py [--repeats 2] [--no-write]

One offline run of 8 samples (4 demo questions x 2 methods, the whole catalogue) as a user starts it: a fresh
`python -m evaluators run` process on a new DuckDB file, so imports and model loads count. Three settings:
RAGScope's default (one torch thread per forward pass, passes spread over one worker per core); one thread
everywhere (OMP_NUM_THREADS=1, the workaround users found, and one worker); and torch's own default of one
thread per core on one worker (RAGSCOPE_TORCH_THREADS=cores), the release before's torch setting (its BLAS
pools, also one thread per core then, stay at this release's one).
Each on idle cores, then beside two CPU-bound processes (busy loops that end by themselves), the settings
interleaved within each repeat, so the ratios compare runs minutes apart. Writes bench/results/threads.md.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.busy import cpu_bound  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "threads.md"
TARGET = 1.3  # busy: the default within 1.3x of one thread (issue 31)
CORES = len(os.sched_getaffinity(0))
SETTINGS = {
    "default": {},
    "one thread": {"OMP_NUM_THREADS": "1", "RAGSCOPE_TORCH_THREADS": "1", "RAGSCOPE_WORKERS": "1"},
    f"torch's default ({CORES} torch threads, as the release before)": {"RAGSCOPE_TORCH_THREADS": str(CORES),
                                                                       "RAGSCOPE_WORKERS": "1"},
}
RUN = ["-m", "evaluators", "run", "--golden", "data/demo/novel_44557_golden.csv",
       "--outputs", "data/demo/novel_44557_outputs.jsonl", "--sample", "4", "--seed", "1", "--name", "threads"]


def timed_run(env: dict[str, str]) -> float:
    """Seconds of one offline run in a fresh process with `env` added."""
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        subprocess.run([sys.executable, *RUN, "--db", str(Path(tmp) / "threads.duckdb")], cwd=ROOT, check=True,
                       env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.perf_counter() - started


def measure(repeats: int, busy: bool) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in SETTINGS}
    with cpu_bound(2 if busy else 0):
        for _ in range(repeats):
            for name, env in SETTINGS.items():
                times[name].append(timed_run(env))
                print(f"{'busy' if busy else 'idle'} {name}: {times[name][-1]:.1f} s", flush=True)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    timed_run({})  # warm the file cache (imports, model files) so the first setting is not charged for it
    load_before = os.getloadavg()[0]
    results = {"idle": measure(args.repeats, busy=False), "beside two CPU-bound processes": measure(args.repeats, True)}
    one, default = list(SETTINGS)[1], list(SETTINGS)[0]
    lines = [
        "# The thread policy: an offline run on idle cores and beside two CPU-bound processes",
        "",
        f"Command: `python bench/threads.py --repeats {args.repeats}` ({dt.date.today().isoformat()}, "
        f"{platform.machine()}, {CORES} cores). A fresh `python -m evaluators run` process, 8 samples (4 demo "
        "questions x 2 methods), the whole catalogue, offline judge, new DuckDB file: imports and model loads "
        "included. Median of the repeats, the settings interleaved; ratios are to one thread in the same condition. "
        f"Load average (1 min) as it started: {load_before:.1f}, so 'idle' means nothing of the benchmark's own.",
        "",
        "| condition | setting | seconds (each run) | median | / one thread |",
        "|---|---|---|---|---|",
    ]
    for condition, times in results.items():
        base = statistics.median(times[one])
        for name, runs in times.items():
            median = statistics.median(runs)
            lines.append(f"| {condition} | {name} | {', '.join(f'{t:.1f}' for t in runs)} | {median:.1f} | "
                         f"{median / base:.2f} |")
    busy = results["beside two CPU-bound processes"]
    ratio = statistics.median(busy[default]) / statistics.median(busy[one])
    lines += ["", f"Busy, default / one thread: **{ratio:.2f}** (target <= {TARGET}: "
                  f"{'met' if ratio <= TARGET else 'NOT met'}).", ""]
    print("\n".join(lines))
    if not args.no_write:
        RESULTS.write_text("\n".join(lines))


if __name__ == "__main__":
    main()
