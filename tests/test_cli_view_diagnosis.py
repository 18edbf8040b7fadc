"""`python -m evaluators view diagnosis RUN --json`, the Diagnosis screen's JSON twin, as a user runs it on the designed
run (tests/helpers/diagnosis_run.py): the same tables as the view, the sentences and the question ids behind them."""
import json

from evaluators.store import close_store
from tests.helpers.cli_view import tables, view
from tests.helpers.diagnosis_run import A, B, LOST, diagnosis_run


def test_json_prints_the_views_tables_with_the_questions_behind_each_number(tmp_path):
    store, run_id = diagnosis_run(tmp_path)
    close_store(store.path)  # the CLI's process opens the file
    out = view(store.path, "diagnosis", run_id, "--methods", f"{B},{A}", "--json")
    assert out.returncode == 0, out.stderr
    printed = json.loads(out.stdout)
    expected = tables(store.path, "diagnosis", run_id, methods=[B, A])
    assert list(printed) == list(expected) == ["rules", "shares", "sentences", "lost_questions", "attribution",
                                               "rank_by_type"]
    for name, frame in expected.items():
        assert len(printed[name]) == len(frame), name
        if "question_id" in frame:
            assert [r["question_id"] for r in printed[name]] == list(frame["question_id"]), name
    assert printed["sentences"][0]["sentence"].startswith(f"{A} loses 2 questions that {B} answers")
    for (loser, winner), reasons in LOST.items():
        for reason, questions in reasons.items():
            assert sorted(r["question_id"] for r in printed["lost_questions"]
                          if (r["loser"], r["winner"], r["reason"]) == (loser, winner, reason)) == questions


def test_a_wrong_method_is_a_clear_error(tmp_path):
    store, run_id = diagnosis_run(tmp_path)
    close_store(store.path)
    out = view(store.path, "diagnosis", run_id, "--methods", f"{A},nope")
    assert out.returncode == 2 and "method 'nope' is not one of" in out.stderr
