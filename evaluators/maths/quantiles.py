"""A quantile (median, p95) with a distribution-free confidence interval, and the Pareto front of methods on two
axes: pure functions, no I/O.

The interval of a quantile is the classic order-statistic one (e.g. Conover, Practical Nonparametric Statistics,
3rd ed., 3.2; Hahn and Meeker 1991): whatever the distribution (latencies are skewed, with long tails, so no
normal approximation), the number of observations below the true q-quantile is Binomial(n, q), so the sorted
sample's l-th and u-th values bound it with probability F(u-1) - F(l-1), F the Binomial(n, q) CDF. We take the
largest l with F(l-1) <= alpha/2 and the smallest u with F(u-1) >= 1 - alpha/2: each tail at most alpha/2, so
the coverage is at least `confidence` (conservative: the ranks are whole). A bound that would need a rank
outside 1..n does not exist at this n (None): the upper bound of a p95 needs 72 values, a median's 6.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.stats as sps


@dataclass(frozen=True)
class QuantileCI:
    """The q-quantile of n values with its interval [low, high]; low_rank / high_rank are the 1-based order
    statistics the bounds are (None where the sample is too small for that bound; everything None at n == 0)."""

    estimate: float | None
    low: float | None
    high: float | None
    n: int
    low_rank: int | None
    high_rank: int | None
    q: float
    confidence: float = 0.95


def order_statistic_ranks(n: int, q: float, confidence: float = 0.95) -> tuple[int | None, int | None]:
    """(l, u): the 1-based ranks of the sorted sample that bound the q-quantile with at least `confidence`
    (module docstring); None for a bound the sample is too small to give."""
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be strictly between 0 and 1, got {q!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence!r}")
    if n < 1:
        return None, None
    tail = (1.0 - confidence) / 2
    below = sps.binom.cdf(np.arange(n), n, q)  # below[k] = P(K <= k), K ~ Binomial(n, q): values under the quantile
    lows = np.flatnonzero(below <= tail)  # rank l = k + 1 with P(K <= l - 1) <= tail
    highs = np.flatnonzero(below >= 1.0 - tail)  # rank u = k + 1 with P(K <= u - 1) >= 1 - tail
    return (int(lows[-1]) + 1 if lows.size else None), (int(highs[0]) + 1 if highs.size else None)


def quantile_ci(values: Iterable[float | None], q: float, confidence: float = 0.95) -> QuantileCI:
    """The q-quantile of `values` (missing ones dropped; numpy's linear interpolation between order statistics)
    with the distribution-free order-statistic interval of the module docstring."""
    x = np.sort(np.asarray([np.nan if v is None else v for v in values], dtype=float))
    x = x[~np.isnan(x)]
    low_rank, high_rank = order_statistic_ranks(x.size, q, confidence)
    if x.size == 0:
        return QuantileCI(None, None, None, 0, None, None, q, confidence)
    return QuantileCI(float(np.quantile(x, q)), None if low_rank is None else float(x[low_rank - 1]),
                      None if high_rank is None else float(x[high_rank - 1]), int(x.size), low_rank, high_rank, q,
                      confidence)


def pareto_front(costs: Sequence[float], qualities: Sequence[float]) -> list[int | None]:
    """Per point (lower cost and higher quality are better): None when it is on the front (no other point is at
    least as good on both and better on one), else the index of a point that dominates it (the first with the
    highest quality among those that do: the one to name beside it)."""
    points = list(zip(costs, qualities))
    out: list[int | None] = []
    for cost, quality in points:
        better = [j for j, (c, v) in enumerate(points)
                  if c <= cost and v >= quality and (c < cost or v > quality)]
        out.append(max(better, key=lambda j: (points[j][1], -j)) if better else None)
    return out
