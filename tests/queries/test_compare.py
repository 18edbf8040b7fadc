"""evaluators.queries.compare against a real DuckDB file: a small run written through the Store API,
and the evaluated demo run, checked against independent computations (SQL + numpy + scipy)."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from evaluators.queries import compare as q
from evaluators.queries.remember import scores_version
from evaluators.queries.sides import Side, side
from evaluators.store import close_store, open_store
from tests.helpers.compare_runs import EDITED, holm_of, runs, small, write_run  # noqa: F401 (runs, small: fixtures)


def test_methods_metrics_and_the_default_pair(small):
    store, run_id = small
    assert q.run_methods(store, run_id) == ["m1", "m2", "m3"]
    assert q.run_metrics(store, run_id) == ["rouge_l", "dont_know", "hallucination_rate", "judge_overall"]
    assert q.default_methods(["basic_search", "llm", "local_search"]) == (["local_search", "basic_search"],
                                                                          "basic_search")
    assert q.default_methods(["m1", "m2", "m3"]) == (["m1", "m2"], "m2")
    assert q.default_methods(["only"]) == (["only"], None)


def test_paired_scores_keeps_questions_scored_ok_on_both_sides(small):
    store, run_id = small
    frame = q.paired_scores(store, run_id, "m1", "m2", metrics=["rouge_l"])
    assert list(frame["question_id"]) == ["q0", "q1", "q2", "q3", "q5"]  # q4 failed for m2
    assert list(frame.columns[:6]) == ["question_id", "question_type", "question", "metric", "value_a", "value_b"]
    assert frame["delta"].round(6).tolist() == [0.4, 0.0, -0.1, 0.3, 0.4]
    assert frame.loc[frame["question_id"] == "q5", "question_type"].item() == ""  # no type
    assert frame.loc[frame["question_id"] == "q2", "question"].item() == "Question 2?"
    typed = q.paired_scores(store, run_id, "m1", "m2", metrics=["rouge_l"], question_type="B")
    assert list(typed["question_id"]) == ["q2", "q3"]
    untyped = q.paired_scores(store, run_id, "m1", "m2", metrics=["rouge_l"], question_type="")
    assert list(untyped["question_id"]) == ["q5"]
    gaps = q.paired_scores(store, run_id, "m1", "m2", metrics=["judge_overall"], order="gap", limit=2)
    assert list(gaps["question_id"]) == ["q0", "q5"]  # |5-3| = |1-3| = 2 points, then by id
    assert gaps["delta_norm"].tolist() == [0.5, -0.5]
    sample = q.paired_scores(store, run_id, "m1", "m2", order="sample", limit=4)
    assert len(sample) == 4 and sample.equals(q.paired_scores(store, run_id, "m1", "m2", order="sample", limit=4))
    assert q.paired_scores(store, run_id, "m1", "m2", metrics=[]).empty
    with pytest.raises(ValueError, match="order"):
        q.paired_scores(store, run_id, "m1", "m2", order="random")


def test_wins_respect_each_metrics_direction(small):
    store, run_id = small
    table = q.comparison_table(store, run_id, "m2", ["m1", "m2"]).set_index("metric")
    assert set(table["method"]) == {"m1"} and set(table["baseline"]) == {"m2"}
    rouge = table.loc["rouge_l"]
    assert (rouge["n"], rouge["wins"], rouge["ties"], rouge["losses"]) == (5, 3, 1, 1)
    assert rouge["delta"] == pytest.approx(np.mean([0.4, 0.0, -0.1, 0.3, 0.4]))
    assert rouge["mean_a"] == pytest.approx(np.mean([0.9, 0.8, 0.5, 0.4, 0.6]))
    assert rouge["better"] == "m1"
    # Lower is better: m1 has the lower rate on 3 questions, the same on 2, a higher one on 1.
    hall = table.loc["hallucination_rate"]
    assert (hall["wins"], hall["ties"], hall["losses"]) == (3, 2, 1)
    assert hall["delta"] < 0 and hall["better"] == "m1"
    # No direction: the difference, but no winner.
    dont = table.loc["dont_know"]
    assert pd.isna(dont["wins"]) and pd.isna(dont["losses"]) and pd.isna(dont["better"])
    assert dont["delta"] == pytest.approx(-1 / 6)
    # Norm units: judge_overall's 1-5 difference divided by 4.
    judge = table.loc["judge_overall"]
    assert judge["delta"] == pytest.approx(np.mean([2, 1, 0, 1, -1, -2]))
    assert judge["delta_norm"] == pytest.approx(judge["delta"] / 4)
    assert judge["mean_a_norm"] == pytest.approx((judge["mean_a"] - 1) / 4)


def test_holm_runs_over_each_pairs_family_of_tests_and_rows_are_ranked(small):
    # Issue 34: Holm within each pair (method against the baseline) and family of tests (the headline metrics,
    # then every other one), no longer over every row shown, so a row's p is the same on every screen.
    store, run_id = small
    table = q.comparison_table(store, run_id, "m2", ["m1", "m3"])
    assert len(table) == 8 and set(table["method"]) == {"m1", "m3"}
    for (method, family), part in table.groupby(["method", "tests_family"]):
        p = part["p_value"].to_numpy()
        order = np.argsort(p, kind="stable")
        expected = np.maximum.accumulate(np.minimum(1, (len(p) - np.arange(len(p))) * p[order]))
        holm = np.empty(len(p))
        holm[order] = expected
        assert part["p_holm"].to_numpy() == pytest.approx(holm)
        assert set(part["family_tests"]) == {len(p)}
        assert set(part["metric"] == "judge_overall") == {family == "primary"}  # the one headline metric here
    significant = table["significant"].tolist()
    assert significant == sorted(significant, reverse=True)  # significant rows first
    for flag in (True, False):
        gaps = table.loc[table["significant"] == flag, "delta_norm"].abs().tolist()
        assert gaps == sorted(gaps, reverse=True)
    assert q.comparison_table(store, run_id, "m2", ["m1"], metrics=["rouge_l"])["metric"].tolist() == ["rouge_l"]
    typed = q.comparison_table(store, run_id, "m2", ["m1"], question_type="A").set_index("metric")
    assert typed.loc["rouge_l", "n"] == 2


def test_type_deltas_aggregate_per_question_type(small):
    store, run_id = small
    frame = q.type_deltas(store, run_id, "m1", "m2").set_index(["question_type", "metric"])
    b = frame.loc[("B", "rouge_l")]
    assert b["n"] == 2 and b["delta"] == pytest.approx((-0.1 + 0.3) / 2)  # q4 unpaired
    assert frame.loc[("", "rouge_l"), "n"] == 1
    # advantage > 0 means better for m1: lower hallucination on type A.
    assert frame.loc[("A", "hallucination_rate"), "advantage"] == pytest.approx(0.15)
    assert pd.isna(frame.loc[("A", "dont_know"), "advantage"])
    assert frame.loc[("A", "judge_overall"), "delta_norm"] == pytest.approx(1.5 / 4)


def test_the_version_changes_when_cells_are_written(small):
    store, run_id = small
    before = scores_version(store, run_id)
    store.write_scores(pd.DataFrame([{"run_id": run_id, "question_id": "q0", "method": "m1", "metric": "exact_match",
                                      "value": 1.0, "norm": 1.0, "status": "ok", "judge": "deterministic",
                                      "detail": None}]))
    assert scores_version(store, run_id) != before


def test_selection_helpers_read_plotly_points_and_dataframe_rows():
    points = [{"curve_number": 1, "point_index": 3, "customdata": ["Novel-1", "text", 0.2]}]
    assert q.selected_question(points) == "Novel-1"
    assert q.selected_question([]) is None and q.selected_question(None) is None
    assert q.selected_question([{"point_index": 0}]) is None  # a trace without customdata
    assert q.selected_cell([{"customdata": ["Fact Retrieval", "rouge_l", 12]}]) == ("Fact Retrieval", "rouge_l")
    assert q.selected_cell([{"customdata": ["only one"]}]) is None
    frame = pd.DataFrame({"question_id": ["a", "b", "c"]})
    assert q.selected_row(frame, [1]) == "b"
    assert q.selected_row(frame, []) is None and q.selected_row(frame, [7]) is None


# -- sides of other runs (RUN_ID:METHOD) -------------------------------------------------------------


def test_a_side_is_a_method_of_the_run_in_view_or_run_colon_method():
    assert side("run-20261127-124501-1a2b3c4d:local_search", "run-x") == Side("run-20261127-124501-1a2b3c4d",
                                                                               "local_search")
    assert side("m1", "run-x") == Side("run-x", "m1")
    assert side("run-y:a:b", "run-x") == Side("run-y", "a:b")  # run ids hold no colon, methods may
    assert side("gpt-4:turbo", "run-x", runs={"run-y"}) == Side("run-x", "gpt-4:turbo")  # no such run: a method
    assert side(Side("run-y", "m"), "run-x") == Side("run-y", "m") and str(Side("run-y", "m")) == "run-y:m"
    assert Side("run-y", "m").label("run-y") == "m" and Side("run-y", "m").label("run-x") == "run-y:m"
    with pytest.raises(ValueError, match="RUN_ID:METHOD"):
        side("m1", None)


def test_a_side_of_another_run_on_the_same_golden_set_pairs_like_a_method_of_the_run(runs):
    store, first, same, _ = runs
    within = q.comparison_table(store, first, "m2", ["m1"]).set_index("metric")
    across = q.comparison_table(store, first, f"{same}:m1", ["m1"]).set_index("metric")
    assert set(across["baseline"]) == {f"{same}:m1"} and set(across["method"]) == {"m1"}
    numbers = ["n", "mean_a", "mean_b", "delta", "ci_low", "ci_high", "p_value", "wins", "ties", "losses"]
    pd.testing.assert_frame_equal(across.loc[within.index, numbers], within[numbers])
    assert across.loc["rouge_l", "better"] == "m1"
    # Both sides in other runs than the one in view; a later run's method against itself is all ties.
    other = q.comparison_table(store, "run-in-view", f"{same}:m1", [Side(first, "m2")]).set_index("metric")
    assert set(other["method"]) == {f"{first}:m2"} and (other["delta"] == 0).all()
    assert q.n_changed_references(store, first, same) == 0 and q.changed_references(store, first, same).empty


def test_questions_whose_reference_differs_are_left_out_and_counted(runs):
    store, first, _, edited = runs
    assert q.n_changed_references(store, first, edited) == 1
    changed = q.changed_references(store, first, edited)
    assert changed.to_dict("records") == [{"question_id": "q2", "question": "Question 2?", "reference_a": "r",
                                           "reference_b": EDITED["q2"]}]
    table = q.comparison_table(store, first, f"{edited}:m1", ["m1"]).set_index("metric")
    assert table.loc["rouge_l", "n"] == 4  # q4 failed, q2 left out
    assert table.loc["rouge_l", "delta"] == pytest.approx(np.mean([0.4, 0.0, 0.3, 0.4]))
    pairs = q.paired_scores(store, first, "m1", f"{edited}:m1", metrics=["rouge_l"])
    assert pairs["question_id"].tolist() == ["q0", "q1", "q3", "q5"]
    assert pairs["question"].tolist() == ["Question 0?", "Question 1?", "Question 3?", "Question 5?"]
    typed = q.comparison_table(store, first, f"{edited}:m1", ["m1"], question_type="B").set_index("metric")
    assert typed.loc["rouge_l", "n"] == 1  # q3 (q2 left out, q4 failed)
    deltas = q.type_deltas(store, first, "m1", f"{edited}:m1").set_index(["question_type", "metric"])
    assert deltas.loc[("B", "judge_overall"), "n"] == 2  # q3, q4: no q2


def test_a_comparison_across_runs_is_computed_again_when_the_other_runs_cells_change(runs):
    store, first, same, _ = runs
    assert q.comparison_table(store, first, f"{same}:m1", ["m1"]).set_index("metric").loc["rouge_l", "n"] == 5
    store.write_scores(pd.DataFrame([{"run_id": same, "question_id": "q4", "method": "m1", "metric": "rouge_l",
                                      "value": 0.7, "norm": 0.7, "status": "ok", "judge": "offline", "detail": None}]))
    assert q.comparison_table(store, first, f"{same}:m1", ["m1"]).set_index("metric").loc["rouge_l", "n"] == 6


def test_the_view_compares_sides_of_other_runs_and_lists_the_questions_left_out(runs):
    store, first, same, edited = runs
    across = q.view(store, first, methods=["m1", f"{edited}:m1"], baseline=f"{edited}:m1", metric="rouge_l")
    assert list(across) == list(q.TABLES)
    rouge = across["metrics"].set_index("metric").loc["rouge_l"]
    assert rouge["n"] == 4 and rouge[f"Δ m1 − {edited}:m1"] == round(np.mean([0.4, 0.0, 0.3, 0.4]), 3)
    summary = across["summary"].iloc[0]
    assert (summary["method"], summary["baseline"], summary["left out (reference differs)"]) == ("m1",
                                                                                                 f"{edited}:m1", 1)
    assert across["left_out"].to_dict("records") == [{
        "method": "m1", "question_id": "q2", "question": "Question 2?", "method's reference": "r",
        "baseline's reference": EDITED["q2"]}]
    assert sorted(across["scatter"]["question_id"]) == ["q0", "q1", "q3", "q5"]
    assert list(across["disagreements"].columns[:3]) == ["m1", f"{edited}:m1", f"Δ m1 − {edited}:m1"]
    assert "q2" not in set(across["disagreements"]["question_id"])
    # The same golden set: nothing left out; two methods of the run in view against a later run's method.
    three = q.view(store, first, methods=["m1", "m3", f"{same}:m1"], baseline=f"{same}:m1", details_for="m3")
    assert three["left_out"].empty and list(three["left_out"].columns) == list(across["left_out"].columns)
    assert three["summary"]["left out (reference differs)"].tolist() == [0, 0]
    assert set(three["metrics"]["method"]) == {"m1", "m3"} and f"Δ vs {same}:m1" in three["metrics"].columns
    # A run in view without the compared run's metrics still offers them (the metrics of every side's run).
    assert "rouge_l" in set(q.view(store, first, methods=[f"{same}:m1", f"{edited}:m1"])["metrics"]["metric"])
    for options, message in [({"methods": ["m1", "run-nope:m1"]}, "method 'run-nope:m1'"),  # no such run
                             ({"methods": ["m1", f"{same}:m2"]}, f"method of run {same} 'm2'"),
                             ({"methods": ["m1", f"{same}:m1"], "baseline": f"{edited}:m1"}, "baseline")]:
        with pytest.raises(ValueError, match=message):
            q.view(store, first, **options)


# -- the demo run -------------------------------------------------------------------------------------


def test_demo_rouge_l_against_an_independent_computation(demo_read):
    store, run_id = demo_read
    pairs = store.cursor().execute(
        """
        PIVOT (SELECT question_id, method, value FROM scores
               WHERE run_id = ? AND metric = 'rouge_l' AND status = 'ok')
        ON method IN ('local_search', 'basic_search') USING first(value)
        """, [run_id]).df().dropna()
    a, b = pairs["local_search"].to_numpy(), pairs["basic_search"].to_numpy()
    row = q.comparison_table(store, run_id, "basic_search", ["local_search"]).set_index("metric").loc["rouge_l"]
    assert row["n"] == len(pairs) == 103
    assert row["delta"] == pytest.approx(np.mean(a - b))
    assert (row["mean_a"], row["mean_b"]) == (pytest.approx(a.mean()), pytest.approx(b.mean()))
    assert (row["wins"], row["losses"]) == (np.sum(a > b + 1e-9), np.sum(b > a + 1e-9))
    assert row["p_value"] == pytest.approx(sps.wilcoxon(a - b, zero_method="pratt").pvalue)
    assert row["ci_low"] < row["delta"] < row["ci_high"]
    frame = q.paired_scores(store, run_id, "local_search", "basic_search", metrics=["rouge_l"])
    assert frame["delta"].mean() == pytest.approx(np.mean(a - b))


# -- the screen's tables (view) -----------------------------------------------------------------------


def test_the_view_opens_on_the_default_pair_with_the_screens_tables(small):
    store, run_id = small
    tables = q.view(store, run_id)
    assert list(tables) == list(q.TABLES)
    stats = q.comparison_table(store, run_id, "m2", ["m1"]).set_index("metric")
    shown = tables["metrics"].set_index("metric")
    assert list(shown.index) == list(stats.index)  # significant first, then by gap
    assert list(shown.columns) == ["Δ m1 − m2", "95% CI", "p (Holm)", "n", "MDE", "m1 better", "ties", "m2 better",
                                   "m1 mean", "m2 mean", "scale", "p", "better", "family", "tests family"]
    rouge = shown.loc["rouge_l"]
    assert rouge["Δ m1 − m2"] == round(stats.loc["rouge_l", "delta"], 3) and rouge["n"] == 5
    assert rouge["95% CI"] == f"[{stats.loc['rouge_l', 'ci_low']:+.3f}, {stats.loc['rouge_l', 'ci_high']:+.3f}]"
    assert (rouge["m1 better"], rouge["ties"], rouge["m2 better"], rouge["better"]) == (3, 1, 1, "m1")
    assert shown.loc["judge_overall", "scale"] == "1-5" and shown.loc["dont_know", "better"] == "no direction"
    summary = tables["summary"].iloc[0]
    significant = stats[stats["significant"]]
    assert (summary["method"], summary["baseline"], summary["metrics"]) == ("m1", "m2", 4)
    assert summary["better on"] == significant.index[significant["better"] == "m1"].tolist()
    # The heatmap: question types most frequent first, metrics in the table's order; Δ in the metric's scale.
    heat = tables["heatmap"]
    assert list(dict.fromkeys(heat["question_type"])) == ["B", "A", ""]
    assert list(heat.loc[heat["question_type"] == "B", "metric"]) == list(shown.index)
    cell = heat[(heat["question_type"] == "A") & (heat["metric"] == "judge_overall")].iloc[0]
    assert (cell["n"], cell["Δ"], cell["m1 mean"], cell["advantage"]) == (2, 1.5, 4.5, 1.5 / 4)
    assert tables["by_question_type"].columns.tolist() == ["question_type", "metric", "n", "m1 mean", "m2 mean",
                                                          "delta", "delta_norm"]
    assert tables["cell_questions"].empty  # no heatmap cell picked
    # Per question: the first row's metric.
    first = shown.index[0]
    assert len(tables["scatter"]) == shown.loc[first, "n"]
    gaps = tables["disagreements"]
    assert list(gaps.columns) == ["m1", "m2", "Δ m1 − m2", "question type", "question", "question_id"]
    assert list(gaps["Δ m1 − m2"].abs()) == sorted(gaps["Δ m1 − m2"].abs(), reverse=True)


def test_the_views_options_change_the_tables_as_the_widgets_do(small):
    store, run_id = small
    percent = q.view(store, run_id, scale="percent")["metrics"].set_index("metric")
    assert percent.loc["judge_overall", "Δ m1 − m2"] == round(100 * np.mean([2, 1, 0, 1, -1, -2]) / 4, 3)
    assert percent.loc["rouge_l", "m2 mean"] == round(100 * np.mean([0.5, 0.8, 0.6, 0.1, 0.2]), 3)
    typed = q.view(store, run_id, question_type="B")["metrics"].set_index("metric")
    assert typed.loc["rouge_l", "n"] == 2
    lexical = q.view(store, run_id, families=["lexical"])["metrics"]
    assert set(lexical["family"]) == {"lexical"}
    swapped = q.view(store, run_id, baseline="m1")["metrics"].set_index("metric")
    assert swapped.loc["rouge_l", "Δ m2 − m1"] == -round(np.mean([0.4, 0.0, -0.1, 0.3, 0.4]), 3)
    three = q.view(store, run_id, methods=["m1", "m2", "m3"], details_for="m3", metric="judge_overall",
                   cell_type="A", cell_metric="rouge_l")
    assert {"method", "Δ vs m2", "mean", "m2 mean"} <= set(three["metrics"].columns)
    assert len(three["metrics"]) == 8 and list(three["summary"]["method"]) == ["m1", "m3"]
    assert list(three["disagreements"].columns[:3]) == ["m3", "m2", "Δ m3 − m2"]
    assert three["disagreements"]["m3"].tolist() == [1.0] * 6  # judge_overall
    cell = three["cell_questions"]
    assert list(cell.columns) == ["m3", "m2", "Δ", "question", "question_id"]
    assert cell["question_id"].tolist() == ["q0", "q1"] and cell["Δ"].tolist() == [0.4, 0.0]
    # A metric the selection does not compare falls back to the first row, as on the screen.
    fallback = q.view(store, run_id, families=["lexical"], metric="judge_overall")
    first = fallback["metrics"]["metric"].iloc[0]
    assert len(fallback["scatter"]) == fallback["metrics"].set_index("metric").loc[first, "n"]


def test_bad_options_are_refused_with_what_is_allowed(small):
    store, run_id = small
    for options, message in [({"methods": ["m1"]}, "at least two methods"), ({"methods": ["m1", "zz"]}, "method 'zz'"),
                             ({"baseline": "m3"}, "baseline 'm3' is not one of: 'm1', 'm2'"),
                             ({"details_for": "m2"}, "details_for"), ({"families": ["nope"]}, "family 'nope'"),
                             ({"scale": "stars"}, "scale"), ({"question_type": "C"}, "question type"),
                             ({"metric": "faithfulness"}, "metric 'faithfulness'"),
                             ({"cell_metric": "rouge_l"}, "both cell_type and cell_metric"),
                             ({"cell_type": "Z", "cell_metric": "rouge_l"}, "cell_type 'Z'")]:
        with pytest.raises(ValueError, match=message):
            q.view(store, run_id, **options)


def test_the_statistics_are_remembered_until_the_cells_change(small):
    store, run_id = small
    first = q.comparison_table(store, run_id, "m2", ["m1"])
    first.loc[0, "delta"] = 99.0  # a caller's change stays with the caller
    again = q.comparison_table(store, run_id, "m2", ["m1"])
    assert again["delta"].max() < 1
    store.write_scores(pd.DataFrame([{"run_id": run_id, "question_id": "q4", "method": "m2", "metric": "rouge_l",
                                      "value": 0.7, "norm": 0.7, "status": "ok", "judge": "offline", "detail": None}]))
    fresh = q.comparison_table(store, run_id, "m2", ["m1"]).set_index("metric")
    assert fresh.loc["rouge_l", "n"] == 6  # q4 is paired now


# -- the screen on the demo run (formerly AppTest checks of the page) -----------------------------------

A, B = "local_search", "basic_search"


def demo_pairs(store, metric: str, question_type: str | None = None) -> pd.DataFrame:
    """Both methods' `ok` values of one metric, straight from the scores table (the independent side)."""
    type_filter = "AND g.question_type = $type" if question_type else ""
    return store.cursor().execute(
        f"""
        SELECT s.question_id, any_value(s.value) FILTER (s.method = $a) AS a,
               any_value(s.value) FILTER (s.method = $b) AS b
        FROM scores s JOIN runs r USING (run_id)
        JOIN golden_items g ON g.dataset_id = r.golden_dataset_id AND g.question_id = s.question_id
        WHERE r.status = 'finished' AND s.metric = $metric AND s.status = 'ok' {type_filter}
        GROUP BY s.question_id HAVING count(*) = 2 ORDER BY s.question_id
        """, {"a": A, "b": B, "metric": metric, **({"type": question_type} if question_type else {})}).df()


