"""Benchmark: how long a first start takes to compute the demo runs, in a fresh process and database.

    .venv/bin/python bench/demo_build.py [--no-write]

Runs `python -m evaluators demo --db <a new file>` as a fresh process (the app's first start computes
the same runs in the same order, `evaluators.demo.start_demos`), so the time includes importing torch
and loading both models. Reports each demo's compute time as the command prints it, the whole
command's wall time, and when the default run (ARAGOG, the one the app opens on) was ready.
Writes bench/results/demo_build.md unless --no-write. Target (issue 9): every demo in under 90 s.
"""
from __future__ import annotations

import argparse
import datetime as dt
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "demo_build.md"
TARGET_SECONDS = 90
DONE = re.compile(r"^\S+\s+(?P<name>.+): computed in (?P<seconds>\d+) s$")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "evaluators", "demo", "--db", str(Path(tmp) / "demo.duckdb")],
                                cwd=ROOT, stdout=subprocess.PIPE, text=True)
        rows = []
        for line in proc.stdout:
            m = DONE.match(line.strip())
            if m:
                rows.append((m["name"], int(m["seconds"]), time.perf_counter() - started))
        if proc.wait():
            sys.exit(f"python -m evaluators demo failed with exit code {proc.returncode}")
        wall = time.perf_counter() - started
    lines = [
        "# Demo build: a first start's demo runs, fresh process and database",
        "",
        f"Command: `python bench/demo_build.py` ({dt.date.today().isoformat()}, {platform.machine()}, "
        "2 shared cores). It runs `python -m evaluators demo` on a new DuckDB file: the runs the app computes "
        "in the background on its first start, in the same order, offline judge, whole catalogue.",
        "",
        "| demo | computed in | ready after (wall, incl. imports and model loads) |",
        "|---|---|---|",
        *(f"| {name} | {seconds} s | {ready:.0f} s |" for name, seconds, ready in rows),
        f"| **all demos** | {sum(s for _, s, _ in rows)} s | **{wall:.0f} s** (target < {TARGET_SECONDS} s: "
        f"{'met' if wall < TARGET_SECONDS else 'NOT met'}) |",
        "",
    ]
    print("\n".join(lines))
    if not args.no_write:
        RESULTS.write_text("\n".join(lines))


if __name__ == "__main__":
    main()
