"""Every file in tests/malformed/ must be refused with a message that says where and what.

Each expectation: (row, field, key phrases, load options). row and field are what the
Problem must point at (None where the problem is about the whole file or no single row).
"""
import json
import time
from pathlib import Path

import pytest

from evaluators.loaders import MAX_CELL_CHARS, load
from evaluators.records import LoadError
from tests.helpers import TESTS

CORPUS = TESTS / "malformed"

EXPECTED = {
    # empty and structure
    "empty.csv": (None, None, ["empty"], {}),
    "whitespace_only.jsonl": (None, None, ["empty"], {}),
    "header_only.csv": (None, None, ["header row but no data rows"], {}),
    "empty_list.json": (None, None, ["no records"], {}),
    "unknown_format.dat": (None, None, ["unknown file format", ".csv, .json, .jsonl and .parquet"], {}),
    "workbook.xlsx": (None, None, ["Excel workbook", "CSV UTF-8"], {}),
    "not_parquet.parquet": (None, None, ["not a readable Parquet file"], {}),
    # encodings and bytes
    "cp1252.csv": (None, None, ["not valid UTF-8", "line 2", "cp1252", "--encoding cp1252", "Encoding to cp1252"], {}),
    "utf16.csv": (None, None, ["not valid UTF-8", "line 1", "utf-16", "--encoding utf-16"], {}),
    "nul_byte.csv": (None, None, ["NUL byte", "line 2", "UTF-8"], {}),
    # JSON / JSONL shape
    "broken_line.jsonl": (2, None, ["not valid JSON", "Expecting ',' delimiter"], {}),
    "invalid.json": (None, None, ["not valid JSON", "line 2, column 73"], {}),
    "top_level_number.json": (None, None, ["top level", "a number (42)", "list of records"], {}),
    "object_without_list.json": (None, None, ["no list of records", "keys found: question, reference"], {}),
    "item_not_object.json": (2, None, ["must be an object", "a text"], {}),
    "line_not_object.jsonl": (2, None, ["must be an object", "a list"], {}),
    # CSV shape
    "wrong_field_count.csv": (2, None, ["4 fields but the header has 3", "quoted"], {}),
    "unclosed_quote.csv": (2, None, ["malformed", "double quote"], {}),
    "duplicate_header.csv": (None, "question", ["appears twice", "columns 2 and 4"], {}),
    # columns and roles
    "missing_reference.csv": (None, "reference", [
        "no column for the reference", "Columns found: question_id, question, notes",
        "Accepted names: reference, gt_answer"], {}),
    "missing_question.jsonl": (None, "question", [
        "no column for the question text", "Columns found: id, reference", "user_input"], {}),
    "outputs_missing_answer.csv": (None, "answer", [
        "no column for the RAG method's answer", "response, generated_answer"], {"role": "outputs"}),
    "outputs_as_golden.jsonl": (None, "reference", ["looks like RAG outputs"], {"role": "golden"}),
    "german_headers.csv": (None, "reference", ["column 'Antworten'", "no such column", "Frage, Antwort_Text"],
                           {"column_map": {"question": "Frage", "reference": "Antworten"}}),
    # duplicates
    "duplicate_ids.csv": (3, "id", ["'q1' repeats row 1", "unique"], {}),
    "duplicate_question_text.csv": (2, "question", ["same question text appears at row 1"], {}),
    "duplicate_method.jsonl": (3, "question_id", ["method 'local_search' at row 1"], {}),
    "conflicting_golden.jsonl": (2, "question_id", ["row 1", "different question or reference"], {}),
    # empty values
    "empty_question.csv": (2, "question", ["question is empty"], {}),
    "empty_reference.json": (1, "gt_answer", ["reference answer is empty"], {}),
    "empty_id.csv": (1, "question_id", ["question id is empty"], {}),
    "empty_method.jsonl": (2, "method", ["method name is empty"], {}),
    "method_option_empty.jsonl": (None, "method", ["method name is empty"], {"method": "  "}),
    # mixed types
    "mixed_bool_answer.json": (1, "answer", ["mixed types", "a boolean (true)"], {}),
    "mixed_dict_question.jsonl": (1, "question", ["mixed types", "an object"], {}),
    "mixed_list_type.json": (1, "question_type", ["mixed types", "a list"], {}),
    "id_is_list.jsonl": (1, "question_id", ["mixed types", "a list"], {}),
    # contexts
    "contexts_object.json": (1, "retrieved_context", ["must be a list", "an object"], {}),
    "contexts_number.jsonl": (1, "contexts", ["must be a list", "a number (42)"], {}),
    "bad_contexts.parquet": (1, "contexts", ["must be a list", "a number (3)"], {}),
    "contexts_plain_string.csv": (1, "contexts", ["single text", "name the separator"], {}),
    "contexts_broken_json_list.csv": (1, "contexts", ["looks like a JSON list but is not valid JSON"], {}),
    "contexts_python_not_texts.csv": (1, "contexts", ["Python list", "chunk 2 is a number (42)"], {}),
    "chunk_without_text.json": (1, "retrieved_context", ["chunk 1", "has no text", "keys found: doc_id, body"], {}),
    "chunk_null.jsonl": (1, "contexts", ["chunk 2 is empty"], {}),
    # checks
    "checks_not_list.csv": (1, "checks", ["must be a list", "an object"], {}),
    "checks_bad_item.json": (1, "checks", ["check 1 is a text", "check 2", "type"], {}),
    "checks_invalid_json.csv": (1, "checks", ["checks is not valid JSON"], {}),
    # spreadsheet formula injection
    "formula_hyperlink.csv": (2, "answer", ["starts with '='", "formula"], {}),
    "formula_cmd.jsonl": (1, "answer", ["starts with '-'", "formula"], {}),
    "formula_at.csv": (1, "question", ["starts with '@'", "formula"], {}),
    "formula_plus.json": (1, "reference", ["starts with '+'", "formula"], {}),
    # hostile files: nesting past the bound, repeated keys, look-alike columns and names
    "deep_brackets.json": (1, None, ["nested more than 64 levels deep"], {}),
    "deep_nesting.json": (1, "reference", ["nested more than 64 levels deep"], {}),
    "deep_nesting.jsonl": (2, "contexts", ["nested more than 64 levels deep"], {}),
    "deep_contexts.csv": (1, "contexts", ["nested more than 64 levels deep"], {}),
    "deep_checks.csv": (1, "checks", ["nested more than 64 levels deep"], {}),
    "deep_labels.jsonl": (1, "faithfulness", ["nested more than 64 levels deep"], {}),
    "duplicate_key.jsonl": (2, "question", ["key 'question' appears twice"], {}),
    "duplicate_key_chunk.json": (2, "contexts", ["key 'text' appears twice"], {}),
    "duplicate_key_contexts.csv": (1, "contexts", ["key 'id' appears twice"], {}),
    "ambiguous_columns.csv": (None, "Question", ["'question' and 'Question'", "case and spaces"], {}),
    "invisible_method.jsonl": (2, "method", ["invisible", "U+200B"], {}),
    "invisible_id.csv": (2, "question_id", ["invisible", "U+00AD"], {}),
    "bom_inside_id.jsonl": (1, "question_id", ["invisible", "U+FEFF"], {}),
}


