"""evaluators.queries.history against a real DuckDB file: runs on one golden set (and one on another) written
through the Store API, checked against numbers computed here (numpy, and the scores table itself)."""

import numpy as np
import pandas as pd
import pytest

from evaluators.queries import history as h
from evaluators.queries.compare import comparison_table
from evaluators.queries.sides import Side
from evaluators.queries.screens import SCREENS
from tests.helpers.compare_runs import VALUES, holm_of
from tests.helpers.history_runs import N, runs  # noqa: F401 (runs: a fixture)


def test_runs_of_one_golden_set_oldest_first(runs):
    store, first, second, rising = runs
    tables = h.view(store, second)
    assert list(tables) == list(h.TABLES) and SCREENS["history"] is h.view
    assert tables["runs"][["position", "run_id", "name"]].values.tolist() == [[1, first, "first"],
                                                                               [2, second, "second"]]
    assert h.golden_runs(store, rising[0])["run_id"].tolist() == rising


def test_points_are_each_runs_mean_ci_and_n(runs):
    store, first, second, _ = runs
    points = h.view(store, first, metrics=["rouge_l", "judge_overall"])["points"]
    assert points[["method", "metric", "position"]].values.tolist() == [
        ["m1", "rouge_l", 1], ["m1", "rouge_l", 2], ["m1", "judge_overall", 1], ["m1", "judge_overall", 2],
        ["m2", "rouge_l", 1], ["m2", "judge_overall", 1], ["m3", "rouge_l", 1], ["m3", "judge_overall", 1]]
    rouge = points[(points["method"] == "m1") & (points["metric"] == "rouge_l")].set_index("position")
    later = [v for v in VALUES["rouge_l"]["m2"] if v is not None]
    assert rouge.loc[1, "mean"] == pytest.approx(np.mean(VALUES["rouge_l"]["m1"])) and rouge.loc[1, "n"] == 6
    assert rouge.loc[2, "mean"] == pytest.approx(np.mean(later)) and rouge.loc[2, "n"] == 5
    assert rouge.loc[2, "n_total"] == 6 and rouge.loc[2, "ci_low"] < rouge.loc[2, "mean"] < rouge.loc[2, "ci_high"]
    percent = h.view(store, first, metrics=["judge_overall"], scale="percent")["points"]
    assert percent.loc[0, "mean"] == pytest.approx(100 * (np.mean(VALUES["judge_overall"]["m1"]) - 1) / 4)
    # The headline metrics the runs scored: of this run's metrics only judge_overall is one.
    assert set(h.view(store, first)["points"]["metric"]) == {"judge_overall"}


def test_steps_pair_each_methods_consecutive_runs(runs):
    store, first, second, _ = runs
    steps = h.view(store, first, metrics=["rouge_l", "hallucination_rate", "dont_know"])["steps"]
    assert set(steps["method"]) == {"m1"}  # m2 and m3 have one run each: no step
    by = steps.set_index("metric")
    rouge = by.loc["rouge_l"]
    assert (rouge["from_run"], rouge["to_run"], rouge["from_position"], rouge["to_position"]) == (first, second, 1, 2)
    assert rouge["n"] == 5 and rouge["delta"] == pytest.approx(-np.mean([0.4, 0.0, -0.1, 0.3, 0.4]))
    assert rouge["change"] == "worse" and by.loc["hallucination_rate", "change"] == "worse"  # rates went up
    assert pd.isna(by.loc["dont_know", "change"])  # no direction
    assert steps["p (Holm)"].to_numpy() == pytest.approx(holm_of(steps["p"].to_numpy()))
    assert not steps["significant"].any()
    # Power: the step's MDE is the paired t-test's at 80% from the SD of its 5 differences (t quantile at 4 df)
    d = np.array([0.4, 0.0, -0.1, 0.3, 0.4])
    step = comparison_table(store, second, Side(first, "m1"), [Side(second, "m1")], metrics=["rouge_l"])
    assert rouge["mde"] == pytest.approx(step["mde"].item())
    assert rouge["mde"] > 2.776 * d.std(ddof=1) / np.sqrt(5)  # above the half-width of the 95% t-interval


def test_a_step_is_significant_after_holm_over_every_step_shown(runs):
    store, _, _, rising = runs
    steps = h.view(store, rising[-1])["steps"]
    assert steps[["from_position", "to_position", "n", "delta", "change"]].values.tolist() == [
        [1, 2, N, 2.0, "better"], [2, 3, N, 0.0, "same"]]
    assert steps["significant"].tolist() == [True, False]
    assert steps["p (Holm)"].to_numpy() == pytest.approx(holm_of(steps["p"].to_numpy()))
    assert h.view(store, rising[0], scale="percent")["steps"]["delta"].iloc[0] == pytest.approx(50.0)


def test_bad_options_name_what_is_allowed(runs):
    store, first, _, _ = runs
    for options, message in [({"methods": ["zz"]}, "method 'zz'"), ({"metrics": ["faithfulness"]}, "metric"),
                             ({"scale": "stars"}, "scale")]:
        with pytest.raises(ValueError, match=message):
            h.view(store, first, **options)
    nothing = h.view(store, "run-nope")
    assert all(t.empty for t in nothing.values()) and list(nothing["steps"].columns) == h.STEP_COLUMNS


def test_the_tables_are_computed_again_when_a_runs_cells_change(runs):
    store, first, second, _ = runs
    before = h.view(store, first, metrics=["rouge_l"])
    assert before["points"]["n"].tolist()[:2] == [6, 5]
    store.write_scores(pd.DataFrame([{"run_id": second, "question_id": "q4", "method": "m1", "metric": "rouge_l",
                                      "value": 0.7, "norm": 0.7, "status": "ok", "judge": "offline", "detail": None}]))
    after = h.view(store, first, metrics=["rouge_l"])
    assert after["points"]["n"].tolist()[:2] == [6, 6] and after["steps"]["n"].tolist() == [6]
