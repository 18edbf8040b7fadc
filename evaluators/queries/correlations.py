"""Correlations queries: the samples x metrics pivot of a run and the metric-by-metric correlations.

A sample is one (question, method). The pivot holds each metric's `norm` ([0, 1]) for the cells
scored `ok`, NaN otherwise; it is built in DuckDB (conditional aggregation, ~0.2 s for 50,000
samples x 30 metrics) and the coefficients come from `evaluators.maths.stats.correlation_matrix` on
pairwise complete rows, so every coefficient has its own n.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from evaluators.queries import OK, one_of
from evaluators.queries.compare import family_metrics, run_methods, run_metrics
from evaluators.queries.remember import remembered
from evaluators.maths.stats import correlation_matrix
from evaluators.store import Store

COEFFICIENTS = ("pearson", "spearman", "kendall")
MIN_PERIODS = 3
ALL_METHODS = "All methods pooled"
SCATTER_POINTS = 3000  # a fixed random sample above this
TABLES = ("matrix", "n", "pairs", "scatter")


def metric_pivot(store: Store, run_id: str, *, method: str | None = None,
                 metrics: list[str] | None = None) -> pd.DataFrame:
    """Columns question_id, method, then one per metric (catalogue order): norm of the `ok` cells.
    `method` None pools every method of the run."""
    metrics = run_metrics(store, run_id) if metrics is None else list(metrics)
    params: dict[str, object] = {"run": run_id}
    # Positional aliases (c0, c1, ...): metric ids never go into the SQL text, only into parameters.
    columns = []
    for i, metric in enumerate(metrics):
        params[f"m{i}"] = metric
        columns.append(f"any_value(norm) FILTER (metric = $m{i}) AS c{i}")
    where = f"run_id = $run AND status = {OK} AND norm IS NOT NULL"
    if method is not None:
        where += " AND method = $method"
        params["method"] = method
    select = ", ".join(["question_id", "method", *columns])
    frame = store.cursor().execute(
        f"SELECT {select} FROM scores WHERE {where} GROUP BY question_id, method ORDER BY method, question_id",
        params).df()
    return frame.rename(columns={f"c{i}": m for i, m in enumerate(metrics)})


@remembered  # Kendall takes seconds at 50,000 samples: computed once per selection
def correlations(store: Store, run_id: str, *, coefficient: str = "pearson", method: str | None = None,
                 metrics: list[str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(coefficients, n), metrics x metrics: the chosen coefficient on pairwise complete samples,
    NaN when fewer than MIN_PERIODS samples have both metrics or one side is constant there."""
    if coefficient not in COEFFICIENTS:
        raise ValueError(f"coefficient must be one of {COEFFICIENTS}, got {coefficient!r}")
    pivot = metric_pivot(store, run_id, method=method, metrics=metrics)
    values = pivot.drop(columns=["question_id", "method"]).astype(float)
    return correlation_matrix(values, coefficient, min_periods=MIN_PERIODS)


def long_matrix(coefficients: pd.DataFrame, n: pd.DataFrame) -> pd.DataFrame:
    """The matrix as rows (metric_x, metric_y, coefficient, n), each unordered pair once, for export."""
    metrics = list(coefficients.index)
    rows = [(x, y, coefficients.loc[x, y], int(n.loc[x, y]))
            for i, x in enumerate(metrics) for y in metrics[i + 1:]]
    return pd.DataFrame(rows, columns=["metric_x", "metric_y", "coefficient", "n"])


NEAR_COPY = 0.99


def strongest_pair(coefficients: pd.DataFrame) -> tuple[str, str] | None:
    """The off-diagonal pair with the largest |coefficient| below NEAR_COPY (a scatter worth looking
    at first: metrics derived from each other, like wp_correctness and judge_correctness, give a
    plain diagonal); such a pair only when there is nothing else."""
    best, pair, exact = -1.0, None, None
    metrics = list(coefficients.index)
    for i, x in enumerate(metrics):
        for y in metrics[i + 1:]:
            r = coefficients.loc[x, y]
            if pd.isna(r):
                continue
            if abs(r) >= NEAR_COPY:
                exact = exact or (x, y)
            elif abs(r) > best:
                best, pair = abs(r), (x, y)
    return pair or exact


