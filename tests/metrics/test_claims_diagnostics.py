"""RAGChecker's diagnostics as claim metrics (issue 35, item 3): from the claim matrix every judge fills, RAGChecker's
numbers on its own example, their statuses in every edge case, their catalogue entries, and a real offline run that
stores them."""
from __future__ import annotations

import dataclasses

import pytest

from evaluators.judges import OpenAIJudge, prompts
from evaluators.metrics import REGISTRY
from evaluators.metrics.claims import ANSWER_CLAIMS_ONLY, NO_CONTEXT, claim_metrics
from evaluators.records import JUDGE_ERROR, NOT_APPLICABLE, OK, TIMEOUT
from evaluators.records.judgments import (CONTRADICTED, NOT_FOUND, SUPPORTED, UNKNOWN, ChunkRelevance, ClaimMatrix,
                                          JudgeFailure)
from evaluators.store import close_store, open_store
from tests.helpers.claims_runs import build_run
from tests.helpers.openai_server import Reply, start_server
from tests.helpers.ragchecker import ragchecker_matrix, ragchecker_outputs

DIAGNOSTICS = ["context_utilization", "noise_sensitivity_relevant", "noise_sensitivity_irrelevant",
               "ragchecker_hallucination", "self_knowledge"]
OF_ANSWER_CLAIMS = DIAGNOSTICS[1:]
# RAGChecker's name of each (ragchecker/metrics.py); its claim recall is our context_recall
RAGCHECKER_NAME = {"context_utilization": "context_utilization", "context_recall": "claim_recall",
                   "noise_sensitivity_relevant": "noise_sensitivity_in_relevant",
                   "noise_sensitivity_irrelevant": "noise_sensitivity_in_irrelevant",
                   "ragchecker_hallucination": "hallucination", "self_knowledge": "self_knowledge",
                   "faithfulness": "faithfulness"}
ANSWER = "The tower was built by Alice."  # answers (does not abstain)


@pytest.mark.parametrize("query", [0, 1])
def test_ragcheckers_example_gives_its_recorded_values_per_question(query):
    result = ragchecker_outputs()["results"][query]
    scores = claim_metrics(ragchecker_matrix(result), result["response"])
    for ours, theirs in RAGCHECKER_NAME.items():
        assert scores[ours].status == OK, ours
        assert scores[ours].value == result["metrics"][theirs], ours  # same counts, same division: exact


def test_ragcheckers_example_gives_its_dataset_means():
    outputs = ragchecker_outputs()
    scores = [claim_metrics(ragchecker_matrix(r), r["response"]) for r in outputs["results"]]
    reported = {**outputs["metrics"]["generator"], **outputs["metrics"]["retriever"]}
    for ours, theirs in RAGCHECKER_NAME.items():
        mean = sum(s[ours].value for s in scores) / len(scores)
        assert round(mean * 100, 1) == reported[theirs], ours  # RAGChecker's evaluator: round(mean x 100, 1)


def test_the_counts_behind_each_value_are_data():
    s = claim_metrics(ragchecker_matrix(ragchecker_outputs()["results"][0]), ANSWER)
    assert s["noise_sensitivity_relevant"].counts == {"incorrect_in_relevant": 2, "answer_claims": 11,
                                                      "relevant_chunks": 3}
    assert s["self_knowledge"].counts["correct_unfaithful"] == 6
    assert s["context_utilization"].counts == {"recalled_used": 5, "recalled": 5}
    assert s["noise_sensitivity_relevant"].detail == ("2/11 answer claims unsupported by the reference yet in a "
                                                      "relevant chunk (3 of 4 chunks relevant)")


# -- a small matrix and its minimal pairs ----------------------------------------------------------------------------
# Chunk 1 holds the reference's claim (relevant in RAGChecker's sense), chunk 2 does not.

def matrix(answer_vs_chunks=((SUPPORTED, NOT_FOUND),), answer_vs_reference=(SUPPORTED,),
           reference_vs_chunks=((SUPPORTED, NOT_FOUND),), reference_vs_answer=(SUPPORTED,)) -> ClaimMatrix:
    return ClaimMatrix(answer_claims=tuple(f"a{i}" for i in range(len(answer_vs_reference))),
                       reference_claims=tuple(f"r{i}" for i in range(len(reference_vs_answer))), chunk_ids=("1", "2"),
                       answer_vs_chunks=answer_vs_chunks, reference_vs_chunks=reference_vs_chunks,
                       answer_vs_reference=answer_vs_reference, reference_vs_answer=reference_vs_answer,
                       # judged relevant to the question the other way round: RAGChecker's relevance does not read it
                       chunk_relevance=(ChunkRelevance(False, 5), ChunkRelevance(True, 95)))


