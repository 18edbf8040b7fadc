"""`judge calibrate`: how far a judge agrees with people, on the human-labelled items RAGScope ships.

    plan(judge, sample=200, seed=0, max_cost=None) -> Plan   # the items drawn, the run prepared: its estimate
    execute(plan, api_key=..., cancel=..., on_metric=...) -> Outcome   # scored, agreement per label and part
    calibrate(store, plan, ...) -> (calibration_id, Outcome)   # the same, stored in `calibrations`

The items (loaders/calibration.py: the test parts of permissively licensed sets, never used to fit anything) are a
stratified sample (strata: set x label bucket, the sets shared equally, then their buckets; seeded, so the same N
and seed give the same items). They become a golden set and one method's answers, and are scored through the run
lifecycle (RunSpec, prepare, start, engine.execute_run) in a private temporary DuckDB file, History untouched: by the
chosen judge and by the offline judge, only the metric the screens lead with per label (LABELS). The judge's budget
(`max_cost`) is a run's budget: a plan estimated above it is refused before anything is sent, a run reaching it stops.

Agreement per label, set and part (short / long references apart): AUROC for a binary label, Spearman for a graded
one, each with a 95% bootstrap CI over groups (the answers to one question move together), for the judge, the offline
judge and token F1 on the same items (those whose judge and offline cells are both ok). A judge cell that is not ok
(failed, or not judged when the budget was reached) is counted in `n_failed`, never read as 0.
"""
from __future__ import annotations

import hashlib
import math
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evaluators.judges import Judge, OfflineJudge, lent_api_key
from evaluators.loaders import Dataset
from evaluators.loaders.calibration import CALIBRATION_DIR, LabelledItem, LabelledSet, labelled_items, labelled_sets
from evaluators.maths import stats
from evaluators.maths.text import token_overlap
from evaluators.records import OK, Chunk, GoldenItem, RagOutput
from evaluators.records.run_status import RunStatus
from evaluators.runs import budget, engine, lifecycle
from evaluators.store import Store
from evaluators.threads import BackgroundJob

DEFAULT_SAMPLE, DEFAULT_SEED = 200, 0
N_BOOT = 1000
METHOD = "answer"
ALL = "all"


def _answer_vs_reference(i: LabelledItem) -> tuple[str, str]:
    return i.answer, i.reference


def _passage_vs_answer(i: LabelledItem) -> tuple[str, str]:
    return " ".join(i.contexts), i.answer


def _answer_vs_question(i: LabelledItem) -> tuple[str, str]:
    return i.answer, i.question


@dataclass(frozen=True)
class Label:
    metric: str  # the judge metric the screens lead with for this label
    pair: Callable[[LabelledItem], tuple[str, str]]  # -> (candidate, reference) for token F1, as the bench pairs them


LABELS = {"correctness": Label("judge_correctness", _answer_vs_reference),
          "faithfulness": Label("judge_faithfulness", _passage_vs_answer),
          "relevance": Label("judge_relevance", _answer_vs_question)}
METRICS = tuple(label.metric for label in LABELS.values())
STATISTICS = {"binary": ("AUROC", stats.auroc), "graded": ("Spearman", stats.spearman)}


# -- the sample ---------------------------------------------------------------------------------------------------


