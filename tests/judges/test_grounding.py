"""The offline faithfulness rating: faithfulness blended with the answer's words found in the chunks."""
import json

import pytest

from evaluators import loaders
from evaluators.runs import engine, lifecycle
from evaluators.maths.formulas import half_up
from evaluators.judges import grounding
from evaluators.records import JUDGE_ERROR, OK, Result
from evaluators.store import close_store, open_store


def test_word_support_is_the_share_of_answer_tokens_found_in_the_chunks():
    # SQuAD tokens: "the" and "a" drop out, punctuation too; "Paris is capital of France" has 5 tokens.
    assert grounding.word_support("Paris is the capital of France.", ["France's capital: Paris", "It is"]) == 0.6
    assert grounding.word_support("Paris is the capital of France.", ["Paris is the capital of France"]) == 1.0
    assert grounding.word_support("Lyon", ["Paris is the capital of France"]) == 0.0
    assert grounding.word_support("", ["Paris"]) == 1.0  # nothing in an empty answer is unsupported
    assert grounding.word_support("Paris", []) is None  # no chunk text: nothing to compare with
    assert grounding.word_support("Paris", ["  ", "."]) is None


def test_the_blend_uses_the_fitted_weight_and_passes_other_results_through():
    w = grounding.claims_weight()
    assert 0.0 <= w <= 1.0 and w == json.loads(grounding.WEIGHTS.read_text())["claims_weight"]
    blended = grounding.grounded(Result(0.5), 0.8)
    assert blended.status == OK and blended.value == round(w * 0.5 + (1 - w) * 0.8, 4)
    assert "word support 0.800" in blended.detail
    failed = Result(None, JUDGE_ERROR, "no verdicts")
    assert grounding.grounded(failed, 0.8) is failed  # stays retryable, never a silent number
    no_context = Result(1.0, detail="No context to verify.")
    assert grounding.grounded(no_context, None) is no_context


@pytest.mark.parametrize("answer, chunks", [
    ("The Eiffel Tower is in Paris. It was finished in 1889.",
     ["The Eiffel Tower, finished in 1889, stands in Paris."]),
    ("The Eiffel Tower is in Rome.", ["The Eiffel Tower stands in Paris."]),
])
def test_the_engine_stores_the_rating_of_the_blend(tmp_path, answer, chunks):
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps({"id": "q1", "question": "Where is the Eiffel Tower?", "answer": "In Paris."}) + "\n")
    outputs = tmp_path / "outputs.jsonl"
    outputs.write_text(json.dumps({"question_id": "q1", "method": "m", "answer": answer,
                                   "contexts": [{"chunk_id": str(k), "text": t} for k, t in enumerate(chunks)]}) + "\n")
    path = tmp_path / "r.duckdb"
    store = open_store(path)
    try:
        g = store.save_dataset(loaders.load(golden, role="golden")).dataset_id
        o = store.save_dataset(loaders.load(outputs, role="outputs")).dataset_id
        run = lifecycle.start_stored(store, g, [o], lifecycle.RunSpec(metrics=["faithfulness", "judge_faithfulness"]))
        engine.execute_run(store, run)
        rows = dict(store.cursor().execute("SELECT metric, value FROM scores WHERE run_id = ?", [run]).fetchall())
    finally:
        close_store(path)
    w = grounding.claims_weight()
    expected = half_up(1 + 4 * round(w * rows["faithfulness"] + (1 - w) * grounding.word_support(answer, chunks), 4), 1)
    assert rows["judge_faithfulness"] == expected
