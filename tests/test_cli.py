"""The command line as a user runs it: real subprocesses, real DuckDB files."""
import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "data" / "demo"


def cli(*args, db=None, timeout=300):
    cmd = [sys.executable, "-m", "evaluators", *args] + (["--db", str(db)] if db else [])
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def table_counts(db):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
                for t in ("datasets", "golden_items", "rag_outputs", "runs", "scores")}
    finally:
        con.close()


def test_help_explains_commands_and_exit_codes():
    out = cli("--help")
    assert out.returncode == 0
    for word in ("run", "export", "metrics", "demo", "exit codes", "RAGSCOPE_DB"):
        assert word in out.stdout
    run_help = cli("run", "--help").stdout
    for flag in ("--golden", "--outputs", "--resume", "--retry-failed", "--metrics", "--context-sep"):
        assert flag in run_help


def test_run_on_the_demo_data_fills_the_tables(tmp_path):
    db = tmp_path / "demo.duckdb"
    out = cli("run", "--golden", str(DEMO / "novel_44557_golden.csv"),
              "--outputs", str(DEMO / "novel_44557_outputs.jsonl"), db=db)
    assert out.returncode == 0, out.stderr
    counts = table_counts(db)
    assert counts["golden_items"] == 103 and counts["rag_outputs"] == 206 and counts["runs"] == 1
    assert counts["scores"] == 206 * len(json.loads(cli("metrics", "--json").stdout))
    assert "basic_search" in out.stdout and "local_search" in out.stdout and "(n=" in out.stdout


def test_run_on_the_ragchecker_file_with_golden_and_answers_in_one_file(tmp_path, shared_data):
    db = tmp_path / "rc.duckdb"
    out = cli("run", "--golden", str(shared_data / "ragchecker_examples" / "checking_inputs.json"),
              "--metrics", "exact_match,rouge_l,number_match", db=db)
    assert out.returncode == 0, out.stderr
    counts = table_counts(db)
    assert counts["datasets"] == 1 and counts["golden_items"] == 2 and counts["rag_outputs"] == 2
    assert counts["scores"] == 2 * 3


def test_bad_input_lists_every_problem_and_writes_nothing(tmp_path):
    db = tmp_path / "bad.duckdb"
    golden = tmp_path / "gold.jsonl"
    golden.write_text('{"question_id": "a", "question": "Q?", "reference": "R"}\n{"question_id": "a", "question": "Q2?"}\n')
    outputs = tmp_path / "out.jsonl"
    outputs.write_text('{"question_id": "a", "answer": "x", "contexts": ["c"]}\n{"question_id": "b", "answer": "y"}\n')
    out = cli("run", "--golden", str(golden), "--outputs", str(outputs), db=db)
    assert out.returncode == 2
    assert "gold.jsonl" in out.stderr and "row 2" in out.stderr
    assert "nothing was loaded" in out.stderr
    assert not db.exists() or table_counts(db)["datasets"] == 0


def test_unknown_metric_and_missing_run_are_usage_errors(tmp_path):
    db = tmp_path / "x.duckdb"
    out = cli("run", "--golden", str(DEMO / "novel_44557_golden.csv"), "--outputs",
              str(DEMO / "novel_44557_outputs.jsonl"), "--metrics", "exact_match,bogus", db=db)
    assert out.returncode == 2 and "bogus" in out.stderr
    out = cli("export", "run-nope", db=db)
    assert out.returncode == 2 and "no run" in out.stderr


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("demo") / "demo.duckdb"
    out = cli("demo", "graphrag", db=db)  # the one demo these tests know (all of them take minutes)
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.split()[0]
    assert "simulated outputs" in out.stdout and "computed in" in out.stdout
    again = cli("demo", "graphrag", db=db)  # idempotent: the finished demo run is reused
    assert again.returncode == 0 and again.stdout.split()[0] == run_id and "already finished" in again.stdout
    return db, run_id


@pytest.mark.parametrize("fmt", ["csv", "parquet", "json"])
def test_export_writes_every_score_cell(demo_db, tmp_path, fmt):
    db, run_id = demo_db
    out_file = tmp_path / f"scores.{fmt}"
    out = cli("export", run_id, "--out", str(out_file), db=db)
    assert out.returncode == 0, out.stderr
    frame = {"csv": pd.read_csv, "parquet": pd.read_parquet, "json": pd.read_json}[fmt](out_file)
    assert len(frame) == table_counts(db)["scores"]
    assert {"question_id", "question_type", "method", "metric", "value", "status"} <= set(frame.columns)


