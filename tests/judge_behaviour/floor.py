"""Rewrite floor.json from what the judge passes now: `python -m tests.judge_behaviour.floor [--lower]`.

Run it deliberately, after the judge improved. It refuses to write a floor below the current one (a capability
passing fewer cases, or a listed case now failing) unless --lower is given: lowering the floor hides a regression,
so it needs a reason stated in the commit.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from tests.judge_behaviour.suite import FLOOR_FILE, below_floor, floor_of, read_floor, report, run_suite


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.judge_behaviour.floor", description=__doc__.split("\n")[0])
    parser.add_argument("--lower", action="store_true", help="write the floor even where it goes down")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    results = run_suite()
    old = read_floor() if FLOOR_FILE.exists() else None
    print(report(results, old))
    print(f"({time.perf_counter() - start:.0f} s)")
    if old and (lost := below_floor(results, old)) and not args.lower:
        print("not written: below the current floor (use --lower to accept):\n  " + "\n  ".join(lost))
        return 1
    FLOOR_FILE.write_text(json.dumps(floor_of(results), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {FLOOR_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
