"""Westfall-Young max-T (evaluators.maths.family) against scipy's permutation test and by simulation."""
import numpy as np
import pytest
from scipy import stats as sps

from evaluators.maths.family import max_t
from evaluators.maths.stats import holm


def _scipy_sign_flip_p(d, n_resamples=np.inf):
    """scipy's paired permutation test of the mean difference (samples permuted within pairs = sign flips)."""
    return sps.permutation_test((d, np.zeros_like(d)), lambda x, y, axis: np.mean(x - y, axis=axis),
                                permutation_type="samples", n_resamples=n_resamples, alternative="two-sided",
                                random_state=0).pvalue


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_metric_gives_scipys_exact_sign_flip_p(seed):
    d = np.random.default_rng(seed).normal(-0.4, 1, size=12)
    result = max_t(d[:, None])
    assert result.method == "exact" and result.n_flips == 2 ** 12
    assert result.p_adjusted[0] == pytest.approx(_scipy_sign_flip_p(d), abs=1e-12)
    assert result.p_raw[0] == result.p_adjusted[0]


def test_zero_differences_and_ties_are_dropped_as_scipy_counts_them():
    d = np.array([0, 0, 0, -1, -1, -0.5, 1e-12, -1, 0, -2, 0.5, -1.0])
    result = max_t(d[:, None], tie_tolerance=1e-9)
    assert result.n_questions == 7
    kept = d[np.abs(d) > 1e-9]
    assert result.p_adjusted[0] == pytest.approx(_scipy_sign_flip_p(kept), abs=1e-12)


def test_random_flips_are_seeded_and_close_to_the_exact_p():
    d = np.random.default_rng(5).normal(-0.3, 1, size=(40, 1))
    first, again = max_t(d, seed=3), max_t(d, seed=3)
    assert first == again and first.method == "random" and first.n_flips == 10_001
    reference = _scipy_sign_flip_p(d[:, 0], n_resamples=200_000)
    assert abs(first.p_adjusted[0] - reference) < 4 * np.sqrt(reference * (1 - reference) / 10_000) + 1e-3


def test_near_duplicate_metrics_cost_nothing_and_independent_ones_cost_about_holm():
    rng = np.random.default_rng(11)
    d = rng.normal(-0.6, 1, size=(20, 1))
    one = max_t(d).p_adjusted[0]
    # 32 near-duplicates: tiny independent noise on the same differences
    copies = max_t(d + rng.normal(0, 0.01, size=(20, 32)))
    assert max(copies.p_adjusted) < 3 * one + 0.01
    assert min(holm(copies.p_raw)) > 10 * min(copies.p_adjusted)  # Holm multiplies by 32
    # independent metrics: max-T is between the smallest raw p and Bonferroni
    independent = max_t(rng.normal(0, 1, size=(200, 8)) + np.array([-0.3] + [0] * 7))
    raw = min(independent.p_raw)
    assert raw <= independent.p_adjusted[0] <= min(1, 8 * raw) + 0.01


def test_a_real_halving_stays_significant_with_32_near_duplicate_metrics():
    # the scenario: 20 questions, 8 of 16 correct answers become refusals (1 -> 0): correctness 0.8 -> 0.4
    before = np.array([1] * 16 + [0] * 4, dtype=float)
    after = before.copy()
    after[:8] = 0
    base = (after - before)[:, None]
    rng = np.random.default_rng(2)
    metrics = np.hstack([base, base * 0.5, base * 4] + [base + rng.normal(0, 0.05, size=(20, 1)) for _ in range(29)])
    result = max_t(metrics)
    assert result.method == "random"  # more than 16 questions differ once noise is added
    assert max(result.p_adjusted[:3]) < 0.01
    only = max_t(base)
    assert only.method == "exact" and only.p_adjusted[0] == pytest.approx(2 / 2 ** 8)


def test_missing_values_count_as_no_difference_for_that_metric_only():
    d = np.array([[-1.0, np.nan], [-1.0, -1.0], [-1.0, np.nan], [-1.0, -1.0], [-1.0, -1.0]])
    result = max_t(d)
    assert result.p_raw[0] == pytest.approx(2 / 32)
    assert result.p_raw[1] == pytest.approx(_scipy_sign_flip_p(np.array([-1.0, -1.0, -1.0])))
    gone = max_t(np.array([[np.nan, -1.0], [np.nan, 0.5]]))
    assert gone.p_adjusted[0] is None and gone.p_adjusted[1] == 1.0


def test_no_difference_at_all_is_p_1():
    result = max_t(np.zeros((20, 3)))
    assert result.p_adjusted == (1.0, 1.0, 1.0) and result.n_questions == 0


def test_bad_input_is_refused_with_a_message():
    with pytest.raises(ValueError, match="questions x metrics"):
        max_t([1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        max_t([[np.inf]])
    with pytest.raises(ValueError, match="n_flips"):
        max_t([[1.0]], n_flips=0)


def test_the_family_wise_error_rate_stays_at_alpha_on_correlated_null_runs():
    # 400 null runs of 20 questions x 6 correlated metrics (shared question effect + noise, some on a 1-5 scale);
    # the chance that any metric's adjusted p falls below alpha must be alpha, within 3 binomial SDs.
    rng = np.random.default_rng(20261128)
    runs, alpha, rejected = 400, 0.1, 0
    for _ in range(runs):
        shared = rng.normal(0, 1, size=(20, 1))
        d = shared + rng.normal(0, 0.7, size=(20, 6))
        d[:, 3:] = np.round(d[:, 3:] * 2) / 2  # Likert-like steps, with ties and zeros
        rejected += min(max_t(d, n_flips=1_000, seed=int(rng.integers(1 << 30))).p_adjusted) < alpha
    sd = np.sqrt(alpha * (1 - alpha) / runs)
    assert abs(rejected / runs - alpha) < 3 * sd, rejected / runs