def test_demo_metric_table_against_an_independent_computation(demo_read):
    store, run_id = demo_read
    tables = q.view(store, run_id)
    shown = tables["metrics"].set_index("metric")
    delta = f"Δ {A} − {B}"
    assert list(shown.columns[:6]) == [delta, "95% CI", "p (Holm)", "n", "MDE", f"{A} better"]
    expected = demo_pairs(store, "rouge_l")
    a, b = expected["a"].to_numpy(), expected["b"].to_numpy()
    row = shown.loc["rouge_l"]
    assert row["n"] == len(expected) == 103
    assert row[delta] == pytest.approx(round(np.mean(a - b), 3), abs=1e-9)
    assert (row[f"{A} mean"], row[f"{B} mean"]) == (round(a.mean(), 3), round(b.mean(), 3))
    assert (row[f"{A} better"], row["ties"], row[f"{B} better"]) == (np.sum(a > b), np.sum(a == b), np.sum(a < b))
    assert row["p"] == pytest.approx(sps.wilcoxon(a - b, zero_method="pratt").pvalue)
    assert row["scale"] == "0-1"
    hall = demo_pairs(store, "hallucination_rate")  # lower is better: "local_search better" counts lower rates
    assert shown.loc["hallucination_rate", f"{A} better"] == np.sum(hall["a"] < hall["b"])
    assert pd.isna(shown.loc["dont_know", f"{A} better"]) and shown.loc["dont_know", "better"] == "no direction"
    for _, part in shown.groupby("tests family"):  # over each family of tests (issue 34), not every row shown
        assert part["p (Holm)"].to_numpy() == pytest.approx(holm_of(part["p"].to_numpy()))
    assert "checks_pass_rate" not in shown.index  # not comparable: no pair scored ok
    summary = tables["summary"].iloc[0]
    significant = shown[shown["p (Holm)"] < q.ALPHA]
    assert summary["significantly better"] == (significant["better"] == A).sum()
    assert summary["metrics"] == len(shown)


