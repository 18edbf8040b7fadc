import csv
import dataclasses
import json
import time
from collections import Counter
from pathlib import Path

import pytest

from evaluators.loaders import (ALIASES, FORMATS, check_against_golden, derive_question_id,
                                detect_format, load)
from evaluators.records import Chunk, LoadError
from tests.helpers import FIXTURES, TESTS

MALFORMED = TESTS / "malformed"


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _problems(error: LoadError) -> str:
    return "\n".join(str(p) for p in error.problems)


# --------------------------------------------------------------------------- shared samples


def test_graphrag_bench_golden_csv(shared_data):
    ds = load(shared_data / "graphrag_bench_novel44557" / "novel_44557_golden.csv")
    assert (ds.source, ds.format, len(ds.golden), ds.outputs) == ("novel_44557_golden.csv", "csv", 103, ())
    assert Counter(item.question_type for item in ds.golden) == {
        "Fact Retrieval": 49, "Complex Reasoning": 31, "Contextual Summarize": 18, "Creative Generation": 5}
    first = ds.golden[0]
    assert (first.question_id, first.reference) == ("Novel-73586ddc", "Cornish heath")
    assert first.evidence.startswith("The plant known scientifically as Erica vagans")
    assert ds.columns["reference"] == "answer"  # plain `answer` is the reference here
    assert len(ds.content_hash) == 64


def test_graphrag_bench_questions_jsonl_matches_the_csv(shared_data):
    folder = shared_data / "graphrag_bench_novel44557"
    jsonl = load(folder / "novel_44557_questions.jsonl")
    csv_ds = load(folder / "novel_44557_golden.csv")
    assert jsonl.format == "jsonl" and jsonl.outputs == ()
    assert [(g.question_id, g.question, g.reference, g.question_type) for g in jsonl.golden] == [
        (g.question_id, g.question, g.reference, g.question_type) for g in csv_ds.golden]


def test_ragchecker_inputs_hold_golden_and_outputs(shared_data):
    ds = load(shared_data / "ragchecker_examples" / "checking_inputs.json")
    assert [g.question_id for g in ds.golden] == ["0", "1"]
    assert ds.golden[0].question == "What's the longest river in the world?"
    assert ds.golden[0].reference.startswith("The Nile is a major north-flowing river")
    assert [o.method for o in ds.outputs] == ["checking_inputs", "checking_inputs"]
    assert [c.chunk_id for c in ds.outputs[0].contexts] == ["000", "001", "002", "003"]
    assert ds.outputs[0].contexts[0].text.startswith("Scientists debate whether the Amazon")
    assert ds.outputs[0].answer.startswith("The longest river in the world is the Nile")
    assert check_against_golden(ds, ds) == []


# --------------------------------------------------------------------------- fixture formats


def test_ragas_style_jsonl():
    ds = load(FIXTURES / "ragas.jsonl")
    assert ds.columns == {"question": "user_input", "reference": "reference", "answer": "response",
                          "contexts": "retrieved_contexts"}
    assert [g.question_id for g in ds.golden] == [o.question_id for o in ds.outputs]
    assert ds.golden[0].question_id == derive_question_id("What is the longest river in the world?")
    assert [o.answer for o in ds.outputs] == ["The Nile.", "", "1859"]  # empty allowed, int -> text
    assert ds.outputs[1].contexts == ()
    assert ds.outputs[0].contexts == (Chunk("1", "The Nile is about 6,650 km long."),
                                      Chunk("2", "The Amazon may be longer."))


def test_deepeval_style_json():
    ds = load(FIXTURES / "deepeval.json")
    assert ds.columns["contexts"] == "retrieval_context"
    assert ds.columns["reference_contexts"] == "context"
    assert ds.golden[0].reference.startswith("Blue for peace")
    assert ds.golden[0].reference_contexts[0].startswith("The national flag of the DRC")
    assert ds.golden[1].reference_contexts == ()  # null context
    assert [c.chunk_id for c in ds.outputs[0].contexts] == ["1", "2"]
    assert ds.outputs[0].method == "deepeval"


