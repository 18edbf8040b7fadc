"""The claim matrix -> metric arithmetic, checked against RAGChecker's published checking outputs
and the seeds' worked examples."""
import pytest

from evaluators.maths import formulas
from evaluators.records.judgments import CONTRADICTED, NOT_FOUND, SUPPORTED, UNKNOWN, ChunkRelevance, ClaimMatrix, combine
from evaluators.metrics.claims import chunk_rows, claim_metrics, claim_rows, tp_fp_fn
from evaluators.records import JUDGE_ERROR, NOT_APPLICABLE, OK
from tests.helpers.ragchecker import ragchecker_matrix, ragchecker_outputs


@pytest.fixture(scope="module")
def ragchecker():
    return ragchecker_outputs()["results"]


@pytest.mark.parametrize("query", [0, 1])
def test_metrics_reproduce_ragcheckers_published_numbers(ragchecker, query):
    result = ragchecker[query]
    published = result["metrics"]
    scores = claim_metrics(ragchecker_matrix(result))
    assert all(r.status == OK for r in scores.values())
    assert scores["faithfulness"].value == pytest.approx(published["faithfulness"], abs=1e-12)
    assert scores["context_recall"].value == pytest.approx(published["claim_recall"], abs=1e-12)
    assert scores["context_precision"].value == pytest.approx(published["context_precision"], abs=1e-12)
    assert scores["completeness"].value == pytest.approx(published["recall"], abs=1e-12)
    split = tp_fp_fn(ragchecker_matrix(result))
    tp, fp = len(split["TP"]), len(split["FP"])
    assert tp / (tp + fp) == pytest.approx(published["precision"], abs=1e-12)


def test_ragchecker_query_0_in_seed_002s_f1_and_the_claim_lists(ragchecker):
    matrix = ragchecker_matrix(ragchecker[0])
    split = tp_fp_fn(matrix)
    assert (len(split["TP"]), len(split["FP"]), len(split["FN"])) == (8, 3, 11)
    scores = claim_metrics(matrix)
    assert scores["answer_correctness_f1"].value == 8 / 15  # TP / (TP + 0.5 (FP + FN))
    assert scores["answer_correctness_f1"].detail == "TP 8, FP 3, FN 11"
    assert scores["hallucination_rate"].value == 7 / 11
    assert scores["wp_precision"].value == 3 / 4  # chunks 000, 001 and 003 support a response claim
    assert scores["context_precision_ap"].value == formulas.average_precision([True, True, False, True])


def _case_study() -> ClaimMatrix:
    """Seed 000's case study: 2 answer facts, each in one chunk; chunk 3 unused."""
    return ClaimMatrix(
        answer_claims=("Game changer for disabilities", "emotionally exhausting"),
        reference_claims=("Mostly exciting", "there are some risks"),
        chunk_ids=("1", "2", "3"),
        answer_vs_chunks=((SUPPORTED, NOT_FOUND, NOT_FOUND), (NOT_FOUND, SUPPORTED, NOT_FOUND)),
        reference_vs_chunks=((SUPPORTED, NOT_FOUND, SUPPORTED), (NOT_FOUND, SUPPORTED, NOT_FOUND)),
        answer_vs_reference=(SUPPORTED, SUPPORTED),
        reference_vs_answer=(NOT_FOUND, SUPPORTED),
        chunk_relevance=(ChunkRelevance(True, 90), ChunkRelevance(True, 85), ChunkRelevance(False, 10)),
    )


def test_white_paper_case_study_through_the_matrix():
    scores = claim_metrics(_case_study())
    assert formulas.scale_to_likert(scores["faithfulness"].value) == 5.0
    precision = formulas.scale_to_likert(scores["wp_precision"].value)
    assert precision == 1 + 4 * (2 / 3) and round(precision, 1) == 3.7
    assert formulas.scale_to_likert(scores["wp_recall"].value) == 5.0
    assert scores["wp_precision"].detail == "2/3 chunks used by the answer: 1, 2"


def test_einstein_example_gives_f1_057():
    matrix = ClaimMatrix(
        answer_claims=("born in 1879", "born in Spain", "developed relativity", "Nobel Prize 1921"),
        reference_claims=("born in 1879", "born in Germany", "developed relativity"),
        chunk_ids=(), answer_vs_chunks=((), (), (), ()), reference_vs_chunks=((), (), ()),
        answer_vs_reference=(SUPPORTED, CONTRADICTED, SUPPORTED, NOT_FOUND),
        reference_vs_answer=(SUPPORTED, CONTRADICTED, SUPPORTED),
        chunk_relevance=(),
    )
    f1 = claim_metrics(matrix)["answer_correctness_f1"]
    assert f1.value == 2 / 3.5 and round(f1.value, 2) == 0.57
    assert tp_fp_fn(matrix) == {"TP": ["born in 1879", "developed relativity"],
                                "FP": ["born in Spain", "Nobel Prize 1921"], "FN": ["born in Germany"]}


def test_no_context_follows_the_seeds_edge_cases():
    matrix = ClaimMatrix(("a claim",), ("a fact",), (), ((),), ((),), (SUPPORTED,), (SUPPORTED,), ())
    scores = claim_metrics(matrix)
    assert (scores["faithfulness"].value, scores["faithfulness"].detail) == (1.0, "No context to verify.")
    assert scores["wp_precision"].status == NOT_APPLICABLE  # seed 000: NaN
    assert scores["wp_recall"].value == 1.0  # seed 000
    assert scores["context_recall"].value == 0.0  # seed 003: no context means no recall
    assert scores["context_precision"].status == NOT_APPLICABLE
    assert scores["hallucination_rate"].status == NOT_APPLICABLE