def values(m: ClaimMatrix, answer: str = ANSWER) -> dict[str, float | None]:
    return {k: r.value for k, r in claim_metrics(m, answer).items() if k in DIAGNOSTICS}


def test_a_wrong_claim_moved_from_a_relevant_chunk_to_an_irrelevant_one_moves_its_noise_sensitivity():
    in_relevant = values(matrix(((SUPPORTED, NOT_FOUND),), (NOT_FOUND,)))
    in_irrelevant = values(matrix(((NOT_FOUND, SUPPORTED),), (NOT_FOUND,)))
    assert (in_relevant["noise_sensitivity_relevant"], in_relevant["noise_sensitivity_irrelevant"]) == (1.0, 0.0)
    assert (in_irrelevant["noise_sensitivity_relevant"], in_irrelevant["noise_sensitivity_irrelevant"]) == (0.0, 1.0)
    assert in_relevant["ragchecker_hallucination"] == in_irrelevant["ragchecker_hallucination"] == 0.0


def test_a_claim_no_chunk_supports_is_ragcheckers_hallucination_when_wrong_and_self_knowledge_when_right():
    wrong = claim_metrics(matrix(((NOT_FOUND, NOT_FOUND),), (NOT_FOUND,)), ANSWER)
    right = claim_metrics(matrix(((NOT_FOUND, NOT_FOUND),), (SUPPORTED,)), ANSWER)
    assert (wrong["ragchecker_hallucination"].value, wrong["self_knowledge"].value) == (1.0, 0.0)
    assert (right["ragchecker_hallucination"].value, right["self_knowledge"].value) == (0.0, 1.0)
    # our hallucination_rate does not read the reference: both are hallucinated facts to it
    assert wrong["hallucination_rate"].value == right["hallucination_rate"].value == 1.0


def test_contradicted_and_unknown_are_not_supported_as_neutral_and_contradiction_are_not_entailment():
    for verdict in (CONTRADICTED, UNKNOWN, NOT_FOUND):
        v = values(matrix(((SUPPORTED, NOT_FOUND),), (verdict,)))
        assert v["noise_sensitivity_relevant"] == 1.0, verdict  # the reference does not support it: incorrect
        w = values(matrix(((verdict, verdict),), (SUPPORTED,)))
        assert w["self_knowledge"] == 1.0, verdict  # no chunk supports it


def test_context_utilization_drops_when_the_answer_leaves_out_what_its_chunks_held():
    used = values(matrix(reference_vs_chunks=((SUPPORTED, NOT_FOUND), (NOT_FOUND, SUPPORTED)),
                         reference_vs_answer=(SUPPORTED, SUPPORTED)))
    left_out = values(matrix(reference_vs_chunks=((SUPPORTED, NOT_FOUND), (NOT_FOUND, SUPPORTED)),
                             reference_vs_answer=(SUPPORTED, NOT_FOUND)))
    assert (used["context_utilization"], left_out["context_utilization"]) == (1.0, 0.5)


# -- edge cases: statuses, never a silent 0 --------------------------------------------------------------------------

def test_no_retrieved_context_makes_every_diagnostic_not_applicable():
    m = ClaimMatrix(answer_claims=("a",), reference_claims=("r",), chunk_ids=(), answer_vs_chunks=((),),
                    reference_vs_chunks=((),), answer_vs_reference=(SUPPORTED,), reference_vs_answer=(SUPPORTED,),
                    chunk_relevance=())
    scores = claim_metrics(m, ANSWER)
    for k in DIAGNOSTICS:
        assert (scores[k].status, scores[k].detail) == (NOT_APPLICABLE, NO_CONTEXT[k])


def test_no_reference_claim_in_the_chunks_leaves_context_utilization_not_applicable_not_0():
    s = claim_metrics(matrix(reference_vs_chunks=((NOT_FOUND, NOT_FOUND),), reference_vs_answer=(NOT_FOUND,)), ANSWER)
    assert s["context_recall"].value == 0.0  # a retrieval miss: the evidence was not retrieved
    assert s["context_utilization"].status == NOT_APPLICABLE  # not a generation miss: nothing there to use
    assert "none of the 1 reference claims is in the retrieved chunks" in s["context_utilization"].detail
    none = claim_metrics(matrix(reference_vs_chunks=(), reference_vs_answer=()), ANSWER)
    utilization = none["context_utilization"]
    assert utilization.status == NOT_APPLICABLE and "no reference claims" in utilization.detail


