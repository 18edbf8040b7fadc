"""The attribution rule (queries/attribution.py) on its own: each label, the order in which metrics decide, and
`unknown` with why wherever no cell is scored ok."""
import pytest

from evaluators.queries.attribution import (BOTH, GENERATION, OK_LABEL, RETRIEVAL, UNKNOWN, Cell, attribute)

OK = "ok"


def ok(value, label=None):
    return Cell(OK, value, label)


RIGHT, WRONG, DONT_KNOW = ok(1.0, "CORRECT"), ok(0.0, "WRONG"), ok(0.0, "DON'T KNOW")


@pytest.mark.parametrize("recall, answer, label", [
    (1.0, RIGHT, OK_LABEL), (0.2, WRONG, GENERATION), (0.0, WRONG, BOTH), (0.0, DONT_KNOW, BOTH),
    (0.0, RIGHT, RETRIEVAL)])
def test_each_label(recall, answer, label):
    found = attribute({"id_recall": ok(recall), "answer_class": answer})
    assert found.label == label
    assert found.retrieval.metric == "id_recall" and found.answer.metric == "answer_class"


def test_id_recall_decides_over_context_recall_and_hands_over_when_not_ok():
    assert attribute({"id_recall": ok(1.0), "context_recall": ok(0.0), "answer_class": RIGHT}).label == OK_LABEL
    for status in ("not_applicable", "judge_error"):  # no relevant ids, or a failed cell: the claims decide
        found = attribute({"id_recall": Cell(status), "context_recall": ok(0.0), "answer_class": RIGHT})
        assert (found.label, found.retrieval.metric) == (RETRIEVAL, "context_recall")


@pytest.mark.parametrize("cells, wrong, metric", [
    ({"answer_class": Cell("judge_error"), "answer_correctness_f1": ok(0.49)}, True, "answer_correctness_f1"),
    ({"answer_correctness_f1": ok(0.5)}, False, "answer_correctness_f1"),  # the threshold itself is right
    ({"answer_correctness_f1": Cell("timeout"), "completeness": ok(0.4)}, True, "completeness"),
    ({"completeness": ok(0.5)}, False, "completeness"),
    ({"answer_class": RIGHT, "answer_correctness_f1": ok(0.0)}, False, "answer_class")])
def test_the_answer_falls_back_in_order(cells, wrong, metric):
    found = attribute({"context_recall": ok(1.0), **cells})
    assert found.answer.yes is wrong and found.answer.metric == metric
    assert found.label == (GENERATION if wrong else OK_LABEL)


@pytest.mark.parametrize("cells, says", [
    ({"answer_class": RIGHT}, "id_recall not scored, context_recall not scored"),
    ({"id_recall": Cell("not_applicable"), "context_recall": Cell("judge_error"), "answer_class": RIGHT},
     "id_recall not_applicable, context_recall judge_error"),
    ({"context_recall": ok(0.0)}, "answer_class not scored, answer_correctness_f1 not scored, completeness not scored"),
    ({}, "undecided")])
def test_a_sample_without_an_ok_cell_is_unknown_with_why_never_ok(cells, says):
    found = attribute(cells)
    assert found.label == UNKNOWN
    assert says in found.reason


def test_the_reason_names_the_deciding_cells():
    found = attribute({"id_recall": ok(0.0), "answer_class": WRONG})
    assert found.reason == "retrieval: id_recall = 0: evidence not retrieved; answer: answer_class WRONG: wrong"


@pytest.mark.parametrize("answer, label, wrong", [
    (DONT_KNOW, OK_LABEL, False),  # abstaining is the right answer to an unanswerable question
    (WRONG, GENERATION, True), (RIGHT, GENERATION, True),  # an answer where the reference says there is none
    (Cell("judge_error"), UNKNOWN, None)])
def test_an_unanswerable_question_has_no_evidence_to_miss_and_its_right_answer_abstains(answer, label, wrong):
    # whatever the retrieval cells say: the reference abstains, so there was nothing to retrieve
    found = attribute({"id_recall": ok(0.0), "context_recall": ok(0.0), "answer_class": answer}, unanswerable=True)
    assert (found.label, found.answer.yes, found.retrieval.yes) == (label, wrong, False)
    assert found.retrieval.metric == "unanswerable" and "no evidence to retrieve" in found.reason