def test_wide_export_has_one_row_per_sample(demo_db, tmp_path):
    db, run_id = demo_db
    out_file = tmp_path / "wide.csv"
    assert cli("export", run_id, "--wide", "--out", str(out_file), db=db).returncode == 0
    frame = pd.read_csv(out_file)
    assert len(frame) == 206 and "exact_match" in frame.columns


def test_csv_export_defuses_spreadsheet_formulas():
    from evaluators.cli import _defuse_formulas

    frame = pd.DataFrame({"answer": ["=HYPERLINK(\"http://x\")", "-0.133%", "fine"], "value": [1.0, -1.0, 0.5]})
    out = _defuse_formulas(frame)
    assert out["answer"].tolist() == ["'=HYPERLINK(\"http://x\")", "'-0.133%", "fine"]
    assert out["value"].tolist() == [1.0, -1.0, 0.5]


def test_metrics_lists_the_catalogue_with_scale_and_seed():
    rows = json.loads(cli("metrics", "--json").stdout)
    ids = {r["id"] for r in rows}
    assert {"exact_match", "keyword_coverage", "number_match", "answer_completeness", "citation_quality",
            "checks_pass_rate", "rouge_l", "dont_know"} <= ids
    assert all(r["seed"] and r["scale"] and r["formula"] for r in rows)


def test_a_database_held_by_another_process_exits_3(tmp_path):
    db = tmp_path / "held.duckdb"
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import duckdb, time; c = duckdb.connect({str(db)!r}); print('ok', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ok"
        out = cli("runs", db=db)
        assert out.returncode == 3 and "in use by another process" in out.stderr
    finally:
        holder.kill()
        holder.wait()


def test_the_same_method_answering_in_two_files_is_refused(tmp_path):
    db = tmp_path / "dup.duckdb"
    golden = tmp_path / "gold.jsonl"
    golden.write_text('{"question_id": "a", "question": "Q?", "reference": "R"}\n')
    for name in ("one.jsonl", "two.jsonl"):
        (tmp_path / name).write_text('{"question_id": "a", "answer": "x", "contexts": []}\n')
    out = cli("run", "--golden", str(golden), "--outputs", f"local={tmp_path / 'one.jsonl'}",
              "--outputs", f"local={tmp_path / 'two.jsonl'}", db=db)
    assert out.returncode == 2
    assert "two.jsonl, row 1" in out.stderr and "already has an answer from method 'local' in one.jsonl" in out.stderr
    assert not db.exists()


def test_labels_import_end_to_end(tmp_path):
    from evaluators.store import close_store
    from tests.test_labels import GOOD_ROWS, HEADER, tiny_run

    db = tmp_path / "labels.duckdb"
    run_id = tiny_run(db, tmp_path)
    close_store(db)  # the CLI is another process: DuckDB lets one hold the file
    bad = tmp_path / "bad.csv"
    bad.write_text(HEADER + "\n".join(GOOD_ROWS) + "\nq9,local,ann,3,,wrong\nq1,local,,x,,\n")
    out = cli("labels", "import", str(bad), "--run", run_id, db=db)
    assert out.returncode == 2, out.stderr
    assert "bad.csv, row 4, field 'question_id': question id 'q9'" in out.stderr
    assert "bad.csv, row 5, field 'annotator': the annotator is empty" in out.stderr
    assert "bad.csv, row 5, field 'faithfulness': rating 'x' is not a number" in out.stderr

    def n_annotations():
        con = duckdb.connect(str(db), read_only=True)
        try:
            return con.execute("SELECT count(*) FROM annotations").fetchall()[0][0]
        finally:
            con.close()

    assert n_annotations() == 0
    good = tmp_path / "ratings.csv"
    good.write_text(HEADER + "\n".join(GOOD_ROWS) + "\n")
    out = cli("labels", "import", str(good), "--run", run_id, db=db)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (f"imported 6 ratings of 2 dimensions (correctness, faithfulness) by 2 annotators "
                                  f"from ratings.csv into run {run_id}")
    again = cli("labels", "import", str(good), "--run", run_id, db=db)
    assert again.returncode == 0 and "imported into run" in again.stdout and "nothing stored again" in again.stdout
    assert n_annotations() == 6
    unknown = cli("labels", "import", str(good), "--run", "run-nope", db=db)
    assert unknown.returncode == 2 and "no run 'run-nope'" in unknown.stderr
