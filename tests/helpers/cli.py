"""The command line as a user calls it (`cli`), the demo's input files, a tiny golden set with outputs."""
import contextlib
import io
import json
import os
import subprocess
import sys

import duckdb

from tests.helpers import ROOT


DEMO = ROOT / "data" / "demo"


def cli(*args, db=None, env=None) -> subprocess.CompletedProcess:
    """`python -m evaluators ARGS [--db DB]` called in this process, the imports paid once per session instead of once
    per call: its exit code, stdout and stderr. The call sees the environment without OPENAI_* (a user's key or
    server never reaches a test) plus `env`, and the checkout as its folder; the stores it opened are closed after it,
    as its process would have closed them on exit. `cli_process` is for what only a process shows."""
    from evaluators import store
    from evaluators.cli import main

    argv = [str(a) for a in args] + (["--db", str(db)] if db else [])
    touched = {k for k in os.environ if k.startswith("OPENAI_")} | set(env or {})
    saved = {k: os.environ.pop(k) for k in touched if k in os.environ}
    os.environ.update(env or {})
    opened_before = set(store._stores)
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.chdir(ROOT), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse: --help and usage errors
                code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 2
    finally:
        for k in touched:
            os.environ.pop(k, None)
        os.environ.update(saved)
        for path in set(store._stores) - opened_before:
            store.close_store(path)
    return subprocess.CompletedProcess(["python", "-m", "evaluators", *argv], code, out.getvalue(), err.getvalue())


def cli_process(*args, db=None, env=None, timeout=300) -> subprocess.CompletedProcess:
    """`python -m evaluators ARGS [--db DB]` in a process of its own, for what crosses the process boundary: the
    entry point, a file another process holds, limits and signals."""
    argv = [sys.executable, "-m", "evaluators", *map(str, args)] + (["--db", str(db)] if db else [])
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")} | (env or {})
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=environ)


def table_counts(db):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
                for t in ("datasets", "golden_items", "rag_outputs", "runs", "scores")}
    finally:
        con.close()


def tiny_files(tmp_path, n=3):
    golden, outputs = tmp_path / "gold.jsonl", tmp_path / "out.jsonl"
    golden.write_text("".join(json.dumps({"question_id": f"q{i}", "question": f"What is {i} plus {i}?",
                                          "reference": f"It is {2 * i}."}) + "\n" for i in range(n)))
    outputs.write_text("".join(json.dumps({"question_id": f"q{i}", "answer": f"The sum is {2 * i}.",
                                           "contexts": [f"{i} plus {i} makes {2 * i}."]}) + "\n" for i in range(n)))
    return golden, outputs
