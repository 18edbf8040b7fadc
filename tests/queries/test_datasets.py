"""The Data and Evaluate screens' views against a copy of the demo database: the stored datasets as listed,
and a run's cells in all and per metric."""
from __future__ import annotations

import shutil

import pytest

from evaluators.runs import lifecycle
from evaluators.queries import datasets as qd
from evaluators.queries import evaluate as qe
from evaluators.store import close_store, open_store


@pytest.fixture
def demo(demo_db_file, tmp_path):
    db = tmp_path / "demo.duckdb"
    shutil.copy(demo_db_file, db)
    store = open_store(db)
    yield store
    close_store(db)


def test_the_stored_datasets_are_listed_with_rows_methods_and_format(demo):
    stored = qd.view(demo)["datasets"]
    assert list(stored.columns) == ["name", "format", "golden questions", "answers", "methods", "runs", "added",
                                    "dataset"]
    stored = stored.set_index("name")
    golden, outputs = stored.loc["novel_44557_golden.csv"], stored.loc["novel_44557_outputs.jsonl"]
    assert (golden["format"], golden["golden questions"], golden["answers"], golden["runs"]) == ("csv", 103, 0, 1)
    assert (outputs["format"], outputs["golden questions"], outputs["answers"]) == ("jsonl", 0, 206)
    assert outputs["methods"] == "basic_search, local_search" and outputs["runs"] == 1
    assert golden["dataset"].startswith("ds_")


def test_a_runs_cells_in_all_and_per_metric(demo):
    run_id = demo.cursor().execute("SELECT run_id FROM runs").fetchall()[0][0]
    tables = qe.view(demo, run_id)
    ok = demo.cursor().execute("SELECT count(*) FROM scores WHERE run_id = ? AND status = 'ok'", [run_id]).fetchall()
    totals = tables["totals"].iloc[0]
    assert totals["Scored"] == ok[0][0] and totals["Failed"] == totals["Not computed yet"] == 0
    cells = tables["cells"]
    assert list(cells.columns) == ["metric", "ok", "not applicable", "failed", "samples", "not computed"]
    assert list(cells["metric"]) == list(demo.run(run_id)["metrics"])  # in the run's order
    assert (cells["ok"] + cells["not applicable"] + cells["failed"] == cells["samples"]).all()

    golden, outputs = demo.run(run_id)["golden_dataset_id"], list(demo.run(run_id)["outputs_dataset_ids"])
    fresh = lifecycle.start_stored(demo, golden, outputs, lifecycle.RunSpec(metrics=["exact_match"]))
    assert qe.view(demo, fresh)["totals"].to_dict("records") == [
        {"Scored": 0, "Not applicable": 0, "Failed": 0, "Not computed yet": 206}]  # what a resume computes