def test_graphrag_bench_outputs_match_the_golden_set(shared_data):
    golden = load(shared_data / "graphrag_bench_novel44557" / "novel_44557_golden.csv")
    ds = load(FIXTURES / "novel_outputs_local_search.json", role="outputs", method="local_search")
    assert ds.golden == ()  # role outputs: the ground_truth column is not read as a golden set
    assert [(o.question_id, o.method) for o in ds.outputs] == [
        ("Novel-73586ddc", "local_search"), ("Novel-74440a6a", "local_search")]
    assert ds.outputs[0].contexts[0].text.startswith("the erica vagans")
    assert check_against_golden(ds, golden) == []
    both = load(FIXTURES / "novel_outputs_local_search.json")
    assert both.golden[0].reference == "Cornish heath"
    assert both.columns["answer"] == "generated_answer" and both.columns["reference"] == "ground_truth"


def test_parquet_with_a_list_column():
    ds = load(FIXTURES / "outputs_list.parquet")
    assert ds.format == "parquet" and ds.golden == ()
    assert [(o.question_id, o.method) for o in ds.outputs] == [
        ("q1", "local_search"), ("q1", "basic_search"), ("q2", "local_search"), ("q2", "basic_search")]
    assert [len(o.contexts) for o in ds.outputs] == [2, 1, 0, 0]
    assert ds.outputs[3].answer == ""  # a null answer is an empty answer


def test_chunk_dicts_keep_their_ids_and_fall_back_to_rank():
    ds = load(FIXTURES / "chunks_with_ids.jsonl")
    first, second = ds.outputs
    assert (first.question_id, first.answer) == ("1", "1879")  # JSON ints become text
    assert first.contexts == (Chunk("c7", "Founded in 1879."), Chunk("42", "Another chunk."),
                              Chunk("3", "A chunk without an id."))
    assert second.contexts == (Chunk("d-1", "Truro is a city in Cornwall.", 0.91),)  # its retriever score kept


def test_csv_with_json_list_contexts():
    ds = load(FIXTURES / "outputs_json_contexts.csv")
    assert [o.method for o in ds.outputs] == ["outputs_json_contexts"] * 3  # the file's stem
    assert [len(o.contexts) for o in ds.outputs] == [2, 0, 0]
    assert ds.outputs[0].contexts[0].text == "The Nile is about 6,650 km long."
    assert ds.outputs[1].answer == ""


def test_csv_with_separator_joined_contexts():
    ds = load(FIXTURES / "outputs_sep_contexts.csv", context_sep="|||")
    assert ds.outputs[0].contexts == (Chunk("1", "The Nile is about 6,650 km long."),
                                      Chunk("2", "The Amazon may be longer."))
    assert ds.outputs[1].contexts == (Chunk("1", "Truro is a city in Cornwall."),)
    with pytest.raises(LoadError) as caught:
        load(FIXTURES / "outputs_sep_contexts.csv")
    assert {(p.row, p.field) for p in caught.value.problems} == {(1, "retrieved_contexts"),
                                                                 (2, "retrieved_contexts")}
    assert "name the separator" in _problems(caught.value)


def test_one_file_with_many_methods_and_its_golden_set():
    ds = load(FIXTURES / "many_methods.csv")
    assert [g.question_id for g in ds.golden] == ["q1", "q2"]  # repeated per method, kept once
    assert Counter(o.method for o in ds.outputs) == {"local_search": 2, "basic_search": 2}
    assert ds.outputs[3].answer == "-0.133% of Cornwall - no idea"  # not a formula
    assert ds.output_rows == (1, 2, 3, 4)
    assert check_against_golden(ds, ds) == []


def test_semicolon_csv_and_case_insensitive_headers():
    ds = load(FIXTURES / "golden_semicolon.csv")
    assert ds.columns == {"question_id": "Question_ID", "question": "Query",
                          "reference": "Golden_Answer", "question_type": "Category"}
    assert ds.golden[0].reference == "The Nile, by most accounts."


def test_wrapped_json_with_int_ids_and_reference_contexts():
    ds = load(FIXTURES / "wrapped_data.json")
    assert [g.question_id for g in ds.golden] == ["101", "102"]
    assert ds.golden[0].reference_contexts == ("Truro is the county town.",)


def test_golden_checks_are_parsed_from_csv_json_text():
    ds = load(FIXTURES / "golden_no_ids.csv")
    assert ds.golden[0].checks == ({"type": "contains", "value": "Nile"},)
    assert ds.golden[1].checks == ()
    assert ds.golden[2].checks[0] == {"type": "number", "value": 1859}


# --------------------------------------------------------------------------- aliases and mapping

