"""Unit tests of evaluators.maths.stats: hand-computed values first, then cross-checks against scipy,
pandas and brute force, then the edge cases.

Monte Carlo comparisons (our bootstrap vs scipy.stats.bootstrap, random sign flips vs the exact
enumeration) use tolerances of about 4 standard errors of the Monte Carlo noise, with fixed
seeds, so they are deterministic and still fail on a wrong method.
"""
from __future__ import annotations

import ast
import itertools
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from evaluators.maths import stats as st
from evaluators.maths.stats import (
    Kappa,
    MeanCI,
    PairedComparison,
    cohen_kappa,
    correlation_matrix,
    holm,
    mean_ci,
    paired_comparison,
)

NAN = float("nan")


# ------------------------------------------------------------------------------------------------
# mean_ci


def test_t_interval_hand_computed():
    # mean 3, sd sqrt(2.5), sem sqrt(2.5 / 5) = 0.70711, t(0.975, 4) = 2.776445 -> +-1.963243
    ci = mean_ci([1, 2, 3, 4, 5], max_bootstrap_n=0)
    assert ci.method == "t"
    assert ci.n == 5
    assert ci.mean == 3.0
    assert ci.low == pytest.approx(1.036757, abs=1e-6)
    assert ci.high == pytest.approx(4.963243, abs=1e-6)
    low, high = sps.t.interval(0.95, 4, loc=3.0, scale=sps.sem([1, 2, 3, 4, 5]))
    assert (ci.low, ci.high) == pytest.approx((low, high), rel=1e-12)


def test_t_interval_other_confidence():
    x = np.random.default_rng(3).normal(10, 2, size=200)
    ci = mean_ci(x, 0.9, max_bootstrap_n=100)
    low, high = sps.t.interval(0.9, 199, loc=x.mean(), scale=sps.sem(x))
    assert (ci.method, ci.confidence) == ("t", 0.9)
    assert (ci.low, ci.high) == pytest.approx((low, high), rel=1e-12)


def test_bootstrap_exact_distribution_of_two_values():
    # resample means of [0, 1] are 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4: the 2.5% and
    # 97.5% quantiles are 0 and 1
    assert mean_ci([0, 1]) == MeanCI(0.5, 0.0, 1.0, 2, "bootstrap", 0.95)


@pytest.mark.parametrize(
    "values",
    [
        # continuous: resampled through indices
        np.random.default_rng(1).exponential(size=40),
        # 1-5 Likert, n >> distinct values: resampled through multinomial counts
        np.random.default_rng(2).choice([1, 2, 3, 4, 5], p=[0.05, 0.1, 0.2, 0.4, 0.25], size=300),
    ],
    ids=["continuous", "likert"],
)
def test_bootstrap_matches_scipy_bootstrap(values):
    values = values.astype(float)
    ci = mean_ci(values, n_boot=20_000, seed=7)
    ref = sps.bootstrap(
        (values,), np.mean, confidence_level=0.95, n_resamples=20_000, method="percentile",
        rng=np.random.default_rng(11),
    ).confidence_interval
    sd_of_mean = values.std(ddof=1) / math.sqrt(values.size)
    assert ci.method == "bootstrap"
    assert ci.mean == pytest.approx(values.mean())
    # percentile endpoints from 20,000 resamples: Monte Carlo sd ~0.02 sd_of_mean each
    assert ci.low == pytest.approx(ref.low, abs=0.1 * sd_of_mean)
    assert ci.high == pytest.approx(ref.high, abs=0.1 * sd_of_mean)


def test_bootstrap_close_to_t_for_large_n():
    x = np.random.default_rng(5).uniform(size=3000)
    boot = mean_ci(x)
    t = mean_ci(x, max_bootstrap_n=0)
    width = t.high - t.low
    assert boot.method == "bootstrap" and t.method == "t"
    assert abs(boot.low - t.low) < 0.1 * width
    assert abs(boot.high - t.high) < 0.1 * width


def test_bootstrap_is_seeded():
    x = np.random.default_rng(0).normal(size=50)
    assert mean_ci(x, seed=1) == mean_ci(x, seed=1)
    assert mean_ci(x, seed=1) != mean_ci(x, seed=2)


def test_interval_contains_mean_and_widens_with_confidence():
    x = np.random.default_rng(9).normal(size=60)
    narrow, wide = mean_ci(x, 0.8), mean_ci(x, 0.99)
    assert wide.low < narrow.low < narrow.mean < narrow.high < wide.high


def test_bootstrap_or_t_switches_at_max_bootstrap_n():
    x = list(range(10))
    assert mean_ci(x, max_bootstrap_n=10).method == "bootstrap"
    assert mean_ci(x, max_bootstrap_n=9).method == "t"


def test_missing_values_are_dropped():
    expected = mean_ci([1.0, 3.0, 8.0])
    assert mean_ci([1, None, NAN, 3, 8]) == expected
    assert mean_ci(np.array([1, NAN, 3, 8])) == expected
    assert mean_ci(pd.Series([1, pd.NA, 3, 8], dtype="Float64")) == expected
    assert mean_ci([1, pd.NA, 3, 8]) == expected
    assert mean_ci(v for v in [1, None, 3, 8]) == expected  # any iterable
    assert expected.n == 3 and expected.mean == 4.0


@pytest.mark.parametrize("values", [[], [None, NAN]])
def test_mean_ci_empty(values):
    assert mean_ci(values) == MeanCI(None, None, None, 0, None, 0.95)


def test_mean_ci_single_value():
    assert mean_ci([None, 4.5]) == MeanCI(4.5, None, None, 1, None, 0.95)


@pytest.mark.parametrize("max_bootstrap_n, method", [(5000, "bootstrap"), (0, "t")])
def test_mean_ci_all_equal(max_bootstrap_n, method):
    ci = mean_ci([0.1] * 7, max_bootstrap_n=max_bootstrap_n)
    assert (ci.mean, ci.low, ci.high, ci.method) == (0.1, 0.1, 0.1, method)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"values": [1, math.inf]}, "infinite"),
        ({"values": [[1, 2], [3, 4]]}, "one-dimensional"),
        ({"values": [1, 2], "confidence": 1.0}, "confidence"),
        ({"values": [1, 2], "confidence": 0}, "confidence"),
        ({"values": [1, 2], "n_boot": 0}, "n_boot"),
        ({"values": [1, 2], "max_bootstrap_n": -1}, "max_bootstrap_n"),
    ],
)
def test_mean_ci_rejects_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        mean_ci(**kwargs)


# ------------------------------------------------------------------------------------------------
# paired_comparison


def test_paired_small_exact_hand_computed():
    # d = a - b = [1, 2, 1, 0, 2, -1]: sum 5. Flipping the zero changes nothing; over the 32
    # patterns of |d| = {1, 1, 1, 2, 2} (total 7), |sum| >= 5 iff the flipped part sums to <= 1
    # (4 patterns) or >= 6 (4 patterns): p = 8/32.
    r = paired_comparison([3, 4, 5, 4, 5, 2], [2, 2, 4, 4, 3, 3])
    assert r.test == "permutation-exact"
    assert r.p_value == 0.25
    assert (r.n, r.wins, r.ties, r.losses) == (6, 4, 1, 1)
    assert r.mean_diff == pytest.approx(5 / 6)
    assert (r.mean_a, r.mean_b) == pytest.approx((23 / 6, 18 / 6))


