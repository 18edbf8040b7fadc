"""Benchmark: every dashboard screen's render time on a large database (the speed bar: < 2 s).

    .venv/bin/python bench/bench_screens.py [--db bench/big.duckdb] [--repeat 3] [--no-write] [--runs-only]

Builds the database with bench/make_big_db.py when it is missing (50,000 samples, 30 metrics,
1.5 M score cells, 500,000 claims). Each screen runs in `streamlit.testing.v1.AppTest`, which
executes app.py and the page script exactly as the server does; the time is the script's run,
from start to the last element (server side: the browser's drawing of the elements comes on top).
One warm-up run imports the libraries and opens the database; then, per screen, a fresh AppTest
runs app.py (the default Overview screen), switches to the screen and the second run is timed
(median of --repeat). Writes bench/results/screens.md unless --no-write.

Runs over time (issue 22): Compare across two runs of 50,000 questions each (a copy of a 50,000-question run,
its values shifted, on the same golden set) and History over 20 runs (5,000 questions x 2 methods each), in
databases of their own; written to bench/results/screens_runs.md (--runs-only: these alone).
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

from bench.make_big_db import RUN_ID, build  # noqa: E402
from evaluators.store import Store  # noqa: E402

SCREENS = ["pages/overview.py", "pages/compare.py", "pages/history.py", "pages/claims.py", "pages/correlations.py",
           "pages/error_analysis.py", "pages/data.py", "pages/evaluate.py"]
BAR_SECONDS = 2.0


def as_the_server_runs_pages() -> None:
    """AppTest decides on every run whether the app is a v1 `pages/` directory app and then runs a switched-to page
    without app.py: without the sidebar and without app.py's lease on the database, so every query of the page
    opened the file anew (~20 ms each; History made 271). The server runs app.py's st.navigation, which turns that
    mode off (tests/conftest.py's navigation_pages does the same for the tests)."""
    from streamlit.runtime.pages_manager import PagesManager

    original = PagesManager.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    PagesManager.__init__ = init


def render(page: str, state: dict | None = None) -> tuple[float, str | None]:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    for key, value in (state or {}).items():  # the run in view, a widget's choice
        at.session_state[key] = value
    at.run()
    if page != SCREENS[0]:
        at.switch_page(page)
    started = time.perf_counter()
    at.run()
    seconds = time.perf_counter() - started
    problem = str(at.exception[0].value) if at.exception else (at.error[0].value if at.error else None)
    return seconds, problem


def copy_runs(db: Path, copies: int) -> list[str]:
    """`copies` later runs of run-big on its golden set, one minute apart, each run's values shifted by a small
    deterministic amount per cell (so steps differ), statuses kept. Returns every run id, oldest first."""
    store = Store(db)
    cur = store.cursor()
    ids = [RUN_ID] + [f"{RUN_ID}-{i}" for i in range(1, copies + 1)]
    for i, run_id in enumerate(ids[1:], start=1):
        cur.execute("INSERT INTO runs SELECT * REPLACE (? AS run_id, 'Big, later ' || ? AS name, "
                    "created_at + to_minutes(?::BIGINT) AS created_at) FROM runs WHERE run_id = ?",
                    [run_id, i, i, RUN_ID])
        # The shift keeps values on their scale: a norm moved by up to 0.05, clipped; likert / binary values unchanged.
        cur.execute("""
            INSERT INTO scores SELECT * REPLACE (
                ? AS run_id,
                CASE WHEN value IS NOT NULL AND value BETWEEN 0 AND 1 AND norm = value
                     THEN least(1.0, greatest(0.0, value + ((hash(question_id, metric, ?) % 101)::INTEGER - 50) / 1000.0))
                     ELSE value END AS value,
                CASE WHEN norm IS NOT NULL AND value BETWEEN 0 AND 1 AND norm = value
                     THEN least(1.0, greatest(0.0, norm + ((hash(question_id, metric, ?) % 101)::INTEGER - 50) / 1000.0))
                     ELSE norm END AS norm)
            FROM scores WHERE run_id = ?""", [run_id, i, i, RUN_ID])
    store.close()
    return ids


def runs_over_time(repeat: int) -> list[tuple[str, str, float, float, str | None]]:
    """Cross-run Compare (2 runs x 50,000 questions) and History (20 runs x 5,000 questions x 2 methods)."""
    rows = []
    for label, db, questions, methods, copies, page, state in [
        ("Compare across 2 runs of 50,000 questions (1 method each side)", ROOT / "bench" / "big_runs2.duckdb",
         50_000, 1, 1, "pages/compare.py", lambda ids: {"run_id": ids[1], "cmp_other_run": ids[0]}),
        ("History over 20 runs of 5,000 questions x 2 methods", ROOT / "bench" / "big_runs20.duckdb",
         5_000, 2, 19, "pages/history.py", lambda ids: {"run_id": ids[-1]}),
    ]:
        started = time.perf_counter()
        build(db, questions, methods, claims_per_sample=1, chunks_per_sample=1)
        ids = copy_runs(db, copies)
        built = time.perf_counter() - started
        os.environ["RAGSCOPE_DB"] = str(db)
        cold, _ = render(page, state(ids))  # the first view of the screen: computed, then remembered
        times, problem = [], None
        for _ in range(repeat):
            seconds, problem = render(page, state(ids))
            times.append(seconds)
        rows.append((label, page, cold, statistics.median(times), max(times), problem))
        print(f"{label}: built in {built:.0f} s; first view {cold:.2f} s, then median {statistics.median(times):.2f} s,"
              f" max {max(times):.2f} s" + (f" ({problem})" if problem else ""))
        db.unlink()
    return rows


def write_runs_results(rows, repeat: int) -> None:
    lines = [
        "# Runs over time on large databases (Compare across runs, History)",
        "",
        "Command, from the repository root: `.venv/bin/python bench/bench_screens.py --runs-only`",
        "",
        f"Date: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')} · `nproc`: {os.cpu_count()} · "
        f"Python {platform.python_version()} on {platform.machine()}",
        "",
        "Databases from `bench/make_big_db.py` (30 metrics) plus copies of its run with shifted values "
        "(`copy_runs`), each on the run's golden set. Compare: 50,000 questions x 1 method in each of 2 runs "
        "(3,000,000 score cells), the later run in view, the earlier picked in 'Compare with another run'. "
        "History: 20 runs of 5,000 questions x 2 methods (6,000,000 score cells), the newest in view, headline "
        "metrics (19 steps x 2 methods x the headline metrics the runs have, each a paired test).",
        "",
        f"| screen | page | first view (s) | then median of {repeat} (s) | max (s) | under {BAR_SECONDS:.0f} s "
        "| problem |",
        "|---|---|---:|---:|---:|---|---|",
        *[f"| {label} | `{page}` | {cold:.2f} | {median:.2f} | {worst:.2f} | "
          f"{'yes' if max(cold, worst) < BAR_SECONDS else '**no**'} | {problem or ''} |"
          for label, page, cold, median, worst, problem in rows],
        "",
        "First view: the screen's statistics computed (the pairing in DuckDB, the tests); then: a rerun after a "
        "click, the statistics remembered (compare.remembered). Server-side script time in AppTest, as above.",
        "",
        "Until 2026-11-27 AppTest ran a switched-to page without app.py (`as_the_server_runs_pages`): without its "
        "lease on the database every query opened the file anew and the run picker counted every score cell; "
        "with that, and a machine shared with two test runs, the first views measured 6.93 s and 32.25 s.",
    ]
    out = ROOT / "bench" / "results" / "screens_runs.md"
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=str(ROOT / "bench" / "big.duckdb"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--runs-only", action="store_true", help="only the runs-over-time screens")
    args = parser.parse_args()
    os.chdir(ROOT)
    as_the_server_runs_pages()
    if args.runs_only:
        rows = runs_over_time(args.repeat)
        if not args.no_write:
            write_runs_results(rows, args.repeat)
        return
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
