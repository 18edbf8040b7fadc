"""Diagnosis queries on a real DuckDB file whose cells were designed case by case (tests/helpers/diagnosis_run.py):
every (question, method) gets the label the rule gives it, the shares and their Wilson intervals come from those
labels, the sentences count the questions one method loses, and the rank metrics are averaged by question type."""
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest

from evaluators.queries import ALL_TYPES
from evaluators.queries import diagnosis as d
from evaluators.queries.attribution import LABELS
from evaluators.queries.screens import SCREENS
from evaluators.store import close_store
from tests.helpers.headline_run import headline_run
from tests.helpers.diagnosis_run import A, B, DESIGN, LOST, TYPES, diagnosis_run


@pytest.fixture
def run(tmp_path):
    store, run_id = diagnosis_run(tmp_path)
    yield store, run_id, d.view(store, run_id)
    close_store(store.path)


def test_every_sample_gets_the_designed_label_and_its_evidence(run):
    _, _, tables = run
    assert list(tables) == list(d.TABLES) and SCREENS["diagnosis"] is d.view
    got = {(r.question_id, r.method): r.label for r in tables["attribution"].itertuples()}
    assert got == {(q, m): label for q, methods in DESIGN.items() for m, (_, label) in methods.items()}
    rows = tables["attribution"].set_index(["question_id", "method"])
    assert rows.loc[("q0", A), "retrieval decided by"] == "id_recall"  # beside a context_recall of 0
    assert rows.loc[("q2", A), "retrieval decided by"] == "context_recall"  # id_recall not applicable
    assert rows.loc[("q3", B), "answer decided by"] == "answer_correctness_f1"
    assert rows.loc[("q7", B), ["answer decided by", "answer value"]].tolist() == ["completeness", 0.4]
    assert rows.loc[("q2", B), "answer label"] == "DON'T KNOW"
    assert "context_recall judge_error" in rows.loc[("q4", A), "reason"]
    assert rows.loc[("q7", A), "reason"].startswith("retrieval: undecided (id_recall not scored")


def test_shares_count_the_labels_with_wilson_intervals(run):
    _, _, tables = run
    shares = tables["shares"]
    assert list(shares["label"].unique()) == list(LABELS)
    for method in (A, B):
        expected = Counter(label for methods in DESIGN.values() for m, (_, label) in methods.items() if m == method)
        mine = shares[shares["method"] == method].set_index("label")
        assert mine["n"].to_dict() == {label: expected.get(label, 0) for label in LABELS}
        assert (mine["of"] == len(DESIGN)).all()
        ci = binomtest(expected["unknown"], len(DESIGN)).proportion_ci(method="wilson")
        if expected["unknown"]:
            assert mine.loc["unknown", "ci_low"] == pytest.approx(ci.low, abs=1e-4)
            assert mine.loc["unknown", "ci_high"] == pytest.approx(ci.high, abs=1e-4)


def test_the_rules_say_which_metric_decided_how_often(run):
    _, _, tables = run
    rules = tables["rules"].set_index(["method", "question", "metric"])["n"]
    assert rules[(B, "retrieval", "id_recall")] == 5 and rules[(B, "retrieval", "context_recall")] == 3
    assert rules[(A, "retrieval", "undecided")] == 3 and rules[(B, "answer", "completeness")] == 1


def test_the_sentences_count_what_each_method_loses_with_the_questions_behind_each_number(run):
    _, _, tables = run
    sentences = tables["sentences"].set_index("loser")
    assert sentences.loc[B, "sentence"] == (
        f"{B} loses 4 questions that {A} answers: 1 because its retrieval missed the evidence {A} found, 1 because "
        f"its retrieval missed the evidence ({A} answered without retrieving it), 2 because its answer ignored "
        "retrieved evidence.")
    assert sentences.loc[A, "lost"] == 2
    for (loser, winner), reasons in LOST.items():
        for reason, questions in reasons.items():
            assert sentences.loc[loser, reason] == len(questions)
            behind = d.behind(tables, method=loser, winner=winner, reason=reason)
            assert sorted(behind["question_id"]) == questions
    assert list(d.behind(tables, method=A, label="unknown")["question_id"]) == ["q4", "q6", "q7"]