def allocate(n: int, sizes: Sequence[int]) -> list[int]:
    """`n` shared as equally as the sizes allow (a stratum smaller than its share gives the rest to the others); the
    first strata take the remainder."""
    counts, left = [0] * len(sizes), min(n, sum(sizes))
    while left > 0:
        open_ = [k for k, size in enumerate(sizes) if counts[k] < size]
        share = max(1, left // len(open_))
        for k in open_:
            take = min(share, sizes[k] - counts[k], left)
            counts[k] += take
            left -= take
            if not left:
                break
    return counts


def bucket(item: LabelledItem, cuts: tuple[float, float] | None) -> str:
    """A binary label's value; a graded label's third of its set (low / middle / high, by the set's tertiles)."""
    if cuts is None:
        return str(item.label)
    return ("low", "middle", "high")[int(np.searchsorted(cuts, item.label, side="right"))]


def draw(items: Sequence[LabelledItem], sets: Sequence[LabelledSet], n: int, seed: int = DEFAULT_SEED
         ) -> tuple[LabelledItem, ...]:
    """A stratified sample of `n` items (all of them if fewer): the sets share n equally, each set's share is shared
    equally by its label buckets, and a bucket's items are taken in the order of a hash of (seed, item): the same n
    and seed draw the same items. In the items' own order."""
    by_set = {s.name: [i for i in items if i.set == s.name] for s in sets}
    chosen: set[str] = set()
    for s, quota in zip(sets, allocate(n, [len(v) for v in by_set.values()])):
        members = by_set[s.name]
        cuts = None if s.kind == "binary" else tuple(np.quantile([i.label for i in members], [1 / 3, 2 / 3]))
        strata: dict[str, list[LabelledItem]] = {}
        for i in members:
            strata.setdefault(bucket(i, cuts), []).append(i)
        names = sorted(strata)
        for name, k in zip(names, allocate(quota, [len(strata[b]) for b in names])):
            ranked = sorted(strata[name], key=lambda i: hashlib.sha256(f"{seed}\x1f{i.key}".encode()).hexdigest())
            chosen.update(i.key for i in ranked[:k])
    return tuple(i for i in items if i.key in chosen)


def check_sample(sample: object, seed: object) -> list[lifecycle.Problem]:
    found = []
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 1:
        found.append(lifecycle.Problem("sample", f"the sample must be a whole number of items, 1 or more, not "
                                                 f"{sample!r}"))
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        found.append(lifecycle.Problem("seed", f"the seed must be a whole number, 0 or more, not {seed!r}"))
    return found


# -- the run ------------------------------------------------------------------------------------------------------


def _dataset(name: str, golden=(), outputs=()) -> Dataset:
    payload = repr((name, golden, outputs)).encode()
    return Dataset(source=name, format="jsonl", content_hash=hashlib.sha256(payload).hexdigest(),
                   golden=tuple(golden), outputs=tuple(outputs), columns={})


def inputs_of(items: Sequence[LabelledItem]) -> lifecycle.Inputs:
    """The items as a golden set (question, reference) and one method's answers with their passages."""
    golden = [GoldenItem(i.key, i.question, i.reference) for i in items]
    outputs = [RagOutput(i.key, METHOD, i.answer, tuple(Chunk(str(k + 1), t) for k, t in enumerate(i.contexts)))
               for i in items]
    return lifecycle.Inputs.loaded(_dataset("calibration golden", golden=golden),
                                   [_dataset("calibration answers", outputs=outputs)])


@dataclass(frozen=True)
class Plan:
    """A calibration ready to run: the items drawn, and the judge's run prepared (its estimate, its problems)."""

    judge: Judge
    sample: int  # asked for
    seed: int
    max_cost: float | None
    items: tuple[LabelledItem, ...]
    sets: tuple[LabelledSet, ...]
    prepared: lifecycle.Prepared | None  # None when the sample or seed is unusable
    found: tuple[lifecycle.Problem, ...]

    @property
    def problems(self) -> tuple[lifecycle.Problem, ...]:
        """Every reason it cannot run (an estimate above the budget included); nothing is sent while there is one."""
        return self.found + (self.prepared.problems if self.prepared is not None else ())

    @property
    def estimate(self):
        """The judge's calls, tokens and cost on these items (empty for the offline judge), before any is sent."""
        return self.prepared.estimate


def plan(judge: Judge, *, sample: int = DEFAULT_SAMPLE, seed: int = DEFAULT_SEED, max_cost: float | None = None,
         folder: Path = CALIBRATION_DIR) -> Plan:
    found = check_sample(sample, seed)
    if getattr(judge, "batch", False):  # its replies come within 24 h: a calibration waits for them in one go
        found.append(lifecycle.Problem("batch", "a calibration calls the judge directly: turn the Batch API off"))
    sets = labelled_sets(folder)
    if found:
        return Plan(judge, sample, seed, max_cost, (), sets, None, tuple(found))
    items = draw(labelled_items(folder), sets, sample, seed)
    spec = lifecycle.RunSpec(judge, metrics=METRICS, max_cost=max_cost,
                             name=f"calibration of {judge.model or judge.name} on {len(items)} labelled items")
    return Plan(judge, sample, seed, max_cost, items, sets, lifecycle.prepare(inputs_of(items), spec), ())


@dataclass(frozen=True)
class Row:
    """Agreement with people on one label, set and part: the judge's, the offline judge's, token F1's."""

    label: str
    label_text: str
    sets: str
    part: str
    metric: str
    statistic: str
    n: int  # items the three figures are computed on
    n_failed: int  # items whose judge cell is not ok (failed, or not judged): left out, never read as 0
    value: float
    lo: float
    hi: float
    offline_value: float
    offline_lo: float
    offline_hi: float
    token_f1_value: float
    token_f1_lo: float
    token_f1_hi: float


@dataclass(frozen=True)
class Outcome:
    status: str  # the judge run's RunStatus: finished, budget_reached or cancelled
    rows: tuple[Row, ...]
    n_items: int
    n_failed: int  # judge cells not ok, of n_items x 1 (each item is scored on its label's metric)
    cost_usd: float | None  # what the judge's calls cost (None: the offline judge, or no price known)
    note: str


def _cells(store: Store, run_id: str) -> dict[tuple[str, str], float]:
    """(item key, metric) -> value of every ok cell of the run."""
    rows = store.cursor().execute("SELECT question_id, metric, value FROM scores WHERE run_id = ? AND status = ?",
                                  [run_id, OK]).fetchall()
    return {(q, m): float(v) for q, m, v in rows if v is not None}


def _scored(store: Store, prepared: lifecycle.Prepared, api_key: str | None, cancel: threading.Event | None,
            on_metric) -> tuple[str, str]:
    run_id = lifecycle.start(store, prepared)
    with lent_api_key(run_id, api_key):
        status = engine.execute_run(store, run_id, on_metric=on_metric, cancel=cancel, samples=prepared.samples)
    return run_id, status


def execute(p: Plan, *, api_key: str | None = None, cancel: threading.Event | None = None, on_metric=None) -> Outcome:
    """Score the plan's items with its judge, and with the offline judge, in a temporary DuckDB file (deleted after);
    their agreement with people. Raises what the plan's problems say (lifecycle.refuse) before anything is sent, and
    JudgeRefused when the judge's server refuses the key or the model."""
    lifecycle.refuse(p.problems)
    folder = Path(tempfile.mkdtemp(prefix="ragscope-calibration-"))
    try:
        store = Store(folder / "calibration.duckdb")
        run_id, status = _scored(store, p.prepared, api_key, cancel, on_metric)
        with store.lease():
            judged = _cells(store, run_id)
            spent = budget.run_cost(store, run_id)
        if p.judge.makes_calls:
            offline_spec = lifecycle.RunSpec(OfflineJudge(), metrics=METRICS, name="calibration, offline judge")
            offline_id, _ = _scored(store, lifecycle.prepare(p.prepared.inputs, offline_spec), None, None, None)
            with store.lease():
                offline = _cells(store, offline_id)
        else:
            offline = judged
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    rows = agreement(p.items, p.sets, judged, offline)
    failed = sum((i.key, LABELS[label_of(p.sets, i)].metric) not in judged for i in p.items)
    state = RunStatus(status)
    note = f"{len(p.items) - failed} of {len(p.items)} items judged"
    if failed:
        why = {RunStatus.BUDGET_REACHED: "the budget was reached", RunStatus.CANCELLED: "cancelled"}.get(
            state, "failed cells")
        note += f"; {failed} not ({why}: left out, never read as 0)"
    return Outcome(state.value, tuple(rows), len(p.items), failed, None if spent is None else spent["usd"], note)


def calibrate(store: Store, p: Plan, **options) -> tuple[str, Outcome]:
    """`execute`, then the outcome stored in `store` (`calibrations`, `calibration_results`); its id."""
    outcome = execute(p, **options)
    with store.lease():
        calibration_id = store.save_calibration(
            judge=p.judge.name, judge_model=p.judge.model, judge_config=p.judge.config(), n_items=outcome.n_items,
            seed=p.seed, cost_usd=outcome.cost_usd, status=outcome.status, note=outcome.note,
            rows=[vars(r) for r in outcome.rows])
    return calibration_id, outcome


# -- agreement ----------------------------------------------------------------------------------------------------


def label_of(sets: Sequence[LabelledSet], item: LabelledItem) -> str:
    return next(s.label for s in sets if s.name == item.set)


def token_f1(label: str, item: LabelledItem) -> float:
    return token_overlap(*LABELS[label].pair(item))[2]


def _figure(fn, scores: np.ndarray, truth: np.ndarray, groups: np.ndarray) -> tuple[float, float, float]:
    if not len(truth):
        return math.nan, math.nan, math.nan
    return stats.bootstrap_ci(fn, scores, truth, n_boot=N_BOOT, groups=groups)


def agreement(items: Sequence[LabelledItem], sets: Sequence[LabelledSet], judged: dict, offline: dict) -> list[Row]:
    """Per label (LABELS' order), set and part (every part of the set, and "all" when it has more than one): the
    statistic of its kind for the judge, the offline judge and token F1, on the items whose judge and offline cells
    both have a value. Pure: `judged` and `offline` map (item key, metric) to the ok cells' values."""
    rows = []
    for label, spec in LABELS.items():
        for s in (s for s in sets if s.label == label):
            members = [i for i in items if i.set == s.name]
            parts = list(dict.fromkeys(i.part for i in members))
            for part in ([ALL] if len(parts) > 1 else []) + parts:
                chosen = [i for i in members if part in (ALL, i.part)]
                if not chosen:
                    continue
                rows.append(_row(label, spec.metric, s, part, chosen, judged, offline))
    return rows


def _row(label: str, metric: str, s: LabelledSet, part: str, chosen: list[LabelledItem], judged: dict,
         offline: dict) -> Row:
    both = [i for i in chosen if (i.key, metric) in judged and (i.key, metric) in offline]
    name, fn = STATISTICS[s.kind]
    truth = np.array([float(i.label) for i in both])
    groups = np.array([f"{i.set}\x1f{i.group}" for i in both], dtype=object)
    figures = [_figure(fn, np.array(values, dtype=float), truth, groups) for values in (
        [judged[(i.key, metric)] for i in both], [offline[(i.key, metric)] for i in both],
        [token_f1(label, i) for i in both])]
    n_failed = sum((i.key, metric) not in judged for i in chosen)
    return Row(label, s.label_text, s.name, part, metric, name, len(both), n_failed,
               *figures[0], *figures[1], *figures[2])


# -- in the background (the Evaluate screen) ----------------------------------------------------------------------


class CalibrationJob(BackgroundJob):
    """A calibration in a background thread (the Evaluate screen), stored in `store` when done; the page polls `done`
    and `progress`, then reads `result` ((calibration id, Outcome)) or `error`. The key stays in the thread only."""

    name = "ragscope-calibration"

    def __init__(self, plan: Plan):
        super().__init__()
        self.plan = plan
        self.progress: tuple[int, int] = (0, 0)  # the judge run's cells done, of

    def _progress(self, metric_id: str, metric_done: int, metric_total: int, done: int, total: int) -> None:
        self.progress = (done, total)

    def start(self, store: Store, api_key: str | None) -> CalibrationJob:
        return super().start(calibrate, store, self.plan, api_key=api_key, on_metric=self._progress,
                             secret=self.plan.judge.key(api_key))
