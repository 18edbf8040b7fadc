"""CLI runs against the scripted OpenAI-compatible server: input files, a server that refuses one question,
the CLI with a key in the environment only."""
import json

from evaluators.judges import prompts
from tests.helpers.cli import cli
from tests.helpers.openai_server import Reply
from tests.helpers.seed_000 import (SEED_000_ANSWER, SEED_000_CHUNKS, SEED_000_EXTRACTION, SEED_000_HOLISTIC,
                                     SEED_000_QUESTION, SEED_000_REFERENCE, SEED_000_VERIFICATION)


KEY = "sk-test-key-that-must-never-be-stored"


BROKEN_QUESTION = "Which question does the server refuse?"


def openai_run_files(tmp_path):
    golden = tmp_path / "gold.jsonl"
    golden.write_text("\n".join(json.dumps(r) for r in (
        {"question_id": "q1", "question": SEED_000_QUESTION, "reference": SEED_000_REFERENCE},
        {"question_id": "q2", "question": BROKEN_QUESTION, "reference": "None."})) + "\n")
    outputs = tmp_path / "out.jsonl"
    outputs.write_text("\n".join(json.dumps(r) for r in (
        {"question_id": "q1", "answer": SEED_000_ANSWER, "contexts": list(SEED_000_CHUNKS)},
        {"question_id": "q2", "answer": "Some answer.", "contexts": ["A chunk."]})) + "\n")
    return golden, outputs


def responder(refuse_q2: bool):
    def reply(body):
        schema = prompts.task_of(body["messages"])
        if BROKEN_QUESTION in json.dumps(body):
            if refuse_q2:
                return Reply.status(400, "The prompt was filtered by the content management policy")  # not retried
            if schema == "holistic":
                return Reply.json(SEED_000_HOLISTIC)
            if schema == "extraction":
                return Reply.json({"answer_claims": [], "reference_claims": [], "generated_questions": []})
            return Reply.json({"answer_claims": [], "reference_claims": [],
                               "chunks": [{"chunk_id": "C1", "relevant": False, "relevance_score": 0, "reason": "-"}]})
        if schema == "holistic":
            return Reply.json(SEED_000_HOLISTIC)
        return Reply.json(SEED_000_EXTRACTION if schema == "extraction" else SEED_000_VERIFICATION)
    return reply


def cli_with_key(db, *args, key=KEY):
    """`run` with the key in the environment only (it must never be stored)."""
    return cli("run", *args, db=db, env={"OPENAI_API_KEY": key})
