"""`python -m evaluators view claims|error_analysis|evaluate|data ... --json` (in-process, on a small run
with HTML payloads and a human label): each prints its screen view's tables, for the same options."""
import json

import pytest

from evaluators.store import close_store, open_store
from tests.helpers.cli_view import tables, view
from tests.helpers.claims_runs import EVIL_METHOD, SCRIPT, build_run


@pytest.fixture(scope="module")
def payload(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli-view")
    db = tmp / "payload.duckdb"
    run_id = build_run(db, tmp)
    store = open_store(db)
    idx, text, verdict = store.cursor().execute(
        "SELECT claim_idx, text, verdict FROM claims WHERE run_id = ? AND question_id = 'q1' AND method = 'basic' "
        "AND source = 'answer' ORDER BY claim_idx LIMIT 1", [run_id]).fetchall()[0]
    store.add_annotation(run_id=run_id, question_id="q1", method="basic", author="ann", claim_source="answer",
                         claim_idx=idx, label="contradicted", judge_label=verdict, claim_text=text, tags=["t"])
    close_store(db)  # the CLI's process opens the file
    return db, run_id


def printed_json(db, *args) -> dict:
    out = view(db, *args, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def as_json(found) -> dict:
    """The view's tables as JSON rows: numbers, texts, lists, null for a missing value, ISO dates."""
    return {name: json.loads(frame.to_json(orient="records", date_format="iso", double_precision=15,
                                           force_ascii=False)) for name, frame in found.items()}


def test_claims_prints_the_question_its_claims_chunks_and_counts(payload):
    db, run_id = payload
    printed = printed_json(db, "claims", run_id, "--question-id", "q1", "--methods", f"{EVIL_METHOD},basic")
    assert printed == as_json(tables(db, "claims", run_id, question_id="q1", methods=[EVIL_METHOD, "basic"]))
    assert list(printed)[:3] == ["question", "answers", "key_scores"]
    assert printed["answers"][0]["answer"].count(SCRIPT) == 1  # uploaded text as stored: JSON escapes nothing
    assert {row["method"] for row in printed["answer_claims"]} == {"basic", EVIL_METHOD}
    assert printed["answer_claims"][0]["human verdict"] == "contradicted"
    assert printed == printed_json(db, "claims", run_id, "--search", "tower")  # the first match: q1, both methods


def test_error_analysis_prints_the_list_a_sample_and_the_agreement(payload):
    db, run_id = payload
    printed = printed_json(db, "error_analysis", run_id, "--sort-metric", "faithfulness", "--limit", "4",
                           "--question-id", "q1", "--method", "basic")
    assert printed == as_json(tables(db, "error_analysis", run_id, sort_metric="faithfulness", limit=4,
                                     question_id="q1", method="basic"))
    assert printed["matches"] == [{"matched": 6, "shown": 4, "sort metric": "faithfulness", "worst first": "lowest"}]
    assert [row["target"] for row in printed["sample_labels"]] == ["A1"]
    assert printed["kappa"][0]["n"] == 1 and printed["labels"][0]["tags"] == ["t"]


def test_evaluate_and_data_print_the_runs_cells_and_the_stored_datasets(payload):
    db, run_id = payload
    printed = printed_json(db, "evaluate", run_id)
    assert printed == as_json(tables(db, "evaluate", run_id))
    assert printed["totals"][0]["Not computed yet"] == 0 and len(printed["cells"]) == 8
    printed = printed_json(db, "data")  # no run: Data shows none
    assert printed == as_json(tables(db, "data", None))
    assert sorted(row["name"] for row in printed["datasets"]) == ["golden.jsonl", "outputs.jsonl"]
