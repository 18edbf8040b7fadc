"""Order-statistic intervals of quantiles, checked against scipy's binomial distribution, and the Pareto front."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as sps

from evaluators.maths.quantiles import order_statistic_ranks, pareto_front, quantile_ci


def _coverage(n: int, q: float, low: int, high: int) -> float:
    """P(X_(low) <= the true q-quantile < X_(high)) = P(low <= K <= high - 1), K ~ Binomial(n, q)."""
    return sps.binom.cdf(high - 1, n, q) - sps.binom.cdf(low - 1, n, q)


@pytest.mark.parametrize("q", [0.5, 0.9, 0.95])
@pytest.mark.parametrize("n", [6, 10, 31, 72, 150, 1000])
def test_the_ranks_cover_at_least_95_percent_and_are_the_tightest_with_equal_tails(n, q):
    low, high = order_statistic_ranks(n, q)
    tail = 0.025
    if low is not None:
        assert sps.binom.cdf(low - 1, n, q) <= tail  # the lower tail is at most 2.5% ...
        assert low == n or sps.binom.cdf(low, n, q) > tail  # ... and one rank up it would not be
    else:
        assert sps.binom.pmf(0, n, q) > tail  # even the smallest value is above the quantile too often
    if high is not None:
        assert sps.binom.cdf(high - 1, n, q) >= 1 - tail
        assert high == 1 or sps.binom.cdf(high - 2, n, q) < 1 - tail
    else:
        assert sps.binom.cdf(n - 1, n, q) < 1 - tail  # q ** n > 2.5%: the largest value is below it too often
    if low is not None and high is not None:
        assert _coverage(n, q, low, high) >= 0.95


def test_known_small_sample_ranks():
    # the median of 10 lies between the 2nd and 9th values (coverage 97.9%, the textbook table); a p95's upper bound
    # needs 72 values (0.95 ** 72 < 2.5%), a median's 6
    assert order_statistic_ranks(10, 0.5) == (2, 9)
    assert round(_coverage(10, 0.5, 2, 9), 4) == 0.9785
    assert order_statistic_ranks(71, 0.95)[1] is None and order_statistic_ranks(72, 0.95)[1] == 72
    assert order_statistic_ranks(5, 0.5) == (None, None) and order_statistic_ranks(6, 0.5) == (1, 6)


def test_the_bounds_are_the_sorted_values_at_those_ranks_on_seeded_latencies():
    latencies = np.random.default_rng(7).lognormal(mean=6.0, sigma=0.6, size=200)  # skewed, as latencies are
    ci = quantile_ci(list(latencies) + [None], 0.95)
    ordered = np.sort(latencies)
    low, high = order_statistic_ranks(200, 0.95)
    assert (ci.n, ci.low_rank, ci.high_rank) == (200, low, high)
    assert (ci.low, ci.high) == (ordered[low - 1], ordered[high - 1])
    assert ci.estimate == pytest.approx(np.quantile(latencies, 0.95)) and ci.low <= ci.estimate <= ci.high


def test_the_interval_covers_the_true_median_at_least_95_percent_of_the_time():
    rng = np.random.default_rng(11)
    true_median = float(np.exp(6.0))  # of lognormal(6, 1)
    hits = sum(ci.low <= true_median <= ci.high
               for ci in (quantile_ci(rng.lognormal(6.0, 1.0, 25), 0.5) for _ in range(2000)))
    assert hits / 2000 >= 0.94  # nominal >= 95.7% at n = 25; 0.94 leaves room for the simulation's own noise


def test_no_values_give_no_quantile_and_bad_q_is_refused():
    assert quantile_ci([None, None], 0.5).estimate is None
    with pytest.raises(ValueError, match="q must be"):
        quantile_ci([1.0], 1.0)


def test_the_pareto_front_on_hand_made_points():
    # cost (lower better), quality (higher better): a cheap-and-worse, a dear-and-better, one beaten by b on both,
    # one tied with b exactly (both stay on the front), one as dear as b and worse (beaten)
    costs = [1.0, 2.0, 3.0, 2.0, 2.0]
    quality = [0.5, 0.7, 0.6, 0.7, 0.65]
    assert pareto_front(costs, quality) == [None, None, 1, None, 1]
    assert pareto_front([], []) == []
    assert pareto_front([5.0], [0.1]) == [None]
