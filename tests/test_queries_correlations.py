"""evaluators.queries.correlations against real DuckDB files: a small run written through the Store API
and the evaluated demo run, coefficients checked against scipy on the same data."""
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from evaluators import loaders
from evaluators.queries import correlations as q
from evaluators.store import close_store, open_store

# 5 questions x 2 methods; exact_match is constant, number_match never scored ok.
ROUGE = {"m1": [0.1, 0.2, 0.3, 0.4, 0.5], "m2": [0.5, 0.1, None, 0.3, 0.2]}
JUDGE = {"m1": [1, 2, 2, 4, 5], "m2": [5, 1, 3, 3, 2]}  # 1-5, norm = (x - 1) / 4


@pytest.fixture
def small(tmp_path):
    golden = tmp_path / "golden.jsonl"
    golden.write_text("\n".join(json.dumps({"question_id": f"q{i}", "question": f"Question {i}?", "reference": "r",
                                            "question_type": "T"}) for i in range(5)))
    outputs = tmp_path / "outputs.jsonl"
    outputs.write_text("\n".join(json.dumps({"question_id": f"q{i}", "method": m, "answer": "a", "contexts": ["c"]})
                                 for i in range(5) for m in ("m1", "m2")))
    path = tmp_path / "small.duckdb"
    store = open_store(path)
    golden_id = store.save_dataset(loaders.load(golden, role="golden")).dataset_id
    outputs_id = store.save_dataset(loaders.load(outputs, role="outputs")).dataset_id
    run_id = store.create_run(name="small", golden_dataset_id=golden_id, outputs_dataset_ids=[outputs_id],
                              judge="offline", judge_model=None, metrics=[], config={}, n_samples=10)
    rows = []

    def cell(i, method, metric, value, norm, status="ok"):
        rows.append({"run_id": run_id, "question_id": f"q{i}", "method": method, "metric": metric, "value": value,
                     "norm": norm, "status": status, "judge": "offline", "detail": None})

    for method in ("m1", "m2"):
        for i in range(5):
            r = ROUGE[method][i]
            cell(i, method, "rouge_l", r, r, "ok" if r is not None else "judge_error")
            cell(i, method, "judge_overall", float(JUDGE[method][i]), (JUDGE[method][i] - 1) / 4)
            cell(i, method, "exact_match", 0.0, 0.0)
            cell(i, method, "number_match", None, None, "not_applicable")
    store.write_scores(pd.DataFrame(rows))
    yield store, run_id
    close_store(path)


def test_the_pivot_has_one_row_per_sample_and_one_column_per_metric(small):
    store, run_id = small
    pivot = q.metric_pivot(store, run_id)
    assert list(pivot.columns) == ["question_id", "method", "exact_match", "number_match", "rouge_l",
                                   "judge_overall"]  # catalogue order
    assert len(pivot) == 10 and pivot["number_match"].isna().all()
    row = pivot[(pivot["question_id"] == "q2") & (pivot["method"] == "m2")].iloc[0]
    assert pd.isna(row["rouge_l"]) and row["judge_overall"] == 0.5  # (3 - 1) / 4
    only = q.metric_pivot(store, run_id, method="m1", metrics=["judge_overall", "rouge_l"])
    assert list(only.columns) == ["question_id", "method", "judge_overall", "rouge_l"]
    assert set(only["method"]) == {"m1"} and len(only) == 5