def test_demo_scale_type_and_baseline(demo_read):
    store, run_id = demo_read
    expected = demo_pairs(store, "judge_overall")
    row = q.view(store, run_id, scale="percent")["metrics"].set_index("metric").loc["judge_overall"]
    assert row[f"Δ {A} − {B}"] == pytest.approx(round(100 * np.mean(expected["a"] - expected["b"]) / 4, 3), abs=1e-9)
    assert row[f"{A} mean"] == pytest.approx(round(100 * (expected["a"].mean() - 1) / 4, 3), abs=1e-9)
    typed = demo_pairs(store, "rouge_l", "Complex Reasoning")
    row = q.view(store, run_id, question_type="Complex Reasoning")["metrics"].set_index("metric").loc["rouge_l"]
    assert row["n"] == len(typed) == 31
    assert row[f"Δ {A} − {B}"] == pytest.approx(round(np.mean(typed["a"] - typed["b"]), 3), abs=1e-9)
    swapped = q.view(store, run_id, baseline=A, question_type="Complex Reasoning")["metrics"].set_index("metric")
    assert swapped.loc["rouge_l", f"Δ {B} − {A}"] == pytest.approx(-row[f"Δ {A} − {B}"], abs=1e-9)


def test_demo_per_question_tables_and_a_heatmap_cell(demo_read):
    store, run_id = demo_read
    tables = q.view(store, run_id, metric="rouge_l", cell_type="Fact Retrieval", cell_metric="rouge_l")
    gaps = tables["disagreements"]
    assert list(gaps.columns[:3]) == [A, B, f"Δ {A} − {B}"]
    assert (gaps[f"Δ {A} − {B}"] - (gaps[A] - gaps[B])).abs().max() < 2e-3  # each row: A - B, rounded
    assert list(gaps[f"Δ {A} − {B}"].abs()) == sorted(gaps[f"Δ {A} − {B}"].abs(), reverse=True)
    expected = demo_pairs(store, "rouge_l")
    assert gaps[f"Δ {A} − {B}"].abs().iloc[0] == pytest.approx(round((expected["a"] - expected["b"]).abs().max(), 3))
    scatter = tables["scatter"]
    assert len(scatter) == 103 and set(scatter["question_type"]) == {"Fact Retrieval", "Complex Reasoning",
                                                                     "Contextual Summarize", "Creative Generation"}
    heat = tables["heatmap"].set_index(["question_type", "metric"])
    facts = demo_pairs(store, "rouge_l", "Fact Retrieval")
    assert heat.loc[("Fact Retrieval", "rouge_l"), "n"] == len(facts) == 49
    assert heat.loc[("Fact Retrieval", "rouge_l"), "Δ"] == pytest.approx(np.mean(facts["a"] - facts["b"]))
    listed = tables["cell_questions"]
    assert len(listed) == 49 and set(listed["question_id"]) == set(facts["question_id"])
    assert list(listed["Δ"].abs()) == sorted(listed["Δ"].abs(), reverse=True)


