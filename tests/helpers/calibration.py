"""A judge server for `judge calibrate` tests: the scripted OpenAI-compatible server answering every task with valid
verdicts, its holistic ratings varying with the request (so agreement is a number, not a constant's n/a), and
refusing (HTTP 400, not retried) every request about an answer in `refuse`."""
import hashlib
import json

from evaluators.judges import prompts
from tests.helpers.openai_server import Reply
from tests.helpers.seed_000 import SEED_000_EXTRACTION, SEED_000_HOLISTIC, SEED_000_VERIFICATION

KEY = "sk-calibration-key-that-must-never-be-stored"


def rating(body) -> int:
    return 1 + hashlib.sha256(json.dumps(body["messages"]).encode()).digest()[0] % 5


def responder(refuse=()):
    def reply(body):
        text = json.dumps(body)
        if any(json.dumps(answer)[1:-1] in text for answer in refuse):
            return Reply.status(400, "The prompt was filtered by the content management policy")
        task = prompts.task_of(body["messages"])
        if task == "holistic":
            r = rating(body)
            return Reply.json(SEED_000_HOLISTIC | {"correctness": r, "faithfulness": 6 - r, "relevance": r})
        return Reply.json(SEED_000_EXTRACTION if task == "extraction" else SEED_000_VERIFICATION)
    return reply


def calibration_row(label="correctness", value=0.912, **more):
    """A stored calibration's row (store.CALIBRATION_RESULT_COLUMNS), as runs/calibrate.py writes one."""
    return dict(label=label, label_text="people: the answer is correct", sets="evouna", part="reference ≤ 5 words",
                metric="judge_correctness", statistic="AUROC", n=200, n_failed=0, value=value, lo=0.871, hi=0.944,
                offline_value=0.781, offline_lo=0.7, offline_hi=0.85, token_f1_value=0.6, token_f1_lo=0.5,
                token_f1_hi=0.7) | more
