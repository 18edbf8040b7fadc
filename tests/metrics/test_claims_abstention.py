"""Refusals are not faithful answers (issue 34 item 4): an answer that abstains has no claim of its own to check, so the
claim metrics that score the answer's claims are not_applicable with the reason, never 1.0. Minimal pairs (an answer
and the same question's refusal) through the claim arithmetic, the offline judge's engine run and the LLM judge's
(the scripted OpenAI-compatible server on 127.0.0.1), and the issue's run where half the answers become refusals."""
from __future__ import annotations

import json

import pytest

from evaluators.judges import OpenAIJudge, prompts
from evaluators.maths.abstention import abstains
from evaluators.metrics import REGISTRY
from evaluators.metrics.claims import ANSWER_CLAIMS_ONLY, claim_metrics
from evaluators.records import NOT_APPLICABLE, OK
from evaluators.records.judgments import NOT_FOUND, SUPPORTED, ChunkRelevance, ClaimMatrix
from evaluators.store import close_store, open_store
from tests.helpers.claims_runs import build_run
from tests.helpers.openai_server import Reply, start_server

CHUNKS = ["The tower was built by Alice in 1879.", "It is made of grey stone."]
QUESTION = "Who built the tower?"
ANSWER = "Alice built the tower. It was painted blue."  # one claim in the chunks, one not: faithfulness 0.5 offline
REFUSALS = ["I don't know.", "The provided context does not mention who built the tower.", ""]
CLAIM_METRICS = [*ANSWER_CLAIMS_ONLY, "wp_precision", "answer_correctness_f1", "completeness", "context_precision",
                 "context_recall"]


def _no_claims() -> ClaimMatrix:
    """What a judge extracts from a refusal: no answer claim; the reference's one claim is in chunk 1."""
    return ClaimMatrix(answer_claims=(), reference_claims=("Alice built the tower",), chunk_ids=("1", "2"),
                       answer_vs_chunks=(), reference_vs_chunks=((SUPPORTED, NOT_FOUND),), answer_vs_reference=(),
                       reference_vs_answer=(NOT_FOUND,),
                       chunk_relevance=(ChunkRelevance(True, 90), ChunkRelevance(False, 10)))


@pytest.mark.parametrize("refusal", REFUSALS)
def test_a_refusal_with_no_claims_is_not_applicable_where_an_answer_with_none_scores_the_seeds_1(refusal):
    answered = claim_metrics(_no_claims(), "Yes.")  # answers, yet nothing to extract: seed 003's 1.0 stands
    refused = claim_metrics(_no_claims(), refusal)
    assert answered["faithfulness"].value == 1.0
    for metric_id in ANSWER_CLAIMS_ONLY:
        assert refused[metric_id].status == NOT_APPLICABLE and refused[metric_id].value is None
        assert refused[metric_id].detail == f"the answer abstains ({abstains(refusal)}): no claim to check"
    # the others keep their seed's formula: a refusal covers no reference claim, and the context is what it was
    for metric_id in ("answer_correctness_f1", "completeness", "wp_precision"):
        assert refused[metric_id].value == 0.0
    for metric_id in ("context_precision", "context_recall", "context_precision_ap"):
        assert refused[metric_id] == answered[metric_id]


def test_how_scores_are_computed_says_which_rule_applies_to_an_abstaining_answer():
    for metric_id in ANSWER_CLAIMS_ONLY:
        assert "abstains" in REGISTRY[metric_id].formula and "not applicable" in REGISTRY[metric_id].formula
    assert "abstains" not in REGISTRY["context_recall"].formula


def _cells(db, run_id: str, metric: str) -> dict[tuple[str, str], tuple[str, float | None, str]]:
    store = open_store(db)
    try:
        rows = store.cursor().execute("SELECT question_id, method, status, value, detail FROM scores "
                                      "WHERE run_id = ? AND metric = ?", [run_id, metric]).fetchall()
    finally:
        close_store(db)
    return {(q, m): (status, value, detail) for q, m, status, value, detail in rows}


def _golden(n: int) -> list[dict]:
    return [{"question_id": f"q{i}", "question": QUESTION, "reference": CHUNKS[0]} for i in range(n)]


def _outputs(method: str, n: int, refused: set[int]) -> list[dict]:
    return [{"question_id": f"q{i}", "method": method, "answer": REFUSALS[i % 2] if i in refused else ANSWER,
             "contexts": CHUNKS} for i in range(n)]