def add_run(store, methods: dict[str, str]) -> str:
    """A finished run over the demo datasets whose methods copy the demo's (new name -> demo method)."""
    demo = store.cursor().execute(
        "SELECT run_id, golden_dataset_id, outputs_dataset_ids FROM runs WHERE status = 'finished'").fetchall()[0]
    run_id = store.create_run(name="copy", golden_dataset_id=demo[1], outputs_dataset_ids=list(demo[2]),
                              judge="offline", judge_model=None, metrics=["rouge_l"], config={}, n_samples=103)
    cells = store.cursor().execute(
        "SELECT * EXCLUDE (created_at) FROM scores WHERE run_id = ? AND method IN (SELECT unnest(?))",
        [demo[0], list(set(methods.values()))]).df()
    store.write_scores(pd.concat([cells[cells["method"] == source].assign(run_id=run_id, method=name)
                                  for name, source in methods.items()]))
    store.finish_run(run_id, "finished")
    return run_id


def test_demo_three_methods_each_against_the_baseline_and_one_method_alone(demo):
    store, _ = demo
    odd = "<b>llm</b> *only*"
    run_id = add_run(store, {A: A, B: B, odd: A})
    tables = q.view(store, run_id, methods=[A, B, odd], baseline=B, details_for=odd)
    shown = tables["metrics"]
    assert set(shown["method"]) == {A, odd} and f"Δ vs {B}" in shown.columns
    by = shown.set_index(["method", "metric"])
    assert by.loc[(odd, "rouge_l"), f"Δ vs {B}"] == by.loc[(A, "rouge_l"), f"Δ vs {B}"]  # a copy of A
    assert len(shown) == 2 * 37  # Holm over both comparisons (32 metrics compared, and RAGChecker's 5 diagnostics)
    assert tables["disagreements"].columns[0] == odd
    alone = add_run(store, {A: A})
    with pytest.raises(ValueError, match="at least two methods"):
        q.view(store, alone)