_ALIAS_CASES = (
    [("question_id", a, {a.upper(): "x1", "question": "Q?", "reference": "R"}, "golden") for a in ALIASES["question_id"]]
    + [("question", a, {"id": "x1", a.upper(): "Q?", "reference": "R"}, "golden") for a in ALIASES["question"]]
    + [("reference", a, {"id": "x1", "question": "Q?", a.upper(): "R"}, "golden") for a in ALIASES["reference"]]
    + [("question_type", a, {"id": "x1", "question": "Q?", "reference": "R", a.title(): "T"}, "golden")
       for a in ALIASES["question_type"]]
    + [("answer", a, {"id": "x1", a.upper(): "A"}, "outputs") for a in ALIASES["answer"]]
    + [("method", a, {"id": "x1", "answer": "A", a.upper(): "m"}, "outputs") for a in ALIASES["method"]]
    + [("contexts", a, {"id": "x1", "answer": "A", a.upper(): ["c"]}, "outputs") for a in ALIASES["contexts"]]
)


@pytest.mark.parametrize("field, alias, record, role", _ALIAS_CASES,
                         ids=[f"{c[0]}={c[1]}" for c in _ALIAS_CASES])
def test_every_alias_is_recognised_case_insensitively(tmp_path, field, alias, record, role):
    ds = load(_write_jsonl(tmp_path / "aliases.jsonl", [record]), role=role)
    assert ds.columns[field].lower() == alias
    item = (ds.golden or ds.outputs)[0]
    assert item.question_id == "x1"
    expected = {"question": "Q?", "reference": "R", "question_type": "T", "answer": "A",
                "method": "m", "contexts": (Chunk("1", "c"),)}.get(field)
    if expected is not None:
        assert getattr(item, field) == expected


def test_plain_answer_is_the_answer_when_the_file_has_outputs_columns(tmp_path):
    rows = [{"question_id": "q1", "question": "Q?", "answer": "A", "contexts": ["c"]}]
    ds = load(_write_jsonl(tmp_path / "out.jsonl", rows))
    assert ds.golden == () and ds.outputs[0].answer == "A"
    assert load(tmp_path / "out.jsonl", role="golden").golden[0].reference == "A"


def test_column_map_names_unrecognised_columns_and_turns_guesses_off(tmp_path):
    ds = load(MALFORMED / "german_headers.csv", column_map={"question": "Frage", "reference": "antwort_text"})
    assert ds.golden[0].reference == "Truro" and ds.columns["reference"] == "Antwort_Text"
    rows = [{"id": "q1", "question": "Q?", "reference": "R", "type": ["not", "a", "question type"]}]
    ds = load(_write_jsonl(tmp_path / "typed.jsonl", rows), column_map={"question_type": None})
    assert ds.golden[0].question_type is None and "question_type" not in ds.columns


# --------------------------------------------------------------------------- matching to golden


def test_derived_ids_match_outputs_to_golden_by_question_text():
    golden = load(FIXTURES / "golden_no_ids.csv")  # double space, line break inside a question
    outputs = load(FIXTURES / "ragas.jsonl", role="outputs")
    assert {g.question_id for g in golden.golden} == {o.question_id for o in outputs.outputs}
    assert all(g.question_id.startswith("q-") and len(g.question_id) == 12 for g in golden.golden)
    assert check_against_golden(outputs, golden) == []


def test_unknown_questions_are_named_with_file_row_and_field():
    golden = load(FIXTURES / "many_methods.csv", role="golden")
    outputs = load(FIXTURES / "outputs_json_contexts.csv")
    [problem] = check_against_golden(outputs, golden)
    assert (problem.file, problem.row, problem.field) == ("outputs_json_contexts.csv", 3, "question_id")
    assert "'q3'" in problem.message and "many_methods.csv" in problem.message


def test_outputs_without_ids_against_a_golden_set_with_ids_say_what_to_add():
    golden = load(FIXTURES / "golden_semicolon.csv")
    outputs = load(FIXTURES / "ragas.jsonl", role="outputs")
    problems = check_against_golden(outputs, golden)
    assert problems[0].row == 1 and problems[0].field == "user_input"
    assert "matches golden question 'q1'" in problems[0].message
    assert "add a question_id column" in problems[0].message


def test_check_against_golden_reports_repeated_question_and_method():
    golden = load(FIXTURES / "many_methods.csv", role="golden")
    outputs = load(FIXTURES / "outputs_list.parquet")
    doubled = dataclasses.replace(outputs, outputs=outputs.outputs * 2, output_rows=())
    problems = check_against_golden(doubled, golden)
    assert [p.row for p in problems] == [5, 6, 7, 8]
    assert "already has an answer from method 'local_search' in outputs_list.parquet (row 1)" in problems[0].message


