"""RAGChecker's example checking output (tests/fixtures/ragchecker_examples, Apache-2.0) as RAGScope claim matrices."""
import json

from evaluators.records.judgments import CONTRADICTED, NOT_FOUND, SUPPORTED, ChunkRelevance, ClaimMatrix
from tests.helpers import FIXTURES

OUTPUTS = FIXTURES / "ragchecker_examples" / "checking_outputs.json"
# RAGChecker's checker labels -> our verdicts (its metrics count Entailment only, as ours count supported only).
NLI = {"Entailment": SUPPORTED, "Contradiction": CONTRADICTED, "Neutral": NOT_FOUND}


def ragchecker_outputs() -> dict:
    """The whole file: `results` (one per question, each with its `metrics`) and the dataset's `metrics`."""
    return json.loads(OUTPUTS.read_text())


def ragchecker_matrix(result: dict) -> ClaimMatrix:
    """RAGChecker's per-claim entailments as a claim matrix. Its naming is by checked side:
    answer2response[i] = does the ground truth entail response claim i; retrieved2response[i][j] =
    does chunk j entail response claim i. A chunk is relevant when it entails a ground-truth claim
    (RAGChecker's context precision)."""
    chunks = result["retrieved_context"]
    gt_by_chunk = list(zip(*result["retrieved2answer"])) if result["retrieved2answer"] else [()] * len(chunks)
    return ClaimMatrix(
        answer_claims=tuple(" ".join(c) for c in result["response_claims"]),
        reference_claims=tuple(" ".join(c) for c in result["gt_answer_claims"]),
        chunk_ids=tuple(c["doc_id"] for c in chunks),
        answer_vs_chunks=tuple(tuple(NLI[v] for v in row) for row in result["retrieved2response"]),
        reference_vs_chunks=tuple(tuple(NLI[v] for v in row) for row in result["retrieved2answer"]),
        answer_vs_reference=tuple(NLI[v] for v in result["answer2response"]),
        reference_vs_answer=tuple(NLI[v] for v in result["response2answer"]),
        chunk_relevance=tuple(ChunkRelevance("Entailment" in col) for col in gt_by_chunk),
    )