def default_pair(coefficients: pd.DataFrame) -> tuple[str, str]:
    """The pair a scatter opens on: the strongest below NEAR_COPY, else the first two metrics."""
    return strongest_pair(coefficients) or tuple(coefficients.index[:2])


def pair_points(store: Store, run_id: str, metric_x: str, metric_y: str, *, method: str | None = None,
                limit: int | None = None) -> pd.DataFrame:
    """One row per sample scored `ok` on both metrics: question_id, method, question_type, question,
    x, y (norm). With `limit`, a fixed pseudo-random subset of that size."""
    params: dict[str, object] = {"run": run_id, "mx": metric_x, "my": metric_y}
    golden = store.cursor().execute("SELECT golden_dataset_id FROM runs WHERE run_id = ?", [run_id]).fetchall()
    params["golden"] = golden[0][0] if golden else None
    method_filter = ""
    if method is not None:
        method_filter = "AND a.method = $method"
        params["method"] = method
    return store.cursor().execute(
        f"""
        SELECT a.question_id, a.method, coalesce(g.question_type, '') AS question_type, g.question,
               a.norm AS x, b.norm AS y
        FROM scores a
        JOIN scores b ON b.run_id = a.run_id AND b.question_id = a.question_id AND b.method = a.method
        LEFT JOIN golden_items g ON g.dataset_id = $golden AND g.question_id = a.question_id
        WHERE a.run_id = $run AND a.metric = $mx AND b.metric = $my AND a.status = {OK} AND b.status = {OK}
          AND a.norm IS NOT NULL AND b.norm IS NOT NULL {method_filter}
        ORDER BY {'hash(a.question_id, a.method), ' if limit is not None else ''}a.method, a.question_id
        {f'LIMIT {int(limit)}' if limit is not None else ''}
        """, params).df()


def view(store: Store, run_id: str, *, coefficient: str = "pearson", samples: str = ALL_METHODS,
         families: list[str] | None = None, x: str | None = None, y: str | None = None) -> dict[str, pd.DataFrame]:
    """The Correlations screen's tables, as shown: `matrix` (metric x metric coefficients on the norm values of
    the cells scored `ok`, pairwise complete; only metrics that vary; NaN: fewer than MIN_PERIODS samples), `n`
    (the samples behind each), `pairs` (the matrix's export: each pair once) and `scatter` (pair x, y sample by
    sample, in norm; a fixed random sample above SCATTER_POINTS; empty when x is y). Every table is empty when
    fewer than two of the metrics vary.

    coefficient: "pearson", "spearman" or "kendall"
    samples: whose samples: "All methods pooled" or one method's
    families: the metric families correlated (default: all of the run's)
    x: the scatter's x metric (default, and for a metric not in the matrix: the strongest pair's first)
    y: the scatter's y metric (default, and for a metric not in the matrix: the strongest pair's second)
    """
    one_of(coefficient, COEFFICIENTS, "coefficient")
    method = None if one_of(samples, [ALL_METHODS, *run_methods(store, run_id)], "samples") == ALL_METHODS else samples
    run_metric_ids = run_metrics(store, run_id)
    metrics = family_metrics(run_metric_ids, families)
    for axis, metric in (("x", x), ("y", y)):
        if metric is not None:
            one_of(metric, run_metric_ids, axis)
    if len(metrics) < 2:
        return {name: pd.DataFrame() for name in TABLES}
    coefficients, counts = correlations(store, run_id, coefficient=coefficient, method=method, metrics=metrics)
    # A metric with no coefficient at all (never scored, or constant: exact_match all 0) is left out.
    off_diagonal = coefficients.mask(np.eye(len(coefficients), dtype=bool))
    usable = [m for m in metrics if off_diagonal[m].notna().any()]
    if len(usable) < 2:
        return {name: pd.DataFrame() for name in TABLES}
    coefficients = coefficients.loc[usable, usable].rename_axis("metric")
    counts = counts.loc[usable, usable].rename_axis("metric")
    default = default_pair(coefficients)
    x, y = (x if x in usable else default[0]), (y if y in usable else default[1])
    scatter = pd.DataFrame() if x == y else pair_points(store, run_id, x, y, method=method, limit=SCATTER_POINTS)
    return {"matrix": coefficients, "n": counts, "pairs": long_matrix(coefficients, counts).round({"coefficient": 4}),
            "scatter": scatter.rename(columns={"x": x, "y": y})}
