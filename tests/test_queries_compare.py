"""evaluators.queries.compare against a real DuckDB file: a small run written through the Store API,
and the evaluated demo run, checked against independent computations (SQL + numpy + scipy)."""
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from evaluators import loaders
from evaluators.queries import compare as q
from evaluators.store import close_store, open_store

# A small run: 6 questions of types A/B/none, methods m1, m2, m3.
# rouge_l (higher is better), hallucination_rate (lower is better), dont_know (no direction).
VALUES = {  # metric -> method -> per-question values (None: a cell not scored ok)
    "rouge_l": {"m1": [0.9, 0.8, 0.5, 0.4, 0.7, 0.6], "m2": [0.5, 0.8, 0.6, 0.1, None, 0.2],
                "m3": [0.9, 0.8, 0.5, 0.4, 0.7, 0.6]},
    "hallucination_rate": {"m1": [0.0, 0.1, 0.5, 0.0, 0.2, 0.0], "m2": [0.3, 0.1, 0.2, 0.4, 0.2, 0.5],
                           "m3": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]},
    "dont_know": {"m1": [0, 0, 1, 0, 0, 0], "m2": [0, 1, 1, 0, 0, 0], "m3": [0, 0, 0, 0, 0, 0]},
    "judge_overall": {"m1": [5, 4, 3, 4, 2, 1], "m2": [3, 3, 3, 3, 3, 3], "m3": [1, 1, 1, 1, 1, 1]},
}
TYPES = ["A", "A", "B", "B", "B", None]


@pytest.fixture
def small(tmp_path):
    golden = tmp_path / "golden.jsonl"
    golden.write_text("\n".join(json.dumps({"question_id": f"q{i}", "question": f"Question {i}?", "reference": "r",
                                            **({"question_type": t} if t else {})})
                                for i, t in enumerate(TYPES)))
    outputs = tmp_path / "outputs.jsonl"
    outputs.write_text("\n".join(json.dumps({"question_id": f"q{i}", "method": m, "answer": "a", "contexts": ["c"]})
                                 for i in range(len(TYPES)) for m in ("m1", "m2", "m3")))
    path = tmp_path / "small.duckdb"
    store = open_store(path)
    golden_id = store.save_dataset(loaders.load(golden, role="golden")).dataset_id
    outputs_id = store.save_dataset(loaders.load(outputs, role="outputs")).dataset_id
    run_id = store.create_run(name="small", golden_dataset_id=golden_id, outputs_dataset_ids=[outputs_id],
                              judge="offline", judge_model=None, metrics=list(VALUES), config={}, n_samples=18)
    rows = []
    for metric, by_method in VALUES.items():
        for method, values in by_method.items():
            for i, v in enumerate(values):
                norm = None if v is None else ((v - 1) / 4 if metric == "judge_overall" else float(v))
                rows.append({"run_id": run_id, "question_id": f"q{i}", "method": method, "metric": metric,
                             "value": None if v is None else float(v), "norm": norm,
                             "status": "ok" if v is not None else "judge_error", "judge": "offline", "detail": None})
    store.write_scores(pd.DataFrame(rows))
    store.finish_run(run_id, "finished")
    yield store, run_id
    close_store(path)


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


def test_holm_runs_over_every_row_shown_and_rows_are_ranked(small):
    store, run_id = small
    table = q.comparison_table(store, run_id, "m2", ["m1", "m3"])
    assert len(table) == 8 and set(table["method"]) == {"m1", "m3"}
    p = table["p_value"].to_numpy()
    order = np.argsort(p, kind="stable")
    expected = np.maximum.accumulate(np.minimum(1, (len(p) - np.arange(len(p))) * p[order]))
    holm = np.empty(len(p))
    holm[order] = expected
    assert table["p_holm"].to_numpy() == pytest.approx(holm)
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
    before = q.scores_version(store, run_id)
    store.write_scores(pd.DataFrame([{"run_id": run_id, "question_id": "q0", "method": "m1", "metric": "exact_match",
                                      "value": 1.0, "norm": 1.0, "status": "ok", "judge": "deterministic",
                                      "detail": None}]))
    assert q.scores_version(store, run_id) != before


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


# -- the demo run -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo(demo_db_file):
    store = open_store(demo_db_file)
    run_id = store.cursor().execute("SELECT run_id FROM runs WHERE status = 'finished'").fetchall()[0][0]
    yield store, run_id
    close_store(demo_db_file)


def test_demo_rouge_l_against_an_independent_computation(demo):
    store, run_id = demo
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
