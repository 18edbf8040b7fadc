"""`evaluators.evaluate()`: the one way a run is made, on real DuckDB files, against the CLI on the same files."""
from __future__ import annotations

import json
import re

import duckdb
import pandas as pd
import pytest

from evaluators import Evaluation, OfflineJudge, OpenAIJudge, evaluate
from evaluators.api import read_inputs
from evaluators.demo import DEMO_GOLDEN, DEMO_OUTPUTS
from evaluators.records import LoadError
from evaluators.store import close_store
from tests.helpers import ROOT
from tests.helpers.cli import tiny_files, cli

# judged (offline), embedded and deterministic metrics: every kind of cell
METRICS = ["exact_match", "rouge_l", "faithfulness", "context_precision", "answer_correctness_f1",
           "judge_correctness", "answer_class", "semantic_similarity"]
CELL = "question_id, method, metric, value, norm, status, judge, detail, label, repeats"


def stored(db, run_id: str) -> dict[str, list[tuple]]:
    """A run's cells and claims as stored, in a fixed order."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {
            "scores": con.execute(f"SELECT {CELL} FROM scores WHERE run_id = ? ORDER BY ALL", [run_id]).fetchall(),
            "claims": con.execute("SELECT * EXCLUDE (run_id) FROM claims WHERE run_id = ? ORDER BY ALL",
                                  [run_id]).fetchall(),
            "config": json.loads(con.execute("SELECT config FROM runs WHERE run_id = ?", [run_id]).fetchall()[0][0]),
        }
    finally:
        con.close()


def test_evaluate_on_dataframes_stores_the_same_cells_as_run_on_the_files(tmp_path):
    by_cli = cli("run", "--golden", str(DEMO_GOLDEN), "--outputs", str(DEMO_OUTPUTS), "--metrics", ",".join(METRICS),
                 db=tmp_path / "cli.duckdb")
    assert by_cli.returncode == 0, by_cli.stderr
    cli_run = re.search(r"^run (\S+)$", by_cli.stderr, re.MULTILINE).group(1)

    golden = pd.read_csv(DEMO_GOLDEN)
    outputs = pd.read_json(DEMO_OUTPUTS, lines=True)
    result = evaluate(golden, outputs, metrics=METRICS, db=tmp_path / "api.duckdb")
    assert result.run["status"] == "finished"
    close_store(tmp_path / "api.duckdb")

    ours, theirs = stored(tmp_path / "api.duckdb", result.run_id), stored(tmp_path / "cli.duckdb", cli_run)
    assert len(ours["scores"]) == 206 * len(METRICS)
    assert ours["scores"] == theirs["scores"]  # value, norm, status, detail, label: byte for byte
    assert ours["claims"] == theirs["claims"] and ours["claims"]
    assert ours["config"] == theirs["config"]  # one shape whoever made the run


def test_the_result_reads_back_scores_wide_and_the_overview_table(tmp_path):
    golden, outputs = tiny_files(tmp_path)
    records = [json.loads(line) for line in outputs.read_text().splitlines()]
    result = evaluate(golden, {"adder": records}, metrics=["exact_match", "number_match"], db=tmp_path / "r.duckdb",
                      name="tiny")
    try:
        assert isinstance(result, Evaluation) and result.run["name"] == "tiny"
        scores = result.scores
        assert set(scores["method"]) == {"adder"} and len(scores) == 6
        assert scores.set_index(["question_id", "metric"]).loc[("q1", "number_match"), "value"] == 1.0
        wide = result.wide()
        assert list(wide["question_id"]) == ["q0", "q1", "q2"] and {"exact_match", "number_match"} <= set(wide)
        summary = result.summary()
        assert summary.loc["number_match", "adder"] == 1.0  # every answer states the reference's number
        assert summary.loc["number_match", "adder n"] == "3/3"
    finally:
        close_store(tmp_path / "r.duckdb")


def test_without_a_database_the_run_goes_to_a_temporary_file(tmp_path):
    golden, outputs = tiny_files(tmp_path)
    result = evaluate(str(golden), str(outputs), metrics=["exact_match"])
    try:
        assert "ragscope-" in result.store.path and result.store.path.endswith(".duckdb")
        assert result.run["judge"] == OfflineJudge.name and len(result.scores) == 3
    finally:
        close_store(result.store.path)


def test_bad_input_lists_every_problem_and_stores_nothing(tmp_path):
    golden, _ = tiny_files(tmp_path)
    answers = [{"question_id": "q0", "answer": "0"}, {"answer": "2"}]
    unknown = [{"question_id": "q0", "answer": "0"}, {"question_id": "nope", "answer": "1"}]
    db = tmp_path / "bad.duckdb"
    with pytest.raises(LoadError) as failed:
        evaluate(golden, {"m": answers, "n": unknown}, db=db)
    text = str(failed.value)
    assert "m.jsonl, row 2, field 'question_id'" in text  # names the table, the row and the field
    assert "n.jsonl" in text and "nope" in text  # and every problem, of every table, at once
    assert not db.exists()
    with pytest.raises(ValueError, match="concurrency must be"):  # options are checked before any input is read
        evaluate(tmp_path / "missing.csv", judge=OpenAIJudge("m", concurrency=0), db=db)
    with pytest.raises(KeyError, match="bogus"):
        evaluate(golden, {"m": answers}, metrics=["bogus"], db=db)
    with pytest.raises(ValueError, match="gold.jsonl holds no answers: give the outputs too"):
        evaluate(golden, db=db)
    assert not db.exists()


def test_outputs_come_as_one_source_a_list_or_by_method(tmp_path):
    golden, outputs = tiny_files(tmp_path)
    frame = pd.read_json(outputs, lines=True)
    assert [s.output.method for s in read_inputs(golden, frame).plan.samples] == ["outputs"] * 3  # as a file would be
    by_method = read_inputs(golden, {"a": frame, "b": str(outputs)})
    assert sorted({s.output.method for s in by_method.plan.samples}) == ["a", "b"]
    listed = read_inputs(golden, [("a", frame), outputs])
    assert sorted({s.output.method for s in listed.plan.samples}) == ["a", "out"]  # a file: named by its stem
    both = read_inputs(frame.assign(reference="x", question="What?"))  # one table with questions and answers
    assert len(both.plan.samples) == 3


def test_the_readme_example_runs(tmp_path, monkeypatch):
    text = (ROOT / "README.md").read_text()
    example = re.search(r"## From Python\n.*?```python\n(.*?)```", text, re.DOTALL).group(1)
    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    exec(compile(example, "README.md", "exec"), namespace)  # noqa: S102 -- our own README's example
    result = namespace["result"]
    try:
        summary = result.summary()
        assert {"basic_search", "local_search"} <= set(summary.columns)
        assert set(summary.index) == {"exact_match", "rouge_l", "faithfulness", "answer_correctness_f1"}
    finally:
        close_store(result.store.path)


def test_runs_compared_and_gated_from_python(tmp_path):
    db, metrics = tmp_path / "loop.duckdb", ["rouge_l", "keyword_coverage", "answer_completeness"]
    outputs = pd.read_json(DEMO_OUTPUTS, lines=True)
    worse = outputs.copy()
    third = worse.index % 3 == 0  # a third of the answers replaced by another question's answer
    worse.loc[third, "answer"] = list(outputs["answer"].shift(-2).fillna("I don't know.")[third])
    released = evaluate(DEMO_GOLDEN, outputs, metrics=metrics, db=db, name="released")
    same = evaluate(DEMO_GOLDEN, outputs, metrics=metrics, db=db, name="same outputs again")
    broken = evaluate(DEMO_GOLDEN, worse, metrics=metrics, db=db, name="a third wrong")
    try:
        assert same.gate(released, metrics=metrics).passed
        failed = broken.gate(released, method="local_search", metrics=metrics)
        assert not failed.passed and set(failed.regressions["metric"]) == set(metrics)
        tables = broken.compare(["local_search"], baseline=f"{released.run_id}:local_search")
        summary = tables["summary"].iloc[0]
        assert (summary["method"], summary["baseline"]) == ("local_search", f"{released.run_id}:local_search")
        assert summary["significantly worse"] == len(metrics) and summary["left out (reference differs)"] == 0
    finally:
        close_store(db)