def test_offline_judge_a_refusal_is_not_applicable_beside_the_same_questions_answer(tmp_path):
    db = tmp_path / "r.duckdb"
    run_id = build_run(db, tmp_path, golden=_golden(1), metrics=CLAIM_METRICS,
                       outputs=_outputs("answers", 1, set()) + _outputs("refuses", 1, {0}))
    for metric_id in ANSWER_CLAIMS_ONLY:
        cells = _cells(db, run_id, metric_id)
        assert cells[("q0", "answers")][0] == OK
        status, value, detail = cells[("q0", "refuses")]
        assert (status, value) == (NOT_APPLICABLE, None) and detail.startswith("the answer abstains")
    assert _cells(db, run_id, "faithfulness")[("q0", "answers")][1] == 0.5


def test_offline_judge_half_the_answers_becoming_refusals_no_longer_raises_faithfulness(tmp_path):
    """The issue's run: version 2 is version 1 with half its answers replaced by refusals. Before, each refusal
    scored 1.0 and faithfulness rose from 0.5 to 0.75; now the refusals are left out of the mean, as counted."""
    db = tmp_path / "h.duckdb"
    n = 8
    run_id = build_run(db, tmp_path, golden=_golden(n), metrics=["faithfulness", "dont_know"],
                       outputs=_outputs("v1", n, set()) + _outputs("v2", n, set(range(0, n, 2))))
    cells = _cells(db, run_id, "faithfulness")
    mean = {m: [v for (q, method), (s, v, _) in cells.items() if method == m and s == OK] for m in ("v1", "v2")}
    assert len(mean["v1"]) == n and len(mean["v2"]) == n // 2
    assert sum(mean["v2"]) / len(mean["v2"]) <= sum(mean["v1"]) / len(mean["v1"]) == 0.5
    assert sum(s == NOT_APPLICABLE for (q, m), (s, _, _) in cells.items() if m == "v2") == n // 2


def _llm_responder(body: dict) -> Reply:
    """A judge that extracts one claim, supported by chunk 1, from the answer and none from a refusal."""
    task = prompts.task_of(body["messages"])
    text = json.dumps(body)
    refusal = any(r and r in text for r in REFUSALS)  # the answer is in every request about it
    if task == "extraction":
        return Reply.json({"answer_claims": [] if refusal else ["Alice built the tower."],
                           "reference_claims": ["Alice built the tower."], "generated_questions": []})
    cell = lambda verdict: [{"chunk_id": prompts.chunk_id(0), "verdict": verdict},  # noqa: E731
                            {"chunk_id": prompts.chunk_id(1), "verdict": NOT_FOUND}]
    return Reply.json({
        "answer_claims": [] if refusal else [{"claim_id": prompts.answer_claim_id(0), "chunk_verdicts": cell(SUPPORTED),
                                              "reference_verdict": SUPPORTED, "matched_reference_claims": []}],
        "reference_claims": [{"claim_id": prompts.reference_claim_id(0), "chunk_verdicts": cell(SUPPORTED),
                              "answer_verdict": NOT_FOUND if refusal else SUPPORTED}],
        "chunks": [{"chunk_id": prompts.chunk_id(j), "relevant": j == 0, "relevance_score": 90 if j == 0 else 5,
                    "reason": "-"} for j in (0, 1)]})


def test_llm_judge_a_refusal_it_extracts_no_claim_from_is_not_applicable_not_fully_faithful(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    db = tmp_path / "l.duckdb"
    with start_server() as server:
        server.responder = _llm_responder
        run_id = build_run(db, tmp_path, golden=_golden(2), judge=OpenAIJudge("judge-model", server.base_url),
                           metrics=[*ANSWER_CLAIMS_ONLY, "completeness"],
                           outputs=_outputs("answers", 2, set()) + _outputs("refuses", 2, {0, 1}))
    for metric_id in ANSWER_CLAIMS_ONLY:
        cells = _cells(db, run_id, metric_id)
        assert {cells[(q, "answers")][0] for q in ("q0", "q1")} == {OK}
        assert {cells[(q, "refuses")][:2] for q in ("q0", "q1")} == {(NOT_APPLICABLE, None)}
    assert {v for (q, m), (s, v, _) in _cells(db, run_id, "faithfulness").items() if m == "answers"} == {1.0}
    assert {v for (q, m), (s, v, _) in _cells(db, run_id, "completeness").items() if m == "refuses"} == {0.0}