def _scipy_sign_flip_p(d: np.ndarray) -> float:
    return float(
        sps.permutation_test(
            (d,), lambda x, axis: np.mean(x, axis=axis), permutation_type="samples",
            n_resamples=np.inf, vectorized=True,
        ).pvalue
    )


@pytest.mark.parametrize("n", [2, 7, 12, 16])  # n = 1: test_paired_single_pair
def test_paired_exact_matches_scipy_permutation_test(n):
    rng = np.random.default_rng(n)
    a = rng.normal(0.3, 1, size=n)
    b = rng.normal(0.0, 1, size=n)
    r = paired_comparison(a, b)
    assert r.test == "permutation-exact"
    assert r.p_value == pytest.approx(_scipy_sign_flip_p(a - b), abs=1e-12)


def test_paired_exact_with_likert_ties_matches_scipy():
    rng = np.random.default_rng(4)
    a = rng.integers(1, 6, size=15).astype(float)
    b = np.clip(a - rng.integers(-1, 3, size=15), 1, 5)
    r = paired_comparison(a, b)
    assert r.test == "permutation-exact"
    assert r.p_value == pytest.approx(_scipy_sign_flip_p(a - b), abs=1e-12)


def _exact_sign_flip_p(d: np.ndarray) -> float:
    """Brute force over all 2**n patterns (independent of the module's zero-dropping)."""
    n = d.size
    signs = 1 - 2 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)
    sums = np.abs(signs @ d)
    return float(np.mean(sums >= abs(d.sum()) - 1e-9))


def test_paired_random_flips_close_to_exact():
    rng = np.random.default_rng(12)
    d = rng.normal(0.4, 1, size=18)
    r = paired_comparison(d, np.zeros(18), seed=3)
    exact = _exact_sign_flip_p(d)
    assert r.test == "permutation-random"
    assert 0 < r.p_value < 1
    monte_carlo_sd = math.sqrt(exact * (1 - exact) / st.RANDOM_FLIPS)
    assert r.p_value == pytest.approx(exact, abs=4 * monte_carlo_sd)
    assert paired_comparison(d, np.zeros(18), seed=3) == r  # seeded


def test_paired_random_p_value_counts_the_observed_sample():
    # all 19 differences positive: only 2 of 2**19 patterns are as extreme, so the random flips
    # almost surely find none; p is then 1 / (RANDOM_FLIPS + 1), never 0
    r = paired_comparison(np.arange(1.0, 20.0), np.zeros(19))
    assert r.test == "permutation-random"
    k = r.p_value * (st.RANDOM_FLIPS + 1)
    assert k >= 1 and k == pytest.approx(round(k))


@pytest.mark.parametrize("n, test", [(16, "permutation-exact"), (17, "permutation-random"),
                                     (19, "permutation-random"), (20, "wilcoxon-pratt")])
def test_paired_test_switches_with_n(n, test):
    d = np.linspace(-1, 3, n) + 0.01  # no zeros, no ties
    assert paired_comparison(d, np.zeros(n)).test == test


def test_paired_zero_differences_do_not_count_towards_the_exact_limit():
    # 18 pairs, 3 of them equal: 15 non-zero differences, still enumerated exactly
    rng = np.random.default_rng(8)
    d = np.r_[rng.normal(0.3, 1, size=15), 0, 0, 0]
    r = paired_comparison(d, np.zeros(18))
    assert r.test == "permutation-exact"
    assert r.p_value == pytest.approx(_exact_sign_flip_p(d), abs=1e-12)


def _wilcoxon_exact_no_ties(d: np.ndarray) -> float:
    """Two-sided exact Wilcoxon p-value from the null distribution of T+ (counted by DP)."""
    n = d.size
    ranks = sps.rankdata(np.abs(d))
    t_plus = int(ranks[d > 0].sum())
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1
    for k in range(1, n + 1):  # each rank k is either in T+ or not
        counts[k:] = counts[k:] + counts[:-k].copy()
    pmf = counts / 2**n
    return min(1.0, 2 * min(pmf[: t_plus + 1].sum(), pmf[t_plus:].sum()))


def test_paired_wilcoxon_exact_distribution_from_n_20():
    rng = np.random.default_rng(21)
    d = rng.normal(0.5, 1, size=24)
    r = paired_comparison(d, np.zeros(24))
    assert r.test == "wilcoxon-pratt"
    assert r.p_value == pytest.approx(_wilcoxon_exact_no_ties(d), rel=1e-9)


def test_paired_wilcoxon_pratt_hand_computed():
    # 5 wins by one point, 95 ties. Pratt ranks the 95 zeros (1..95) and the five ties at 98,
    # then drops the zeros: T+ = 490. Null mean (100*101 - 95*96) / 4 = 245; variance
    # (100*101*201 - 95*96*191) / 24 - (5**3 - 5) / 48 = 12005 (Cureton; the tie correction
    # leaves the zeros out). z = 245 / sqrt(12005) = 2.2361 -> p = 0.02535.
    # ("zsplit" would give 0.343, "wilcox" on the 5 non-zero alone is not the rule here.)
    r = paired_comparison([2] * 5 + [3] * 95, [1] * 5 + [3] * 95)
    z = 245 / math.sqrt(12005)
    assert r.test == "wilcoxon-pratt"
    assert r.p_value == pytest.approx(2 * sps.norm.sf(z), rel=1e-12)
    assert r.p_value == pytest.approx(0.025347, abs=1e-6)
    assert (r.wins, r.ties, r.losses) == (5, 95, 0)


def test_paired_wilcoxon_matches_scipy_with_likert_ties():
    rng = np.random.default_rng(30)
    a = rng.integers(1, 6, size=80).astype(float)
    b = np.clip(a + rng.choice([-1, 0, 0, 1, 2], size=80), 1, 5)
    r = paired_comparison(a, b)
    assert r.p_value == pytest.approx(sps.wilcoxon(a, b, zero_method="pratt").pvalue, rel=1e-12)


def test_paired_interval_is_mean_ci_of_differences():
    rng = np.random.default_rng(2)
    a, b = rng.uniform(size=50), rng.uniform(size=50)
    r = paired_comparison(a, b, seed=4, confidence=0.9)
    ci = mean_ci(a - b, 0.9, seed=4)
    assert (r.mean_diff, r.low, r.high, r.ci_method) == (ci.mean, ci.low, ci.high, ci.method)
    assert r.mean_diff == pytest.approx(r.mean_a - r.mean_b)
    big = paired_comparison(a, b, max_bootstrap_n=10)
    assert big.ci_method == "t"


