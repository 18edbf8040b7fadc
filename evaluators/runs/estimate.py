"""What a run will cost its judge, before it starts: the judge's own estimate (`Judge.estimate`) of the parts the
run's metrics need. (It reads both the judges and the metrics, so it sits beside the engine, above both.)"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from evaluators.judges import CLAIMS, CRITERIA, HOLISTIC, Estimate, Judge
from evaluators.metrics import Metric
from evaluators.metrics.criteria import criterion
from evaluators.records import Sample
from evaluators.records.criteria import Criterion


def needed_parts(metrics: Iterable[Metric]) -> set[str]:
    """The judge parts a run of `metrics` asks for (see engine.RunContext.judged): every judged
    metric needs the claim matrix (the rubric family's wp_overall too), but an analyst's criterion, which needs
    only the criteria's; the rubric family also the holistic ratings."""
    judged = [m for m in metrics if "judge" in m.needs]
    parts = {CRITERIA} if any(criterion(m) for m in judged) else set()
    if any(not criterion(m) for m in judged):
        parts.add(CLAIMS)
    if any(m.family == "rubric" for m in judged):
        parts.add(HOLISTIC)
    return parts


def criteria_of(metrics: Iterable[Metric]) -> tuple[Criterion, ...]:
    """The analyst's criteria among `metrics`, which the CRITERIA part scores."""
    return tuple(c for m in metrics if (c := criterion(m)) is not None)


def estimate(samples: Sequence[Sample], judge: Judge, metrics: Iterable[Metric]) -> Estimate:
    """`judge`'s calls and tokens for a run of `metrics` on `samples` (none for a judge that makes no calls)."""
    metrics = list(metrics)
    return judge.estimate(samples, needed_parts(metrics), criteria_of(metrics))
