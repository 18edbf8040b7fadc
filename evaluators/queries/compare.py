"""Compare queries: method A against a baseline B on the same questions.

The pairing (one row per question x metric with both methods' scores, both cells `ok`) is done in
DuckDB as a self-join of `scores`, filtered before any row reaches pandas; the per-metric statistics
come from `evaluators.stats` (paired_comparison, holm). A "win" is always "better for A": for a
metric where lower is better (hallucination_rate) a lower score wins; for a metric with no
direction (dont_know) there are no wins or losses, only the difference.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from evaluators.metrics import REGISTRY
from evaluators.metrics.registry import in_catalogue_order, lookup
from evaluators.queries import OK
from evaluators.stats import holm, paired_comparison
from evaluators.store import Store

# Default pair of the GraphRAG demo: the method under study first, the baseline second.
PREFERRED = ("local_search", "basic_search")
# Scores computed by float arithmetic may differ in the last bits: those are ties, not wins.
TIE_TOLERANCE = 1e-9
ALPHA = 0.05
ORDERS = ("question", "gap", "sample")


def run_methods(store: Store, run_id: str) -> list[str]:
    """The methods that have score cells in the run, alphabetically."""
    rows = store.cursor().execute(
        "SELECT DISTINCT method FROM scores WHERE run_id = ? ORDER BY method", [run_id]).fetchall()
    return [m for (m,) in rows]


def run_metrics(store: Store, run_id: str) -> list[str]:
    """The metrics that have score cells in the run, in catalogue order (unknown ids last)."""
    rows = store.cursor().execute("SELECT DISTINCT metric FROM scores WHERE run_id = ?", [run_id]).fetchall()
    return in_catalogue_order(m for (m,) in rows)


def scores_version(store: Store, run_id: str) -> tuple:
    """Changes whenever the run's cells change (a resumed or retried run): a cache key for the pages."""
    return tuple(store.cursor().execute(
        "SELECT count(*), max(created_at) FROM scores WHERE run_id = ?", [run_id]).fetchall()[0])


def default_methods(methods: list[str]) -> tuple[list[str], str | None]:
    """(methods to compare, baseline): local_search vs basic_search when present, else the first
    two; the baseline is basic_search when chosen, else the last chosen method."""
    chosen = [m for m in PREFERRED if m in methods]
    chosen += [m for m in methods if m not in chosen][: max(0, 2 - len(chosen))]
    if len(chosen) < 2:
        return chosen, None
    return chosen, chosen[-1]


def _golden_dataset(store: Store, run_id: str) -> str | None:
    # Passed to the joins as a constant: a scalar sub-query there stops DuckDB pushing the filter
    # down (measured 0.9 s against 0.15 s at 25,000 questions x 30 metrics).
    rows = store.cursor().execute("SELECT golden_dataset_id FROM runs WHERE run_id = ?", [run_id]).fetchall()
    return rows[0][0] if rows else None


def paired_scores(store: Store, run_id: str, method_a: str, method_b: str, *, metrics: list[str] | None = None,
                  question_type: str | None = None, question_ids: list[str] | None = None,
                  with_text: bool = True, order: str = "question", limit: int | None = None) -> pd.DataFrame:
    """One row per (question, metric) scored `ok` for both methods: question_id, question_type,
    question (with_text), metric, value_a, value_b (own scale), norm_a, norm_b, delta = value_a -
    value_b and delta_norm = norm_a - norm_b.

    order: "question" (question id, metric), "gap" (largest |delta_norm| first, for disagreement
    lists) or "sample" (a fixed pseudo-random order, so `limit` gives a reproducible subset).
    question_type "" selects questions without a type.
    """
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    params: dict[str, object] = {"run": run_id, "a": method_a, "b": method_b}
    where = ["a.run_id = $run", "a.method = $a", "b.method = $b", f"a.status = {OK}", f"b.status = {OK}",
             "a.value IS NOT NULL", "b.value IS NOT NULL"]
    if metrics is not None:
        where.append(_in_list("a.metric", "m", metrics, params))
    if question_ids is not None:
        where.append(_in_list("a.question_id", "q", question_ids, params))
    join_golden = with_text or question_type is not None
    if question_type is not None:
        where.append("coalesce(g.question_type, '') = $type")
        params["type"] = question_type
    text_cols = "coalesce(g.question_type, '') AS question_type, g.question," if with_text else ""
    golden = ""
    if join_golden:
        golden = "LEFT JOIN golden_items g ON g.dataset_id = $golden AND g.question_id = a.question_id"
        params["golden"] = _golden_dataset(store, run_id)
    order_by = {"question": "a.question_id, a.metric",
                "gap": "abs(a.norm - b.norm) DESC, a.question_id, a.metric",
                "sample": "hash(a.question_id, a.metric), a.question_id, a.metric"}[order]
    sql = f"""
        SELECT a.question_id, {text_cols} a.metric,
               a.value AS value_a, b.value AS value_b, a.norm AS norm_a, b.norm AS norm_b,
               a.value - b.value AS delta, a.norm - b.norm AS delta_norm
        FROM scores a
        JOIN scores b ON b.run_id = a.run_id AND b.question_id = a.question_id AND b.metric = a.metric
        {golden}
        WHERE {' AND '.join(where)}
        ORDER BY {order_by}
        {f'LIMIT {int(limit)}' if limit is not None else ''}
    """
    return store.cursor().execute(sql, params).df()


