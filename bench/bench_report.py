"""Benchmark: the report file (`python -m evaluators report`) on a run of 50,000 samples (the bar: under 30 s), and
the size of the ARAGOG demo's report (the bar: under 6 MB).

    .venv/bin/python bench/bench_report.py [--db bench/big.duckdb] [--aragog-db PATH] [--repeat 3] [--no-write]

The large database comes from bench/make_big_db.py (25,000 questions x 2 methods, 30 metrics, 10 claims and 10
chunks per sample), built when missing. Each time is the command as a user runs it, a fresh process from start to
the file written (imports and opening the database included); the median of --repeat. The ARAGOG demo run is
evaluated into bench/aragog.duckdb when no --aragog-db is given (about half a minute on an idle machine).
Writes bench/results/report.md unless --no-write.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.make_big_db import RUN_ID, build  # noqa: E402

BAR_SECONDS, BAR_BYTES = 30.0, 6_000_000


def timed_report(db: Path, run_id: str, out: Path) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "evaluators", "report", run_id, "--db", str(db), "--out", str(out)],
                   cwd=ROOT, check=True, capture_output=True, text=True)
    return time.perf_counter() - started


def aragog_run(db: Path | None) -> tuple[Path, str]:
    """The ARAGOG demo's database and run id (evaluated into bench/aragog.duckdb when no database is given)."""
    from evaluators.demo import ARAGOG, ensure_demo
    from evaluators.queries import runs
    from evaluators.store import close_store, open_store

    if db is None:
        db = ROOT / "bench" / "aragog.duckdb"
        ensure_demo(open_store(db), [ARAGOG])  # idempotent: a finished run is kept
    found = runs(open_store(db))
    close_store(db)
    return db, found.loc[found["name"] == ARAGOG.name, "run_id"].iloc[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=str(ROOT / "bench" / "big.duckdb"))
    parser.add_argument("--aragog-db", help="a database holding the evaluated ARAGOG demo run")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    db = Path(args.db)
    if not db.exists():
        build(db, 25_000, 2)
    out = ROOT / "bench" / "report-big.html"
    times = [timed_report(db, RUN_ID, out) for _ in range(args.repeat)]
    big_bytes = out.stat().st_size
    print(f"50,000 samples: median {statistics.median(times):.2f} s, max {max(times):.2f} s, {big_bytes:,} bytes")
    aragog_db, aragog_id = aragog_run(Path(args.aragog_db) if args.aragog_db else None)
    aragog_out = ROOT / "bench" / "report-aragog.html"
    aragog_seconds = timed_report(aragog_db, aragog_id, aragog_out)
    aragog_bytes = aragog_out.stat().st_size
    print(f"ARAGOG: {aragog_seconds:.2f} s, {aragog_bytes:,} bytes")
    for f in (out, aragog_out):
        f.unlink()
    lines = [
        "# The report file",
        "",
        "Command, from the repository root: `.venv/bin/python bench/bench_report.py`",
        "",
        f"Date: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')} · `nproc`: {os.cpu_count()} · "
        f"Python {platform.python_version()} on {platform.machine()} · load average while it ran: "
        f"{os.getloadavg()[0]:.1f}",
        "",
        "Each time: `python -m evaluators report RUN_ID --out FILE.html` as a user runs it, a fresh process from "
        "start to the file written (imports and opening the database included).",
        "",
        f"| run | samples | time, median of {args.repeat} (s) | max (s) | under {BAR_SECONDS:.0f} s | file (MB) "
        f"| under {BAR_BYTES / 1e6:.0f} MB |",
        "|---|---:|---:|---:|---|---:|---|",
        f"| `{db.name}` from `bench/make_big_db.py`: 25,000 questions x 2 methods, 30 metrics | 50,000 | "
        f"{statistics.median(times):.2f} | {max(times):.2f} | {'yes' if max(times) < BAR_SECONDS else '**no**'} | "
        f"{big_bytes / 1e6:.2f} | {'yes' if big_bytes < BAR_BYTES else '**no**'} |",
        f"| ARAGOG demo: 107 questions x 4 methods, every metric | 428 | {aragog_seconds:.2f} | {aragog_seconds:.2f} | "
        f"{'yes' if aragog_seconds < BAR_SECONDS else '**no**'} | {aragog_bytes / 1e6:.2f} | "
        f"{'yes' if aragog_bytes < BAR_BYTES else '**no**'} |",
        "",
        "plotly.js, inlined once, is most of each file (about 4.8 MB); the rest is the run's own tables, charts and "
        "the questions where the methods differ most (ARAGOG: 3 pairs x 5 questions, each with both answers and "
        "their chunks). A load average above `nproc` means other jobs shared the cores: on an idle machine the "
        "times are lower.",
    ]
    if args.no_write:
        return
    path = ROOT / "bench" / "results" / "report.md"
    kept = path.read_text().partition("\n## Page height")[1:] if path.exists() else ()  # bench/report_height.py's
    path.write_text("\n".join(lines) + "\n" + "".join(kept))
    print("wrote bench/results/report.md")


if __name__ == "__main__":
    main()
