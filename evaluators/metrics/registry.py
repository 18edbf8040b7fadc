"""The metric catalogue: every metric registered once, by id, with what it needs and means.

A metric is a function over a batch of samples returning one Result per sample, declared with
`@metric(...)`. Batches let the cheap metrics vectorise and the judged ones share calls.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evaluators.schema import Result, Sample

# How `value` maps to `norm` in [0, 1] (DESIGN.md "Store").
SCALES = {
    "binary": "0 or 1",
    "ratio": "0-1",
    "likert": "1-5",
    "percent": "0-100",
    "label": "label, numeric value in 0-1",
}

# What a metric can need beyond question + answer; the engine skips (not_applicable) what is absent.
NEEDS = {
    "reference": "a reference answer",
    "contexts": "retrieved chunks",
    "checks": "per-question checks",
    "judge": "judge calls (LLM or offline heuristic)",
    "embeddings": "the packaged MiniLM sentence embedder",
}

Compute = Callable[[Sequence[Sample], Any], list[Result]]


@dataclass(frozen=True)
class Metric:
    id: str
    family: str
    scale: str
    higher_is_better: bool | None  # None: neither (e.g. the share of "don't know" answers)
    needs: tuple[str, ...]
    seed: str  # the seed document that defines it, e.g. "004"
    formula: str
    compute: Compute

    def norm(self, value: float | None) -> float | None:
        """The value projected onto [0, 1] for comparisons and correlations."""
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None
        if self.scale == "likert":
            return (value - 1.0) / 4.0
        if self.scale == "percent":
            return value / 100.0
        return float(value)


REGISTRY: dict[str, Metric] = {}


def metric(
    id: str,
    *,
    family: str,
    scale: str,
    higher_is_better: bool | None,
    seed: str,
    formula: str,
    needs: tuple[str, ...] = (),
) -> Callable[[Compute], Compute]:
    """Register `compute(samples, context) -> list[Result]` under `id`."""
    if scale not in SCALES:
        raise ValueError(f"{id}: unknown scale {scale!r}")
    unknown = set(needs) - set(NEEDS)
    if unknown:
        raise ValueError(f"{id}: unknown needs {sorted(unknown)}")

    def register(compute: Compute) -> Compute:
        if id in REGISTRY:
            raise ValueError(f"metric {id!r} registered twice")
        REGISTRY[id] = Metric(id, family, scale, higher_is_better, tuple(needs), seed, formula, compute)
        return compute

    return register


def resolve(ids: Sequence[str] | None = None) -> list[Metric]:
    """The metrics named by `ids` (all when None), in catalogue order; unknown ids are an error."""
    if ids is None:
        return list(REGISTRY.values())
    unknown = [i for i in ids if i not in REGISTRY]
    if unknown:
        raise KeyError(
            f"unknown metric id(s): {', '.join(unknown)}. Known: {', '.join(REGISTRY)}"
        )
    wanted = set(ids)
    return [m for m in REGISTRY.values() if m.id in wanted]
