"""Relevant documents in the golden set: `relevant_ids` (a list, or {id: grade}) under its aliases, chunk ids from
a `retrieved_context_ids` column, a qrels file (BEIR and TREC), and every bad input refused with file, row and field."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluators.loaders import check_against_golden, load, read_qrels, with_qrels
from evaluators.records import Chunk, LoadError


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _problems(exc: pytest.ExceptionInfo) -> list[str]:
    return [str(p) for p in exc.value.problems]


GOLDEN = [{"question_id": "q1", "question": "Who?", "reference": "Ann.", "relevant_ids": ["d1", "d2"]},
          {"question_id": "q2", "question": "When?", "reference": "1999.", "relevant_ids": {"d3": 2, "d4": 0}},
          {"question_id": "q3", "question": "Where?", "reference": "Here."}]


def test_a_list_is_grade_one_an_object_keeps_its_grades_and_none_is_empty(tmp_path):
    ds = load(_jsonl(tmp_path / "g.jsonl", GOLDEN), role="golden")
    assert [g.relevant_ids for g in ds.golden] == [(("d1", 1.0), ("d2", 1.0)), (("d3", 2.0), ("d4", 0.0)), ()]
    assert ds.golden[1].grades == {"d3": 2.0, "d4": 0.0}
    assert ds.columns["relevant_ids"] == "relevant_ids"


def test_ragas_reference_and_retrieved_context_ids(tmp_path):
    rows = [{"user_input": "Who?", "reference": "Ann.", "response": "Ann did.", "retrieved_contexts": ["a", "b"],
             "reference_context_ids": ["p7"], "retrieved_context_ids": ["p3", "p7"]}]
    ds = load(_jsonl(tmp_path / "ragas.jsonl", rows))
    assert ds.golden[0].relevant_ids == (("p7", 1.0),)
    assert ds.outputs[0].contexts == (Chunk("p3", "a"), Chunk("p7", "b"))
    assert check_against_golden(ds, ds) == []


def test_a_csv_cell_holds_json(tmp_path):
    path = tmp_path / "g.csv"
    path.write_text('question_id,question,reference,relevant_ids\nq1,Who?,Ann.,"{""d1"": 1, ""d2"": 3}"\n'
                    'q2,When?,1999.,"[""d5"", 12]"\n', encoding="utf-8")
    ds = load(path, role="golden")
    assert [g.relevant_ids for g in ds.golden] == [(("d1", 1.0), ("d2", 3.0)), (("d5", 1.0), ("12", 1.0))]


@pytest.mark.parametrize("value, words", [
    (42, "found a number (42)"),
    ("d1, d2", "is a single text"),
    ({"d1": "high"}, "the grade of document 'd1' is a text ('high'), not a number"),
    ({"d1": True}, "the grade of document 'd1' is a boolean"),
    (["d1", ["d2"]], "document item 2 is a list"),
    (["d1", "d1"], "names document 'd1' twice"),
    ("[\"d1\"", "relevant_ids is not valid JSON"),
])
def test_bad_relevant_ids_name_file_row_and_field(tmp_path, value, words):
    rows = [GOLDEN[2], {"question_id": "q9", "question": "Why?", "reference": "So.", "relevant_ids": value}]
    with pytest.raises(LoadError) as exc:
        load(_jsonl(tmp_path / "g.jsonl", rows), role="golden")
    (problem,) = _problems(exc)
    assert problem.startswith("g.jsonl, row 2, field 'relevant_ids': ") and words in problem, problem


def test_retrieved_ids_must_be_one_per_chunk(tmp_path):
    rows = [{"question_id": "q1", "answer": "x", "contexts": ["a", "b"], "retrieved_context_ids": ["p1"]}]
    with pytest.raises(LoadError) as exc:
        load(_jsonl(tmp_path / "out.jsonl", rows), role="outputs")
    assert _problems(exc) == ["out.jsonl, row 1, field 'retrieved_context_ids': 1 ids for 2 retrieved chunks; give "
                              "one id per chunk, in the order of the chunks"]


def _outputs(tmp_path, contexts_by_question: dict) -> object:
    rows = [{"question_id": q, "method": "basic", "answer": "x", "contexts": c}
            for q, c in contexts_by_question.items()]
    return load(_jsonl(tmp_path / "out.jsonl", rows), role="outputs")


def test_a_retrieved_list_naming_a_document_twice_is_refused_where_the_question_has_relevant_ids(tmp_path):
    golden = load(_jsonl(tmp_path / "g.jsonl", GOLDEN), role="golden")
    twice = [{"id": "d1", "text": "a"}, {"id": "d9", "text": "b"}, {"id": "d1", "text": "c"}]
    out = _outputs(tmp_path, {"q1": twice, "q3": twice})  # q3 names no relevant document: its list is not ranked
    (problem,) = map(str, check_against_golden(out, golden))
    assert problem.startswith("out.jsonl, row 1, field 'contexts': the retrieved list names document(s) 'd1' more "
                              "than once")


def test_ids_that_never_match_say_probably_a_format_mismatch(tmp_path):
    golden = load(_jsonl(tmp_path / "g.jsonl", GOLDEN), role="golden")
    out = _outputs(tmp_path, {"q1": [{"id": "doc_1", "text": "a"}], "q2": [{"id": "doc_3", "text": "b"}]})
    (problem,) = map(str, check_against_golden(out, golden))
    assert "probably a format mismatch" in problem and "'doc_1'" in problem and "'d1'" in problem
    plain = _outputs(tmp_path, {"q1": ["a", "b"], "q2": ["c"]})
    (problem,) = map(str, check_against_golden(plain, golden))
    assert "Its chunks carry no ids (each chunk's id is its rank)" in problem
    one_hit = _outputs(tmp_path, {"q1": [{"id": "x", "text": "a"}], "q2": [{"id": "d3", "text": "b"}]})
    assert check_against_golden(one_hit, golden) == []  # a miss of one question is a retrieval miss, not bad input


def test_qrels_beir_and_trec(tmp_path):
    beir = tmp_path / "test.tsv"
    beir.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t2\nq2\td3\t0\n", encoding="utf-8")
    trec = tmp_path / "qrels.txt"
    trec.write_text("q1 0 d1 1\nq1 0 d2 2\nq2 0 d3 0\n", encoding="utf-8")
    expected = {"q1": (("d1", 1.0), ("d2", 2.0)), "q2": (("d3", 0.0),)}
    assert read_qrels(beir) == expected == read_qrels(trec)
    golden = load(_jsonl(tmp_path / "g.jsonl", GOLDEN), role="golden")
    merged = with_qrels(golden, beir)
    assert [g.relevant_ids for g in merged.golden] == [expected["q1"], expected["q2"], ()]  # the qrels replace them
    assert merged.content_hash != golden.content_hash != with_qrels(golden, trec).content_hash


def test_bad_qrels_rows_are_all_named(tmp_path):
    path = tmp_path / "qrels.tsv"
    path.write_text("query-id\tcorpus-id\tscore\nq1\td1\tvery\nq1 d2 1\nq1\td1\t1\nq1\td1\t2\n", encoding="utf-8")
    with pytest.raises(LoadError) as exc:
        read_qrels(path)
    assert _problems(exc) == [
        "qrels.tsv, row 2, field 'score': the grade 'very' is not a number",
        "qrels.tsv, row 3: 1 fields where 3 were expected (query-id corpus-id score); BEIR's qrels are tab-separated",
        "qrels.tsv, row 5, field 'corpus-id': document 'd1' is judged twice for query 'q1'"]


def test_qrels_with_unknown_query_ids_are_refused(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 d1 1\nQ-404 0 d2 1\n", encoding="utf-8")
    golden = load(_jsonl(tmp_path / "g.jsonl", GOLDEN), role="golden")
    with pytest.raises(LoadError) as exc:
        with_qrels(golden, path)
    (problem,) = _problems(exc)
    assert problem.startswith("qrels.txt, field 'query-id': 1 query id(s) are not in the golden set g.jsonl: "
                              "'Q-404'")
