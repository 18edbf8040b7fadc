"""The report page's height at 1400 px in Chromium (as the file opens: folded parts folded), for the demo runs'
reports, written by the `report` command of this checkout or of another one (to compare before and after a change).

    .venv/bin/python bench/report_height.py [--db bench/demos.duckdb] [--checkout DIR] [--width 1400]

--db: a database with the demo runs evaluated (`python -m evaluators demo --db PATH`: minutes); the default one is
evaluated when missing. --checkout: the repository whose report command writes the files, e.g. an older commit:
`mkdir /tmp/old && git archive COMMIT | tar -x -C /tmp/old` with `--label COMMIT`. Prints one markdown row per run, for
bench/results/report.md's "Page height" section.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RUNS = ("Demo: GraphRAG-Bench", "Demo: ARAGOG retrieval settings")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=str(ROOT / "bench" / "demos.duckdb"))
    parser.add_argument("--checkout", default=str(ROOT))
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--label", help="the first column (default: the checkout's commit)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from evaluators.demo import ensure_demo
    from evaluators.queries import runs
    from evaluators.store import close_store, open_store

    db = Path(args.db)
    if not db.exists():
        ensure_demo(open_store(db))
    found = runs(open_store(db))
    close_store(db)
    commit = args.label or subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=args.checkout,
                                          capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as folder, sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        for name in RUNS:
            run = found[found["name"].str.startswith(name)].iloc[0]
            out = Path(folder) / f"{run['run_id']}.html"
            subprocess.run([sys.executable, "-m", "evaluators", "report", run["run_id"], "--db", str(db), "--out",
                            str(out)], cwd=args.checkout, check=True, capture_output=True)
            page = browser.new_page(viewport={"width": args.width, "height": 1000})
            page.goto(out.as_uri())
            graphs = page.locator(".plotly-graph-div").count()
            page.wait_for_function("n => document.querySelectorAll('.js-plotly-plot .main-svg').length >= n",
                                   arg=graphs)
            height = page.evaluate("() => document.documentElement.scrollHeight")
            print(f"| {commit} | {run['name']} | {args.width} | {height:,} |")
            page.close()
        browser.close()


if __name__ == "__main__":
    main()
