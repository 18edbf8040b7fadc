"""Files from other tools load as they are: haystack's evaluation CSVs (contexts as a Python list
literal) and InspectorRAGet's experiment JSON (tasks, results of several models, human ratings).

The full files are the shared copies in ../shared/data (Apache-2.0); the small excerpts in
tests/fixtures/aragog_haystack and tests/fixtures/inspectorraget_clapnq carry their LICENSE and
SOURCE.md."""
import csv
import io
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from evaluators import cli
from evaluators.loaders.inspectorraget import UNANSWERABLE_REFERENCE, human_ratings
from evaluators.loaders import check_against_golden, load
from evaluators.records import LoadError
from tests.helpers import FIXTURES

HAYSTACK_EXCERPT = FIXTURES / "aragog_haystack" / "detailed_all-MiniLM-L6-v2__top_k1__chunk_size64.csv"
CLAPNQ_EXCERPT = FIXTURES / "inspectorraget_clapnq" / "clapnq_excerpt.json"
CLAPNQ_METHODS = {"GPT-3.5 (Turbo)", "Llama (13b-chat)", "Mistral"}


def _haystack(shared_data: Path, name: str = "detailed_all-MiniLM-L6-v2__top_k1__chunk_size64.csv") -> Path:
    return shared_data / "aragog_haystack" / name


def _clapnq(shared_data: Path) -> Path:
    return shared_data / "inspectorraget_clapnq" / "rag_model_performance.json"


def _csv_with_cells(source: Path, target: Path, contexts_by_row: dict[int, str]) -> Path:
    """A copy of a haystack CSV with the contexts cells of some data rows (1-based) replaced."""
    rows = list(csv.reader(io.StringIO(source.read_text(encoding="utf-8"), newline="")))
    column = rows[0].index("contexts")
    for row, cell in contexts_by_row.items():
        rows[row][column] = cell
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    target.write_text(out.getvalue(), encoding="utf-8")
    return target


def _refusal(source, **options) -> LoadError:
    with pytest.raises(LoadError) as caught:
        load(source, **options)
    return caught.value


# --------------------------------------------------------------------------- haystack


def test_a_haystack_detailed_csv_is_a_golden_set_and_one_method_named_by_the_file(shared_data):
    path = _haystack(shared_data)
    ds = load(path)
    assert (len(ds.golden), len(ds.outputs)) == (107, 107)
    assert ds.columns == {"question": "questions", "reference": "true_answers", "answer": "predicted_answers",
                          "contexts": "contexts"}  # the score columns are not read
    assert {o.method for o in ds.outputs} == {path.stem}  # as any file without a method column
    first = ds.golden[0]
    assert first.question == "What are the two main tasks BERT is pre-trained on?"
    assert first.reference == "Masked LM (MLM) and Next Sentence Prediction (NSP)."
    [chunk] = ds.outputs[0].contexts  # top_k 1: one chunk, its line breaks read from the literal's \n
    assert chunk.chunk_id == "1" and chunk.text.startswith("steps in our\nframework: pre-training and ﬁne-tuning")
    # the prompt told the model to answer "None" when the context does not help: kept as the answer
    assert Counter(o.answer for o in ds.outputs)["None"] == 27
    assert check_against_golden(ds, ds) == []


@pytest.mark.parametrize("name", ["detailed_all-MiniLM-L6-v2__top_k1__chunk_size64.csv",
                                  "detailed_all-MiniLM-L6-v2__top_k3__chunk_size128.csv",
                                  "detailed_all-mpnet-base-v2__top_k2__chunk_size128.csv",
                                  "detailed_msmarco-distilroberta-base-v2__top_k3__chunk_size256.csv"])
def test_every_retrieval_setting_parses_into_top_k_chunks_per_question(shared_data, name):
    ds = load(_haystack(shared_data, name))
    top_k = int(re.search(r"top_k(\d+)", name).group(1))
    assert len(ds.golden) == 107
    assert Counter(len(o.contexts) for o in ds.outputs) == {top_k: 107}
    assert all(chunk.text.strip() for o in ds.outputs for chunk in o.contexts)


def test_the_method_option_names_a_haystack_file_and_its_questions_match_other_settings(shared_data):
    ds = load(HAYSTACK_EXCERPT, method="minilm_top1_chunk64")
    assert {o.method for o in ds.outputs} == {"minilm_top1_chunk64"} and len(ds.golden) == 5
    other = load(_haystack(shared_data, "detailed_all-mpnet-base-v2__top_k2__chunk_size128.csv"), role="outputs")
    assert check_against_golden(other, load(_haystack(shared_data), role="golden")) == []  # ids from the text


