"""Check: a change that should not move a score moves none. The demo runs built by two revisions, compared cell by
cell (every scores column but the run id and the time written; claims; chunk verdicts), runs matched by name.

    .venv/bin/python bench/same_scores.py REV [REV2]    # REV2: the working tree when left out

Each revision is checked out in a temporary git worktree beside this one (`../shared` must be beside both) and runs
`python -m evaluators demo --db <a new file>` with this checkout's .venv; the working tree runs in place. Prints the
rows of each table and how many differ either way, and writes them to bench/results/same_scores.md unless
--no-write; exits 1 if any row differs.
"""
from __future__ import annotations

import argparse
import datetime as dt
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parent.parent
TABLES = ("scores", "claims", "chunk_verdicts")
IGNORED = {"run_id", "created_at"}
RESULTS = ROOT / "bench" / "results" / "same_scores.md"


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def build(rev: str | None, db: Path) -> None:
    """The demos as `rev` computes them (None: this working tree) into `db`."""
    if rev is None:
        subprocess.run([sys.executable, "-m", "evaluators", "demo", "--db", str(db)], cwd=ROOT, check=True)
        return
    tree = ROOT.parent / f".same-scores-{rev[:12]}"
    subprocess.run(["git", "worktree", "add", "--detach", "-f", str(tree), rev], cwd=ROOT, check=True)
    try:
        # run from the tree: its evaluators/ comes before the editable install of this checkout
        subprocess.run([sys.executable, "-m", "evaluators", "demo", "--db", str(db)], cwd=tree, check=True)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=True)


def differences(before: Path, after: Path) -> dict[str, tuple[int, int, int, int]]:
    """table -> (rows before, rows after, rows of before not in after, rows of after not in before)."""
    con = duckdb.connect()
    con.execute(f"ATTACH '{before}' AS b (READ_ONLY); ATTACH '{after}' AS a (READ_ONLY)")
    out = {}
    for table in TABLES:
        columns = [c[0] for c in con.execute(f"DESCRIBE b.{table}").fetchall() if c[0] not in IGNORED]
        cells = ", ".join(f"t.{c}" for c in columns)

        def rows(side: str) -> str:
            return f"SELECT r.name, {cells} FROM {side}.{table} t JOIN {side}.runs r USING (run_id)"

        count = [con.execute(f"SELECT count(*) FROM {s}.{table}").fetchone()[0] for s in ("b", "a")]
        lost = con.execute(f"SELECT count(*) FROM ({rows('b')} EXCEPT ALL {rows('a')})").fetchone()[0]
        new = con.execute(f"SELECT count(*) FROM ({rows('a')} EXCEPT ALL {rows('b')})").fetchone()[0]
        out[table] = (*count, lost, new)
    con.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rev", help="the revision before (e.g. main~3)")
    parser.add_argument("rev2", nargs="?", help="the revision after (default: the working tree)")
    parser.add_argument("--no-write", action="store_true", help=f"do not write {RESULTS.relative_to(ROOT)}")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        before, after = Path(tmp) / "before.duckdb", Path(tmp) / "after.duckdb"
        build(args.rev, before)
        build(args.rev2, after)
        found = differences(before, after)
    head = (f"The demo runs built by {args.rev} and by {args.rev2 or 'the working tree'} "
            f"({git('rev-parse', '--short', args.rev2 or 'HEAD')}{'' if args.rev2 else ' + changes'}), "
            f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, compared row by row (bench/same_scores.py):")
    lines = [f"- {table}: {n_before:,} rows before, {n_after:,} after; {lost} only before, {new} only after"
             for table, (n_before, n_after, lost, new) in found.items()]
    print("\n".join([head, *lines]))
    if not args.no_write:
        RESULTS.write_text("# Same scores before and after\n\n" + head + "\n\n" + "\n".join(lines) + "\n")
    return 1 if any(lost or new or n_before != n_after for n_before, n_after, lost, new in found.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
