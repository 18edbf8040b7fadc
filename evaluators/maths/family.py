"""A family-wise test over several metrics' paired differences on the same questions (Westfall-Young max-T).

Pure functions: no I/O, no project imports; numpy only.

Why not Holm: metrics such as answer_class, verdict and answer_correctness_f1 measure nearly the same thing, so
their tests are nearly one test; Holm treats 32 of them as 32 independent chances and multiplies the smallest
p-value by 32, hiding a halving of correctness. Westfall & Young's step-down max-T (1993, algorithm 2.8) takes the
null distribution of the largest statistic from sign flips of whole questions: under "the candidate is no
different from the baseline" swapping the two answers of a question flips the sign of every metric's difference on
that question at once, so one flip pattern applies to all metrics and their correlation is kept. With 32 copies of
one metric the adjusted p equals that metric's own p; with independent metrics it is close to Holm's (Sidak's).

The statistic of metric j is the self-normalised sum t_j = sum_i d_ij / sqrt(sum_i d_ij^2): the denominator does
not change under sign flips, so each metric's marginal p is exactly the sign-flip p of its mean difference, and
metrics on different scales (1-5 Likert, 0-1 ratios) are put on one scale before taking the maximum.

Ties and missing values: a difference within `tie_tolerance` of 0 counts as 0, and a missing one (NaN: a cell not
scored `ok` on one side) also contributes 0 -- each metric's statistic is over its own non-missing pairs, and the
flips are shared by all metrics of a question. Flipping a 0 changes nothing, so questions whose differences are all
0 or missing are dropped before enumerating. Exact enumeration of all 2^m patterns up to EXACT_MAX_N such
questions, else `n_flips` seeded random patterns plus the observed one (a Monte Carlo p is never 0).
Two-sided: the maximum of |t_j|.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EXACT_MAX_N = 16  # 2^16 = 65,536 patterns: milliseconds at 32 metrics
RANDOM_FLIPS = 10_000
_BLOCK_CELLS = 4_000_000  # flips x questions per block, so 25,000 questions never need a 10,000 x 25,000 matrix
_SLACK = 1e-9  # statistics equal up to rounding count as "as extreme"


@dataclass(frozen=True)
class FamilyTest:
    """p_adjusted[j]: metric j's family-wise adjusted p (None for a metric with no pair at all); p_raw[j]: its
    marginal sign-flip p from the same flips; stat[j]: its observed t; method "exact" or "random"; n_flips: the
    patterns counted (2^m, or the random ones + 1); n_questions: questions with a non-zero difference."""

    p_adjusted: tuple[float | None, ...]
    p_raw: tuple[float | None, ...]
    stat: tuple[float | None, ...]
    method: str
    n_flips: int
    n_questions: int


def max_t(differences, *, tie_tolerance: float = 0.0, n_flips: int = RANDOM_FLIPS, seed: int = 0,
          exact_max_n: int = EXACT_MAX_N) -> FamilyTest:
    """Westfall-Young step-down max-T over the columns of `differences` (questions x metrics, candidate - baseline
    per question, NaN where a metric has no pair for that question). See the module docstring."""
    d = np.array(differences, dtype=float)
    if d.ndim != 2:
        raise ValueError(f"differences must be a questions x metrics table, got shape {d.shape}")
    if not tie_tolerance >= 0:
        raise ValueError(f"tie_tolerance must be >= 0, got {tie_tolerance!r}")
    if not (isinstance(n_flips, int) and n_flips >= 1):
        raise ValueError(f"n_flips must be an integer >= 1, got {n_flips!r}")
    if np.isinf(d).any():
        raise ValueError("differences must be finite or NaN (missing)")
    k = d.shape[1]
    present = ~np.isnan(d).all(axis=0)
    d = np.where(np.isnan(d) | (np.abs(d) <= tie_tolerance), 0.0, d)
    d = d[(d != 0).any(axis=1)]
    m = d.shape[0]
    scale = np.sqrt((d ** 2).sum(axis=0))
    moving = scale > 0  # a metric whose differences are all 0 has t = 0 under every flip: p = 1
    scale = np.where(moving, scale, 1.0)
    totals = d.sum(axis=0)
    observed = np.abs(totals) / scale

    # Step-down: metrics sorted by observed |t|, largest first; for each flip the running maximum of |t| over the
    # metrics at or below each rank (successive maxima), compared with that rank's observed |t|.
    order = np.argsort(-observed, kind="stable")
    hits_adj, hits_raw = np.zeros(k), np.zeros(k)
    exact = m <= exact_max_n
    total = 2 ** m if exact else n_flips
    rng = np.random.default_rng(seed)
    block = max(1, _BLOCK_CELLS // max(m, 1))
    for start in range(0, total, block):
        count = min(block, total - start)
        if exact:
            codes = np.arange(start, start + count)
            flipped = ((codes[:, None] >> np.arange(m)) & 1).astype(np.float64)
        else:
            # one random byte gives 8 flips (drawing each flip as an integer took 4 times as long)
            bits = np.unpackbits(rng.integers(0, 256, size=(count, (m + 7) // 8), dtype=np.uint8), axis=1)
            flipped = bits[:, :m].astype(np.float64)
        # the flipped questions' differences change sign: sum - 2 x (their sum), without building a +-1 matrix
        t = np.abs(totals - 2.0 * (flipped @ d)) / scale
        hits_raw += (t >= observed - _SLACK).sum(axis=0)
        successive = np.maximum.accumulate(t[:, order[::-1]], axis=1)[:, ::-1]
        hits_adj[order] += (successive >= observed[order] - _SLACK).sum(axis=0)
    if exact:
        p_adj, p_raw, counted = hits_adj / total, hits_raw / total, total
    else:  # the observed pattern counts as one of the flips
        p_adj, p_raw, counted = (hits_adj + 1) / (total + 1), (hits_raw + 1) / (total + 1), total + 1
    p_adj[order] = np.maximum.accumulate(p_adj[order])  # adjusted p-values keep the order of the statistics
    p_adj = np.where(moving, np.minimum(p_adj, 1.0), 1.0)
    p_raw = np.where(moving, np.minimum(p_raw, 1.0), 1.0)

    def shown(values: np.ndarray) -> tuple[float | None, ...]:
        return tuple(float(v) if ok else None for v, ok in zip(values, present))

    return FamilyTest(shown(p_adj), shown(p_raw), shown(observed), "exact" if exact else "random", counted, m)
