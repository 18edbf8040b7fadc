"""The run loop: golden set x RAG outputs -> samples -> metric scores, persisted batch by batch.

A run is made once (runs.lifecycle) and executed by `execute_run`, which computes only the cells
that are missing or ended in an error. So a killed or cancelled run resumes where it stopped, a
retry re-does only the failed cells, and no cell is ever stored twice (the scores table is keyed per
cell). Which samples it judges (its methods, its sample of questions) is runs.planning's.
"""
from __future__ import annotations

import dataclasses
import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from evaluators import judges
from evaluators.runs import budget, planning
from evaluators.judges import CLAIMS, Judge, Judged, OfflineJudge, judge_samples, of_run
from evaluators.runs.estimate import criteria_of, needed_parts
from evaluators.records.judgments import ClaimMatrix, JudgeFailure, JudgeRefused
from evaluators.metrics import Metric, resolve, user
from evaluators.metrics.claims import chunk_rows, claim_rows
from evaluators.records import NOT_SENT, SKIPPED, Result, Sample
from evaluators.records.run_status import RunStatus
from evaluators.store import SCORE_COLUMNS, Store, StoreUnavailable

DETERMINISTIC = "deterministic"  # the `judge` of scores no judge took part in
BATCH_SIZE = OfflineJudge.batch_size  # the most samples scored and committed together
# What a paced batch aims to take: each commits within seconds, so progress moves, a time left can be told after the
# first batch, and a cancel or a crash loses little. The first batch is the judge's smallest; each next one is sized
# by the pace of the one before, between the judge's min_batch_size and batch_size.
BATCH_SECONDS = 5.0

Progress = Callable[[int, int], None]  # (cells done, cells total): at the start and after each batch
# (metric id, its cells done, its cells total, all cells done, all cells total): at the start for
# every metric, then as a metric starts on a batch and when it has scored it (scores are committed per
# batch); so the metric reported last is the one being scored
MetricProgress = Callable[[str, int, int, int, int], None]


@dataclass
class RunContext:
    """What a metric may use besides the samples: the run's judge, whose output (claim matrix,
    generated questions, holistic ratings) is produced once per sample and part, and shared by
    every metric of the batch that needs it."""

    run_id: str
    judge: Judge
    store: Store | None = field(default=None, repr=False)  # given: the judge answers repeats from its cache
    parts: frozenset[str] = frozenset()  # the parts the run's metrics need: asked for together
    on_sample: Callable[[], None] | None = field(default=None, repr=False)  # a sample judged (LLM judge)
    budget: budget.Budget | None = field(default=None, repr=False)  # the run's: shared by every batch's requests
    criteria: tuple = ()  # the run's own criteria (records.criteria.Criterion), scored by the CRITERIA part
    _judged: dict[tuple[str, str], Judged] = field(default_factory=dict, repr=False)
    _asked: set[tuple[tuple[str, str], str]] = field(default_factory=set, repr=False)
    _shared: dict[str, dict[tuple[str, str], Any]] = field(default_factory=dict, repr=False)

    def judged(self, samples: Sequence[Sample], part: str = CLAIMS) -> list[Judged]:
        """The judge's output for `samples`, asking it once for `part` (judges.CLAIMS or HOLISTIC)
        and, in the same request, for the run's other parts: an LLM judge then needs 2 rounds per
        sample, not 3 (the holistic call goes out with the extraction)."""
        todo = [s for s in samples if (s.key, part) not in self._asked]
        if todo:
            parts = sorted({part} | self.parts)
            new = judge_samples(self.judge, todo, parts, store=self.store, run_id=self.run_id,
                                on_sample=self.on_sample, budget=self.budget, criteria=self.criteria)
            for s, j in zip(todo, new):
                self._judged[s.key] = self._judged[s.key].merged(j) if s.key in self._judged else j
                self._asked.update((s.key, p) for p in parts)
        return [self._judged[s.key] for s in samples]

    def matrices(self, samples: Sequence[Sample]) -> list[ClaimMatrix | JudgeFailure]:
        return [j.matrix for j in self.judged(samples)]

    def per_batch(self, name: str, samples: Sequence[Sample], compute: Callable[[Sequence[Sample]], list]) -> list:
        """`compute(samples)` (one item per sample), computed once per sample of a batch and shared by the
        metrics of a family, whichever of the batch's samples each is given (`Metric.scored` may leave some out)."""
        done = self._shared.setdefault(name, {})
        todo = [s for s in samples if s.key not in done]
        if todo:
            done.update(zip([s.key for s in todo], compute(todo)))
        return [done[s.key] for s in samples]

    def take_judged(self) -> dict[tuple[str, str], Judged]:
        """What the judge produced since the last call (to persist it), forgetting it and the batch's shared items."""
        taken, self._judged, self._asked, self._shared = self._judged, {}, set(), {}
        return taken


