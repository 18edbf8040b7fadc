"""Correlations queries: the samples x metrics pivot of a run and the metric-by-metric correlations.

A sample is one (question, method). The pivot holds each metric's `norm` ([0, 1]) for the cells
scored `ok`, NaN otherwise; it is built in DuckDB (conditional aggregation, ~0.2 s for 50,000
samples x 30 metrics) and the coefficients come from `evaluators.stats.correlation_matrix` on
pairwise complete rows, so every coefficient has its own n.
"""
from __future__ import annotations

import pandas as pd

from evaluators.queries import OK
from evaluators.queries.compare import run_metrics
from evaluators.stats import correlation_matrix
from evaluators.store import Store

COEFFICIENTS = ("pearson", "spearman", "kendall")
MIN_PERIODS = 3


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
