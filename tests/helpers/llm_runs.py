"""Runs judged by a scripted LLM judge whose verdicts are chosen per claim and chunk, to check every stored
formula against its seed."""
from __future__ import annotations

import json
import re
from pathlib import Path

from evaluators import loaders
from evaluators.judges import OpenAIJudge, lent_api_key, prompts
from evaluators.runs import engine, lifecycle
from tests.helpers.openai_server import start_server


S, C, N = "supported", "contradicted", "not_found"


def holistic(overall: int, steps: tuple[int, int, int], classification: str) -> dict:
    """A holistic reply with seed 001's overall, seed 003's three GEval scores and class."""
    reasoned = lambda score: {"reasoning": "-", "score": score}  # noqa: E731
    return {"correctness": overall, "completeness": overall, "faithfulness": overall, "relevance": overall,
            "clarity": overall, "overall_score": overall, "verdict": "pass", "explanation": "-",
            "alignment": reasoned(overall), "question_relevance": reasoned(overall),
            **{name: reasoned(score) for name, score in zip(("step1_correctness", "step2_completeness",
                                                             "step3_consistency"), steps)},
            "classification": classification}


_CHUNK_ID = re.compile(r'<chunk id="C(\d+)">')


def verification(spec: dict, user: str) -> dict:
    """The verification reply for the chunks this request lists, from the sample's verdicts by chunk index."""
    chunks = [int(j) - 1 for j in _CHUNK_ID.findall(user)]

    def cells(by_chunk: dict) -> list[dict]:
        return [{"chunk_id": prompts.chunk_id(j), "verdict": by_chunk.get(j, N)} for j in chunks]

    return {
        "answer_claims": [{"claim_id": prompts.answer_claim_id(i), "chunk_verdicts": cells(by_chunk),
                           "reference_verdict": other, "matched_reference_claims": []}
                          for i, (by_chunk, other) in enumerate(spec["answer_claims"])],
        "reference_claims": [{"claim_id": prompts.reference_claim_id(i), "chunk_verdicts": cells(by_chunk),
                              "answer_verdict": other} for i, (by_chunk, other) in enumerate(spec["reference_claims"])],
        "chunks": [{"chunk_id": prompts.chunk_id(j), "relevant": j in spec["relevant"],
                    "relevance_score": 98 if j in spec["relevant"] else 5, "reason": "-"} for j in chunks],
    }


def write_jsonl(path, rows):
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def judged_by_llm(store, golden: Path, outputs: Path, responder) -> tuple[str, str, str]:
    """(golden id, outputs id, run id): both files stored and a run of them judged by the scripted LLM (`responder`
    answers each request) on a loopback OpenAI-compatible server."""
    golden_id = store.save_dataset(loaders.load(golden, role="golden")).dataset_id
    outputs_id = store.save_dataset(loaders.load(outputs, role="outputs")).dataset_id
    with start_server() as server:
        server.responder = responder
        run_id = lifecycle.start_stored(store, golden_id, [outputs_id],
                                        lifecycle.RunSpec(judge=OpenAIJudge("m", server.base_url)))
        with lent_api_key(run_id, "test"):
            assert engine.execute_run(store, run_id) == "finished"
    return golden_id, outputs_id, run_id