def execute_run(store: Store, run_id: str, *, batch_size: int | None = None, progress: Progress | None = None,
                on_metric: MetricProgress | None = None, cancel: threading.Event | None = None,
                on_sample: Callable[[], None] | None = None, samples: Sequence[Sample] | None = None) -> str:
    """Compute every cell of the run that is missing or failed, committing after each batch; returns
    the run's final status: RunStatus.FINISHED, CANCELLED or BUDGET_REACHED.

    Batch-major: every metric runs over one batch of samples before the next batch, so a batch's
    text extractions (and, for judged families, its judge calls) are shared by all its metrics.
    `cancel`, when set, stops the run between two metrics or batches: what was computed is kept and
    the run ends CANCELLED, resumable like an interrupted one. `on_sample()` is called each time an
    LLM judge has judged a sample (its parts the batch needs), for progress within a batch. `batch_size`
    fixes the batches' size; by default they are paced (BATCH_SECONDS, `next_batch_size`). `samples`: the run's samples
    when its creator has them (runs.lifecycle: drawn once), else they are read back (planning.of_stored_run).
    A run with a budget (`budget.of_run`) stops once its judge's recorded cost reaches it, between batches or, when
    its requests are held back mid-batch, after that batch: the samples it judged whole keep their scores, the
    others' judged cells stay to do (their calls are in judge_calls, their replies in the judge cache), and the run
    ends BUDGET_REACHED with the reason, resumable like a cancelled one.
    """
    # The file is held to read the run and to write each batch, not while computing (an LLM judge's cache
    # look-ups hold it a moment each): another process, the app or a CLI job, can use it in between.
    with store.lease():
        run = store.run(run_id)
        if run is None:
            raise KeyError(f"no run {run_id!r} in {store.path}")
        user.remember(store, run_id)  # its criteria and plug-ins' metrics, as it stored them
        metrics = resolve(list(run["metrics"]))
        judge = of_run(run)
        samples = planning.of_stored_run(store, run) if samples is None else list(samples)
        spend = budget.of_run(store, run_id) if judge.makes_calls else None
        store.mark_running(run_id)
        finished = store.finished_cells(run_id)
    size = batch_size or judge.min_batch_size
    context = RunContext(run_id, judge, store=store, parts=frozenset(needed_parts(metrics)), on_sample=on_sample,
                         budget=spend, criteria=criteria_of(metrics))
    todo = [(s, [m for m in metrics if (*s.key, m.id) not in finished]) for s in samples]
    todo = [(s, ms) for s, ms in todo if ms]
    total = len(samples) * len(metrics)
    done = total - sum(len(ms) for _, ms in todo)
    missing = Counter(m.id for _, ms in todo for m in ms)
    metric_done = {m.id: len(samples) - missing[m.id] for m in metrics}
    if progress:
        progress(done, total)
    if on_metric:
        for m in metrics:
            on_metric(m.id, metric_done[m.id], len(samples), done, total)
    cancelled = over_budget = False
    try:
        start = 0
        while start < len(todo):
            if spend is not None and spend.reached:
                over_budget = True
                break
            batch = todo[start:start + size]
            started = time.monotonic()
            frames = []
            # a sample over the judge's limits is not judged: its judged cells say why (judges.too_big)
            too_big = {s.key: why for s, _ in batch if (why := judges.too_big(judge, s))}
            for m in metrics:
                if cancel is not None and cancel.is_set():
                    cancelled = True
                    break
                pending = [s for s, ms in batch if m in ms]
                if pending:
                    if on_metric:
                        on_metric(m.id, metric_done[m.id], len(samples), done, total)
                    over = too_big if m.judged else {}  # unjudged metrics (exact match ...) score every sample
                    skipped = [s for s in pending if s.key in over]
                    judged = [s for s in pending if s.key not in over]
                    if judged:
                        frames.append(score_frame(run_id, m, judged, m.scored(judged, context), judge.name))
                    if skipped:
                        frames.append(score_frame(run_id, m, skipped, [Result(None, SKIPPED, too_big[s.key])
                                                                       for s in skipped], judge.name))
                    metric_done[m.id] += len(pending)
                    done += len(pending)
                    if on_metric:
                        on_metric(m.id, metric_done[m.id], len(samples), done, total)
            # a cancelled batch keeps the metrics it finished: a resume computes only the others
            judged = context.take_judged()
            held_back = {key for key, j in judged.items() if any(c.status == NOT_SENT for c in j.calls)}
            scores = _without_judged(pd.concat(frames, ignore_index=True), held_back) if frames else None
            with store.lease():
                _write_judged(store, run_id, judged, held_back)  # before the scores: see _write_judged
                if scores is not None and len(scores):
                    store.write_scores(scores)
                _record_learned(store, run_id, judge)
            if held_back:  # the budget was reached within the batch: its cells of those samples are still to do
                done -= sum(len(f) for f in frames) - len(scores)
                over_budget = True
            if progress:
                progress(done, total)
            if cancelled or over_budget:
                break
            start += len(batch)
            if batch_size is None:
                size = next_batch_size(len(batch), time.monotonic() - started, judge)
    except BaseException as exc:  # KeyboardInterrupt included: the run stays resumable
        store.finish_run(run_id, RunStatus.INTERRUPTED if isinstance(exc, KeyboardInterrupt) else RunStatus.FAILED,
                         failure_text(exc))
        raise
    if over_budget:
        store.finish_run(run_id, RunStatus.BUDGET_REACHED, spend.reason())
        return RunStatus.BUDGET_REACHED
    status = RunStatus.CANCELLED if cancelled else RunStatus.FINISHED
    store.finish_run(run_id, status)
    return status