def test_no_claims_follow_seed_003():
    matrix = ClaimMatrix((), (), ("c1",), (), (), (), (), (ChunkRelevance(False, 0),))
    scores = claim_metrics(matrix)
    assert scores["faithfulness"].value == 1.0 and scores["context_recall"].value == 1.0
    assert scores["hallucination_rate"].value == 0.0
    assert scores["answer_correctness_f1"].status == NOT_APPLICABLE


def test_a_missing_verdict_is_a_judge_error_on_the_cells_that_need_it_only():
    m = _case_study()
    broken = ClaimMatrix(m.answer_claims, m.reference_claims, m.chunk_ids,
                         ((SUPPORTED, NOT_FOUND, NOT_FOUND), (None, None, None)), m.reference_vs_chunks,
                         m.answer_vs_reference, m.reference_vs_answer,
                         (ChunkRelevance(True), ChunkRelevance(None), ChunkRelevance(False)))
    scores = claim_metrics(broken)
    for metric in ("faithfulness", "hallucination_rate", "wp_recall", "wp_precision", "context_precision",
                   "context_precision_ap"):
        assert scores[metric].status == JUDGE_ERROR, metric
        assert scores[metric].value is None
    assert "no verdict for 1 of 2 answer claims" in scores["faithfulness"].detail
    for metric in ("context_recall", "completeness", "answer_correctness_f1"):
        assert scores[metric].status == OK, metric


def test_an_unknown_verdict_counts_as_not_supported():
    m = _case_study()
    unsure = ClaimMatrix(m.answer_claims, m.reference_claims, m.chunk_ids,
                         ((SUPPORTED, NOT_FOUND, NOT_FOUND), (UNKNOWN, UNKNOWN, NOT_FOUND)),
                         m.reference_vs_chunks, m.answer_vs_reference, m.reference_vs_answer, m.chunk_relevance)
    scores = claim_metrics(unsure)
    assert scores["faithfulness"].value == 0.5
    assert scores["hallucination_rate"].value == 0.0  # unknown is not a hallucination either


def test_a_contradicted_claim_is_a_hallucination():
    m = _case_study()
    contradicted = ClaimMatrix(m.answer_claims, m.reference_claims, m.chunk_ids,
                               ((SUPPORTED, NOT_FOUND, NOT_FOUND), (NOT_FOUND, CONTRADICTED, NOT_FOUND)),
                               m.reference_vs_chunks, m.answer_vs_reference, m.reference_vs_answer, m.chunk_relevance)
    scores = claim_metrics(contradicted)
    assert scores["faithfulness"].value == 0.5 and scores["hallucination_rate"].value == 0.5


def test_combine_prefers_support_then_contradiction_and_waits_for_missing_verdicts():
    assert combine([NOT_FOUND, SUPPORTED, CONTRADICTED]) == SUPPORTED
    assert combine([NOT_FOUND, CONTRADICTED, None]) == CONTRADICTED
    assert combine([NOT_FOUND, None]) is None
    assert combine([NOT_FOUND, UNKNOWN]) == UNKNOWN
    assert combine([NOT_FOUND, NOT_FOUND]) == NOT_FOUND


def test_a_matrix_of_the_wrong_shape_or_verdicts_is_refused():
    m = _case_study()
    with pytest.raises(ValueError, match="answer_vs_chunks must be 2 x 3"):
        ClaimMatrix(m.answer_claims, m.reference_claims, m.chunk_ids, m.answer_vs_chunks[:1],
                    m.reference_vs_chunks, m.answer_vs_reference, m.reference_vs_answer, m.chunk_relevance)
    with pytest.raises(ValueError, match="unknown verdict"):
        ClaimMatrix(m.answer_claims, m.reference_claims, m.chunk_ids, m.answer_vs_chunks,
                    m.reference_vs_chunks, ("yes", SUPPORTED), m.reference_vs_answer, m.chunk_relevance)


def test_rows_for_the_claims_and_chunk_verdicts_tables():
    key = {"run_id": "r", "question_id": "q", "method": "m"}
    m = _case_study()
    rows = claim_rows(key, m)
    assert [(r["source"], r["claim_idx"], r["verdict"], r["chunk_ids"]) for r in rows] == [
        ("answer", 0, SUPPORTED, ["1"]), ("answer", 1, SUPPORTED, ["2"]),
        ("reference", 0, SUPPORTED, ["1", "3"]), ("reference", 1, SUPPORTED, ["2"])]
    assert rows[0]["reason"] == "1 chunk supported, 2 chunks not found"
    chunks = chunk_rows(key, m)
    assert [(c["chunk_id"], c["relevant"], c["used_by_answer"]) for c in chunks] == [
        ("1", True, True), ("2", True, True), ("3", False, False)]


def test_a_claim_without_verdict_is_stored_as_unknown_never_supported():
    m = _case_study()
    broken = ClaimMatrix(m.answer_claims, m.reference_claims, m.chunk_ids,
                         ((NOT_FOUND, None, NOT_FOUND), (None, None, None)), m.reference_vs_chunks,
                         m.answer_vs_reference, m.reference_vs_answer, m.chunk_relevance)
    rows = claim_rows({"run_id": "r", "question_id": "q", "method": "m"}, broken)
    assert [r["verdict"] for r in rows[:2]] == [UNKNOWN, UNKNOWN]
    assert rows[1]["reason"] == "the judge gave no verdict for 3 of 3 chunks"
