"""Judges: what fills a sample's claim matrix (DESIGN.md "Judging").

`offline` is the default judge, a deterministic heuristic that needs no key and no network;
`openai` is any OpenAI-compatible server (its key comes from OPENAI_API_KEY, never from the run's
stored config). `judge_samples` is the one entry point the engine calls per batch; given the run's
store, the openai judge answers repeated requests from its `judge_cache` table (`StoreCache`).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from evaluators.claims import ClaimMatrix, JudgeFailure
from evaluators.judges import offline
from evaluators.schema import Sample

JUDGES = (offline.JUDGE, "openai")


@dataclass(frozen=True)
class Judged:
    """One sample's judge output: its matrix (or why there is none) and the calls it took."""

    matrix: ClaimMatrix | JudgeFailure
    calls: tuple = field(default=())  # openai_judge.CallRecord


class StoreCache:
    """The judge cache (get/put, as `openai_judge.OpenAIJudge` takes it) on a Store's `judge_cache`."""

    def __init__(self, store):
        self.store = store

    def get(self, key: str) -> dict | None:
        return self.store.cached_reply(key)

    def put(self, key: str, **fields) -> None:
        self.store.cache_reply(key, **fields)


def judge_samples(judge: str, samples: Sequence[Sample], *, model: str | None = None,
                  config: dict | None = None, store=None) -> list[Judged]:
    if judge == offline.JUDGE:
        return [Judged(m) for m in offline.build_matrices(samples)]
    if judge == "openai":
        from evaluators.judges.openai_judge import OpenAIJudge  # imports openai only when used

        config = config or {}
        client = OpenAIJudge(config.get("base_url"), model, concurrency=config.get("concurrency", 8),
                             cache=StoreCache(store) if store is not None else None,
                             **{k: config[k] for k in ("timeout", "max_attempts") if k in config})
        return [Judged(j.matrix if j.matrix is not None else JudgeFailure(j.status, j.error or j.status),
                       tuple(j.calls))
                for j in client.judge_sync(samples)]
    raise ValueError(f"unknown judge {judge!r}; available: {', '.join(JUDGES)}")
