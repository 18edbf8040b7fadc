"""evaluators/queries/humans.py on a tiny run whose cells are written directly: the dimension -> metric
mapping, Spearman and Cohen's kappa against hand computations, cells that are not ok left out (never
0) with the reason in the note, the humans' Krippendorff alpha, and the largest disagreements."""
from __future__ import annotations

import math

import pytest

from evaluators.store import ratings
from evaluators.queries import humans as q
from evaluators.maths.stats import krippendorff_alpha
from evaluators.store import close_store, open_store
from tests.helpers.tiny_run import QUESTIONS, tiny_run
from tests.helpers.human_ratings import RATINGS, rated_cells, rating_records


@pytest.fixture
def run(tmp_path):
    db = tmp_path / "humans.duckdb"
    run_id = tiny_run(db, tmp_path, list(rated_cells()), metrics=("faithfulness", "answer_class", "judge_clarity"))
    store = open_store(db)
    ratings.import_ratings(store, run_id, rating_records(), source="people.csv")
    yield store, run_id
    close_store(db)


def test_dimensions_map_to_their_metrics():
    assert q.matching_metrics("faithfulness") == ("faithfulness", "judge_faithfulness")
    assert q.matching_metrics("Answer Relevance") == ("answer_relevance", "judge_relevance")
    assert q.matching_metrics("answer-relevance") == q.matching_metrics("relevance")
    assert q.matching_metrics("correctness") == ("judge_correctness", "answer_correctness_f1", "answer_class")
    assert q.matching_metrics("fluency") == q.matching_metrics("clarity") == ("judge_clarity",)
    assert q.matching_metrics("rouge_l") == ("rouge_l",)  # named exactly like a metric id
    assert q.matching_metrics("overall") == ()


def _row(agreement, dimension, metric):
    rows = agreement[(agreement["dimension"] == dimension) & (agreement["metric"] == metric)]
    assert len(rows) == 1, agreement[["dimension", "metric"]]
    return rows.iloc[0]


def test_spearman_over_ok_cells_against_the_mean_rating(run):
    store, run_id = run
    agreement = q.judge_vs_humans(store, run_id)["agreement"]
    row = _row(agreement, "faithfulness", "faithfulness")
    # q3/basic's cell failed: left out, not 0. Pairs (metric, mean rating):
    # (.9, 4) (.6, 2.5) (.3, 1.5) (.8, 3.5) (.5, 2) (.1, 1.5); ranks x [6 4 2 5 3 1], y [6 4 1.5 5 3 1.5]:
    # sum dx dy = 17, sum dx^2 = 17.5, sum dy^2 = 17.
    assert (row["n"], row["n_questions"]) == (6, 4)
    assert row["spearman"] == pytest.approx(17 / math.sqrt(17.5 * 17))
    assert row["spearman_low"] <= row["spearman"] <= row["spearman_high"]
    assert "1 judge_error (the judge timed out twice)" in row["note"] and "left out" in row["note"]
    assert math.isnan(row["kappa"])
    units = [list(by.values()) for by in RATINGS.values()]
    assert row["human_alpha"] == pytest.approx(krippendorff_alpha(units, "ordinal"))
    assert (row["alpha_level"], row["human_scale"], row["n_rated_items"], row["n_annotators"]) == \
        ("ordinal", "ratings 1-4", 7, 2)
    assert _row(agreement, "faithfulness", "judge_faithfulness")["note"] == "judge_faithfulness is not in this run"


def test_kappa_of_labels_against_a_label_metric(run):
    store, run_id = run
    agreement = q.judge_vs_humans(store, run_id)["agreement"]
    row = _row(agreement, "correctness", "answer_class")
    # 5 items with a majority (q1/basic is a tie), case-folded: judge correct, wrong, wrong, don't know, correct;
    # people correct, wrong, correct, don't know, wrong. p_o = 3/5, p_e = (2*2 + 2*2 + 1*1) / 25 = 9/25.
    assert row["n"] == 5
    assert row["kappa"] == pytest.approx((3 / 5 - 9 / 25) / (1 - 9 / 25))
    assert "1 item whose annotators split evenly left out" in row["note"]
    assert math.isnan(row["spearman"]) and row["alpha_level"] == "nominal"
    assert row["human_scale"] == "labels (3)"
    assert _row(agreement, "correctness", "judge_correctness")["note"] == "judge_correctness is not in this run"


