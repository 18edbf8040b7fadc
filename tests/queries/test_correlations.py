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


def test_demo_pair_against_scipy(demo_read):
    store, run_id = demo_read
    frame = store.cursor().execute(
        """
        SELECT a.norm AS x, b.norm AS y FROM scores a JOIN scores b USING (run_id, question_id, method)
        WHERE a.run_id = ? AND a.metric = 'rouge_l' AND b.metric = 'faithfulness'
          AND a.status = 'ok' AND b.status = 'ok'
        """, [run_id]).df()
    coefficients, n = q.correlations(store, run_id, coefficient="spearman")
    # the demo's 206 answers but its 4 that abstain (answer_class DON'T KNOW): no faithfulness to pair (issue 34)
    refusals = store.cursor().execute("SELECT count(*) FROM scores WHERE run_id = ? AND metric = 'answer_class' "
                                      "AND label = 'DON''T KNOW'", [run_id]).fetchone()[0]
    assert n.loc["rouge_l", "faithfulness"] == len(frame) == 206 - refusals == 202
    assert coefficients.loc["rouge_l", "faithfulness"] == pytest.approx(sps.spearmanr(frame["x"], frame["y"]).statistic)


# -- the screen's tables (view) -----------------------------------------------------------------------


def test_the_view_shows_the_varying_metrics_and_the_strongest_pair(small):
    store, run_id = small
    tables = q.view(store, run_id)
    assert list(tables) == ["matrix", "n", "pairs", "scatter"]
    coefficients, n = q.correlations(store, run_id)
    matrix = tables["matrix"]
    assert list(matrix.index) == list(matrix.columns) == ["rouge_l", "judge_overall"]  # constant, never scored: out
    assert matrix.index.name == "metric"
    assert matrix.loc["rouge_l", "judge_overall"] == pytest.approx(coefficients.loc["rouge_l", "judge_overall"])
    assert tables["n"].loc["judge_overall", "rouge_l"] == 9
    assert tables["pairs"].to_dict("records") == [
        {"metric_x": "rouge_l", "metric_y": "judge_overall",
         "coefficient": round(coefficients.loc["rouge_l", "judge_overall"], 4), "n": 9}]
    scatter = tables["scatter"]  # the strongest pair, its samples in norm
    assert list(scatter.columns) == ["question_id", "method", "question_type", "question", "rouge_l", "judge_overall"]
    assert len(scatter) == 9


def test_the_views_options(small):
    store, run_id = small
    x = np.array(ROUGE["m1"])
    y = np.array([(v - 1) / 4 for v in JUDGE["m1"]])
    one = q.view(store, run_id, coefficient="kendall", samples="m1", x="judge_overall", y="rouge_l")
    assert one["matrix"].loc["judge_overall", "rouge_l"] == pytest.approx(sps.kendalltau(x, y).statistic)
    assert list(one["scatter"].columns[-2:]) == ["judge_overall", "rouge_l"] and set(one["scatter"]["method"]) == {"m1"}
    assert sorted(one["scatter"]["judge_overall"]) == sorted(y)  # a fixed pseudo-random order
    assert q.view(store, run_id, x="rouge_l", y="rouge_l")["scatter"].empty  # one metric: no scatter
    fallback = q.view(store, run_id, x="exact_match")  # a metric not in the matrix: the default pair
    assert list(fallback["scatter"].columns[-2:]) == ["rouge_l", "judge_overall"]
    assert all(t.empty for t in q.view(store, run_id, families=["lexical"]).values())  # one lexical metric varies
    for options, message in [({"coefficient": "cosine"}, "coefficient"), ({"samples": "m9"}, "samples 'm9'"),
                             ({"families": ["nope"]}, "family 'nope'"), ({"x": "faithfulness"}, "x 'faithfulness'")]:
        with pytest.raises(ValueError, match=message):
            q.view(store, run_id, **options)


def samples(store, metric_x: str, metric_y: str, method: str | None = None) -> pd.DataFrame:
    """Norm values of the samples scored ok on both metrics, straight from the scores table."""
    return store.cursor().execute(
        """
        SELECT a.norm AS x, b.norm AS y FROM scores a JOIN scores b USING (run_id, question_id, method)
        WHERE a.metric = $x AND b.metric = $y AND a.status = 'ok' AND b.status = 'ok'
          AND ($method IS NULL OR a.method = $method)
        """, {"x": metric_x, "y": metric_y, "method": method}).df()


SCIPY = {"pearson": sps.pearsonr, "spearman": sps.spearmanr, "kendall": sps.kendalltau}


@pytest.mark.parametrize("coefficient, method", [("pearson", None), ("spearman", None), ("kendall", "local_search")])
def test_demo_cells_match_scipy(demo_read, coefficient, method):
    store, run_id = demo_read
    tables = q.view(store, run_id, coefficient=coefficient, samples=method or q.ALL_METHODS)
    # faithfulness leaves out the 2 answers per method that abstain (issue 34)
    for x, y, each in [("rouge_l", "faithfulness", 101), ("judge_overall", "answer_relevance", 103)]:
        data = samples(store, x, y, method)
        assert tables["n"].loc[x, y] == tables["n"].loc[y, x] == len(data) == (each if method else 2 * each)
        assert tables["matrix"].loc[x, y] == pytest.approx(SCIPY[coefficient](data["x"], data["y"]).statistic)
    assert "exact_match" not in tables["matrix"].index  # constant in the demo


def test_demo_families_and_a_pairs_scatter(demo_read):
    store, run_id = demo_read
    shown = q.view(store, run_id, families=["lexical", "semantic"])["matrix"]
    assert set(shown.index) == {"keyword_coverage", "answer_completeness", "citation_quality", "rouge_l", "dont_know",
                                "bert_score_f1", "semantic_similarity", "answer_relevance"}
    assert all(t.empty for t in q.view(store, run_id, families=["composite"]).values())  # fewer than two metrics
    scatter = q.view(store, run_id, x="rouge_l", y="judge_overall")["scatter"]
    assert set(scatter["method"]) == {"basic_search", "local_search"} and len(scatter) == 206