def test_paired_swapping_sides_mirrors_the_result():
    rng = np.random.default_rng(6)
    a = rng.integers(1, 6, size=30).astype(float)
    b = rng.integers(1, 6, size=30).astype(float)
    ab, ba = paired_comparison(a, b, max_bootstrap_n=0), paired_comparison(b, a, max_bootstrap_n=0)
    assert ba.mean_diff == pytest.approx(-ab.mean_diff)
    assert (ba.low, ba.high) == pytest.approx((-ab.high, -ab.low))
    assert (ba.wins, ba.ties, ba.losses) == (ab.losses, ab.ties, ab.wins)
    assert ba.p_value == pytest.approx(ab.p_value)


def test_paired_drops_pairs_with_a_missing_side():
    a = [1.0, None, 3.0, 4.0, NAN, 2.0]
    b = [2.0, 5.0, NAN, 1.0, 1.0, 2.0]
    assert paired_comparison(a, b) == paired_comparison([1.0, 4.0, 2.0], [2.0, 1.0, 2.0])
    assert paired_comparison(a, b).n == 3


def _counts(r: PairedComparison) -> tuple[int, int, int]:
    return r.wins, r.ties, r.losses


def test_paired_tie_tolerance():
    a = [1.0, 2.0, 3.0, 0.3]
    b = [1.05, 1.0, 3.2, 0.1 + 0.2]  # 0.1 + 0.2 is 0.30000000000000004
    assert _counts(paired_comparison(a, b)) == (1, 0, 3)
    assert _counts(paired_comparison(a, b, tie_tolerance=1e-9)) == (1, 1, 2)
    assert _counts(paired_comparison(a, b, tie_tolerance=0.1)) == (1, 2, 1)


@pytest.mark.parametrize("n, test", [(5, "permutation-exact"), (25, "wilcoxon-pratt")])
def test_paired_all_differences_zero(n, test):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scipy would warn on an all-zero sample
        r = paired_comparison([3.0] * n, [3.0] * n)
    assert r.p_value == 1.0
    assert r.test == test
    assert (r.mean_diff, r.low, r.high) == (0.0, 0.0, 0.0)
    assert (r.wins, r.ties, r.losses) == (0, n, 0)


@pytest.mark.parametrize("a, b", [([], []), ([None, 1.0], [2.0, NAN])])
def test_paired_empty(a, b):
    assert paired_comparison(a, b) == PairedComparison(
        0, None, None, None, None, None, None, 0, 0, 0, None, None, 0.95
    )


def test_paired_single_pair():
    r = paired_comparison([4.0], [2.0])
    assert (r.n, r.mean_diff, r.low, r.high, r.ci_method) == (1, 2.0, None, None, None)
    assert r.p_value == 1.0  # two sign patterns, both as extreme
    assert (r.wins, r.ties, r.losses) == (1, 0, 0)


def test_paired_unequal_lengths():
    with pytest.raises(ValueError, match=r"same length.*got 3 and 2"):
        paired_comparison([1, 2, 3], [1, 2])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"tie_tolerance": -0.1}, "tie_tolerance"),
        ({"tie_tolerance": NAN}, "tie_tolerance"),
        ({"confidence": 1.5}, "confidence"),
    ],
)
def test_paired_rejects_bad_options(kwargs, message):
    with pytest.raises(ValueError, match=message):
        paired_comparison([1, 2], [2, 1], **kwargs)


def test_paired_rejects_infinite_scores():
    with pytest.raises(ValueError, match="b contains an infinite"):
        paired_comparison([1, 2], [2, -math.inf])


# ------------------------------------------------------------------------------------------------
# holm


def test_holm_hand_computed():
    # sorted: 0.005 * 4 = 0.02, 0.01 * 3 = 0.03, 0.03 * 2 = 0.06, 0.04 * 1 = 0.04 -> max 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_holm_caps_at_one():
    assert holm([0.6, 0.9]) == [1.0, 1.0]
    assert holm([0.4, 0.7, 0.02]) == pytest.approx([0.8, 0.8, 0.06])


def test_holm_missing_values_stay_missing_and_do_not_count():
    out = holm([0.01, None, 0.04, NAN, 0.03, 0.005])
    assert out[1] is None and out[3] is None
    assert [out[i] for i in (0, 2, 4, 5)] == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_holm_edge_cases():
    assert holm([]) == []
    assert holm([None, None]) == [None, None]
    assert holm([0.2]) == [0.2]
    assert holm(p for p in [0.01, 0.02]) == pytest.approx([0.02, 0.02])
    assert holm([0.01, 0.01, 0.5]) == pytest.approx([0.03, 0.03, 0.5])  # equal p, equal result
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm([0.5, 1.2])


def _holm_rejections(p: list[float], alpha: float) -> set[int]:
    """Holm's procedure as stated: walk up the sorted p-values, stop at the first failure."""
    m = len(p)
    rejected: set[int] = set()
    for step, i in enumerate(sorted(range(m), key=lambda i: p[i])):
        if p[i] > alpha / (m - step):
            break
        rejected.add(i)
    return rejected


def test_holm_agrees_with_the_rejection_procedure():
    rng = np.random.default_rng(13)
    for _ in range(20):
        p = list(rng.uniform(0, 0.2, size=int(rng.integers(1, 12))) ** 2)
        adjusted = holm(p)
        assert all(a >= raw for a, raw in zip(adjusted, p))
        for alpha in (0.001, 0.01, 0.05, 0.1):
            assert {i for i, a in enumerate(adjusted) if a <= alpha} == _holm_rejections(p, alpha)


# ------------------------------------------------------------------------------------------------
# cohen_kappa


def _labels_from_table(table: dict[tuple[str, str], int]) -> tuple[list[str], list[str]]:
    a, b = [], []
    for (x, y), count in table.items():
        a += [x] * count
        b += [y] * count
    return a, b


def test_kappa_classic_two_by_two():
    # [[20, 5], [10, 15]]: p_o = 35/50 = 0.7; a says yes 25/50, b 30/50:
    # p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5; kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    a, b = _labels_from_table(
        {("yes", "yes"): 20, ("yes", "no"): 5, ("no", "yes"): 10, ("no", "no"): 15}
    )
    k = cohen_kappa(a, b)
    assert isinstance(k, Kappa)
    assert (k.kappa, k.observed, k.expected, k.n) == (pytest.approx(0.4), 0.7, 0.5, 50)
    assert k.confusion.loc["yes", "yes"] == 20
    assert k.confusion.loc["yes", "no"] == 5  # rows = labels_a, columns = labels_b
    assert k.confusion.loc["no", "yes"] == 10
    assert list(k.confusion.index) == list(k.confusion.columns) == ["no", "yes"]
    assert int(k.confusion.to_numpy().sum()) == 50


def _kappa_brute_force(a: list, b: list) -> float:
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b)) / n
    expected = sum(x == y for x in a for y in b) / n**2  # chance: a random a vs a random b
    return (observed - expected) / (1 - expected)


def test_kappa_matches_brute_force_and_sklearn():
    rng = np.random.default_rng(17)
    for _ in range(5):
        a = rng.integers(1, 5, size=120)
        b = np.where(rng.random(120) < 0.6, a, rng.integers(1, 5, size=120))
        k = cohen_kappa(a.tolist(), b.tolist())
        assert k.kappa == pytest.approx(_kappa_brute_force(a.tolist(), b.tolist()), rel=1e-12)
    try:
        from sklearn.metrics import cohen_kappa_score
    except ImportError:
        return
    assert k.kappa == pytest.approx(cohen_kappa_score(a, b), rel=1e-12)


