"""The Data and Evaluate screens' views against a copy of the demo database: the stored datasets as listed,
and a run's cells in all and per metric."""
from __future__ import annotations



from evaluators.runs import lifecycle
from evaluators.queries import datasets as qd
from evaluators.queries import evaluate as qe


def test_the_stored_datasets_are_listed_with_rows_methods_and_format(demo):
    store, _ = demo
    stored = qd.view(store)["datasets"]
    assert list(stored.columns) == ["name", "format", "golden questions", "answers", "methods", "runs", "added",
                                    "dataset"]
    stored = stored.set_index("name")
    golden, outputs = stored.loc["novel_44557_golden.csv"], stored.loc["novel_44557_outputs.jsonl"]
    assert (golden["format"], golden["golden questions"], golden["answers"], golden["runs"]) == ("csv", 103, 0, 1)
    assert (outputs["format"], outputs["golden questions"], outputs["answers"]) == ("jsonl", 0, 206)
    assert outputs["methods"] == "basic_search, local_search" and outputs["runs"] == 1
    assert golden["dataset"].startswith("ds_")


def test_a_runs_cells_in_all_and_per_metric(demo):
    store, _ = demo
    run_id = store.cursor().execute("SELECT run_id FROM runs").fetchall()[0][0]
    tables = qe.view(store, run_id)
    ok = store.cursor().execute("SELECT count(*) FROM scores WHERE run_id = ? AND status = 'ok'", [run_id]).fetchall()
    totals = tables["totals"].iloc[0]
    assert totals["Scored"] == ok[0][0] and totals["Failed"] == totals["Not computed yet"] == 0
    cells = tables["cells"]
    assert list(cells.columns) == ["metric", "ok", "not applicable", "failed", "samples", "not computed"]
    assert list(cells["metric"]) == list(store.run(run_id)["metrics"])  # in the run's order
    assert (cells["ok"] + cells["not applicable"] + cells["failed"] == cells["samples"]).all()

    golden, outputs = store.run(run_id)["golden_dataset_id"], list(store.run(run_id)["outputs_dataset_ids"])
    fresh = lifecycle.start_stored(store, golden, outputs, lifecycle.RunSpec(metrics=["exact_match"]))
    assert qe.view(store, fresh)["totals"].to_dict("records") == [
        {"Scored": 0, "Not applicable": 0, "Failed": 0, "Not computed yet": 206}]  # what a resume computes


def test_a_golden_set_names_relevant_documents_by_ids_or_reference_contexts(tmp_path):
    """Evaluate offers the rank metrics only for a golden set that names relevant documents (qd.names_relevant)."""
    import json

    from evaluators import loaders
    from evaluators.store import close_store, open_store
    rows = {"plain": {}, "ids": {"relevant_ids": ["d1"]}, "contexts": {"reference_contexts": ["Paris is the capital."]}}
    store = open_store(path := tmp_path / "golden.duckdb")
    try:
        for name, extra in rows.items():
            golden = tmp_path / f"{name}.jsonl"
            golden.write_text(json.dumps({"question_id": "q1", "question": "Capital of France?", "reference": "Paris",
                                          **extra}) + "\n")
            dataset_id = store.save_dataset(loaders.load(golden, role="golden")).dataset_id
            assert qd.names_relevant(store, dataset_id) == (name != "plain"), name
    finally:
        close_store(path)
