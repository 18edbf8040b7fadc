"""What a run will cost its judge, before it starts: the judge's own estimate (`Judge.estimate`) of the parts the
run's metrics need. (It reads both the judges and the metrics, so it sits beside the engine, above both.)"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from evaluators.judges import CLAIMS, HOLISTIC, Estimate, Judge
from evaluators.metrics import Metric
from evaluators.records import Sample


def needed_parts(metrics: Iterable[Metric]) -> set[str]:
    """The judge parts a run of `metrics` asks for (see engine.RunContext.judged): every judged
    metric needs the claim matrix (the rubric family's wp_overall too); the rubric family also the
    holistic ratings."""
    judged = [m for m in metrics if "judge" in m.needs]
    parts = {CLAIMS} if judged else set()
    if any(m.family == "rubric" for m in judged):
        parts.add(HOLISTIC)
    return parts


def estimate(samples: Sequence[Sample], judge: Judge, metrics: Iterable[Metric]) -> Estimate:
    """`judge`'s calls and tokens for a run of `metrics` on `samples` (none for a judge that makes no calls)."""
    return judge.estimate(samples, needed_parts(metrics))