# --------------------------------------------------------------------------- sources, formats, hash


def test_bytes_with_a_name_load_like_the_path():
    path = FIXTURES / "many_methods.csv"
    from_bytes = load(path.read_bytes(), name="uploads/many_methods.csv")
    from_path = load(path)
    assert from_bytes.source == "many_methods.csv"
    assert (from_bytes.golden, from_bytes.outputs, from_bytes.content_hash) == (
        from_path.golden, from_path.outputs, from_path.content_hash)
    with pytest.raises(ValueError, match="name="):
        load(path.read_bytes())


@pytest.mark.parametrize("fixture, expected", [
    ("many_methods.csv", "csv"), ("deepeval.json", "json"), ("ragas.jsonl", "jsonl"),
    ("outputs_list.parquet", "parquet"), ("wrapped_data.json", "json")])
def test_format_is_sniffed_when_the_name_has_no_extension(fixture, expected):
    raw = (FIXTURES / fixture).read_bytes()
    assert detect_format("upload", raw[:4096]) == expected
    assert detect_format(fixture, b"") == expected
    assert load(raw, name="upload").format == expected


def test_detect_format_refuses_what_it_cannot_name():
    with pytest.raises(LoadError, match="unknown file format"):
        detect_format("notes", b"\x00\x01\x02")
    assert set(FORMATS) == {"csv", "json", "jsonl", "parquet"}


def test_json_lines_saved_as_json_still_load(tmp_path):
    path = tmp_path / "outputs.json"
    path.write_bytes((FIXTURES / "ragas.jsonl").read_bytes())
    assert load(path).format == "jsonl"


def test_fmt_override_and_other_encodings_and_bom(tmp_path):
    text = (FIXTURES / "many_methods.csv").read_text(encoding="utf-8")
    (tmp_path / "export.txt").write_text(text, encoding="utf-8")
    assert load(tmp_path / "export.txt", fmt="csv").format == "csv"
    (tmp_path / "bom.csv").write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert load(tmp_path / "bom.csv").columns["question_id"] == "question_id"
    cp1252 = load(MALFORMED / "cp1252.csv", encoding="cp1252")
    assert cp1252.golden[0].question == "Where is the café?"
    assert load(MALFORMED / "utf16.csv", encoding="utf-16").golden[0].reference == "In Cornwall"


def test_spreadsheet_export_quirks_are_tolerated(tmp_path):
    # Excel: BOM, CRLF, unnamed trailing columns, ",,," rows at the end, blank lines
    text = ("question_id,question,reference,,\r\n"
            "q1,What is the capital of Cornwall?,Truro,,\r\n\r\n"
            "q2,What is the longest river?,The Nile,,\r\n,,,,\r\n,,,,\r\n")
    (tmp_path / "excel.csv").write_bytes(b"\xef\xbb\xbf" + text.encode())
    ds = load(tmp_path / "excel.csv")
    assert [g.question_id for g in ds.golden] == ["q1", "q2"]


def test_content_hash_is_stable_and_sensitive_to_meaningful_options():
    outputs = FIXTURES / "outputs_sep_contexts.csv"
    base = load(outputs, context_sep="|||").content_hash
    assert load(outputs, context_sep="|||").content_hash == base
    assert load(outputs.read_bytes(), name=outputs.name, context_sep="|||").content_hash == base
    assert load(outputs, context_sep=" ||| ").content_hash != base
    assert load(outputs, context_sep="|||", method="a").content_hash != load(
        outputs, context_sep="|||", method="b").content_hash
    golden = FIXTURES / "golden_semicolon.csv"  # no outputs: the method option changes nothing
    assert load(golden, method="a").content_hash == load(golden, method="b").content_hash
    combined = FIXTURES / "many_methods.csv"  # the same bytes as golden set and as outputs differ
    assert load(combined, role="golden").content_hash != load(combined, role="outputs").content_hash


def test_roles_are_enforced():
    with pytest.raises(LoadError) as caught:
        load(FIXTURES / "outputs_sep_contexts.csv", role="golden")
    assert [p.field for p in caught.value.problems] == ["question", "reference"]
    assert "looks like RAG outputs" in caught.value.problems[1].message
    with pytest.raises(LoadError) as caught:
        load(FIXTURES / "golden_semicolon.csv", role="outputs")
    [problem] = caught.value.problems
    assert problem.field == "answer" and "looks like a golden set" in problem.message
    golden_only = load(FIXTURES / "many_methods.csv", role="golden")
    assert golden_only.outputs == () and "answer" not in golden_only.columns
    outputs_only = load(FIXTURES / "many_methods.csv", role="outputs")
    assert outputs_only.golden == () and len(outputs_only.outputs) == 4
    with pytest.raises(ValueError, match="role"):
        load(FIXTURES / "many_methods.csv", role="both")


