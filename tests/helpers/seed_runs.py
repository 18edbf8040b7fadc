"""Runs of seed 000's worked example, N questions alike, judged by the scripted server through the real engine and a
real DuckDB file: for the judge's server-facing behaviour (reasoning models, servers that ignore the schema)."""
from __future__ import annotations

import json

import pytest

from evaluators import loaders
from evaluators.judges import OpenAIJudge, prompts
from evaluators.runs import engine, lifecycle
from evaluators.store import close_store, open_store
from tests.helpers.openai_server import Reply
from tests.helpers.seed_000 import (KEY, SEED_000_ANSWER, SEED_000_CHUNKS, SEED_000_EXTRACTION, SEED_000_HOLISTIC,
                                     SEED_000_QUESTION, SEED_000_REFERENCE, SEED_000_VERIFICATION)

METRICS = ("faithfulness", "judge_overall", "exact_match")  # claims, holistic and no judge


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A store on a new DuckDB file, with seed 000's key in the environment (the judge reads it there)."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    path = tmp_path / "judged.duckdb"
    yield open_store(path)
    close_store(path)


def seed_reply(body: dict) -> Reply:
    """What a judge answers seed 000's calls with, whichever question carries them."""
    return Reply.json({prompts.EXTRACTION: SEED_000_EXTRACTION, prompts.VERIFICATION: SEED_000_VERIFICATION,
                       prompts.HOLISTIC: SEED_000_HOLISTIC}[prompts.task_of(body["messages"])])


def question_of(body: dict) -> str | None:
    """The question id ("q3") a request is about (the questions are numbered in their text)."""
    text = json.dumps(body["messages"])
    return next((f"q{i}" for i in range(99, 0, -1) if f"(q{i})" in text), None)


def stored_inputs(store, tmp_path, n: int) -> tuple[str, str]:
    """(golden id, outputs id) of `n` copies of seed 000's sample, questions q1..qn, stored."""
    golden, outputs = tmp_path / "gold.jsonl", tmp_path / "out.jsonl"
    golden.write_text("".join(json.dumps({"question_id": f"q{i}", "question": f"{SEED_000_QUESTION} (q{i})",
                                          "reference": SEED_000_REFERENCE}) + "\n" for i in range(1, n + 1)))
    outputs.write_text("".join(json.dumps({"question_id": f"q{i}", "answer": SEED_000_ANSWER,
                                           "contexts": list(SEED_000_CHUNKS)}) + "\n" for i in range(1, n + 1)))
    return (store.save_dataset(loaders.load(golden, role="golden")).dataset_id,
            store.save_dataset(loaders.load(outputs, role="outputs")).dataset_id)


def judged_run(store, tmp_path, judge: OpenAIJudge, n: int = 6, metrics=METRICS) -> tuple[str, str]:
    """(run id, its final status): a run of `n` seed samples judged by `judge` (the key from OPENAI_API_KEY)."""
    golden_id, outputs_id = stored_inputs(store, tmp_path, n)
    run_id = lifecycle.start_stored(store, golden_id, [outputs_id], lifecycle.RunSpec(judge=judge, metrics=metrics))
    return run_id, engine.execute_run(store, run_id)


def cells(store, run_id: str) -> list[tuple]:
    """(question, metric, status, detail) of every stored score."""
    return store.cursor().execute("SELECT question_id, metric, status, detail FROM scores WHERE run_id = ? "
                                  "ORDER BY question_id, metric", [run_id]).fetchall()


def calls(store, run_id: str, columns: str) -> list[tuple]:
    return store.cursor().execute(f"SELECT {columns} FROM judge_calls WHERE run_id = ? ORDER BY created_at",
                                  [run_id]).fetchall()