def test_a_metric_that_is_never_ok_and_a_dimension_without_metric_say_so(run):
    store, run_id = run
    agreement = q.judge_vs_humans(store, run_id)["agreement"]
    fluency = _row(agreement, "Fluency", "judge_clarity")
    assert fluency["n"] == 0 and math.isnan(fluency["spearman"])
    assert fluency["note"].startswith("judge_clarity is not ok for every rated item, left out: 2 not_applicable "
                                      "(the offline judge has no signal for clarity)")
    overall = agreement[agreement["dimension"] == "overall"].iloc[0]
    assert overall["n"] == 0 and "no matching metric" in overall["note"]


def test_largest_disagreements_first(run):
    store, run_id = run
    gaps = q.judge_vs_humans(store, run_id)["disagreements"]
    faith = gaps[(gaps["dimension"] == "faithfulness") & (gaps["metric"] == "faithfulness")]
    # percentile ranks: metric [1 .6 .2 .8 .4 0], people [1 .6 .1 .8 .4 .1]: q2/local +0.1, q4/local -0.1
    assert list(zip(faith["question_id"], faith["method"]))[:2] == [("q2", "local"), ("q4", "local")]
    assert list(faith["rank_difference"][:2]) == pytest.approx([0.1, -0.1])
    assert list(faith["rank_difference"].abs()) == sorted(faith["rank_difference"].abs(), reverse=True)
    assert faith["question"].iloc[0] == "Question q2?"
    labels_gaps = gaps[gaps["metric"] == "answer_class"]
    assert list(zip(labels_gaps["question_id"], labels_gaps["judge_label"], labels_gaps["human_label"])) == [
        ("q2", "wrong", "correct"), ("q4", "correct", "wrong")]


def test_methods_filter_and_an_unrated_run(run, tmp_path):
    store, run_id = run
    local = q.judge_vs_humans(store, run_id, ["local"])["agreement"]
    assert _row(local, "faithfulness", "faithfulness")["n"] == len(QUESTIONS)
    empty = q.judge_vs_humans(store, "run-without-ratings")
    assert empty["agreement"].empty and list(empty["agreement"].columns) == q.AGREEMENT_COLUMNS
    assert empty["disagreements"].empty


def test_error_analysis_view_shows_the_agreement_and_the_disagreements_as_rounded_on_screen(run):
    from evaluators.queries import errors

    store, run_id = run
    expected = q.judge_vs_humans(store, run_id)
    tables = errors.view(store, run_id)
    humans = tables["humans"].set_index(["dimension", "metric"])
    assert list(humans.index) == list(zip(expected["agreement"]["dimension"], expected["agreement"]["metric"]))
    assert humans.loc[("faithfulness", "faithfulness"), "n"] == 6
    assert humans.loc[("faithfulness", "faithfulness"), "spearman"] == round(17 / math.sqrt(17.5 * 17), 3)
    assert humans.loc[("correctness", "answer_class"), "kappa"] == round((3 / 5 - 9 / 25) / (1 - 9 / 25), 3)
    assert humans.loc[("Fluency", "judge_clarity"), "note"].startswith("judge_clarity is not ok for every rated item")
    gaps = tables["disagreements"]
    assert list(dict.fromkeys(zip(gaps["dimension"], gaps["metric"])))[0] == ("correctness", "answer_class")
    faith = gaps[(gaps["dimension"] == "faithfulness") & (gaps["metric"] == "faithfulness")]
    assert list(zip(faith["question_id"], faith["method"]))[:2] == [("q2", "local"), ("q4", "local")]
    assert list(faith["rank_difference"][:2]) == [0.1, -0.1]
    # no judge_overall in this run: the list sorts on the run's first metric, as the screen opens
    assert tables["matches"]["sort metric"].iloc[0] == "faithfulness"