def test_rank_metrics_by_question_type_are_the_means_of_their_ok_cells(run):
    _, _, tables = run
    rank = tables["rank_by_type"].set_index(["method", "question_type", "metric"])
    assert set(rank.index.get_level_values("metric")) == {"id_recall", "id_hit", "id_recall@5"}
    for method in (A, B):
        for qtype in ("Fact", "Reasoning", ALL_TYPES):
            values = [methods[method][0]["id_recall"] for methods, t in zip(DESIGN.values(), TYPES)
                      if qtype in (t, ALL_TYPES) and isinstance(methods[method][0].get("id_recall"), float)]
            row = rank.loc[(method, qtype, "id_recall")]
            assert row["n_scored"] == len(values)
            assert row["mean"] == pytest.approx(np.mean(values), abs=1e-4)
    assert rank.loc[(B, "Fact", "id_recall@5"), "mean"] == pytest.approx(np.mean([0, 1, 1]) / 2, abs=1e-4)


def test_methods_must_be_two_of_the_run(run):
    store, run_id, _ = run
    with pytest.raises(ValueError, match="two different methods"):
        d.view(store, run_id, methods=[A])
    with pytest.raises(ValueError, match="method 'nope' is not one of"):
        d.view(store, run_id, methods=[A, "nope"])
    swapped = d.view(store, run_id, methods=[B, A])["sentences"]
    assert list(swapped["loser"]) == [A, B]


def test_the_graphrag_demo_is_diagnosed_from_claims_alone(demo_read):
    store, run_id = demo_read
    tables = d.view(store, run_id)
    assert set(tables["rules"]["metric"]) == {"context_recall", "answer_class"}  # no document ids in the demo
    assert tables["rank_by_type"].empty
    n = store.cursor().execute("SELECT count(DISTINCT (question_id, method)) FROM scores WHERE run_id = ?",
                               [run_id]).fetchall()[0][0]
    assert len(tables["attribution"]) == n and tables["shares"]["n"].sum() == n
    lost = tables["lost_questions"]
    for row in tables["sentences"].itertuples():
        assert row.lost == ((lost["loser"] == row.loser) & (lost["winner"] == row.winner)).sum()


def test_a_run_that_scored_no_retrieval_metric_says_so_and_what_would_decide_it(tmp_path):
    store, run_id = headline_run(tmp_path, methods=("m1",))  # answer_class, no retrieval metric at all
    try:
        tables = d.view(store, run_id)
        assert (tables["attribution"]["label"] == "unknown").all() and tables["sentences"].empty  # one method
        notes = d.undecided_notes(tables["rules"])
        assert notes == ["m1: no question has an ok cell of id_recall, context_recall, so its retrieval is undecided "
                         "and every question is unknown; to diagnose it, give the golden set relevant_ids, or score "
                         "context_recall (it needs the retrieved chunks)."]
    finally:
        close_store(store.path)


def test_an_unanswerable_question_is_lost_by_the_method_that_answers_it():
    """ClapNQ's unanswerable questions: the reference abstains; the method that abstains is right, the one that
    answers loses the question, for that reason (not a retrieval miss, as context_recall = 0 would say)."""
    reference = "The passage does not contain the answer to this question."
    rows = [("u1", m, metric, value, "ok", label) for m, label in ((A, "DON'T KNOW"), (B, "WRONG"))
            for metric, value, label in (("context_recall", 0.0, None), ("answer_class", 0.0, label))]
    long = pd.DataFrame([{"question_id": q, "question_type": "UNANSWERABLE", "question": "?", "reference": reference,
                          "method": m, "metric": metric, "value": v, "status": s, "label": lab}
                         for q, m, metric, v, s, lab in rows])
    frame = d.attribution(long).set_index("method")
    assert frame.loc[A, "label"] == "ok" and frame.loc[B, "label"] == "generation miss"
    assert frame.loc[B, "retrieval decided by"] == "unanswerable"
    lost = d.losses(d.attribution(long), B, A)
    assert lost["reason"].tolist() == [d.ANSWERED]
    said = d.sentences(lost, [A, B])
    assert f"{B} loses 1 question that {A} answers: 1 because it answered where the reference says there is no " \
           f"answer ({A} abstained)." in said["sentence"].tolist()