def test_kappa_perfect_disagreement_and_chance():
    assert cohen_kappa(["x", "y"], ["y", "x"]).kappa == -1.0
    assert cohen_kappa([1, 1, 2, 2], [1, 2, 1, 2]).kappa == 0.0


def test_kappa_single_label_everywhere_is_one():
    k = cohen_kappa(["pass"] * 4, ["pass"] * 4)
    assert (k.kappa, k.observed, k.expected, k.n) == (1.0, 1.0, 1.0, 4)


def test_kappa_drops_missing_and_keeps_one_sided_labels():
    k = cohen_kappa(["a", None, "b", "a", NAN], ["a", "b", "c", pd.NA, "a"])
    assert k.n == 2
    assert list(k.confusion.index) == ["a", "b", "c"]  # "c" only from labels_b
    assert k.confusion.loc["b", "c"] == 1 and k.confusion.loc["c", "b"] == 0
    # p_o = 1/2; p_e = (1*1 + 1*0 + 0*1) / 4 = 1/4; kappa = (1/2 - 1/4) / (3/4) = 1/3
    assert k.kappa == pytest.approx(1 / 3)


def test_kappa_empty():
    k = cohen_kappa([None, "a"], ["b", NAN])
    assert (k.kappa, k.observed, k.expected, k.n) == (None, None, None, 0)
    assert k.confusion.empty


def test_kappa_unsortable_labels_keep_order_of_appearance():
    k = cohen_kappa([2, "x", 2], ["x", 2, 2])
    assert list(k.confusion.index) == [2, "x"]


def test_kappa_unequal_lengths():
    with pytest.raises(ValueError, match="same length"):
        cohen_kappa(["a"], ["a", "b"])


# ------------------------------------------------------------------------------------------------
# krippendorff_alpha

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section E: 4 observers x 12
# units, None = no value; the paper's results are nominal .743, ordinal .815, interval .849, ratio .797.
_KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


@pytest.mark.parametrize("level, published", [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849),
                                               ("ratio", 0.797)])
def test_krippendorff_alpha_reproduces_the_papers_worked_example(level, published):
    units = [list(unit) for unit in zip(*_KRIPPENDORFF_2011)]
    assert st.krippendorff_alpha(units, level) == pytest.approx(published, abs=5e-4)


def test_krippendorff_alpha_hand_computed():
    # Coincidences: o_aa = 2, o_ab = o_ba = 1, o_bb = 2; n_a = n_b = 3, n = 6.
    # alpha = 1 - (n - 1) * (o_ab + o_ba) / (n_a n_b + n_b n_a) = 1 - 5 * 2 / 18 = 4/9.
    units = [["a", "a"], ["a", "b"], ["b", "b"]]
    assert st.krippendorff_alpha(units) == pytest.approx(4 / 9)
    # Interval, units [1, 2], [2, 3], [2, 2]: o_12 = o_21 = o_23 = o_32 = 1, o_22 = 2; n_1 = 1, n_2 = 4,
    # n_3 = 1, n = 6. sum o delta^2 = 4; sum n_c n_k delta^2 = 2 * (1*4*1 + 4*1*1 + 1*1*4) = 24; alpha = 1 - 5*4/24.
    assert st.krippendorff_alpha([[1, 2], [2, 3], [2, 2]], "interval") == pytest.approx(1 - 5 * 4 / 24)


def test_krippendorff_alpha_edges():
    assert st.krippendorff_alpha([[1, 1, 1], [2, 2], [3, 3, None]], "ordinal") == pytest.approx(1.0)
    assert math.isnan(st.krippendorff_alpha([[2, 2], [2, 2, 2]]))  # one value everywhere: 0/0
    assert math.isnan(st.krippendorff_alpha([[1], [2, None], []]))  # nothing pairable
    with_single = st.krippendorff_alpha([["a", "a"], ["a", "b"], ["b", "b"], ["c"], [float("nan"), "b", "b"]])
    assert with_single == st.krippendorff_alpha([["a", "a"], ["a", "b"], ["b", "b"], ["b", "b"]])
    with pytest.raises(ValueError, match="level"):
        st.krippendorff_alpha([[1, 2]], "cardinal")


# ------------------------------------------------------------------------------------------------
# correlation_matrix


def test_correlation_hand_computed():
    # complete pairs of x and y: (1,2) (2,1) (3,4) (4,3). dx = dy-permuted = +-0.5, +-1.5:
    # sum dx dy = 3, sum dx^2 = sum dy^2 = 5 -> r = 0.6; ranks equal values -> rho = 0.6;
    # 4 concordant, 2 discordant pairs, no ties -> tau = 2/6.
    frame = pd.DataFrame({"x": [1, 2, 3, 4, 5.0], "y": [2, 1, 4, 3, NAN]})
    for method, expected in [("pearson", 0.6), ("spearman", 0.6), ("kendall", 1 / 3)]:
        coefficients, n = correlation_matrix(frame, method)
        assert coefficients.loc["x", "y"] == pytest.approx(expected), method
        assert coefficients.loc["y", "x"] == coefficients.loc["x", "y"]
        assert coefficients.loc["x", "x"] == 1.0
        assert n.to_numpy().tolist() == [[5, 4], [4, 4]]