def test_with_no_reference_claims_no_chunk_is_relevant_so_noise_is_all_irrelevant():
    s = values(matrix(answer_vs_chunks=((SUPPORTED, NOT_FOUND),), answer_vs_reference=(NOT_FOUND,),
                      reference_vs_chunks=(), reference_vs_answer=()))
    assert (s["noise_sensitivity_relevant"], s["noise_sensitivity_irrelevant"]) == (0.0, 1.0)
    assert s["context_utilization"] is None


def test_an_answer_with_no_claims_has_nothing_wrong_and_a_refusal_is_not_applicable():
    empty = matrix(answer_vs_chunks=(), answer_vs_reference=(), reference_vs_answer=(NOT_FOUND,))
    answered, refused = claim_metrics(empty, "Yes."), claim_metrics(empty, "I don't know.")
    for k in OF_ANSWER_CLAIMS:
        assert (answered[k].value, answered[k].detail) == (0.0, "no claims in the answer")
        assert refused[k].status == NOT_APPLICABLE and refused[k].detail.startswith("the answer abstains")
    # a refusal used none of the evidence it was given: context utilization 0, a generation miss
    assert refused["context_utilization"].value == answered["context_utilization"].value == 0.0


def test_the_diagnostics_of_answer_claims_are_among_those_an_abstention_leaves_out():
    assert set(OF_ANSWER_CLAIMS) <= set(ANSWER_CLAIMS_ONLY) and "context_utilization" not in ANSWER_CLAIMS_ONLY


@pytest.mark.parametrize("status", [JUDGE_ERROR, TIMEOUT])
def test_a_judge_failure_is_each_diagnostics_status(status):
    scores = claim_metrics(JudgeFailure(status, "claim extraction failed"), ANSWER)
    for k in DIAGNOSTICS:
        assert (scores[k].status, scores[k].value, scores[k].detail) == (status, None, "claim extraction failed")


def test_a_missing_verdict_fails_only_the_diagnostics_that_read_it():
    no_answer_verdict = claim_metrics(matrix(reference_vs_answer=(None,)), ANSWER)  # read by context utilization only
    assert no_answer_verdict["context_utilization"].status == JUDGE_ERROR
    assert "the judge gave no verdict for 1 of 3" in no_answer_verdict["context_utilization"].detail
    assert {no_answer_verdict[k].status for k in OF_ANSWER_CLAIMS} == {OK}
    no_reference_verdict = claim_metrics(matrix(answer_vs_reference=(None,)), ANSWER)
    assert {no_reference_verdict[k].status for k in OF_ANSWER_CLAIMS} == {JUDGE_ERROR}
    assert no_reference_verdict["context_utilization"].status == OK
    no_chunk_verdict = claim_metrics(matrix(reference_vs_chunks=((SUPPORTED, None),)), ANSWER)  # relevance unknown
    assert {k for k in DIAGNOSTICS if no_chunk_verdict[k].status == JUDGE_ERROR} == {
        "context_utilization", "noise_sensitivity_relevant", "noise_sensitivity_irrelevant"}


def test_a_timed_out_verification_says_why_its_verdicts_are_missing():
    m = dataclasses.replace(matrix(answer_vs_reference=(None,)), missing_status=TIMEOUT,
                            missing_reason="the verification call timed out")
    s = claim_metrics(m, ANSWER)["ragchecker_hallucination"]
    assert s.status == TIMEOUT and s.detail.endswith(": the verification call timed out")


# -- the catalogue ---------------------------------------------------------------------------------------------------

def test_the_catalogue_holds_them_beside_the_other_claim_metrics_with_their_direction():
    directions = {k: REGISTRY[k].direction for k in DIAGNOSTICS}
    assert directions == {"context_utilization": 1, "noise_sensitivity_relevant": -1,
                          "noise_sensitivity_irrelevant": -1, "ragchecker_hallucination": -1, "self_knowledge": 0}
    for k in DIAGNOSTICS:
        m = REGISTRY[k]
        assert (m.family, m.scale, m.seed) == ("claims", "ratio", "RAGChecker")
        assert set(m.needs) == {"judge", "contexts", "reference"}
    # not registered twice: RAGChecker's claim recall and faithfulness are ours, and its name for them is said
    assert "claim_recall" not in REGISTRY and "hallucination" not in REGISTRY
    assert "RAGChecker's claim recall" in REGISTRY["context_recall"].formula
    assert "RAGChecker's faithfulness" in REGISTRY["faithfulness"].formula
    assert "hallucination_rate" in REGISTRY["ragchecker_hallucination"].formula
    assert "not context_precision's relevance" in REGISTRY["noise_sensitivity_relevant"].formula


# -- stored by a real run --------------------------------------------------------------------------------------------

