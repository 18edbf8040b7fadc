"""Judges: what fills a sample's claim matrix (DESIGN.md "Judging").

`OfflineJudge` is the default judge, a deterministic heuristic that needs no key and no network;
`OpenAIJudge` is any OpenAI-compatible server (its key comes from OPENAI_API_KEY, or for one run from
`lent_api_key`; never from the run's stored config). Both are objects (specs.py) that say what they
need. `judge_samples` is the one entry point the engine calls per batch; given the run's store, the
openai judge answers repeated requests from its `judge_cache` table (`StoreCache`). A judge has two parts, each asked for only when a metric of the
run needs it: the claim matrix (with the questions generated from the answer) and the holistic
rubric ratings; the engine asks for a batch's parts together.
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from evaluators.judges import offline
from evaluators.judges.specs import JUDGES as _KINDS
from evaluators.judges.specs import Judge, OfflineJudge, OpenAIJudge, named, of_run
from evaluators.records.judgments import ClaimMatrix, Holistic, JudgeFailure
from evaluators.records import Sample

JUDGES = tuple(_KINDS)  # the judges' names, as runs store them
CLAIMS, HOLISTIC = "claims", "holistic"  # the two parts a judge is asked for

# What one sample may hold to be judged; beyond it, the engine stores its judged cells `skipped` with the reason
# (`too_big`). Within them the offline judge takes seconds a sample; 10,000 chunks took it 2.5 minutes and one chunk
# of a million characters over a minute (bench/results/limits.md). An LLM's context window ends well before.
# A judge's own bound on characters is its `max_chars` (the offline judge's: question, answer, reference and chunks).
MAX_CHUNKS = 1_000  # per answer, for every judge


@dataclass(frozen=True)
class Judged:
    """One sample's judge output so far, and the calls it took. None: that part was not asked for,
    or this judge has no such part (the offline judge generates no questions and rates nothing)."""

    matrix: ClaimMatrix | JudgeFailure | None = None
    generated_questions: tuple[str, ...] | JudgeFailure | None = None  # from the answer (answer relevance)
    holistic: Holistic | JudgeFailure | None = None
    calls: tuple = field(default=())  # openai_judge.CallRecord

    def merged(self, other: Judged) -> Judged:
        """This output with the parts `other` adds, and both's calls."""
        return Judged(other.matrix if other.matrix is not None else self.matrix,
                      other.generated_questions if other.generated_questions is not None else self.generated_questions,
                      other.holistic if other.holistic is not None else self.holistic,
                      self.calls + other.calls)


class StoreCache:
    """The judge cache (get/put, as `openai_judge.OpenAIJudge` takes it) on a Store's `judge_cache`."""

    def __init__(self, store):
        self.store = store

    def get(self, key: str) -> dict | None:
        return self.store.cached_reply(key)

    def put(self, key: str, **fields) -> None:
        self.store.cache_reply(key, **fields)


class StoreBatches:
    """The record of a run's Batch API batches (as `batch_api.Batcher` takes it) in a Store's `judge_batches`."""

    def __init__(self, store, run_id: str):
        self.store, self.run_id = store, run_id

    def open(self) -> dict[str, str]:
        return self.store.open_batches(self.run_id)

    def add(self, batch_id: str, input_file_id: str, custom_ids: list[str]) -> None:
        self.store.add_batch(self.run_id, batch_id, input_file_id, custom_ids)

    def update(self, batch_id: str, status: str) -> None:
        self.store.update_batch(batch_id, status)

    def consume(self, batch_ids: list[str]) -> None:
        self.store.consume_batches(batch_ids)


def too_big(judge: Judge, sample: Sample) -> str | None:
    """Why `judge` does not judge `sample` (over MAX_CHUNKS or the judge's `max_chars`), or None."""
    chunks = sample.output.contexts
    if len(chunks) > MAX_CHUNKS:
        return (f"not judged: {len(chunks):,} chunks, over the limit of {MAX_CHUNKS:,} per answer (keep the chunks "
                "the method ranked first)")
    if judge.max_chars is not None:
        chars = (len(sample.golden.question) + len(sample.golden.reference) + len(sample.output.answer)
                 + sum(len(c.text) for c in chunks))
        if chars > judge.max_chars:
            return (f"not judged: {chars:,} characters in question, answer, reference and chunks, over the offline "
                    f"judge's limit of {judge.max_chars:,} (shorten the chunks, or use an LLM judge)")
    return None


# run_id -> the API key a caller (the app's Evaluate screen) handed over for that run. Process memory
# only: never in the store, the run's config, a record or a log; gone when the run's worker ends.
_lent_keys: dict[str, str] = {}


@contextmanager
def lent_api_key(run_id: str, api_key: str | None) -> Iterator[None]:
    """While inside, the openai judge of run `run_id` uses `api_key` (None: OPENAI_API_KEY)."""
    if api_key:
        _lent_keys[run_id] = api_key
    try:
        yield
    finally:
        _lent_keys.pop(run_id, None)


def judge_samples(judge: Judge, samples: Sequence[Sample], parts: Collection[str] = (CLAIMS,), *, store=None,
                  run_id: str | None = None, on_sample: Callable[[], None] | None = None, budget=None) -> list[Judged]:
    """The `parts` (CLAIMS: the claim matrix and generated questions; HOLISTIC: the rubric ratings) of
    every sample, in order; an LLM judge asks for all of them at once (2 rounds per sample, see
    openai_judge). `run_id` picks the key lent for that run, if any; `on_sample()` is called as each
    sample is judged (the LLM judge only: the offline judge takes milliseconds); `budget` (evaluators.runs.budget.Budget)
    stops an LLM judge's requests once reached."""
    if unknown := set(parts) - {CLAIMS, HOLISTIC}:
        raise ValueError(f"unknown judge part(s) {sorted(unknown)}")
    if isinstance(judge, OfflineJudge):
        if CLAIMS not in parts:
            return [Judged() for _ in samples]  # the rubric ids come from the offline mapping instead
        return [Judged(m) for m in offline.build_matrices(samples)]
    if isinstance(judge, OpenAIJudge):
        from evaluators.judges.openai_judge import JudgeClient  # imports openai only when used

        options = judge.options()
        client = JudgeClient(judge.base_url, judge.model, api_key=_lent_keys.get(run_id),
                             concurrency=judge.concurrency, repeats=judge.repeats,
                             cache=StoreCache(store) if store is not None else None, batch=judge.batch,
                             batches=StoreBatches(store, run_id) if store is not None and run_id else None,
                             budget=budget, **options)
        return [_judged(j, r) for j, r in client.assess_sync(samples, CLAIMS in parts, HOLISTIC in parts, on_sample)]
    raise ValueError(f"unknown judge {judge!r}; available: {', '.join(JUDGES)}")


def _judged(judgment, rating) -> Judged:
    """An LLM judge's parts of one sample (openai_judge.Judgment, HolisticJudgment; None: not asked)."""
    out = Judged()
    if judgment is not None:
        if judgment.matrix is None:  # the extraction failed: no claims and no questions
            failure = JudgeFailure(judgment.status, judgment.error or judgment.status)
            out = Judged(failure, failure, calls=tuple(judgment.calls))
        else:
            out = Judged(judgment.matrix, judgment.generated_questions, calls=tuple(judgment.calls))
    if rating is not None:
        holistic = rating.holistic or JudgeFailure(rating.status, rating.error or rating.status)
        out = out.merged(Judged(holistic=holistic, calls=tuple(rating.calls)))
    return out