def _random_metrics(rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    base = rng.normal(size=rows)
    frame = pd.DataFrame({
        "faithfulness": base + rng.normal(size=rows),
        "likert": np.clip(np.round(3 + base + rng.normal(size=rows)), 1, 5),  # many ties
        "binary": (base > 0).astype(float),
        "noise": rng.uniform(size=rows),
        "same_mask": rng.normal(size=rows),
    })
    for column in ["faithfulness", "likert", "binary", "noise"]:  # different missing patterns
        frame.loc[rng.random(rows) < 0.15, column] = NAN
    frame.loc[frame["faithfulness"].isna(), "same_mask"] = NAN  # same rows as faithfulness
    return frame


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
@pytest.mark.parametrize("with_missing", [True, False])
def test_correlation_matches_pandas(method, with_missing):
    frame = _random_metrics(400, seed=1)
    if not with_missing:
        frame = frame.fillna(0.5)
    coefficients, n = correlation_matrix(frame, method, min_periods=3)
    expected = frame.corr(method=method, min_periods=3)
    pd.testing.assert_frame_equal(coefficients, expected, rtol=1e-12, atol=1e-12)
    counts = frame.notna().astype(int)
    pd.testing.assert_frame_equal(n, counts.T @ counts, check_dtype=False)


@pytest.mark.parametrize(
    "method, reference",
    [
        ("spearman", lambda x, y: sps.spearmanr(x, y).statistic),
        ("kendall", lambda x, y: sps.kendalltau(x, y).statistic),
        ("pearson", lambda x, y: sps.pearsonr(x, y).statistic),
    ],
)
def test_correlation_matches_scipy_per_pair(method, reference):
    frame = _random_metrics(300, seed=2)
    coefficients, n = correlation_matrix(frame, method)
    for x, y in itertools.combinations(frame.columns, 2):
        both = frame[[x, y]].dropna()
        assert n.loc[x, y] == len(both)
        assert coefficients.loc[x, y] == pytest.approx(reference(both[x], both[y]), abs=1e-12)


def test_correlation_large_n_kendall_path():
    # more rows than uint16 ranks can hold: the int64 branch
    rng = np.random.default_rng(3)
    x = rng.normal(size=70_000)
    frame = pd.DataFrame({"x": x, "y": np.round(x + rng.normal(size=70_000))})
    coefficients, _ = correlation_matrix(frame, "kendall")
    expected = sps.kendalltau(frame.x, frame.y).statistic
    assert coefficients.loc["x", "y"] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_correlation_constant_column_is_nan(method):
    frame = pd.DataFrame({"a": [1, 2, 3, 4.0], "c": [3.0] * 4, "b": [4, 1, 3, 2.0]})
    coefficients, n = correlation_matrix(frame, method)
    assert coefficients["c"].isna().all() and coefficients.loc["c"].isna().all()  # diagonal too
    assert coefficients.loc["a", "b"] == pytest.approx(frame.corr(method=method).loc["a", "b"])
    assert n.loc["c", "c"] == 4
    assert coefficients.dtypes.eq(float).all()  # NaN, not None


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_correlation_constant_on_the_common_rows_only(method):
    # b varies overall (2 ... 9) but is constant on the rows it shares with c
    frame = pd.DataFrame(
        {"a": [1, 2, 3, 4, 5.0], "b": [2, 2, 2, NAN, 9.0], "c": [1, 2, 3, NAN, NAN]}
    )
    coefficients, n = correlation_matrix(frame, method)
    assert n.loc["b", "c"] == 3 and math.isnan(coefficients.loc["b", "c"])
    assert coefficients.loc["a", "b"] == pytest.approx(frame.corr(method=method).loc["a", "b"])
    assert coefficients.loc["b", "b"] == 1.0


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_correlation_min_periods(method):
    frame = pd.DataFrame({"a": [1, 2, 3, 4.0], "b": [2, 1, NAN, NAN], "c": [1, 3, 2, 4.0]})
    coefficients, n = correlation_matrix(frame, method, min_periods=3)
    assert n.loc["a", "b"] == 2 and math.isnan(coefficients.loc["a", "b"])
    assert math.isnan(coefficients.loc["b", "b"])  # 2 values < min_periods, diagonal too
    assert not math.isnan(coefficients.loc["a", "c"])
    relaxed, _ = correlation_matrix(frame, method, min_periods=2)
    assert relaxed.loc["a", "b"] == -1.0


def test_correlation_input_types_and_labels():
    frame = pd.DataFrame({
        "flag": [True, False, True, True],
        "nullable": pd.array([1.0, None, 2.0, 3.0], dtype="Float64"),
        "ints": [1, 2, 3, 4],
        "objects": pd.Series([4.0, pd.NA, None, 1], dtype=object),
    })
    coefficients, n = correlation_matrix(frame, "spearman", min_periods=2)
    assert list(coefficients.index) == list(coefficients.columns) == list(frame.columns)
    assert n.loc["nullable", "ints"] == 3 and n.loc["objects", "ints"] == 2
    assert coefficients.loc["nullable", "ints"] == pytest.approx(1.0)
    assert coefficients.loc["objects", "ints"] == pytest.approx(-1.0)


def test_correlation_empty_frames():
    coefficients, n = correlation_matrix(pd.DataFrame({"a": [], "b": []}, dtype=float), "spearman")
    assert coefficients.isna().all().all() and (n == 0).all().all()
    coefficients, n = correlation_matrix(pd.DataFrame(index=range(3)))
    assert coefficients.shape == n.shape == (0, 0)


def test_correlation_rejects_bad_input():
    with pytest.raises(ValueError, match="method"):
        correlation_matrix(pd.DataFrame({"a": [1.0]}), "cosine")
    with pytest.raises(ValueError, match="min_periods"):
        correlation_matrix(pd.DataFrame({"a": [1.0]}), min_periods=0)
    with pytest.raises(ValueError, match=r"not numeric: \['judge'\]"):
        correlation_matrix(pd.DataFrame({"a": [1.0, 2.0], "judge": ["x", "y"]}))
    with pytest.raises(ValueError, match=r"not numeric: \['text'\]"):  # no silent parsing
        correlation_matrix(pd.DataFrame({"a": [1.0, 2.0], "text": ["0.5", "0.7"]}))
    with pytest.raises(ValueError, match="infinite"):
        correlation_matrix(pd.DataFrame({"a": [1.0, math.inf]}))


# ------------------------------------------------------------------------------------------------
# agreement with human labels: auroc, balanced_accuracy, macro_f1, confusion, pearson, spearman


def test_auroc_hand_computed_with_ties():
    # positives 0.9, 0.5, 0.5; negatives 0.5, 0.1. Pairs (pos, neg): 0.9 beats both (2), each 0.5
    # ties the 0.5 (1/2) and beats 0.1 (1): U = 2 + 2 * 1.5 = 5 of 6 pairs.
    assert st.auroc([0.9, 0.5, 0.5, 0.5, 0.1], [1, 1, 1, 0, 0]) == pytest.approx(5 / 6)
    assert st.auroc([1, 2, 3], [0, 0, 1]) == 1.0
    assert st.auroc([1, 2, 3], [1, 0, 0]) == 0.0
    assert st.auroc([2, 2, 2, 2], [1, 0, 1, 0]) == 0.5  # all tied: chance


@pytest.mark.parametrize("rounding", [None, 0], ids=["continuous", "likert-ties"])
def test_auroc_matches_sklearn_and_mann_whitney(rounding):
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(40)
    labels = rng.random(500) < 0.3
    scores = rng.normal(size=500) + labels
    if rounding is not None:
        scores = np.clip(np.round(scores + 3, rounding), 1, 5)  # 1-5, heavy ties
    value = st.auroc(scores, labels)
    assert value == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    u = sps.mannwhitneyu(scores[labels], scores[~labels]).statistic
    assert value == pytest.approx(u / (labels.sum() * (~labels).sum()), abs=1e-12)


def test_auroc_label_types_and_missing_values():
    scores = [0.2, 0.8, None, 0.4, 0.9, NAN, 0.1]
    labels = [False, True, True, False, None, 1, 0]  # kept: (0.2, 0) (0.8, 1) (0.4, 0) (0.1, 0)
    assert st.auroc(scores, labels) == 1.0
    assert st.auroc(np.array([0.3, 0.6, 0.5]), np.array([0, 1, 0])) == 1.0
    assert st.auroc(pd.Series([0.3, 0.6, 0.5]), pd.Series([0.0, 1.0, 0.0])) == 1.0
    assert st.auroc([0.3, 0.6, 0.1], pd.array([pd.NA, True, False], dtype="boolean")) == 1.0


@pytest.mark.parametrize("labels", [[1, 1, 1], [0, 0, 0], [True, None, True], []])
def test_auroc_one_class_is_nan(labels):
    assert math.isnan(st.auroc([0.1, 0.2, 0.3][: len(labels)], labels))


@pytest.mark.parametrize(
    "labels, message",
    [(["yes", "no"], "string"), ([2, 0], r"binary.*\[2\.0\]"), ([0.5, 1], "binary")],
)
def test_binary_labels_are_checked(labels, message):
    with pytest.raises(ValueError, match=message):
        st.auroc([0.1, 0.2], labels)
    with pytest.raises(ValueError, match=message):
        st.balanced_accuracy([1, 0], labels)


def test_auroc_unequal_lengths_and_infinite_scores():
    with pytest.raises(ValueError, match="same length"):
        st.auroc([0.1, 0.2, 0.3], [1, 0])
    with pytest.raises(ValueError, match="infinite"):
        st.auroc([0.1, math.inf], [1, 0])


def test_balanced_accuracy_hand_computed_and_sklearn():
    from sklearn.metrics import balanced_accuracy_score

    # positives: 3 of 4 predicted positive; negatives: 1 of 2 predicted negative -> (0.75 + 0.5) / 2
    predicted = [1, 1, 1, 0, 1, 0]
    labels = [1, 1, 1, 1, 0, 0]
    assert st.balanced_accuracy(predicted, labels) == 0.625
    rng = np.random.default_rng(41)
    y = rng.random(300) < 0.2
    p = np.where(rng.random(300) < 0.8, y, ~y)
    assert st.balanced_accuracy(p, y) == pytest.approx(balanced_accuracy_score(y, p), abs=1e-12)
    # always "correct": 0.5, whatever the base rate (plain accuracy would be 0.8 here)
    assert st.balanced_accuracy(np.ones(300, bool), y) == 0.5


def test_balanced_accuracy_missing_and_one_class():
    assert st.balanced_accuracy([1, None, 0, 1], [1, 0, 0, NAN]) == 1.0
    assert math.isnan(st.balanced_accuracy([1, 0, 1], [1, 1, 1]))  # sklearn would say 2/3


CLASSES = ["CORRECT", "WRONG", "DON'T KNOW"]


def test_macro_f1_hand_computed():
    labels = ["CORRECT", "CORRECT", "WRONG", "WRONG", "DON'T KNOW"]
    predicted = ["CORRECT", "WRONG", "WRONG", "WRONG", "CORRECT"]
    # CORRECT: TP 1, FP 1, FN 1 -> 2/4; WRONG: TP 2, FP 1, FN 0 -> 4/5; DON'T KNOW: TP 0, FN 1 -> 0
    assert st.macro_f1(predicted, labels, CLASSES) == pytest.approx((0.5 + 0.8 + 0.0) / 3)


def test_macro_f1_matches_sklearn():
    from sklearn.metrics import f1_score

    rng = np.random.default_rng(42)
    labels = rng.choice(CLASSES, p=[0.6, 0.3, 0.1], size=400)
    predicted = np.where(rng.random(400) < 0.7, labels, rng.choice(CLASSES, size=400))
    expected = f1_score(labels, predicted, labels=CLASSES, average="macro", zero_division=np.nan)
    assert st.macro_f1(predicted, labels, CLASSES) == pytest.approx(expected, abs=1e-12)
    assert st.macro_f1(list(predicted), list(labels), CLASSES) == pytest.approx(expected, abs=1e-12)


def test_macro_f1_leaves_out_a_class_nobody_used():
    # DON'T KNOW neither in the labels nor predicted: 0/0, not 0
    labels = ["CORRECT", "WRONG", "WRONG"]
    assert st.macro_f1(labels, labels, CLASSES) == 1.0
    # predicted once but never a label: F1 = 0 for it, counted
    assert st.macro_f1(["CORRECT", "WRONG", "DON'T KNOW"], labels, CLASSES) == pytest.approx(
        (1.0 + 2 / 3 + 0.0) / 3
    )
    assert math.isnan(st.macro_f1([None], ["WRONG"], CLASSES))


def test_macro_f1_integer_and_boolean_classes():
    from sklearn.metrics import f1_score

    labels = [1, 2, 3, 3, 5, 4, 4]
    predicted = [1, 3, 3, 3, 4, 4, 5]
    expected = f1_score(labels, predicted, labels=[1, 2, 3, 4, 5], average="macro",
                        zero_division=np.nan)
    assert st.macro_f1(predicted, labels, range(1, 6)) == pytest.approx(expected)
    assert st.macro_f1([True, False], [True, True], [False, True]) == pytest.approx((0 + 2 / 3) / 2)


def test_confusion_rows_are_labels_and_match_sklearn():
    from sklearn.metrics import confusion_matrix

    labels = ["CORRECT", "CORRECT", "WRONG", None, "DON'T KNOW", "WRONG"]
    predicted = ["CORRECT", "WRONG", "WRONG", "WRONG", "CORRECT", NAN]
    table = st.confusion(predicted, labels, CLASSES)
    assert list(table.index) == list(table.columns) == CLASSES
    assert (table.index.name, table.columns.name) == ("label", "predicted")
    assert table.loc["DON'T KNOW", "CORRECT"] == 1  # human said DON'T KNOW, judge CORRECT
    assert table.loc["CORRECT", "WRONG"] == 1
    assert int(table.to_numpy().sum()) == 4  # two pairs with a missing side dropped
    kept = [i for i in range(6) if i not in (3, 5)]
    expected = confusion_matrix([labels[i] for i in kept], [predicted[i] for i in kept],
                                labels=CLASSES)
    np.testing.assert_array_equal(table.to_numpy(), expected)
    empty = st.confusion([], [], CLASSES)
    assert empty.shape == (3, 3) and int(empty.to_numpy().sum()) == 0


@pytest.mark.parametrize(
    "predicted, labels, classes, message",
    [
        (["CORRECT", "correct"], ["WRONG", "WRONG"], CLASSES, r"predicted.*\['correct'\]"),
        (["CORRECT"], ["RIGHT"], CLASSES, "labels holds values not in classes"),
        (["CORRECT"], ["WRONG", "WRONG"], CLASSES, "same length"),
        (["CORRECT"], ["WRONG"], [], "empty"),
        (["CORRECT"], ["WRONG"], ["CORRECT", "WRONG", "CORRECT"], "distinct"),
        (["CORRECT"], ["WRONG"], ["CORRECT", None], "missing"),
    ],
)
def test_classes_are_checked(predicted, labels, classes, message):
    with pytest.raises(ValueError, match=message):
        st.macro_f1(predicted, labels, classes)
    with pytest.raises(ValueError, match=message):
        st.confusion(predicted, labels, classes)


def test_pearson_and_spearman_match_scipy():
    rng = np.random.default_rng(43)
    x = rng.normal(size=200)
    y = np.round(x + rng.normal(size=200))  # ties on one side
    assert st.pearson(x, y) == pytest.approx(sps.pearsonr(x, y).statistic, abs=1e-12)
    assert st.spearman(x, y) == pytest.approx(sps.spearmanr(x, y).statistic, abs=1e-12)
    assert st.spearman(x, np.exp(x)) == 1.0  # monotone, not linear
    assert st.pearson(x, np.exp(x)) < 0.9


def test_pearson_and_spearman_missing_and_degenerate():
    x = [1.0, 2.0, None, 4.0, 5.0]
    y = [2.0, 1.0, 3.0, NAN, 7.0]
    assert st.spearman(x, y) == pytest.approx(sps.spearmanr([1, 2, 5], [2, 1, 7]).statistic)
    assert st.pearson(x, y) == pytest.approx(sps.pearsonr([1, 2, 5], [2, 1, 7]).statistic)
    for f in (st.pearson, st.spearman):
        assert math.isnan(f([1, 2, 3], [4, 4, 4]))  # constant side
        assert math.isnan(f([1], [2]))
        assert math.isnan(f([], []))
        with pytest.raises(ValueError, match="same length"):
            f([1, 2], [1, 2, 3])


# ------------------------------------------------------------------------------------------------
# bootstrap_ci and paired_bootstrap_difference


def _auroc_loop(scores, labels):
    """auroc behind a wrapper: bootstrap_ci then calls it once per resample (no vectorised path)."""
    return st.auroc(scores, labels)


def test_bootstrap_ci_of_a_mean_matches_scipy():
    x = np.random.default_rng(50).exponential(size=60)
    estimate, low, high = st.bootstrap_ci(np.mean, x, n_boot=20_000, seed=1)
    ref = sps.bootstrap((x,), np.mean, confidence_level=0.95, n_resamples=20_000,
                        method="percentile", rng=np.random.default_rng(2)).confidence_interval
    sd_of_mean = x.std(ddof=1) / math.sqrt(x.size)
    assert estimate == x.mean()
    assert low == pytest.approx(ref.low, abs=0.1 * sd_of_mean)
    assert high == pytest.approx(ref.high, abs=0.1 * sd_of_mean)


def test_bootstrap_ci_of_auroc_matches_scipy_paired_bootstrap():
    rng = np.random.default_rng(51)
    labels = rng.random(150) < 0.4
    scores = np.round(rng.normal(size=150) + labels, 1)
    estimate, low, high = st.bootstrap_ci(st.auroc, scores, labels, n_boot=10_000, seed=3)
    from sklearn.metrics import roc_auc_score

    def auc_along(y, x, axis=-1):  # Mann-Whitney AUC of every resample at once, for scipy
        positives = y.astype(bool)
        n_pos = positives.sum(axis=-1)
        u = (sps.rankdata(x, axis=-1) * positives).sum(axis=-1) - n_pos * (n_pos + 1) / 2
        return u / (n_pos * (y.shape[-1] - n_pos))

    assert auc_along(labels, scores) == pytest.approx(roc_auc_score(labels, scores))
    ref = sps.bootstrap((labels, scores), auc_along, paired=True, vectorized=True,
                        confidence_level=0.95, n_resamples=10_000, method="percentile",
                        rng=np.random.default_rng(4)).confidence_interval
    assert estimate == pytest.approx(roc_auc_score(labels, scores))
    # bootstrap sd of the AUC here is ~0.04; endpoint Monte Carlo sd ~0.002 each
    assert low == pytest.approx(ref.low, abs=0.01)
    assert high == pytest.approx(ref.high, abs=0.01)
    assert low < estimate < high


@pytest.mark.parametrize("grouped", [False, True])
def test_vectorised_auroc_equals_the_per_resample_loop(grouped):
    rng = np.random.default_rng(52)
    n = 400
    labels = (rng.random(n) < 0.1).astype(object)  # rare positives: some resamples have none
    scores = np.round(rng.normal(size=n) + 2 * labels.astype(float), 0).astype(object)
    scores[[3, 70]] = None  # missing values are dropped inside every resample
    labels[[5, 71]] = None
    groups = np.arange(n) // 4 if grouped else None
    fast = st.bootstrap_ci(st.auroc, scores, labels, n_boot=500, seed=9, groups=groups)
    loop = st.bootstrap_ci(_auroc_loop, scores, labels, n_boot=500, seed=9, groups=groups)
    assert fast == pytest.approx(loop, abs=1e-12)
    b = np.where(rng.random(n) < 0.5, scores, None)
    fast = st.paired_bootstrap_difference(st.auroc, scores, b, labels, n_boot=500, seed=9,
                                          groups=groups)
    loop = st.paired_bootstrap_difference(_auroc_loop, scores, b, labels, n_boot=500, seed=9,
                                          groups=groups)
    assert fast == pytest.approx(loop, abs=1e-12)


def test_cluster_bootstrap_of_copied_items_equals_item_bootstrap_of_one_copy():
    # every group holds 5 copies of one item: drawing groups is drawing items, so the cluster
    # interval of the copies equals the item interval of the originals (same seed, same draws)
    rng = np.random.default_rng(53)
    scores = rng.normal(size=50)
    labels = rng.random(50) < 0.5
    copies = np.repeat(np.arange(50), 5)
    for statistic in (st.auroc, _auroc_loop, st.spearman):
        cluster = st.bootstrap_ci(statistic, scores[copies], labels[copies].astype(float),
                                  groups=copies, seed=5)
        items = st.bootstrap_ci(statistic, scores, labels.astype(float), seed=5)
        assert cluster == pytest.approx(items, abs=1e-12)
    # ... while resampling the copies one by one pretends to have 5x the data: ~sqrt(5) narrower
    _, low, high = st.bootstrap_ci(st.auroc, scores[copies], labels[copies], seed=5)
    _, c_low, c_high = st.bootstrap_ci(st.auroc, scores[copies], labels[copies], groups=copies,
                                       seed=5)
    assert 1.8 < (c_high - c_low) / (high - low) < 2.8


def test_cluster_bootstrap_matches_a_reference_implementation():
    # written out in the test: draw question ids with replacement, take all their answers
    rng = np.random.default_rng(54)
    question = np.repeat(np.arange(60), rng.integers(1, 8, size=60))  # unequal group sizes
    effect = rng.normal(size=60)[question]
    labels = rng.random(question.size) < 1 / (1 + np.exp(-2 * effect))
    scores = effect + rng.normal(size=question.size)
    ref_rng = np.random.default_rng(100)
    members = [np.flatnonzero(question == q) for q in range(60)]
    values = []
    for _ in range(4000):
        idx = np.concatenate([members[q] for q in ref_rng.integers(0, 60, size=60)])
        values.append(st.auroc(scores[idx], labels[idx]))
    ref_low, ref_high = np.quantile(values, [0.025, 0.975])
    estimate, low, high = st.bootstrap_ci(st.auroc, scores, labels, groups=question,
                                          n_boot=4000, seed=6)
    assert estimate == st.auroc(scores, labels)
    width = ref_high - ref_low
    assert low == pytest.approx(ref_low, abs=0.06 * width)
    assert high == pytest.approx(ref_high, abs=0.06 * width)


def test_bootstrap_ci_drops_nan_resamples():
    # resamples of [0, 1] are {0,0}, {0,1}, {1,0}, {1,1}; the statistic is NaN whenever a 0 is in,
    # so only {1,1} survives: the interval is [1, 1] while the estimate itself is NaN
    def mean_without_zeros(x):
        return math.nan if (x == 0).any() else float(x.mean())

    estimate, low, high = st.bootstrap_ci(mean_without_zeros, np.array([0.0, 1.0]), n_boot=200)
    assert math.isnan(estimate) and (low, high) == (1.0, 1.0)
    estimate, low, high = st.bootstrap_ci(lambda x: None, [1.0, 2.0])  # None counts as NaN
    assert all(math.isnan(v) for v in (estimate, low, high))
    # auroc with a single positive: resamples without it (~37%) are dropped, the rest kept
    estimate, low, high = st.bootstrap_ci(st.auroc, [0.1, 0.2, 0.3, 0.9], [0, 0, 0, 1])
    assert (estimate, low, high) == (1.0, 1.0, 1.0)


def test_bootstrap_ci_is_seeded_and_pairs_the_arrays():
    rng = np.random.default_rng(55)
    x = rng.normal(size=80)
    y = x + rng.normal(size=80)
    first = st.bootstrap_ci(st.pearson, x, y, seed=1)
    assert st.bootstrap_ci(st.pearson, x, y, seed=1) == first
    assert st.bootstrap_ci(st.pearson, x, y, seed=2) != first
    # the same indices go to both arrays: identical columns stay perfectly correlated
    assert st.bootstrap_ci(st.pearson, x, x.copy()) == pytest.approx((1.0, 1.0, 1.0))
    # wider at higher confidence
    _, low90, high90 = st.bootstrap_ci(st.pearson, x, y, confidence=0.9, seed=1)
    assert first[1] < low90 < high90 < first[2]


def test_bootstrap_ci_input_types():
    x = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]
    expected = st.bootstrap_ci(np.mean, np.array(x), seed=2)
    assert st.bootstrap_ci(np.mean, x, seed=2) == expected
    assert st.bootstrap_ci(np.mean, pd.Series(x, index=range(10, 18)), seed=2) == expected
    one_per_group = [f"q{i}" for i in range(8)]  # groups of one item: the item bootstrap
    assert st.bootstrap_ci(np.mean, tuple(x), seed=2, groups=one_per_group) == expected


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        (([1, 2], [1, 2, 3]), {}, "same length"),
        ((), {}, "at least one array"),
        (([1, 2],), {"groups": [1]}, "groups"),
        (([1, 2],), {"groups": [1, None]}, "missing"),
        (([1, 2],), {"n_boot": 0}, "n_boot"),
        (([1, 2],), {"confidence": 1.0}, "confidence"),
    ],
)
def test_bootstrap_ci_rejects_bad_input(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        st.bootstrap_ci(lambda *a: 0.0, *args, **kwargs)


def test_bootstrap_ci_empty_input():
    estimate, low, high = st.bootstrap_ci(lambda x: float(len(x)), [])
    assert estimate == 0.0 and math.isnan(low) and math.isnan(high)
    d, low, high = st.paired_bootstrap_difference(st.auroc, [], [], [])
    assert math.isnan(d) and math.isnan(low) and math.isnan(high)


def test_paired_difference_uses_the_same_resamples():
    rng = np.random.default_rng(56)
    labels = rng.random(300) < 0.4
    noise = rng.normal(size=300)
    a = 1.5 * labels + noise  # the better scorer
    b = a + rng.normal(size=300)  # a plus extra noise: worse, and strongly paired with a
    d, low, high = st.paired_bootstrap_difference(st.auroc, a, b, labels, seed=7)
    assert d == pytest.approx(st.auroc(a, labels) - st.auroc(b, labels))
    assert 0 < low < d < high
    # resampling the two sides independently would add their variances; shared draws cancel the
    # part they have in common (here the interval is ~0.58 of the independent one)
    _, a_low, a_high = st.bootstrap_ci(st.auroc, a, labels, seed=7)
    _, b_low, b_high = st.bootstrap_ci(st.auroc, b, labels, seed=7)
    assert high - low < 0.75 * math.hypot(a_high - a_low, b_high - b_low)
    # swapping the sides mirrors the result exactly (same draws)
    assert st.paired_bootstrap_difference(st.auroc, b, a, labels, seed=7) == pytest.approx(
        (-d, -high, -low), abs=1e-15
    )
    # the same scorer on both sides: no difference in any resample
    assert st.paired_bootstrap_difference(st.auroc, a, a, labels) == (0.0, 0.0, 0.0)


def test_paired_difference_matches_a_reference_implementation():
    rng = np.random.default_rng(57)
    labels = rng.integers(0, 2, size=120).astype(bool)
    a = np.where(rng.random(120) < 0.8, labels, ~labels)
    b = np.where(rng.random(120) < 0.7, labels, ~labels)
    ref_rng = np.random.default_rng(200)
    diffs = []
    for _ in range(5000):
        idx = ref_rng.integers(0, 120, size=120)
        diffs.append(st.balanced_accuracy(a[idx], labels[idx])
                     - st.balanced_accuracy(b[idx], labels[idx]))
    ref_low, ref_high = np.quantile(diffs, [0.025, 0.975])
    d, low, high = st.paired_bootstrap_difference(st.balanced_accuracy, a, b, labels,
                                                  n_boot=5000, seed=8)
    width = ref_high - ref_low
    assert low == pytest.approx(ref_low, abs=0.06 * width)
    assert high == pytest.approx(ref_high, abs=0.06 * width)


def test_paired_difference_rejects_bad_input():
    with pytest.raises(ValueError, match="scores_a, scores_b, labels must have the same length"):
        st.paired_bootstrap_difference(st.auroc, [0.1, 0.2], [0.1], [1, 0])
    with pytest.raises(ValueError, match="confidence"):
        st.paired_bootstrap_difference(st.auroc, [0.1], [0.1], [1], confidence=95)



# ------------------------------------------------------------------------------------------------
# module hygiene


def test_module_is_pure():
    tree = ast.parse(Path(st.__file__).read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert imported <= {
        "__future__", "math", "numbers", "collections", "dataclasses", "numpy", "pandas", "scipy",
    }
    assert set(st.__all__) <= set(dir(st))


@pytest.mark.parametrize("k, n", [(0, 10), (3, 10), (10, 10), (1, 1), (49, 103), (500, 1000)])
def test_wilson_interval_is_scipys(k, n):
    from scipy.stats import binomtest

    from evaluators.maths.stats import wilson_interval

    expected = binomtest(k, n).proportion_ci(0.95, method="wilson")
    low, high = wilson_interval([k], [n])
    assert low[0] == pytest.approx(expected.low, abs=1e-12) and high[0] == pytest.approx(expected.high, abs=1e-12)


def test_wilson_interval_of_nothing_is_nan():
    from evaluators.maths.stats import wilson_interval

    low, high = wilson_interval([0], [0])
    assert np.isnan(low[0]) and np.isnan(high[0])
