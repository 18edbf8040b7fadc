"""Benchmark: every dashboard screen's render time on a large database (the speed bar: < 2 s).

    .venv/bin/python bench/bench_screens.py [--db bench/big.duckdb] [--repeat 3] [--no-write]

Builds the database with bench/make_big_db.py when it is missing (50,000 samples, 30 metrics,
1.5 M score cells, 500,000 claims). Each screen runs in `streamlit.testing.v1.AppTest`, which
executes app.py and the page script exactly as the server does; the time is the script's run,
from start to the last element (server side: the browser's drawing of the elements comes on top).
One warm-up run imports the libraries and opens the database; then, per screen, a fresh AppTest
runs app.py (the default Overview screen), switches to the screen and the second run is timed
(median of --repeat). Writes bench/results/screens.md unless --no-write.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.make_big_db import build  # noqa: E402

SCREENS = ["pages/overview.py", "pages/compare.py", "pages/claims.py", "pages/correlations.py",
           "pages/error_analysis.py", "pages/data.py", "pages/evaluate.py"]
BAR_SECONDS = 2.0


def render(page: str) -> tuple[float, str | None]:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.run()
    if page != SCREENS[0]:
        at.switch_page(page)
    started = time.perf_counter()
    at.run()
    seconds = time.perf_counter() - started
    problem = str(at.exception[0].value) if at.exception else (at.error[0].value if at.error else None)
    return seconds, problem


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=str(ROOT / "bench" / "big.duckdb"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    db = Path(args.db)
    info = None
    if not db.exists():
        info = build(db, 25_000, 2)
    os.environ["RAGSCOPE_DB"] = str(db)
    os.chdir(ROOT)
    warm, _ = render(SCREENS[0])
    rows = []
    for page in SCREENS:
        times, problem = [], None
        for _ in range(args.repeat):
            seconds, problem = render(page)
            times.append(seconds)
        rows.append((page, statistics.median(times), max(times), problem))
        print(f"{page}: median {statistics.median(times):.2f} s, max {max(times):.2f} s" + (f" ({problem})" if problem else ""))
    lines = [
        "# Dashboard screens on a large database",
        "",
        "Command, from the repository root: `.venv/bin/python bench/bench_screens.py`",
        "",
        f"Date: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')} · `nproc`: {os.cpu_count()} · "
        f"Python {platform.python_version()} on {platform.machine()}",
        "",
        f"Database: `{db.name}` from `bench/make_big_db.py`: 25,000 questions x 2 methods = 50,000 samples, "
        "30 metrics (1,500,000 score cells), 500,000 claims, 500,000 chunk verdicts, 150,000 judge calls."
        + (f" Built in {sum(info['timings'].values()):.1f} s." if info else ""),
        "",
        f"Warm-up (imports, opening the database, first Overview): {warm:.2f} s.",
        "",
        f"| screen | median (s) | max of {args.repeat} (s) | under {BAR_SECONDS:.0f} s | problem |",
        "|---|---:|---:|---|---|",
        *[f"| `{page}` | {median:.2f} | {worst:.2f} | {'yes' if worst < BAR_SECONDS else '**no**'} | {problem or ''} |"
          for page, median, worst, problem in rows],
        "",
        "Time is the server-side script run in AppTest (what a rerun costs after a click), on the default "
        "state of each screen; the browser's drawing comes on top.",
    ]
    if not args.no_write:
        out = ROOT / "bench" / "results" / "screens.md"
        out.write_text("\n".join(lines) + "\n")
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
