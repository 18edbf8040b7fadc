"""evaluators/store/ratings.py against real DuckDB files: a labels file read with the loaders' formats, every
bad row named by file, row and field with nothing stored, the all-or-nothing import, the no-op
re-import, and InspectorRAGet's human ratings through the same storing function."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from evaluators import loaders
from evaluators.loaders import inspectorraget
from evaluators.store import ratings
from evaluators.records import LoadError
from evaluators.store import close_store, open_store
from tests.helpers.tiny_run import GOOD_ROWS, HEADER, METHODS, tiny_run, write
from tests.helpers import ROOT

CLAPNQ = ROOT / "tests" / "fixtures" / "inspectorraget_clapnq" / "clapnq_excerpt.json"


@pytest.fixture
def run(tmp_path):
    db = tmp_path / "ratings.duckdb"
    run_id = tiny_run(db, tmp_path)
    yield open_store(db), run_id
    close_store(db)


def stored(store, run_id) -> pd.DataFrame:
    return store.cursor().execute(
        "SELECT question_id, method, author, dimension, rating, label, note, source, source_hash FROM annotations "
        "WHERE run_id = ? ORDER BY question_id, method, author, dimension", [run_id]).df()


def test_a_labels_file_is_stored_with_its_provenance(run, tmp_path):
    store, run_id = run
    path = write(tmp_path / "ratings.csv", HEADER + "\n".join(GOOD_ROWS) + "\n")
    result = ratings.import_file(store, run_id, path)
    assert (result.n, result.dimensions, result.annotators) == (6, ("correctness", "faithfulness"), ("ann", "bob"))
    assert result.summary() == (f"imported 6 ratings of 2 dimensions (correctness, faithfulness) by 2 annotators "
                                f"from ratings.csv into run {run_id}")
    rows = stored(store, run_id)
    assert len(rows) == 6 and set(rows["source"]) == {"ratings.csv"}
    assert set(rows["source_hash"]) == {loaders.read_records(path).content_hash}
    ann = rows[(rows["question_id"] == "q1") & (rows["author"] == "ann")].set_index("dimension")
    assert ann.loc["faithfulness", "rating"] == 4.0 and pd.isna(ann.loc["faithfulness", "label"])
    assert ann.loc["faithfulness", "note"] == "all supported"  # the reason
    assert ann.loc["correctness", "label"] == "correct" and pd.isna(ann.loc["correctness", "rating"])
    assert pd.isna(ann.loc["correctness", "note"])  # no correctness_reason column
    assert store.cursor().execute("SELECT count(*) FROM annotations WHERE created_at IS NULL").fetchall() == [(0,)]


@pytest.mark.parametrize("row, field, words", [
    ("q9,local,ann,3,,correct", "question_id", "question id 'q9' is not a question of this run"),
    ("q1,hybrid,ann,3,,correct", "method", "method 'hybrid' is not a method of this run (its methods: basic, local)"),
    ("q1,local,,3,,correct", "annotator", "the annotator is empty"),
    ("q1,local,cy,four,,correct", "faithfulness", "rating 'four' is not a number, but 'faithfulness' holds numeric"),
    ("q1,local,ann,2,,wrong", "faithfulness", "annotator 'ann' already rated question 'q1', method 'local' on "
                                              "'faithfulness' at row 1"),
])
def test_each_bad_row_is_named_by_file_row_and_field_and_nothing_is_stored(run, tmp_path, row, field, words):
    store, run_id = run
    path = write(tmp_path / "bad.csv", HEADER + "\n".join(GOOD_ROWS + [row]) + "\n")
    with pytest.raises(LoadError) as caught:
        ratings.import_file(store, run_id, path)
    problems = caught.value.problems
    assert [(p.file, p.row, p.field) for p in problems][0] == ("bad.csv", 4, field)
    assert words in problems[0].message
    assert f"bad.csv, row 4, field '{field}'" in str(caught.value)
    assert stored(store, run_id).empty  # all or nothing: the three good rows are not stored either


def test_every_problem_is_listed_at_once(run, tmp_path):
    store, run_id = run
    path = write(tmp_path / "bad.csv", HEADER + "q9,local,ann,3,,x\nq1,hybrid,,four,,y\nq1,local,ann,2,,z\n")
    with pytest.raises(LoadError) as caught:
        ratings.import_file(store, run_id, path)
    where = [(p.row, p.field) for p in caught.value.problems]
    # each once (a row's id problem is not repeated per dimension); row 3 is fine
    assert where == [(1, "question_id"), (2, "annotator"), (2, "method"), (2, "faithfulness")]
    assert stored(store, run_id).empty


def test_file_level_problems(run, tmp_path):
    store, run_id = run
    no_annotator = write(tmp_path / "a.csv", "question_id,method,faithfulness\nq1,local,3\n")
    with pytest.raises(LoadError, match=r"a.csv, field 'annotator': no column for the annotator"):
        ratings.import_file(store, run_id, no_annotator)
    ambiguous = write(tmp_path / "b.csv", "question_id,method,rater,faithfulness,correctness,reason\nq1,local,ann,3,4,x\n")
    with pytest.raises(LoadError, match=r"b.csv, field 'reason': one 'reason' column beside 2 dimensions"):
        ratings.import_file(store, run_id, ambiguous)
    no_dimension = write(tmp_path / "c.csv", "question_id,method,annotator,question\nq1,local,ann,Why?\n")
    with pytest.raises(LoadError, match="no rating column"):
        ratings.import_file(store, run_id, no_dimension)
    with pytest.raises(ValueError, match="no run 'run-nope'"):
        ratings.import_file(store, "run-nope", write(tmp_path / "ok.csv", HEADER + GOOD_ROWS[0] + "\n"))
    assert stored(store, run_id).empty


def test_one_reason_column_beside_one_dimension_and_aliases(run, tmp_path):
    store, run_id = run
    path = write(tmp_path / "one.csv", "id,system,rater,question,Faithfulness,reason\n"
                                       "q3,basic,ann,Question q3?,2,half of it\nq3,basic,bob,Question q3?,,\n")
    result = ratings.import_file(store, run_id, path)
    assert (result.n, result.dimensions) == (1, ("Faithfulness",))  # a blank cell is a skipped rating
    row = stored(store, run_id).iloc[0]
    assert (row["question_id"], row["method"], row["author"], row["rating"], row["note"]) == \
        ("q3", "basic", "ann", 2.0, "half of it")


def test_a_number_among_labels_is_a_label(run, tmp_path):
    store, run_id = run
    path = write(tmp_path / "ratings.csv", "question_id,method,annotator,verdict\nq1,local,ann,pass\n"
                                          "q2,local,ann,fail\nq3,local,ann,1\n")
    ratings.import_file(store, run_id, path)
    assert list(stored(store, run_id)["label"]) == ["pass", "fail", "1"]


@pytest.mark.parametrize("suffix", ["jsonl", "json", "parquet"])
def test_every_loader_format_is_read(run, tmp_path, suffix):
    store, run_id = run
    frame = pd.read_csv(pd.io.common.StringIO(HEADER + "\n".join(GOOD_ROWS)), keep_default_na=False)
    path = tmp_path / f"ratings.{suffix}"
    if suffix == "parquet":
        frame.to_parquet(path)
    else:
        frame.to_json(path, orient="records", lines=suffix == "jsonl")
    assert ratings.import_file(store, run_id, path).n == 6


def test_reimporting_the_same_file_is_a_no_op(run, tmp_path):
    store, run_id = run
    path = write(tmp_path / "ratings.csv", HEADER + "\n".join(GOOD_ROWS) + "\n")
    ratings.import_file(store, run_id, path)
    again = ratings.import_file(store, run_id, path.read_bytes(), name="renamed.csv")
    assert again.already_imported and "imported into run" in again.summary() and "nothing stored" in again.summary()
    assert len(stored(store, run_id)) == 6
    corrected = write(tmp_path / "ratings.csv", HEADER + "\n".join(GOOD_ROWS[:1]) + "\nq4,basic,ann,2,,wrong\n")
    assert not ratings.import_file(store, run_id, corrected).already_imported  # new content: appended
    assert len(stored(store, run_id)) == 6 + 4  # 2 rows x 2 dimensions


def test_inspectorraget_ratings_go_through_the_same_storing_function(tmp_path):
    db = tmp_path / "clapnq.duckdb"
    store = open_store(db)
    try:
        dataset = store.save_dataset(loaders.load(CLAPNQ))
        run_id = store.create_run(name="clapnq", golden_dataset_id=dataset.dataset_id,
                                  outputs_dataset_ids=[dataset.dataset_id], judge="offline", judge_model=None,
                                  metrics=["faithfulness"], config={}, n_samples=9)
        records = inspectorraget.human_ratings(json.loads(CLAPNQ.read_text()))
        result = ratings.import_ratings(store, run_id, records, source="clapnq_excerpt.json")
        assert result.n == len(records) == 81 and result.dimensions == ("answer_relevance", "faithfulness", "fluency")
        assert ratings.import_ratings(store, run_id, list(reversed(records)), source="x").already_imported
        assert ratings.import_file(store, run_id, CLAPNQ).n == 81  # the file as it is: its own content hash
        rows = stored(store, run_id)
        assert len(rows) == 2 * 81 and set(rows["source"]) == {"clapnq_excerpt.json"}
        first = records[0]
        match = rows[(rows["question_id"] == first.question_id) & (rows["method"] == first.method)
                     & (rows["author"] == first.annotator) & (rows["dimension"] == first.dimension)]
        assert set(match["rating"]) == {first.value}
        with pytest.raises(LoadError, match="record 1|row 1"):
            ratings.import_ratings(store, run_id, [{"question_id": "nope", "method": first.method, "annotator": "a",
                                                   "dimension": "fluency", "value": 3}], source="bad")
    finally:
        close_store(db)


MALFORMED = ROOT / "tests" / "malformed"


@pytest.mark.parametrize("name, text, row, field, words", [
    ("deep_labels.jsonl", None, 1, "faithfulness", "nested more than 64 levels deep"),
    ("twice.jsonl", '{"question_id": "q1", "method": "local", "annotator": "ann", "faithfulness": 4, '
                    '"faithfulness": 2}\n', 1, "faithfulness", "key 'faithfulness' appears twice"),
    ("cased.csv", "question_id,method,annotator,faithfulness,Faithfulness \nq1,local,ann,4,2\n", None, "Faithfulness",
     "columns 'faithfulness' and 'Faithfulness' have the same name once case and spaces are ignored"),
])
def test_hostile_labels_files_are_refused_with_file_row_and_field(run, tmp_path, name, text, row, field, words):
    store, run_id = run
    path = MALFORMED / name if text is None else write(tmp_path / name, text)
    with pytest.raises(LoadError) as caught:
        ratings.import_file(store, run_id, path)
    problem = caught.value.problems[0]
    assert (problem.file, problem.row, problem.field) == (name, row, field) and words in problem.message
    assert stored(store, run_id).empty


def test_ids_are_matched_in_nfc_and_invisible_characters_are_refused(tmp_path):
    db = tmp_path / "ratings.duckdb"
    golden = tmp_path / "golden.jsonl"
    write(golden, json.dumps({"question_id": "caf\u00e9", "question": "Where?", "reference": "Here."}) + "\n")
    outputs = write(tmp_path / "outputs.jsonl", json.dumps({"question_id": "caf\u00e9", "method": "r\u00e9ponse",
                                                            "answer": "There."}) + "\n")
    store = open_store(db)
    try:
        g = store.save_dataset(loaders.load(golden, role="golden"))
        o = store.save_dataset(loaders.load(outputs, role="outputs"))
        run_id = store.create_run(name="nfc", golden_dataset_id=g.dataset_id, outputs_dataset_ids=[o.dataset_id],
                                  judge="offline", judge_model=None, metrics=["faithfulness"], config={}, n_samples=1)
        nfd = write(tmp_path / "nfd.csv", "question_id,method,annotator,faithfulness\ncafe\u0301,re\u0301ponse,ann,4\n")
        assert ratings.import_file(store, run_id, nfd).n == 1  # the same ids, written decomposed
        assert list(stored(store, run_id)[["question_id", "method"]].iloc[0]) == ["caf\u00e9", "r\u00e9ponse"]
        hidden = write(tmp_path / "hidden.csv", "question_id,method,annotator,faithfulness\n"
                                                "caf\u00e9,r\u00e9ponse\u200b,bob,3\n")
        with pytest.raises(LoadError) as caught:
            ratings.import_file(store, run_id, hidden)
        problem = caught.value.problems[0]
        assert (problem.file, problem.row, problem.field) == ("hidden.csv", 1, "method")
        assert "invisible character, U+200B ZERO WIDTH SPACE" in problem.message
    finally:
        close_store(db)


def test_ratings_left_out_are_counted_per_reason_with_their_rows(run, tmp_path):
    store, run_id = run
    rows = ["q1,local,ann,4,,correct", "q1,local,bob,nan,,correct", "q2,basic,ann,NaN,,", "q2,basic,bob,,,wrong",
            "q3,local,ann,2,,wrong", "q3,local,bob,,,", "q4,basic,ann,nan,,ok"]
    path = write(tmp_path / "gaps.csv", HEADER + "\n".join(rows) + "\n")
    result = ratings.import_file(store, run_id, path)
    assert result.n == 7 and len(stored(store, run_id)) == 7
    assert result.skipped == {"NaN": (2, 3, 7), "blank": (3, 4, 6, 6)}
    assert result.summary().endswith("; skipped 7 ratings with no value: 4 blank (rows 3, 4, 6), 3 NaN (rows 2, 3, 7)")
    again = ratings.import_file(store, run_id, path)
    assert again.already_imported and again.summary().endswith("3 NaN (rows 2, 3, 7)")
    many = write(tmp_path / "many.csv", "question_id,method,annotator,faithfulness\n" +
                 "".join(f"q{1 + i % 4},{METHODS[i % 2]},a{i},nan\n" for i in range(8)) + "q1,local,ann,3\n")
    assert ratings.import_file(store, run_id, many).summary().endswith(
        "; skipped 8 ratings with no value: 8 NaN (rows 1, 2, 3, 4, 5, ...)")
    assert ratings.skipped_text({}) == ""
