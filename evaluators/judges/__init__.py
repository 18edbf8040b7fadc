"""Judges: what fills a sample's claim matrix and rates it as a whole (DESIGN.md "Judging").

A judge follows one protocol (protocol.py: what it needs, what it can do, its estimate, its settings in a run's
config, `judge` these samples for these parts) and its kind is registered by name (registry.py), as metrics are.
Three kinds ship: `OfflineJudge`, the default, a deterministic heuristic that needs no key and no network
(offline_judge.py, offline.py), `OpenAIJudge`, any OpenAI-compatible server (openai_judge.py; its key comes from
OPENAI_API_KEY, or for one run from `lent_api_key`; never from the run's stored config), and `AzureJudge`, an Azure
OpenAI deployment (azure_judge.py: the same judge through the SDK's Azure client, its key from AZURE_OPENAI_API_KEY).
`judge_samples` is the one entry point the engine calls per batch; a judge is asked for a part (CLAIMS: the claim
matrix with the questions generated from the answer; HOLISTIC: the rubric ratings) only when a metric of the run needs
it, and for a batch's parts together.
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager

from evaluators.judges.offline_judge import OfflineJudge
from evaluators.judges.openai_judge import OpenAIJudge
from evaluators.judges.azure_judge import AzureJudge  # registered after the OpenAI judge it builds on
from evaluators.judges.protocol import (CLAIMS, CRITERIA, HOLISTIC, MAX_CHUNKS, PARTS, CallRecord, Estimate, Judge, Judged,
                                        Lent, too_big)
from evaluators.judges.registry import JUDGES, named, of_run, register
from evaluators.records import Sample

__all__ = ["AzureJudge", "CLAIMS", "CRITERIA", "HOLISTIC", "JUDGES", "MAX_CHUNKS", "CallRecord", "Estimate", "Judge", "Judged",
           "Lent", "OfflineJudge", "OpenAIJudge", "judge_samples", "lent_api_key", "named", "of_run", "register",
           "too_big"]

# run_id -> the API key a caller (the app's Evaluate screen) handed over for that run. Process memory
# only: never in the store, the run's config, a record or a log; gone when the run's worker ends.
_lent_keys: dict[str, str] = {}


@contextmanager
def lent_api_key(run_id: str, api_key: str | None) -> Iterator[None]:
    """While inside, the judge of run `run_id` uses `api_key` (None: the environment's, its `key_env`)."""
    if api_key:
        _lent_keys[run_id] = api_key
    try:
        yield
    finally:
        _lent_keys.pop(run_id, None)


def judge_samples(judge: Judge, samples: Sequence[Sample], parts: Collection[str] = (CLAIMS,), *, store=None,
                  run_id: str | None = None, on_sample: Callable[[], None] | None = None, budget=None,
                  criteria: Sequence = ()) -> list[Judged]:
    """The `parts` (CLAIMS, HOLISTIC, CRITERIA: of `criteria`, the run's records.criteria.Criterion) of every
    sample, in order. `store`: the run's (a judge may keep its cache
    there); `run_id` picks the key lent for that run, if any; `on_sample()` is called as each sample is judged (a
    judge that makes calls; the offline judge takes milliseconds); `budget` (evaluators.runs.budget.Budget) stops a
    judge's calls once reached."""
    if unknown := set(parts) - set(PARTS):
        raise ValueError(f"unknown judge part(s) {sorted(unknown)}")
    return judge.judge(samples, frozenset(parts), Lent(store, run_id, _lent_keys.get(run_id), budget, on_sample,
                                                       tuple(criteria)))