def test_each_row_states_its_minimum_detectable_effect(small):
    """MDE: the paired t-test's at alpha 0.05 two-sided and 80% power, from the SD of the n differences; recomputed
    here with scipy's noncentral t (the power at the MDE is 80%, a hair less is below)."""
    store, run_id = small
    table = q.comparison_table(store, run_id, "m2", ["m1"]).set_index("metric")
    pairs = q.paired_scores(store, run_id, "m1", "m2", metrics=["rouge_l"])
    d = (pairs["value_a"] - pairs["value_b"]).to_numpy()
    n, sd, mde = len(d), d.std(ddof=1), table.loc["rouge_l", "mde"]

    def power(effect):
        t = sps.t.ppf(0.975, n - 1)
        nc = effect / sd * np.sqrt(n)
        return sps.nct.sf(t, n - 1, nc) + sps.nct.cdf(-t, n - 1, nc)

    assert power(mde) == pytest.approx(0.8, abs=1e-6) and power(mde * 0.99) < 0.8
    # judge_overall: 1-5 scale, so its norm twin is the MDE over the range's width 4
    assert table.loc["judge_overall", "mde_norm"] == pytest.approx(table.loc["judge_overall", "mde"] / 4)
    shown = q.view(store, run_id)["metrics"].set_index("metric")
    assert shown.loc["rouge_l", "MDE"] == round(mde, 3)


