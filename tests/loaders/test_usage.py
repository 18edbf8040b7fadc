"""An outputs file's usage columns (latency, tokens, cost, model) and chunk scores: read, checked, stored."""
from __future__ import annotations

import json

import duckdb
import pytest

from evaluators import evaluate, loaders
from evaluators.judges.prices import cost, list_price
from evaluators.records import LoadError, Usage
from evaluators.store import close_store

GOLDEN = "question_id,question,reference\nq1,Who built it?,Ann built it.\nq2,When?,In 1879.\n"


def _csv(tmp_path, text: str, name: str = "out.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_four_columns_and_the_model_are_read_per_answer(tmp_path):
    path = _csv(tmp_path, "question_id,method,answer,latency_ms,input_tokens,output_tokens,cost_usd,model\n"
                          "q1,local,Ann.,812.5,1200,85,0.0031,my-own-llm\n"
                          "q2,local,1879.,,,,,\n")
    first, second = loaders.load(path, role="outputs").outputs
    assert first.usage == Usage(812.5, 1200, 85, 0.0031, "my-own-llm")
    assert second.usage is None  # an empty row says nothing: unknown, not zero


def test_aliases_read_seconds_as_milliseconds_and_prompt_tokens_as_input(tmp_path):
    path = _csv(tmp_path, "question_id,method,answer,latency_s,prompt_tokens,completion_tokens\nq1,m,Ann.,1.25,40,7\n")
    (output,) = loaders.load(path, role="outputs").outputs
    assert output.usage == Usage(latency_ms=1250.0, input_tokens=40, output_tokens=7)


def test_a_lone_model_column_still_names_the_method(tmp_path):
    path = _csv(tmp_path, "question_id,model,answer\nq1,gpt-rag,Ann.\n")
    (output,) = loaders.load(path, role="outputs").outputs
    assert output.method == "gpt-rag" and output.usage is None


def test_bad_values_name_the_file_row_and_column(tmp_path):
    path = _csv(tmp_path, "question_id,method,answer,latency_ms,input_tokens,cost_usd\n"
                          "q1,m,Ann.,fast,12,0.1\n"
                          "q2,m,1879.,30,1.5,-0.2\n")
    with pytest.raises(LoadError) as caught:
        loaders.load(path, role="outputs")
    found = {(p.file, p.row, p.field): p.message for p in caught.value.problems}
    assert set(found) == {("out.csv", 1, "latency_ms"), ("out.csv", 2, "input_tokens"), ("out.csv", 2, "cost_usd")}
    assert "not a number" in found[("out.csv", 1, "latency_ms")] and "'fast'" in found[("out.csv", 1, "latency_ms")]
    assert "not a whole number" in found[("out.csv", 2, "input_tokens")]
    assert ">= 0" in found[("out.csv", 2, "cost_usd")]


def test_json_numbers_of_the_wrong_type_are_problems_too(tmp_path):
    rows = [{"question_id": "q1", "method": "m", "answer": "a", "latency_ms": True},
            {"question_id": "q2", "method": "m", "answer": "b", "latency_ms": [3]}]
    path = _csv(tmp_path, "\n".join(map(json.dumps, rows)), "out.jsonl")
    with pytest.raises(LoadError) as caught:
        loaders.load(path, role="outputs")
    assert [(p.row, p.field) for p in caught.value.problems] == [(1, "latency_ms"), (2, "latency_ms")]


def test_chunk_objects_keep_their_retriever_score(tmp_path):
    rows = [{"question_id": "q1", "method": "m", "answer": "a",
             "contexts": [{"id": "d7", "text": "x", "score": 12.5}, {"id": "d2", "text": "y"}]},
            {"question_id": "q2", "method": "m", "answer": "b", "contexts": [{"id": "d1", "text": "z", "score": "hi"}]}]
    path = _csv(tmp_path, json.dumps(rows[0]) + "\n", "good.jsonl")
    (output,) = loaders.load(path, role="outputs").outputs
    assert [(c.chunk_id, c.score) for c in output.contexts] == [("d7", 12.5), ("d2", None)]
    bad = _csv(tmp_path, "\n".join(map(json.dumps, rows)), "bad.jsonl")
    with pytest.raises(LoadError) as caught:
        loaders.load(bad, role="outputs")
    (problem,) = caught.value.problems
    assert (problem.row, problem.field) == (2, "contexts") and "score" in problem.message


def test_the_same_answers_with_other_latencies_are_another_dataset(tmp_path):
    head = "question_id,method,answer,latency_ms\n"
    one = loaders.load(_csv(tmp_path, head + "q1,m,Ann.,10\n", "a.csv"), role="outputs")
    two = loaders.load(_csv(tmp_path, head + "q1,m,Ann.,20\n", "b.csv"), role="outputs")
    assert one.content_hash != two.content_hash


def test_usage_round_trips_through_evaluate_into_the_store_and_a_listed_model_is_priced(tmp_path):
    golden = _csv(tmp_path, GOLDEN, "golden.csv")
    outputs = _csv(tmp_path, "question_id,method,answer,latency_ms,input_tokens,output_tokens,cost_usd,model\n"
                             "q1,local,Ann built it.,812.5,1200,85,0.0031,\n"
                             "q2,local,In 1879.,95,300,20,,gpt-4o-mini\n"
                             "q1,basic,Ann.,40,,,,gpt-4o-mini\n"
                             "q2,basic,1879.,41,10,5,,my-own-llm\n")
    db = tmp_path / "usage.duckdb"
    evaluate(golden, outputs, metrics=["exact_match"], db=db)
    close_store(db)
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT method, question_id, latency_ms, input_tokens, output_tokens, cost_usd, model "
                       "FROM rag_outputs ORDER BY ALL").fetchall()
    con.close()
    priced = cost(300, 20, list_price("gpt-4o-mini"))
    assert rows == [("basic", "q1", 40.0, None, None, None, "gpt-4o-mini"),  # no tokens: the cost stays unknown
                    ("basic", "q2", 41.0, 10, 5, None, "my-own-llm"),  # no list price: unknown, never 0
                    ("local", "q1", 812.5, 1200, 85, 0.0031, None),
                    ("local", "q2", 95.0, 300, 20, pytest.approx(priced), "gpt-4o-mini")]
    assert priced > 0