@pytest.mark.parametrize("coefficient", ["pearson", "spearman", "kendall"])
def test_coefficients_and_n_match_scipy_on_pairwise_complete_samples(small, coefficient):
    store, run_id = small
    coefficients, n = q.correlations(store, run_id, coefficient=coefficient)
    x = np.array(ROUGE["m1"] + [v for v in ROUGE["m2"] if v is not None])
    y = np.array([(v - 1) / 4 for v in JUDGE["m1"]] + [(v - 1) / 4 for v, r in zip(JUDGE["m2"], ROUGE["m2"])
                                                       if r is not None])
    scipy = {"pearson": sps.pearsonr, "spearman": sps.spearmanr, "kendall": sps.kendalltau}[coefficient]
    assert n.loc["rouge_l", "judge_overall"] == 9 and n.loc["judge_overall", "judge_overall"] == 10
    assert coefficients.loc["rouge_l", "judge_overall"] == pytest.approx(scipy(x, y).statistic)
    assert pd.isna(coefficients.loc["exact_match", "rouge_l"])  # constant
    assert n.loc["number_match", "rouge_l"] == 0 and pd.isna(coefficients.loc["number_match", "rouge_l"])
    per_method, n1 = q.correlations(store, run_id, coefficient=coefficient, method="m1",
                                    metrics=["rouge_l", "judge_overall"])
    assert n1.loc["rouge_l", "judge_overall"] == 5
    assert per_method.loc["rouge_l", "judge_overall"] == pytest.approx(
        scipy(ROUGE["m1"], [(v - 1) / 4 for v in JUDGE["m1"]]).statistic)
    with pytest.raises(ValueError, match="coefficient"):
        q.correlations(store, run_id, coefficient="cosine")


def test_export_rows_strongest_pair_and_pair_points(small):
    store, run_id = small
    coefficients, n = q.correlations(store, run_id)
    rows = q.long_matrix(coefficients, n)
    assert len(rows) == 6  # 4 metrics: each unordered pair once
    pair = rows[(rows["metric_x"] == "rouge_l") & (rows["metric_y"] == "judge_overall")].iloc[0]
    assert pair["n"] == 9 and pair["coefficient"] == pytest.approx(coefficients.loc["rouge_l", "judge_overall"])
    assert q.strongest_pair(coefficients) == ("rouge_l", "judge_overall")
    exact = pd.DataFrame([[1.0, 1.0, 0.2], [1.0, 1.0, 0.5], [0.2, 0.5, 1.0]], index=list("abc"), columns=list("abc"))
    assert q.strongest_pair(exact) == ("b", "c")  # a copy of a metric is not the most interesting pair
    assert q.strongest_pair(exact.loc[["a", "b"], ["a", "b"]]) == ("a", "b")
    points = q.pair_points(store, run_id, "rouge_l", "judge_overall")
    assert len(points) == 9 and set(points.columns) >= {"question_id", "method", "question_type", "question", "x", "y"}
    q3 = points[(points["question_id"] == "q3") & (points["method"] == "m2")].iloc[0]
    assert (q3["x"], q3["y"], q3["question"]) == (0.3, 0.5, "Question 3?")
    assert len(q.pair_points(store, run_id, "rouge_l", "judge_overall", method="m2")) == 4
    assert len(q.pair_points(store, run_id, "rouge_l", "judge_overall", limit=3)) == 3


@pytest.fixture(scope="module")
def demo(demo_db_file):
    store = open_store(demo_db_file)
    run_id = store.cursor().execute("SELECT run_id FROM runs WHERE status = 'finished'").fetchall()[0][0]
    yield store, run_id
    close_store(demo_db_file)


def test_demo_pair_against_scipy(demo):
    store, run_id = demo
    frame = store.cursor().execute(
        """
        SELECT a.norm AS x, b.norm AS y FROM scores a JOIN scores b USING (run_id, question_id, method)
        WHERE a.run_id = ? AND a.metric = 'rouge_l' AND b.metric = 'faithfulness'
          AND a.status = 'ok' AND b.status = 'ok'
        """, [run_id]).df()
    coefficients, n = q.correlations(store, run_id, coefficient="spearman")
    assert n.loc["rouge_l", "faithfulness"] == len(frame) == 206
    assert coefficients.loc["rouge_l", "faithfulness"] == pytest.approx(sps.spearmanr(frame["x"], frame["y"]).statistic)