def test_a_missing_file_is_a_load_error(tmp_path):
    with pytest.raises(LoadError, match="cannot read the file"):
        load(tmp_path / "nope.csv")


# --------------------------------------------------------------------------- speed


@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
def test_100k_rows_load_in_seconds(tmp_path, suffix):
    rows = [{"question_id": f"q{i}", "method": "local_search" if i % 2 else "basic_search",
             "answer": f"The coast has {i % 97} coves.",
             "contexts": [f"Chunk {j}: the Cornish coast has many coves and cliffs." for j in range(3)]}
            for i in range(100_000)]
    path = tmp_path / f"big.{suffix}"
    if suffix == "jsonl":
        _write_jsonl(path, rows)
    else:
        with path.open("w", newline="", encoding="utf-8") as out:
            writer = csv.writer(out)
            writer.writerow(rows[0])
            writer.writerows([*row.values()][:-1] + [json.dumps(row["contexts"])] for row in rows)
    started = time.perf_counter()
    ds = load(path)
    assert len(ds.outputs) == 100_000
    assert time.perf_counter() - started < 15  # measured ~1.5 s; the margin absorbs busy machines


# --------------------------------------------------------------------------- ids and method names

CAFE_NFC, CAFE_NFD = "caf\u00e9", "cafe\u0301"  # the same word, as typed and as a Mac may paste it


def test_ids_and_method_names_written_two_unicode_ways_are_one(tmp_path):
    golden = load(_write_jsonl(tmp_path / "gold.jsonl", [
        {"question_id": f"q-{CAFE_NFD}", "question": "Where?", "reference": "Here."}]), role="golden")
    assert golden.golden[0].question_id == f"q-{CAFE_NFC}"
    outputs = load(_write_jsonl(tmp_path / "out.jsonl", [
        {"question_id": f"q-{CAFE_NFD}", "method": f"rag-{CAFE_NFD}", "answer": "A."}]), role="outputs")
    assert (outputs.outputs[0].question_id, outputs.outputs[0].method) == (f"q-{CAFE_NFC}", f"rag-{CAFE_NFC}")
    assert check_against_golden(outputs, golden) == []
    with pytest.raises(LoadError) as caught:  # one question and method, written two ways: one pair, answered twice
        load(_write_jsonl(tmp_path / "twice.jsonl", [
            {"question_id": f"q-{CAFE_NFD}", "method": f"rag-{CAFE_NFC}", "answer": "A."},
            {"question_id": f"q-{CAFE_NFC}", "method": f"rag-{CAFE_NFD}", "answer": "B."}]), role="outputs")
    assert f"row 2, field 'question_id': question 'q-{CAFE_NFC}' already has an answer from method 'rag-{CAFE_NFC}' " \
           "at row 1" in str(caught.value)
    assert derive_question_id(f"Which {CAFE_NFD}?") == derive_question_id(f"Which {CAFE_NFC}?")
    named = load(_write_jsonl(tmp_path / "named.jsonl", [{"question_id": "q1", "answer": "A."}]), role="outputs",
                 method=f"rag-{CAFE_NFD}")
    assert named.outputs[0].method == f"rag-{CAFE_NFC}"


@pytest.mark.parametrize("char", ["\u200b", "\u200c", "\u200d", "\ufeff", "\u00ad", "\u2060", "\x07"])
def test_a_method_name_with_an_invisible_character_is_refused(tmp_path, char):
    path = _write_jsonl(tmp_path / "out.jsonl", [{"question_id": "q1", "method": "rag", "answer": "A."},
                                                 {"question_id": "q1", "method": f"ra{char}g", "answer": "B."}])
    with pytest.raises(LoadError) as caught:
        load(path, role="outputs")
    (problem,) = caught.value.problems
    assert (problem.file, problem.row, problem.field) == ("out.jsonl", 2, "method")
    assert f"U+{ord(char):04X}" in problem.message and "at position 3" in problem.message
    with pytest.raises(LoadError, match="field 'method': the method name 'rag.u200b' contains an invisible"):
        load(_write_jsonl(tmp_path / "plain.jsonl", [{"question_id": "q1", "answer": "A."}]), role="outputs",
             method="rag\u200b")