def _record_learned(store: Store, run_id: str, judge: Judge) -> None:
    """What the judge found out in the batch (`Judge.learned`) into the run's config, if it changed: a resume starts
    from it instead of finding it out again."""
    if not (learned := judge.learned()):
        return
    config = json.loads(store.run(run_id)["config"] or "{}")
    if any(config.get(k) != v for k, v in learned.items()):
        store.set_run_config(run_id, config | learned)


def next_batch_size(samples: int, seconds: float, judge: Judge) -> int:
    """Samples in the next batch: as many as take BATCH_SECONDS at the pace of the last batch (`samples` in
    `seconds`, its commit included), between the judge's min_batch_size and batch_size."""
    fitting = int(samples * BATCH_SECONDS / seconds) if seconds > 0 else judge.batch_size
    return max(judge.min_batch_size, min(judge.batch_size, fitting))


def failure_text(exc: BaseException) -> str:
    """What a run that stopped on `exc` records: a refusal's or the store's message is written for people, as it is."""
    return str(exc) if isinstance(exc, (JudgeRefused, StoreUnavailable)) else repr(exc)


def _without_judged(scores: pd.DataFrame, samples: set[tuple[str, str]]) -> pd.DataFrame:
    """`scores` but the judged cells of `samples` (the budget held their judge's requests back: still to do)."""
    if not samples:
        return scores
    held = pd.Series(list(zip(scores["question_id"], scores["method"]))).isin(samples)
    return scores[~(held & (scores["judge"] != DETERMINISTIC)).to_numpy()]


def _write_judged(store: Store, run_id: str, judged: dict[tuple[str, str], Judged],
                  held_back: set[tuple[str, str]] = frozenset()) -> None:
    """Persist a batch's claims, chunk verdicts, generated questions and judge calls. Written before
    its scores: a kill in between leaves the scores to do, so a resume rebuilds and replaces these rows.
    Of the `held_back` samples (the budget stopped their requests) only the calls that went out are kept: the
    ledger must count them, and their claims are judged again on resume."""
    rebuilt, claims, chunks, questions, calls = [], [], [], [], []
    for (question_id, method), j in judged.items():
        key = {"run_id": run_id, "question_id": question_id, "method": method}
        if j.matrix is not None and (question_id, method) not in held_back:
            rebuilt.append((question_id, method))
            claims += claim_rows(key, j.matrix)
            chunks += chunk_rows(key, j.matrix)
            if isinstance(j.generated_questions, tuple):
                questions += [{**key, "idx": i, "text": q} for i, q in enumerate(j.generated_questions)]
        calls += [{**key, "call_id": uuid.uuid4().hex, **dataclasses.asdict(c)} for c in j.calls
                  if c.status != NOT_SENT]
    if rebuilt:
        store.write_claims(run_id, rebuilt, claims, chunks, questions)
    if calls:
        store.write_judge_calls(calls)


def score_frame(run_id: str, metric: Metric, samples: Sequence[Sample], results, judge: str) -> pd.DataFrame:
    """One metric's results as rows of the `scores` table."""
    results = list(results)
    if len(results) != len(samples):
        raise RuntimeError(f"metric {metric.id} returned {len(results)} results for {len(samples)} samples")
    return pd.DataFrame(
        {
            "run_id": run_id,
            "question_id": [s.golden.question_id for s in samples],
            "method": [s.output.method for s in samples],
            "metric": metric.id,
            # nullable floats, so a missing value lands as NULL, never as NaN
            "value": pd.array([r.value for r in results], dtype="Float64"),
            "norm": pd.array([metric.norm(r.value) for r in results], dtype="Float64"),
            "status": [r.status for r in results],
            "judge": judge if "judge" in metric.needs else DETERMINISTIC,
            "detail": [r.detail for r in results],
            "repeats": [list(r.repeats) if r.repeats else None for r in results],  # each judge reply's value
            "label": [r.label for r in results],
            "counts": [dict(r.counts) if r.counts else None for r in results],
        },
        columns=SCORE_COLUMNS,
    )
