"""The replies a real judge gives to seed 000's worked example (judge-prompts seed), and a JudgeClient on a
scripted server."""
from __future__ import annotations

from evaluators.judges.openai_protocol import JudgeClient
from evaluators.records import Chunk, GoldenItem, RagOutput, Sample
from tests.helpers.openai_server import Reply


KEY = "sk-test-very-secret-key-123"


# Seed 000, section 6 (the white paper's case study)
SEED_000_QUESTION = "Do you think this kind of technology is exciting or concerning?"


SEED_000_ANSWER = "Game changer for disabilities, but emotionally exhausting."


SEED_000_REFERENCE = "Mostly exciting, though there are some risks."


SEED_000_CHUNKS = (
    "Interviewer: What's a benefit you can imagine?\nInterviewee: For people with disabilities, especially "
    "speech disabilities, it could be a game changer.",
    "Interviewer: And a possible downside?\nInterviewee: Mental fatigue maybe? I think it could be emotionally "
    "exhausting to always filter your own brain.",
    "Interviewer: Could this tech exist soon?\nInterviewee: I mean, we're not that far off. Maybe within our lifetime.",
)


SEED_000_EXTRACTION = {
    "answer_claims": ["The technology is a game changer for people with disabilities.",
                      "The technology is emotionally exhausting."],
    "reference_claims": ["The technology is mostly exciting.", "The technology has some risks."],
    "generated_questions": ["Who could benefit from this technology?", "What is a downside of this technology?",
                            "Is the technology good for people with disabilities?"],
}


def _cells(verdicts):
    return [{"chunk_id": f"C{j + 1}", "verdict": v} for j, v in enumerate(verdicts)]


SEED_000_VERIFICATION = {
    "answer_claims": [
        {"claim_id": "A1", "chunk_verdicts": _cells(["supported", "not_found", "not_found"]),
         "reference_verdict": "supported", "matched_reference_claims": ["R1"]},
        {"claim_id": "A2", "chunk_verdicts": _cells(["not_found", "supported", "not_found"]),
         "reference_verdict": "supported", "matched_reference_claims": ["R2"]},
    ],
    "reference_claims": [
        {"claim_id": "R1", "chunk_verdicts": _cells(["supported", "not_found", "not_found"]),
         "answer_verdict": "supported"},
        {"claim_id": "R2", "chunk_verdicts": _cells(["not_found", "supported", "not_found"]),
         "answer_verdict": "supported"},
    ],
    "chunks": [
        {"chunk_id": "C1", "relevant": True, "relevance_score": 90, "reason": "names a benefit"},
        {"chunk_id": "C2", "relevant": True, "relevance_score": 85, "reason": "names a downside"},
        {"chunk_id": "C3", "relevant": False, "relevance_score": 10, "reason": "about timing only"},
    ],
}


SEED_000_REPLIES = (Reply.json(SEED_000_EXTRACTION), Reply.json(SEED_000_VERIFICATION))


# The white paper's ratings of its case study (correctness 3, relevance 4) in the holistic reply.
SEED_000_HOLISTIC = {
    "correctness": 3, "completeness": 3, "faithfulness": 5, "relevance": 4, "clarity": 4, "overall_score": 4,
    "verdict": "partial", "explanation": "Both name benefits and risks; the answer is not fully aligned.",
    "alignment": {"reasoning": "The answer overlaps partially with the reference.", "score": 3},
    "question_relevance": {"reasoning": "Mostly on-topic, though slightly indirect.", "score": 4},
    "step1_correctness": {"reasoning": "Accurate.", "score": 85},
    "step2_completeness": {"reasoning": "Misses 'mostly exciting'.", "score": 70},
    "step3_consistency": {"reasoning": "Consistent.", "score": 95},
    "classification": "CORRECT",
}


def seed_000_sample() -> Sample:
    contexts = tuple(Chunk(str(i + 1), text) for i, text in enumerate(SEED_000_CHUNKS))
    return Sample(GoldenItem("q1", SEED_000_QUESTION, SEED_000_REFERENCE),
                  RagOutput("q1", "local_search", SEED_000_ANSWER, contexts))


def make_judge(server, **options) -> JudgeClient:
    options = {"timeout": 2, "backoff_base": 0.01, "backoff_max": 0.05, **options}
    return JudgeClient(server.base_url, "judge-model", api_key=KEY, **options)
