"""`run --criteria FILE` and `metrics --criteria FILE`: the analyst's criteria from a file, stored with the run as
metrics of their own (not applicable with the offline judge, saying why); a bad file exits 2 before a database is
created."""
import json

import duckdb

from evaluators.api import evaluate
from evaluators.metrics.criteria import NEEDS_LLM
from evaluators.records.criteria import Criterion
from evaluators.store import open_store
from tests.helpers.cli import cli, tiny_files
from tests.helpers.criteria_files import CRITERIA, IDS, criteria_file, good_files


def _cells(db, run_id):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT metric, status, value, detail FROM scores WHERE run_id = ? ORDER BY metric",
                           [run_id]).fetchall()
    finally:
        con.close()


def test_a_run_with_three_criteria_and_the_offline_judge_stores_them_not_applicable(tmp_path):
    golden, outputs = tiny_files(tmp_path)
    db = tmp_path / "r.duckdb"
    out = cli("run", "--golden", golden, "--outputs", outputs, "--metrics", "exact_match",
              "--criteria", good_files(tmp_path)["yaml"], db=db)
    assert out.returncode == 0, out.stderr
    assert "3 criteria of yours (names_the_source, plain_language, no_legal_advice): not applicable" in out.stderr
    run_id = out.stderr.split("run ", 1)[1].split()[0]
    cells = _cells(db, run_id)
    own = [c for c in cells if c[0] in IDS]
    assert len(own) == 3 * 3 and {c[0] for c in own} == set(IDS)
    assert all(status == "not_applicable" and value is None and "needs an LLM judge" in detail
               for _, status, value, detail in own)
    assert {c[1] for c in cells if c[0] == "exact_match"} == {"ok"}
    stored = open_store(db).user_metrics(run_id)
    assert [(s["metric"], s["kind"]) for s in stored] == sorted((i, "criterion") for i in IDS)
    by_id = {s["metric"]: s for s in stored}
    expected = {c["id"]: Criterion.of_definition(c) for c in CRITERIA}
    assert all(by_id[i]["version"] == expected[i].version for i in IDS)  # the file's text, versioned
    assert by_id["plain_language"]["definition"]["levels"] == {"1": "jargon throughout", "5": "plain throughout"}
    for i in IDS:
        assert f"{i} " in out.stdout  # the run's summary shows them


def test_a_collision_and_an_unknown_scale_exit_2_before_a_database_is_created(tmp_path):
    golden, outputs = tiny_files(tmp_path)
    for n, change, words in ((1, {"id": "faithfulness"}, "field 'id': criterion 'faithfulness': 'faithfulness' is "
                                                          "the id of a built-in metric"),
                             (2, {"scale": "1-10"}, "field 'scale': criterion 'names_the_source': unknown scale")):
        bad = criteria_file(tmp_path / f"bad{n}.json", [CRITERIA[1], {**CRITERIA[0], **change}])
        db = tmp_path / f"never{n}.duckdb"
        out = cli("run", "--golden", golden, "--outputs", outputs, "--criteria", bad, db=db)
        assert out.returncode == 2, out.stderr
        assert f"bad{n}.json, row 2, {words}" in out.stderr
        assert not db.exists()


def test_several_files_and_an_id_in_two_of_them(tmp_path):
    golden, outputs = tiny_files(tmp_path)
    first = criteria_file(tmp_path / "first.json", CRITERIA[:1])
    second = criteria_file(tmp_path / "second.json", CRITERIA[1:])
    db = tmp_path / "r.duckdb"
    out = cli("run", "--golden", golden, "--outputs", outputs, "--metrics", "exact_match", "--criteria", first,
              "--criteria", second, "--estimate", db=db)
    assert out.returncode == 0, out.stderr
    assert "3 criteria of yours" in out.stderr and "x 4 metrics" in out.stderr and not db.exists()
    again = cli("run", "--golden", golden, "--outputs", outputs, "--criteria", first, "--criteria",
                good_files(tmp_path)["toml"], db=db)
    assert again.returncode == 2 and not db.exists()
    assert ("criteria.toml, row 1, field 'id': criterion 'names_the_source' is given twice: also in first.json "
            "(criterion 1)") in again.stderr


def test_criteria_belong_to_a_new_run(tmp_path):
    golden, outputs = tiny_files(tmp_path)
    db = tmp_path / "r.duckdb"
    assert cli("run", "--golden", golden, "--outputs", outputs, "--metrics", "exact_match", db=db).returncode == 0
    out = cli("run", "--resume", "run-x", "--criteria", good_files(tmp_path)["json"], db=db)
    assert out.returncode == 2 and "--criteria applies to a new run" in out.stderr


def test_metrics_lists_a_files_criteria_after_the_catalogue(tmp_path):
    catalogue = json.loads(cli("metrics", "--json").stdout)
    listed = json.loads(cli("metrics", "--json", "--criteria", good_files(tmp_path)["json"]).stdout)
    assert listed[:len(catalogue)] == catalogue
    own = listed[len(catalogue):]
    assert [m["id"] for m in own] == IDS and {m["family"] for m in own} == {"criteria"}
    assert [m["scale"] for m in own] == ["0 or 1", "1-5", "0-1"]
    assert own[0]["needs"] == "judge, contexts" and own[2]["needs"] == "judge, reference"
    assert "The answer says which passage its main claim comes from." in own[0]["formula"]
    text = cli("metrics", "--criteria", good_files(tmp_path)["json"]).stdout
    assert "plain_language" in text and "criteria" in text
    bad = cli("metrics", "--criteria", criteria_file(tmp_path / "bad.json", [{"id": "x", "scale": "1-5"}]))
    assert bad.returncode == 2 and "bad.json, row 1, field 'criterion'" in bad.stderr


def test_evaluate_takes_a_criteria_files_path(tmp_path):
    golden, outputs = tiny_files(tmp_path)
    result = evaluate(golden, outputs, metrics=["exact_match"], criteria=good_files(tmp_path)["toml"],
                      db=tmp_path / "api.duckdb")
    scores = result.scores
    own = scores[scores["metric"].isin(IDS)]
    assert len(own) == 9 and set(own["status"]) == {"not_applicable"}
    assert NEEDS_LLM.format(judge="offline") in set(own["detail"])
