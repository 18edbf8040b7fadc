"""The minimum detectable effect of a paired test (evaluators.maths.power), by simulation and against statsmodels' values."""
import math

import numpy as np
import pytest
from scipy import stats as sps

from evaluators.maths.power import minimum_detectable_effect, paired_power


@pytest.mark.parametrize("n", [8, 20, 50])
def test_at_the_mde_a_simulated_paired_t_test_rejects_80_percent_of_the_time(n):
    sd = 0.7
    mde = minimum_detectable_effect(n, sd, alpha=0.05)
    rng = np.random.default_rng(n)
    runs = 4000
    d = rng.normal(-mde, sd, size=(runs, n))
    rejected = np.mean(sps.ttest_1samp(d, 0, axis=1).pvalue < 0.05)
    assert abs(rejected - 0.8) < 3 * math.sqrt(0.8 * 0.2 / runs), rejected
    assert paired_power(mde, n, sd) == pytest.approx(0.8, abs=1e-6)


def test_known_values_and_the_normal_approximation_as_a_lower_bound():
    # the one-sample t-test's effect size at 80% power, alpha 0.05 two-sided (Cohen's tables: n=20 -> 0.66)
    assert minimum_detectable_effect(20, 1.0) == pytest.approx(0.6604, abs=1e-3)
    for n in (5, 20, 200):
        normal = (sps.norm.ppf(0.975) + sps.norm.ppf(0.8)) / math.sqrt(n)
        assert normal < minimum_detectable_effect(n, 1.0) < normal * {5: 1.6, 20: 1.1, 200: 1.01}[n]
    assert minimum_detectable_effect(20, 1.0, sided=1) < minimum_detectable_effect(20, 1.0)
    assert minimum_detectable_effect(80, 1.0) == pytest.approx(minimum_detectable_effect(20, 1.0) / 2, rel=0.05)  # 1/sqrt(n), nearly


# statsmodels 0.15.0's TTestPower().solve_power(nobs=n, alpha=alpha, power=0.8, alternative=...) (effect size in SDs),
# computed once outside the project (statsmodels is not one of its packages): (n, alpha, sided) -> MDE
STATSMODELS = {(5, 0.05, 2): 1.681997, (5, 0.01, 2): 2.628974, (5, 0.05, 1): 1.359417,
               (20, 0.05, 2): 0.660442, (20, 0.01, 2): 0.838447, (20, 0.05, 1): 0.576917,
               (50, 0.05, 2): 0.404183, (50, 0.01, 2): 0.500347, (50, 0.05, 1): 0.3566,
               (200, 0.05, 2): 0.199065, (200, 0.01, 2): 0.243686, (200, 0.05, 1): 0.176421}


@pytest.mark.parametrize("n, alpha, sided", list(STATSMODELS))
def test_matches_statsmodels_ttestpower(n, alpha, sided):
    assert minimum_detectable_effect(n, 1.0, alpha, sided=sided) == pytest.approx(STATSMODELS[n, alpha, sided], rel=1e-4)


def test_edges_and_bad_input():
    assert minimum_detectable_effect(1, 1.0) is None and minimum_detectable_effect(0, 1.0) is None
    assert minimum_detectable_effect(20, 0.0) == 0.0
    for bad in ({"n": -1, "sd": 1.0}, {"n": 20, "sd": float("nan")}, {"n": 20, "sd": 1.0, "alpha": 1.5},
                {"n": 20, "sd": 1.0, "sided": 3}):
        with pytest.raises(ValueError):
            minimum_detectable_effect(**bad)