def _refusal(path: Path, **options) -> LoadError:
    with pytest.raises(LoadError) as caught:
        load(path, **options)
    return caught.value


def _assert_points_at(error: LoadError, file: str, row, field, phrases) -> None:
    assert file in str(error)
    assert all(problem.file == file for problem in error.problems)
    matching = [p for p in error.problems if p.row == row and p.field == field]
    assert matching, f"no problem at row={row} field={field}: {error}"
    message = matching[0].message.lower()
    for phrase in phrases:
        assert phrase.lower() in message, f"{phrase!r} not in {matching[0].message!r}"


def test_every_corpus_file_has_an_expectation():
    on_disk = {path.name for path in CORPUS.iterdir()}
    assert on_disk == set(EXPECTED), (
        f"without expectation: {sorted(on_disk - set(EXPECTED))}; "
        f"expected but missing: {sorted(set(EXPECTED) - on_disk)}")
    assert len(on_disk) >= 25


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_malformed_file_is_refused_with_a_pointed_message(name):
    row, field, phrases, options = EXPECTED[name]
    error = _refusal(CORPUS / name, **options)
    _assert_points_at(error, name, row, field, phrases)


def test_formula_check_leaves_ordinary_dashes_alone():
    error = _refusal(CORPUS / "formula_hyperlink.csv")
    # rows 1 ("-0.133% - the rate fell") and 3 ("- item one") are ordinary text
    assert [p.row for p in error.problems] == [2]


def test_every_bad_row_is_reported_at_once(tmp_path):
    path = tmp_path / "many.jsonl"
    rows = [{"question_id": "q1", "question": "", "reference": "x"},
            {"question_id": "q2", "question": "What?", "reference": True},
            {"question_id": "q1", "question": "Who?", "reference": "Craik"},
            {"question_id": "q4", "question": "=1+1", "reference": "2"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "{broken\n")
    error = _refusal(path)
    assert [(p.row, p.field) for p in error.problems] == [
        (5, None), (1, "question"), (2, "reference"), (4, "question")]


def test_a_50_mb_cell_is_refused_quickly(tmp_path):
    path = tmp_path / "huge_cell.csv"
    with path.open("w", encoding="utf-8") as out:
        out.write("question_id,method,answer\nq0,m,fine\nq1,m,")
        out.write("x" * (50 * 1024 * 1024))
        out.write("\n")
    started = time.perf_counter()
    error = _refusal(path)
    elapsed = time.perf_counter() - started
    _assert_points_at(error, "huge_cell.csv", 2, "answer",
                      [f"{50 * 1024 * 1024:,} characters", f"limit of {MAX_CELL_CHARS:,}"])
    assert elapsed < 10


def test_an_oversized_chunk_is_refused(tmp_path):
    path = tmp_path / "huge_chunk.jsonl"
    record = {"question_id": "q1", "answer": "a", "contexts": ["ok", "y" * (MAX_CELL_CHARS + 1)]}
    path.write_text(json.dumps(record) + "\n")
    _assert_points_at(_refusal(path), "huge_chunk.jsonl", 1, "contexts", ["chunk 2", "over the limit"])