def test_bad_contexts_cells_are_each_named_with_file_row_and_field(tmp_path):
    path = _csv_with_cells(HAYSTACK_EXCERPT, tmp_path / "detailed_bad.csv", {
        2: "['unclosed",            # neither JSON nor a Python literal
        3: "['a chunk', 42]",       # a list, but not of texts
        4: "[['a chunk'], [...]]",  # what haystack's error path writes: the list appended to itself
        5: "('a', 'b')",            # a tuple is no list
    })
    error = _refusal(path)
    assert [(p.file, p.row, p.field) for p in error.problems] == [
        ("detailed_bad.csv", 2, "contexts"), ("detailed_bad.csv", 3, "contexts"), ("detailed_bad.csv", 4, "contexts"),
        ("detailed_bad.csv", 5, "contexts")]
    messages = [p.message for p in error.problems]
    assert "not valid JSON" in messages[0] and "nor a Python list of texts" in messages[0]
    assert "chunk 2 is a number (42)" in messages[1]
    assert "chunk 1 is a list" in messages[2]
    assert "single text" in messages[3]  # no leading [: read as joined text, which needs a separator


def test_a_contexts_cell_is_never_run_as_code(tmp_path):
    marker = tmp_path / "ran"
    path = _csv_with_cells(HAYSTACK_EXCERPT, tmp_path / "detailed_evil.csv", {
        1: f"[__import__('pathlib').Path({str(marker)!r}).touch()]"})
    error = _refusal(path)
    assert (error.problems[0].row, error.problems[0].field) == (1, "contexts")
    assert not marker.exists()


def test_baseline_vs_hyde_loads_as_two_methods_through_the_column_mapping(shared_data):
    """One shared `contexts` column: haystack's comparative report keeps the first run's inputs
    (keep_columns=["responses", "ground_truth_answers"] in haystack-evaluation), so the contexts are
    baseline RAG's and HyDE's retrieved chunks are not in the file: HyDE is read without contexts."""
    path = _haystack(shared_data, "baseline_rag_vs_hyde.csv")
    unmapped = _refusal(path)
    assert {p.field for p in unmapped.problems} == {"reference", "answer"}
    assert "baseline_rag_responses" in unmapped.problems[0].message  # the columns found are listed

    baseline = load(path, method="baseline_rag",
                    column_map={"reference": "baseline_rag_ground_truth_answers", "answer": "baseline_rag_responses"})
    hyde = load(path, role="outputs", method="hyde_rag",
                column_map={"answer": "hyde_rag_responses", "contexts": None})
    assert (len(baseline.golden), len(baseline.outputs), len(hyde.outputs)) == (107, 107, 107)
    assert Counter(len(o.contexts) for o in baseline.outputs) == {3: 107}
    assert all(o.contexts == () for o in hyde.outputs)
    assert hyde.outputs[0].answer == "Masked Language Modeling (MLM) and Next Sentence Prediction"
    assert baseline.content_hash != hyde.content_hash  # two datasets from one file
    assert check_against_golden([baseline, hyde], baseline) == []


# --------------------------------------------------------------------------- InspectorRAGet


def test_the_inspectorraget_file_gives_100_questions_and_3_methods(shared_data):
    ds = load(_clapnq(shared_data))
    assert (ds.format, len(ds.golden), len(ds.outputs)) == ("json", 100, 300)
    assert Counter(o.method for o in ds.outputs) == {m: 100 for m in CLAPNQ_METHODS}  # "target" is no method
    assert ds.columns == {"question_id": "task_id", "method": "model", "question": "input", "reference": "targets",
                          "answer": "output", "contexts": "contexts", "question_type": "answerability"}
    assert Counter(g.question_type for g in ds.golden) == {"ANSWERABLE": 80, "UNANSWERABLE": 20}
    unanswerable = [g for g in ds.golden if g.question_type == "UNANSWERABLE"]
    assert {g.reference for g in unanswerable} == {UNANSWERABLE_REFERENCE}  # empty in the file
    assert all(g.reference != UNANSWERABLE_REFERENCE for g in ds.golden if g.question_type == "ANSWERABLE")
    first = ds.outputs[0]
    assert (first.question_id, first.method) == ("ClapNQ::6401197308716204890", "GPT-3.5 (Turbo)")
    assert first.answer.startswith("The document does not provide information")
    [passage] = first.contexts
    assert passage.chunk_id == "a30031da9250e16d8838d13d598b68e4" and passage.text.startswith("Seasonality is")
    assert ds.golden[0].question == "which method of forecasting uses averages to predict future weather"
    assert check_against_golden(ds, ds) == []


def test_the_format_is_recognised_by_its_keys_not_the_file_name():
    ds = load(CLAPNQ_EXCERPT.read_bytes(), name="experiment_export.txt")
    assert (len(ds.golden), len(ds.outputs)) == (3, 9)
    assert [g.question_type for g in ds.golden] == ["ANSWERABLE", "ANSWERABLE", "UNANSWERABLE"]
    assert ds.output_rows == (1, 3, 4, 5, 6, 8, 9, 10, 12)  # row = position in results; 2, 7, 11 are "target"
    assert len(load(CLAPNQ_EXCERPT, role="golden").golden) == 3
    only_outputs = load(CLAPNQ_EXCERPT, role="outputs")
    assert (only_outputs.golden, len(only_outputs.outputs)) == ((), 9)