def test_an_offline_run_stores_them_with_statuses_and_counts(tmp_path):
    golden = [{"question_id": "q1", "question": "Who built the tower?", "reference": "Alice built the tower in 1879."},
              {"question_id": "q2", "question": "Who built the tower?", "reference": "Alice built the tower in 1879."}]
    outputs = [{"question_id": "q1", "method": "m", "answer": "Alice built the tower in 1879.",
                "contexts": ["The tower was built by Alice in 1879.", "The door is red."]},
               {"question_id": "q2", "method": "m", "answer": "Alice built the tower in 1879.", "contexts": []}]
    db = tmp_path / "d.duckdb"
    run_id = build_run(db, tmp_path, golden=golden, outputs=outputs, metrics=DIAGNOSTICS)
    store = open_store(db)
    try:
        rows = store.cursor().execute("SELECT question_id, metric, status, value, counts FROM scores WHERE run_id = ?",
                                      [run_id]).fetchall()
    finally:
        close_store(db)
    cells = {(q, metric): (status, value, counts) for q, metric, status, value, counts in rows}
    assert len(cells) == 2 * len(DIAGNOSTICS)
    for k in DIAGNOSTICS:
        assert cells[("q2", k)][:2] == (NOT_APPLICABLE, None)  # no chunks
        assert cells[("q1", k)][0] == OK and cells[("q1", k)][2]  # with the counts behind it
    # the answer is the chunk's sentence and the reference's: used evidence, no noise, no hallucination
    assert {k: cells[("q1", k)][1] for k in DIAGNOSTICS} == {
        "context_utilization": 1.0, "noise_sensitivity_relevant": 0.0, "noise_sensitivity_irrelevant": 0.0,
        "ragchecker_hallucination": 0.0, "self_knowledge": 0.0}


def _llm_responder(body: dict) -> Reply:
    """An LLM judge: the answer's one claim is not in the reference and only chunk 2 (which holds no reference claim)
    supports it; the reference's one claim is in chunk 1 and not in the answer."""
    task = prompts.task_of(body["messages"])
    if task == "extraction":
        return Reply.json({"answer_claims": ["The tower is blue."], "reference_claims": ["Alice built the tower."],
                           "generated_questions": []})
    cells = lambda first, second: [{"chunk_id": prompts.chunk_id(0), "verdict": first},  # noqa: E731
                                   {"chunk_id": prompts.chunk_id(1), "verdict": second}]
    return Reply.json({
        "answer_claims": [{"claim_id": prompts.answer_claim_id(0), "chunk_verdicts": cells(NOT_FOUND, SUPPORTED),
                           "reference_verdict": NOT_FOUND, "matched_reference_claims": []}],
        "reference_claims": [{"claim_id": prompts.reference_claim_id(0), "chunk_verdicts": cells(SUPPORTED, NOT_FOUND),
                              "answer_verdict": NOT_FOUND}],
        "chunks": [{"chunk_id": prompts.chunk_id(j), "relevant": True, "relevance_score": 80, "reason": "-"}
                   for j in (0, 1)]})


def _llm_run(tmp_path, name: str, metrics: list[str]) -> tuple[dict, int]:
    golden = [{"question_id": "q1", "question": "Who built the tower?", "reference": "Alice built the tower."}]
    outputs = [{"question_id": "q1", "method": "m", "answer": "The tower is blue.",
                "contexts": ["Alice built the tower.", "The tower is painted blue."]}]
    db = tmp_path / f"{name}.duckdb"
    with start_server() as server:
        server.responder = _llm_responder
        run_id = build_run(db, tmp_path, golden=golden, outputs=outputs, metrics=metrics,
                           judge=OpenAIJudge("judge-model", server.base_url))
    store = open_store(db)
    try:
        cur = store.cursor()
        scores = dict(cur.execute("SELECT metric, value FROM scores WHERE run_id = ? AND status = 'ok'",
                                  [run_id]).fetchall())
        calls = cur.execute("SELECT count(*) FROM judge_calls WHERE run_id = ?", [run_id]).fetchall()[0][0]
    finally:
        close_store(db)
    return scores, calls


def test_the_llm_judges_matrix_gives_them_with_no_call_more(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    scores, calls = _llm_run(tmp_path, "diagnostics", [*DIAGNOSTICS, "faithfulness"])
    assert scores == {"context_utilization": 0.0, "noise_sensitivity_relevant": 0.0,
                      "noise_sensitivity_irrelevant": 1.0, "ragchecker_hallucination": 0.0, "self_knowledge": 0.0,
                      "faithfulness": 1.0}  # faithful to a chunk, and wrong: noise from an irrelevant chunk
    _, calls_without = _llm_run(tmp_path, "faithfulness", ["faithfulness"])
    assert calls == calls_without == 2  # extraction and verification, whatever the claim metrics chosen
