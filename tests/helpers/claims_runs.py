"""Small runs for the claims, verdicts and error screens: one judged offline (`build_run`), one by a scripted
LLM judge (`build_llm_run`), with uploaded text that must stay text (PAYLOADS, EVIL_METHOD)."""
from __future__ import annotations

import json
from pathlib import Path

from evaluators import loaders
from evaluators.judges import OpenAIJudge, prompts
from evaluators.runs import engine, lifecycle
from evaluators.store import close_store, open_store


SCRIPT = "<script>alert(1)</script>"


IMG = "<img src=x onerror=alert(1)>"


MD_LINK = "[click](javascript:alert(1))"


BARE = "javascript:alert(1)"


PAYLOADS = (SCRIPT, IMG, MD_LINK, BARE)


EVIL_METHOD = "local<b>bold</b>"  # a method name is uploaded text too


TOWER = "The tower was built by Alice in 1879."


CHUNKS = {
    "basic": [f"{TOWER} {IMG}", f"Unrelated {SCRIPT} chunk about {MD_LINK} and {BARE}.", "It is made of grey stone."],
    EVIL_METHOD: [f"{TOWER} {IMG}", "It is made of grey stone.", "Bob painted the door red."],
}


GOLDEN = [
    {"question_id": "q1", "question": "Who built the tower, and when?", "question_type": "Fact Retrieval",
     "reference": f"{TOWER} It is made of grey stone."},
    {"question_id": "q2", "question": f"What does {SCRIPT} do in {MD_LINK}?", "question_type": "Complex Reasoning",
     "reference": f"It shows an alert {IMG}."},
    {"question_id": "q3", "question": "Which colour is the door?", "reference": "The door is red."},
]


OUTPUTS = [
    {"question_id": "q1", "method": "basic",
     "answer": f"{TOWER} {SCRIPT} See {MD_LINK} or {BARE} for more. {IMG}", "contexts": CHUNKS["basic"]},
    {"question_id": "q1", "method": EVIL_METHOD, "answer": "Alice built the tower in 1897. It is made of grey stone.",
     "contexts": CHUNKS[EVIL_METHOD]},
    {"question_id": "q2", "method": "basic", "answer": f"It runs {SCRIPT} and shows {IMG}.", "contexts": CHUNKS["basic"]},
    {"question_id": "q2", "method": EVIL_METHOD, "answer": f"Follow {MD_LINK}.", "contexts": CHUNKS[EVIL_METHOD]},
    {"question_id": "q3", "method": "basic", "answer": "The door is red.", "contexts": CHUNKS[EVIL_METHOD]},
    {"question_id": "q3", "method": EVIL_METHOD, "answer": "I don't know.", "contexts": []},
]


METRICS = ["exact_match", "rouge_l", "faithfulness", "context_precision", "context_recall", "answer_correctness_f1",
           "completeness", "hallucination_rate"]


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def build_run(db: Path, tmp_path: Path, *, golden=GOLDEN, outputs=OUTPUTS, metrics=METRICS, judge=None,
              name="Payload run") -> str:
    """A finished run built through the real loaders, store and engine; the store is left closed."""
    store = open_store(db)
    try:
        g = store.save_dataset(loaders.load(write_jsonl(tmp_path / "golden.jsonl", golden), role="golden"))
        o = store.save_dataset(loaders.load(write_jsonl(tmp_path / "outputs.jsonl", outputs), role="outputs"))
        run_id = lifecycle.start_stored(store, g.dataset_id, [o.dataset_id],
                                        lifecycle.RunSpec(metrics=metrics, judge=judge, name=name))
        engine.execute_run(store, run_id)
        return run_id
    finally:
        close_store(db)


def build_llm_run(db: Path, tmp_path: Path, monkeypatch) -> str:
    """A run judged by the scripted OpenAI-compatible server with seed 000's case study replies."""
    from tests.helpers.openai_server import Reply, start_server
    from tests.helpers.seed_000 import (SEED_000_ANSWER, SEED_000_CHUNKS, SEED_000_EXTRACTION,
                                         SEED_000_QUESTION, SEED_000_REFERENCE, SEED_000_VERIFICATION)

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    golden = [{"question_id": "s1", "question": SEED_000_QUESTION, "reference": SEED_000_REFERENCE}]
    outputs = [{"question_id": "s1", "method": "local", "answer": SEED_000_ANSWER, "contexts": list(SEED_000_CHUNKS)}]
    with start_server() as server:
        server.responder = lambda body: Reply.json(
            SEED_000_EXTRACTION if prompts.task_of(body["messages"]) == "extraction"
            else SEED_000_VERIFICATION)
        return build_run(db, tmp_path, golden=golden, outputs=outputs, 
                         judge=OpenAIJudge("judge-model", server.base_url),
                         metrics=["faithfulness", "answer_correctness_f1"],
                         name="LLM run")