def test_bad_inspectorraget_results_and_tasks_are_all_listed_and_nothing_loads(tmp_path):
    data = json.loads(CLAPNQ_EXCERPT.read_text(encoding="utf-8"))
    data["results"][0]["task_id"] = "ClapNQ::missing"
    data["tasks"][1]["input"] = [{"speaker": "agent", "text": "hello"}]
    data["tasks"][0]["targets"] = [{"type": "text", "value": ""}]  # an ANSWERABLE task without reference
    data["results"][2]["output"] = 42
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    error = _refusal(path)
    found = {(p.row, p.field): p.message for p in error.problems}
    assert all(p.file == "bad.json" for p in error.problems)
    assert "no task with task_id 'ClapNQ::missing'" in found[(1, "task_id")]
    assert "no turn with speaker 'user'" in found[(5, "input")] and "tasks entry 2" in found[(5, "input")]
    # row 1 names a missing task, 2 is "target", 3 has a bad output: its task is read there all the same
    assert "reference answer is empty" in found[(3, "targets")] and "UNANSWERABLE" in found[(3, "targets")]
    assert "output is a int (42)" in found[(3, "output")]
    assert len(error.problems) == 4  # a task's problem once, at the first result that uses it


def test_human_ratings_are_flat_records_that_match_the_loaded_answers(shared_data):
    data = json.loads(_clapnq(shared_data).read_text(encoding="utf-8"))
    ratings = human_ratings(data)
    # 100 tasks x 3 methods x 3 dimensions x 3 annotators; the rated reference answers are left out
    assert len(ratings) == 2700
    assert Counter(r.dimension for r in ratings) == {"faithfulness": 900, "answer_relevance": 900, "fluency": 900}
    assert Counter(r.method for r in ratings) == {m: 900 for m in CLAPNQ_METHODS}
    assert {r.value for r in ratings} == {1.0, 2.0, 3.0, 4.0}
    assert len({r.annotator for r in ratings}) == 7
    assert Counter(r.reason for r in ratings)["Partially faithful to passage"] > 0
    first = {(r.annotator, r.dimension): r for r in ratings[:9]}
    unfaithful = first[("46542882", "faithfulness")]
    assert (unfaithful.question_id, unfaithful.method, unfaithful.value, unfaithful.reason) == (
        "ClapNQ::6401197308716204890", "GPT-3.5 (Turbo)", 1.0, "Unfaithful to passage")
    assert first[("46542882", "fluency")].reason is None  # an empty reason is no reason
    loaded = {(o.question_id, o.method) for o in load(_clapnq(shared_data)).outputs}
    assert {(r.question_id, r.method) for r in ratings} == loaded


def test_a_rating_off_its_scale_names_file_row_and_field():
    data = json.loads(CLAPNQ_EXCERPT.read_text(encoding="utf-8"))
    data["results"][2]["scores"]["faithfulness"]["46542882"]["value"] = "5"
    with pytest.raises(LoadError) as caught:
        human_ratings(data, file="clapnq_excerpt.json")
    [problem] = caught.value.problems
    assert (problem.file, problem.row, problem.field) == ("clapnq_excerpt.json", 3, "scores.faithfulness.46542882")
    assert "'5' is not on the scale of 'faithfulness'" in problem.message
    with pytest.raises(LoadError, match="not an InspectorRAGet experiment"):
        human_ratings({"results": []})


# --------------------------------------------------------------------------- command line


@pytest.mark.parametrize("path, samples", [
    (("aragog_haystack", "detailed_all-MiniLM-L6-v2__top_k1__chunk_size64.csv"), 107),
    (("inspectorraget_clapnq", "rag_model_performance.json"), 300)])
def test_the_cli_reads_both_formats_as_golden_set_with_answers(shared_data, tmp_path, capsys, path, samples):
    db = tmp_path / "unused.duckdb"
    code = cli.main(["run", "--golden", str(shared_data.joinpath(*path)), "--estimate", "--db", str(db)])
    assert code == cli.EXIT_OK
    assert f"{samples} samples x" in capsys.readouterr().err
    assert not db.exists()  # --estimate writes nothing


def test_the_cli_lists_a_bad_contexts_cell_with_its_row(tmp_path, capsys):
    path = _csv_with_cells(HAYSTACK_EXCERPT, tmp_path / "detailed_bad.csv", {3: "['a chunk', 42]"})
    code = cli.main(["run", "--golden", str(path), "--estimate", "--db", str(tmp_path / "x.duckdb")])
    assert code == cli.EXIT_BAD_INPUT
    assert "detailed_bad.csv, row 3, field 'contexts'" in capsys.readouterr().err
