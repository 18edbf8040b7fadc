"""queries.system: the RAG system's own latency and cost per method, checked against the stored answers, and its
quality against cost with the Pareto front; in Overview's view and its JSON twin."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from evaluators.maths.quantiles import quantile_ci
from evaluators.maths.stats import mean_ci
from evaluators.queries import compare, overview, system
from evaluators.store import close_store, open_store
from tests.helpers.cli_view import view
from tests.helpers.usage_run import N, PLAN, usage_run


@pytest.fixture
def run(tmp_path):
    db = tmp_path / "usage.duckdb"
    run_id = usage_run(db, tmp_path)
    yield open_store(db), run_id
    close_store(db)


def test_latency_and_cost_per_method_are_those_of_the_stored_answers(run):
    store, run_id = run
    table = system.tables(store, run_id, sorted(PLAN), ["faithfulness"])["latency_cost"].set_index("method")
    rows = store.cursor().execute("SELECT method, latency_ms, cost_usd FROM rag_outputs").df()
    for method in PLAN:
        latency, cost = rows.loc[rows["method"] == method, "latency_ms"], rows.loc[rows["method"] == method, "cost_usd"]
        median, p95, mean = quantile_ci(latency, 0.5), quantile_ci(latency, 0.95), mean_ci(sorted(cost))
        got = table.loc[method]
        assert (got["answers"], got["n latency"], got["n cost"]) == (N, N, N)
        assert (got["median latency ms"], got["median low"], got["median high"]) == (median.estimate, median.low,
                                                                                     median.high)
        assert got["p95 latency ms"] == p95.estimate and np.isnan(got["p95 high"])  # 10 answers: no upper bound
        assert (got["mean cost USD"], got["cost low"], got["cost high"]) == pytest.approx((mean.mean, mean.low, mean.high))
        assert got["input tokens per answer"] == np.mean([1000 + i for i in range(N)])
    assert table.loc["basic_search", "median latency ms"] == np.median([300.0 + 5 * i for i in range(N)])


def test_quality_is_overviews_mean_and_interval_and_the_front_is_named(run):
    store, run_id = run
    tables = system.tables(store, run_id, sorted(PLAN), ["faithfulness"])
    points = tables["quality_cost"].set_index("method")
    means = overview.metric_means(store, run_id).set_index("method")
    for method in PLAN:
        assert points.loc[method, ["quality", "quality low", "quality high"]].tolist() == pytest.approx(
            means.loc[method, ["mean", "ci_low", "ci_high"]].tolist())
    assert points["axis"].unique().tolist() == [system.COST]
    assert points["on front"].to_dict() == {"basic_search": True, "llm_with_context": False, "local_search": True}
    assert tables["pareto"]["sentence"].tolist() == [
        "basic_search and local_search are on the front (cost against faithfulness, by the point estimates)",
        "llm_with_context costs more and scores worse on faithfulness than basic_search"]


def test_latency_is_the_axis_when_no_cost_is_recorded_and_a_method_without_usage_reads_not_recorded():
    rows = pd.DataFrame({"method": ["a"] * 3 + ["b"] * 3 + ["c"] * 2, "question_id": list("xyzxyzxy"),
                         "latency_ms": [100.0, 120, 110, 300, 320, 310, None, None],
                         "input_tokens": [None] * 8, "output_tokens": [None] * 8, "cost_usd": [None] * 8})
    table = system.latency_cost(rows, ["a", "b", "c"])
    assert table.set_index("method").loc["c", "recorded"] == system.NOT_RECORDED
    scores = pd.DataFrame({"method": ["a", "b", "c"], "mean": [0.5, 0.6, 0.9], "low": [0.4, 0.5, 0.8],
                           "high": [0.6, 0.7, 1.0], "n": [3, 3, 2]})
    points, said = system.quality_cost(table, scores, "faithfulness")
    assert points["axis"].unique().tolist() == [system.LATENCY] and points["on front"].all()
    assert said[-1] == "c is not on the chart: no latency or no faithfulness score recorded"
    assert system.latency_cost(rows.assign(latency_ms=None), ["a", "b"]).empty  # nothing recorded: no section


def test_a_run_without_usage_has_empty_tables_and_a_bad_quality_metric_is_refused(tmp_path):
    db = tmp_path / "plain.duckdb"
    run_id = usage_run(db, tmp_path, usage=False)
    try:
        tables = overview.view(open_store(db), run_id)
        assert all(tables[name].empty for name in system.TABLES)
        with pytest.raises(ValueError, match="unknown quality metric 'rouge_l'; choose one of: faithfulness"):
            overview.view(open_store(db), run_id, quality_metric="rouge_l")
    finally:
        close_store(db)


def test_view_overview_json_has_the_numbers(tmp_path):
    db = tmp_path / "usage.duckdb"
    run_id = usage_run(db, tmp_path)
    expected = overview.view(open_store(db), run_id)
    close_store(db)  # the CLI's process opens the file
    out = view(db, "overview", run_id, "--quality-metric", "faithfulness", "--json")
    assert out.returncode == 0, out.stderr
    printed = json.loads(out.stdout)
    for name in system.TABLES:
        assert len(printed[name]) == len(expected[name]), name
    rows = {r["method"]: r for r in printed["latency_cost"]}
    want = expected["latency_cost"].set_index("method")
    assert rows["local_search"]["median latency ms"] == want.loc["local_search", "median latency ms"]
    assert rows["local_search"]["p95 high"] is None  # a bound that does not exist is null, not 0
    assert rows["basic_search"]["mean cost USD"] == pytest.approx(want.loc["basic_search", "mean cost USD"])
    assert [r["sentence"] for r in printed["pareto"]] == expected["pareto"]["sentence"].tolist()


# -- Compare across runs: each side's answers from its own run ----------------------------------------------------

@pytest.fixture
def two_runs(tmp_path):
    """The usage run and another run of the same methods whose answers took twice as long and cost twice as much."""
    db = tmp_path / "usage.duckdb"
    run_id = usage_run(db, tmp_path)
    other = usage_run(db, tmp_path, spend=2.0)
    close_store(db)
    yield db, run_id, other
    close_store(db)


def test_compare_across_runs_shows_every_side_from_its_own_run(two_runs):
    db, run_id, other = two_runs
    theirs = f"{other}:basic_search"
    tables = compare.view(open_store(db), run_id, methods=["local_search", theirs], baseline=theirs)
    table = tables["latency_cost"].set_index("method")
    assert table.index.tolist() == ["local_search", theirs]
    latencies = [2.0 * PLAN["basic_search"][1](i) for i in range(N)]  # the other run's answers, not this run's
    assert table.loc[theirs, "median latency ms"] == quantile_ci(latencies, 0.5).estimate
    assert table.loc[theirs, "mean cost USD"] == pytest.approx(
        mean_ci(sorted(round(2.0 * 0.001 * (1 + i / 50), 6) for i in range(N))).mean)
    points = tables["quality_cost"].set_index("method")
    quality = overview.metric_means(open_store(db), other).set_index("method").loc["basic_search", "mean"]
    assert points.loc[theirs, ["x", "quality"]].tolist() == pytest.approx([table.loc[theirs, "mean cost USD"],
                                                                           quality])
    assert points["on front"].all()  # the other run's basic_search is cheaper, local_search better


def test_view_compare_json_has_the_other_runs_side_and_the_axis_asked(two_runs):
    db, run_id, other = two_runs
    theirs = f"{other}:basic_search"
    out = view(db, "compare", run_id, "--methods", f"local_search,{theirs}", "--baseline", theirs,
               "--cost-axis", "p95_latency", "--json")
    assert out.returncode == 0, out.stderr
    printed = json.loads(out.stdout)
    assert [r["method"] for r in printed["latency_cost"]] == ["local_search", theirs]
    p95 = {r["method"]: r["p95 latency ms"] for r in printed["latency_cost"]}
    assert {r["method"]: (r["axis"], r["x"]) for r in printed["quality_cost"]} == {
        m: (system.P95, x) for m, x in p95.items()}
    assert p95[theirs] == quantile_ci([2.0 * PLAN["basic_search"][1](i) for i in range(N)], 0.95).estimate


# -- the chart's x axis, chosen -------------------------------------------------------------------------------------

def test_the_front_is_recomputed_on_the_axis_chosen():
    """b is dearer than a and worse: beaten on cost; but faster at the median: on the front there."""
    rows = pd.DataFrame({"method": ["a"] * 3 + ["b"] * 3, "question_id": list("xyzxyz"),
                         "latency_ms": [100.0, 110, 400, 50, 60, 500], "input_tokens": [None] * 6,
                         "output_tokens": [None] * 6, "cost_usd": [0.001] * 3 + [0.002] * 3})
    table = system.latency_cost(rows, ["a", "b"])
    assert system.axis_options(table) == ["cost", "median_latency", "p95_latency"]
    scores = pd.DataFrame({"method": ["a", "b"], "mean": [0.6, 0.5], "low": [0.5, 0.4], "high": [0.7, 0.6],
                           "n": [3, 3]})
    on_cost, said = system.quality_cost(table, scores, "faithfulness")  # the default: cost
    assert on_cost.set_index("method")["on front"].to_dict() == {"a": True, "b": False}
    assert said[-1] == "b costs more and scores worse on faithfulness than a"
    on_median, said = system.quality_cost(table, scores, "faithfulness", "median_latency")
    assert on_median["x"].tolist() == [np.median([100, 110, 400]), np.median([50, 60, 500])]
    assert on_median["on front"].all()
    assert said == ["a and b are on the front (latency against faithfulness, by the point estimates)"]
    on_p95, said = system.quality_cost(table, scores, "faithfulness", "p95_latency")
    assert on_p95["x"].tolist() == table["p95 latency ms"].tolist() and on_p95["axis"].unique().tolist() == [system.P95]
    assert on_p95.set_index("method")["on front"].to_dict() == {"a": True, "b": False}  # b's slowest answer is slower
    assert said[-1] == "b is slower at p95 and scores worse on faithfulness than a"


def test_only_the_recorded_axes_are_offered_and_an_axis_not_recorded_is_said():
    rows = pd.DataFrame({"method": ["a", "a"], "question_id": ["x", "y"], "latency_ms": [None, None],
                         "input_tokens": [None, None], "output_tokens": [None, None], "cost_usd": [0.1, 0.2]})
    table = system.latency_cost(rows, ["a"])
    assert system.axis_options(table) == ["cost"]
    scores = pd.DataFrame({"method": ["a"], "mean": [0.6], "low": [0.5], "high": [0.7], "n": [2]})
    points, said = system.quality_cost(table, scores, "faithfulness", "p95_latency")
    assert points["axis"].tolist() == [system.COST]
    assert said[0] == "p95 latency is not recorded for these methods: the chart's x is the mean cost per answer (USD)"


def test_overviews_view_takes_the_axis_and_refuses_an_unknown_one(run):
    store, run_id = run
    tables = overview.view(store, run_id, cost_axis="median_latency")
    points, table = tables["quality_cost"].set_index("method"), tables["latency_cost"].set_index("method")
    assert points["axis"].unique().tolist() == [system.LATENCY]
    assert points["x"].to_dict() == table.loc[points.index, "median latency ms"].to_dict()
    with pytest.raises(ValueError, match="unknown cost axis 'speed'; choose one of: cost, median_latency, p95_latency"):
        overview.view(store, run_id, cost_axis="speed")