def _in_list(column: str, prefix: str, values: list[str], params: dict[str, object]) -> str:
    """`column IN ($m0, $m1, ...)` with the values as parameters (never spliced into the SQL)."""
    if not values:
        return "false"
    names = [f"{prefix}{i}" for i in range(len(values))]
    params.update(zip(names, values))
    return f"{column} IN ({', '.join('$' + n for n in names)})"


COMPARISON_COLUMNS = [
    "method", "baseline", "metric", "family", "scale", "higher_is_better", "n", "mean_a", "mean_b",
    "delta", "ci_low", "ci_high", "p_value", "p_holm", "significant", "wins", "ties", "losses", "better",
    "test", "ci_method", "mean_a_norm", "mean_b_norm", "delta_norm", "ci_low_norm", "ci_high_norm",
]


def comparison_table(store: Store, run_id: str, baseline: str, methods: list[str], *,
                     metrics: list[str] | None = None, question_type: str | None = None) -> pd.DataFrame:
    """Per (method, metric): each method against `baseline` on the questions both scored `ok`.

    n pairs; means of both sides over those pairs; delta = mean(A - B) with its 95% interval and a
    two-sided paired test (evaluators.stats.paired_comparison); p_holm adjusts the p-values of all
    rows together (Holm); wins / ties / losses count questions better for A / equal / better for
    B (None when the metric has no direction). Own-scale numbers, plus their `_norm` twins in
    [0, 1] units for ranking across scales. Rows: significant (p_holm < 0.05) first, then by
    |delta_norm|, largest first; metrics with no pair at all are left out.
    """
    rows = []
    for method in methods:
        if method == baseline:
            continue
        pairs = _value_pairs(store, run_id, method, baseline, metrics=metrics, question_type=question_type)
        for metric, part in pairs.groupby("metric", sort=False):
            rows.append(_compare_metric(method, baseline, str(metric), part["value_a"].to_numpy(),
                                        part["value_b"].to_numpy()))
    table = pd.DataFrame(rows, columns=COMPARISON_COLUMNS)
    if table.empty:
        return table
    table["p_holm"] = holm(table["p_value"].tolist())
    table["significant"] = table["p_holm"].lt(ALPHA)
    for col in ("wins", "ties", "losses"):
        table[col] = table[col].astype("Int64")
    catalogue = {m: i for i, m in enumerate(REGISTRY)}
    table["_rank"] = table["metric"].map(catalogue).fillna(len(catalogue))
    table["_gap"] = table["delta_norm"].abs()
    table = table.sort_values(["significant", "_gap", "_rank", "method"], ascending=[False, False, True, True],
                              na_position="last", kind="stable")
    return table.drop(columns=["_rank", "_gap"]).reset_index(drop=True)


def _value_pairs(store: Store, run_id: str, method_a: str, method_b: str, *, metrics: list[str] | None,
                 question_type: str | None) -> pd.DataFrame:
    """metric, value_a, value_b of every pair: paired_scores' rows without ids, text or order, which
    halves the time at 25,000 questions x 30 metrics (sorting 750,000 string keys was the cost)."""
    params: dict[str, object] = {"run": run_id, "a": method_a, "b": method_b}
    where = ["a.run_id = $run", "a.method = $a", "b.method = $b", f"a.status = {OK}", f"b.status = {OK}",
             "a.value IS NOT NULL", "b.value IS NOT NULL"]
    golden = ""
    if metrics is not None:
        where.append(_in_list("a.metric", "m", metrics, params))
    if question_type is not None:
        golden = "JOIN golden_items g ON g.dataset_id = $golden AND g.question_id = a.question_id"
        params["golden"] = _golden_dataset(store, run_id)
        where.append("coalesce(g.question_type, '') = $type")
        params["type"] = question_type
    return store.cursor().execute(
        f"""
        SELECT a.metric, a.value AS value_a, b.value AS value_b
        FROM scores a
        JOIN scores b ON b.run_id = a.run_id AND b.question_id = a.question_id AND b.metric = a.metric
        {golden}
        WHERE {' AND '.join(where)}
        """, params).df()