def test_the_summary_names_what_a_small_golden_set_cannot_detect(small):
    """6 questions: every directed metric that is not significant has an MDE far above a tenth of its range."""
    store, run_id = small
    table = q.comparison_table(store, run_id, "m2", ["m1"]).set_index("metric")
    summary = q.view(store, run_id)["summary"].iloc[0]
    expected = table[~table["significant"] & table["higher_is_better"].notna()
                     & (table["mde_norm"] > q.LARGE_MDE)]["mde"].round(6).to_dict()
    assert summary["cannot detect"] == expected and expected
    assert "dont_know" not in summary["cannot detect"]  # no direction: nothing to detect


def test_the_mde_shrinks_as_the_golden_set_grows(tmp_path):
    """The same spread of differences at 20 and at 200 questions: the MDE falls by about sqrt(10) (a little more, as
    the t distribution's tails thin with n), and at 200 a tenth of the range is within reach."""
    rng = np.random.default_rng(3)
    mdes = {}
    for n in (20, 200):
        a = rng.uniform(0, 1, n).round(3)
        b = np.clip(a - rng.normal(0, 0.3, n), 0, 1).round(3)
        store = open_store(path := tmp_path / f"n{n}.duckdb")
        try:
            run_id = write_run(store, tmp_path, f"n{n}", {"rouge_l": {"m1": a.tolist(), "m2": b.tolist()}})
            row = q.comparison_table(store, run_id, "m2", ["m1"]).iloc[0]
            mdes[n] = (row["mde"], np.std(a - b, ddof=1))
        finally:
            close_store(path)
    (mde_20, sd_20), (mde_200, sd_200) = mdes[20], mdes[200]
    ratio = (mde_20 / sd_20) / (mde_200 / sd_200)
    assert np.sqrt(10) < ratio < 1.15 * np.sqrt(10)
    assert mde_200 < 0.1 < mde_20