def _compare_metric(method: str, baseline: str, metric: str, a: np.ndarray, b: np.ndarray) -> dict:
    # The rows come in no set order (a parallel join) and the bootstrap's resamples depend on the order:
    # sorting the pairs by value makes the interval the same on every rerun without sorting in SQL.
    order = np.lexsort((b, a))
    c = paired_comparison(a[order], b[order], tie_tolerance=TIE_TOLERANCE)
    m = lookup(metric)
    sign = m.direction
    wins, losses = (c.wins, c.losses) if sign >= 0 else (c.losses, c.wins)
    better = None
    if sign and c.mean_diff is not None:
        advantage = sign * c.mean_diff
        better = method if advantage > TIE_TOLERANCE else baseline if advantage < -TIE_TOLERANCE else "tie"

    def norm(x: float | None) -> float | None:
        return None if x is None else m.range.norm(x)

    def norm_difference(x: float | None) -> float | None:
        return None if x is None else x / m.range.width

    return {
        "method": method, "baseline": baseline, "metric": metric,
        "family": m.family, "scale": m.scale, "higher_is_better": m.higher_is_better,
        "n": c.n, "mean_a": c.mean_a, "mean_b": c.mean_b, "delta": c.mean_diff, "ci_low": c.low,
        "ci_high": c.high, "p_value": c.p_value, "p_holm": None, "significant": False,
        "wins": wins if sign else None, "ties": c.ties if sign else None, "losses": losses if sign else None,
        "better": better, "test": c.test, "ci_method": c.ci_method,
        "mean_a_norm": norm(c.mean_a), "mean_b_norm": norm(c.mean_b), "delta_norm": norm_difference(c.mean_diff),
        "ci_low_norm": norm_difference(c.low), "ci_high_norm": norm_difference(c.high),
    }


def type_deltas(store: Store, run_id: str, method_a: str, method_b: str, *,
                metrics: list[str] | None = None) -> pd.DataFrame:
    """Per question type x metric (aggregated in DuckDB): n pairs, both means, mean delta in the
    own scale and in norm units, and `advantage` = delta_norm oriented so that > 0 is better for A
    (NaN for metrics without a direction)."""
    params: dict[str, object] = {"run": run_id, "a": method_a, "b": method_b,
                                 "golden": _golden_dataset(store, run_id)}
    metric_filter = f"AND {_in_list('a.metric', 'm', metrics, params)}" if metrics is not None else ""
    frame = store.cursor().execute(
        f"""
        SELECT coalesce(g.question_type, '') AS question_type, a.metric, count(*) AS n,
               avg(a.value) AS mean_a, avg(b.value) AS mean_b,
               avg(a.value - b.value) AS delta, avg(a.norm - b.norm) AS delta_norm
        FROM scores a
        JOIN scores b ON b.run_id = a.run_id AND b.question_id = a.question_id AND b.metric = a.metric
        LEFT JOIN golden_items g ON g.dataset_id = $golden AND g.question_id = a.question_id
        WHERE a.run_id = $run AND a.method = $a AND b.method = $b AND a.status = {OK} AND b.status = {OK}
          AND a.value IS NOT NULL AND b.value IS NOT NULL {metric_filter}
        GROUP BY ALL ORDER BY question_type, a.metric
        """, params).df()
    signs = frame["metric"].map(lambda m: lookup(m).direction).replace(0, np.nan)
    frame["advantage"] = frame["delta_norm"] * signs
    return frame


# --------------------------------------------------------------------------------------------
# Selections (plotly points and dataframe rows, as st.plotly_chart / st.dataframe return them)
# Pure functions, so the drill-down is testable where AppTest cannot click.


def selected_point(points: list[dict] | None) -> list | None:
    """customdata of the first selected plotly point, or None when nothing is selected."""
    for point in points or []:
        data = point.get("customdata")
        if data is not None:
            return list(data) if isinstance(data, (list, tuple)) else [data]
    return None


def selected_question(points: list[dict] | None) -> str | None:
    """The question id a clicked point carries as customdata[0]."""
    data = selected_point(points)
    return None if not data or data[0] is None else str(data[0])


def selected_cell(points: list[dict] | None) -> tuple[str, str] | None:
    """(row key, column key) a clicked heatmap cell carries as customdata[0:2]."""
    data = selected_point(points)
    return None if not data or len(data) < 2 else (str(data[0]), str(data[1]))


def selected_row(frame: pd.DataFrame, rows: list[int] | None, column: str = "question_id") -> object | None:
    """`column` of the selected row (st.dataframe reports positions in the frame as shown)."""
    if not rows or frame.empty:
        return None
    position = rows[0]
    return frame[column].iloc[position] if 0 <= position < len(frame) else None
