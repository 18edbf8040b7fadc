"""The RAG system's own latency and cost beside its quality (issue 37), for Overview, Compare and the report.

`latency_cost`: per method, over the run's answers that carry them (each count is its own n): the median and p95
latency with distribution-free 95% intervals (order statistics, evaluators.maths.quantiles: latencies are skewed,
so no normal approximation), the mean cost per answer with a 95% interval (maths.stats.mean_ci: percentile
bootstrap, 2,000 resamples, seed 0, up to 5,000 answers; Student's t above), and the mean input / output tokens
per answer. A method whose answers carry none of them reads "not recorded". `quality_cost`: per method one point,
x one of AXES (the mean cost per answer, the median or the p95 latency: by default the cost, or the median latency
when no method of the chart has a cost), y a headline metric's mean with Overview's 95% interval (Student's t on
norm, clipped to the scale), and whether the point is on the Pareto front on that x (no other method as cheap and
as good, and better on one; by the point estimates); `pareto` says it in sentences. A method is a side (a method
of the run in view, or RUN_ID:METHOD of another run): its answers and scores are those of its own run.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from evaluators.maths.quantiles import pareto_front, quantile_ci
from evaluators.maths.stats import mean_ci, t_half_widths
from evaluators.metrics.registry import lookup
from evaluators.queries import OK
from evaluators.queries.hypotheses import HEADLINE
from evaluators.queries.sides import Side
from evaluators.store import Store

LATENCY_COST_COLUMNS = [
    "method", "answers", "n latency", "median latency ms", "median low", "median high", "p95 latency ms", "p95 low",
    "p95 high", "n cost", "mean cost USD", "cost low", "cost high", "cost interval", "n tokens",
    "input tokens per answer", "output tokens per answer", "recorded"]
QUALITY_COST_COLUMNS = ["method", "axis", "x", "x low", "x high", "metric", "quality", "quality low", "quality high",
                        "n quality", "on front", "beaten by"]
TABLES = ("latency_cost", "quality_cost", "pareto")  # what `tables` returns, in the screens' order
COST, LATENCY, P95 = "mean cost per answer (USD)", "median latency (ms)", "p95 latency (ms)"


class Axis(NamedTuple):
    """An x the chart can have: its title, its columns in `latency_cost` and its words in the sentences."""
    title: str
    x: str
    low: str
    high: str
    what: str  # "no {what} recorded", "{what} against {metric}"
    more: str  # a beaten method's x is larger
    same: str  # ... or the same


# The chart's x axes, by the name a screen's option gives (the first one recorded is the default).
AXES = {
    "cost": Axis(COST, "mean cost USD", "cost low", "cost high", "cost", "costs more", "costs as much"),
    "median_latency": Axis(LATENCY, "median latency ms", "median low", "median high", "latency", "is slower",
                           "is as fast"),
    "p95_latency": Axis(P95, "p95 latency ms", "p95 low", "p95 high", "p95 latency", "is slower at p95",
                        "is as fast at p95"),
}
NOT_RECORDED = "not recorded"
# The rule in words, for the screens' "How scores are computed" and the report.
HOW = ("Latency and cost of the RAG system: per method, over the answers that record them. Median and p95 latency "
       "with distribution-free 95% intervals: the sorted latencies' l-th and u-th values, l and u from the "
       "Binomial(n, q) distribution of how many fall below the true quantile (each tail at most 2.5%; a p95's upper "
       "bound needs 72 answers, a median's bounds 6). Mean cost per answer with a percentile-bootstrap 95% interval "
       "(2,000 resamples; Student's t above 5,000 answers). A cost the file does not give is the model's list price "
       "times the tokens when the model is listed, else unknown (never 0). The chart's Pareto front: the methods no "
       "other method beats on both axes, by the point estimates.")


def usage_rows(store: Store, run_id: str) -> pd.DataFrame:
    """The usage of every answer the run scored (its (question, method) pairs with a score cell), one row each."""
    return store.cursor().execute(
        """
        SELECT o.method, o.question_id, o.latency_ms, o.input_tokens, o.output_tokens, o.cost_usd
        FROM runs r
        JOIN rag_outputs o ON list_contains(r.outputs_dataset_ids, o.dataset_id)
        JOIN (SELECT DISTINCT question_id, method FROM scores WHERE run_id = $run) k USING (question_id, method)
        WHERE r.run_id = $run ORDER BY o.method, o.question_id
        """, {"run": run_id}).df()


def latency_cost(rows: pd.DataFrame, methods: list[str]) -> pd.DataFrame:
    """Per method of `methods`, the latency, cost and tokens of its answers in `rows` (module docstring); empty
    when no answer of these methods carries any of them."""
    usage = rows[rows["method"].isin(methods)]
    if usage[["latency_ms", "cost_usd", "input_tokens", "output_tokens"]].isna().all().all():
        return pd.DataFrame(columns=LATENCY_COST_COLUMNS)
    return pd.DataFrame([_method_row(method, usage[usage["method"] == method]) for method in methods],
                        columns=LATENCY_COST_COLUMNS)


def _method_row(method: str, part: pd.DataFrame) -> dict:
    latency = part["latency_ms"].dropna().to_numpy(dtype=float)
    median, p95 = quantile_ci(latency, 0.5), quantile_ci(latency, 0.95)
    cost = mean_ci(np.sort(part["cost_usd"].dropna().to_numpy(dtype=float)))  # sorted: resamples of one set agree
    tokens = part[["input_tokens", "output_tokens"]].dropna()
    counts = {"latency": len(latency), "cost": cost.n, "tokens": len(tokens)}
    recorded = [f"{what} of {n}/{len(part)}" for what, n in counts.items() if n]
    return {"method": method, "answers": len(part), "n latency": len(latency), "median latency ms": median.estimate,
            "median low": median.low, "median high": median.high, "p95 latency ms": p95.estimate,
            "p95 low": p95.low, "p95 high": p95.high, "n cost": cost.n, "mean cost USD": cost.mean,
            "cost low": cost.low, "cost high": cost.high, "cost interval": cost.method, "n tokens": len(tokens),
            "input tokens per answer": tokens["input_tokens"].mean() if len(tokens) else None,
            "output tokens per answer": tokens["output_tokens"].mean() if len(tokens) else None,
            "recorded": ", ".join(recorded) if recorded else NOT_RECORDED}


def metric_options(metric_ids) -> list[str]:
    """The metrics the quality axis can show: the run's headline metrics with a direction, in the headline's order."""
    return [m for m in HEADLINE if m in set(metric_ids) and lookup(m).direction]


def quality(store: Store, run_id: str, metric: str) -> pd.DataFrame:
    """Per method, `metric`'s mean over its scored cells with Overview's interval (queries.overview.metric_means:
    Student's t on norm, clipped to [0, 1], mapped back to the metric's own scale)."""
    frame = store.cursor().execute(
        f"""
        SELECT method, avg(value) AS mean, avg(norm) AS mean_norm, stddev_samp(norm) AS sd_norm, count(*) AS n
        FROM scores WHERE run_id = $run AND metric = $metric AND status = {OK} GROUP BY method ORDER BY method
        """, {"run": run_id, "metric": metric}).df()
    half, scale = t_half_widths(frame["sd_norm"], frame["n"]), lookup(metric).range
    frame["low"] = [scale.value(x) for x in (frame["mean_norm"] - half).clip(0.0, 1.0)]
    frame["high"] = [scale.value(x) for x in (frame["mean_norm"] + half).clip(0.0, 1.0)]
    return frame[["method", "mean", "low", "high", "n"]]


def axis_options(table: pd.DataFrame) -> list[str]:
    """The AXES a `latency_cost` table can put on the chart's x (those its methods record), the default first."""
    return [name for name, axis in AXES.items() if axis.x in table and table[axis.x].notna().any()]


def quality_cost(table: pd.DataFrame, scores: pd.DataFrame, metric: str, axis: str | None = None
                 ) -> tuple[pd.DataFrame, list[str]]:
    """The chart's points (a `latency_cost` table against a `quality` table of `metric`, x the AXES named `axis`)
    and its sentences: who is on the Pareto front, and for every other method one that beats it on both axes;
    methods that cannot be placed (no x or no score) are named too. axis: None or one these methods do not record
    is the first of `axis_options` (that it is not recorded is said)."""
    if table.empty:
        return pd.DataFrame(columns=QUALITY_COST_COLUMNS), []
    options = axis_options(table)
    on = AXES[axis if axis in options else next(iter(options), "median_latency")]
    said = [] if axis in (None, *options) else [
        f"{AXES[axis].what} is not recorded for these methods: the chart's x is the {on.title}"]
    merged = table.merge(scores, on="method", how="left")
    placed = merged[merged[on.x].notna() & merged["mean"].notna()].reset_index(drop=True)
    direction = lookup(metric).direction
    beaten = pareto_front(placed[on.x].astype(float).tolist(), (direction * placed["mean"].astype(float)).tolist())
    points = pd.DataFrame({
        "method": placed["method"], "axis": on.title, "x": placed[on.x].astype(float),
        "x low": placed[on.low].astype(float), "x high": placed[on.high].astype(float), "metric": metric,
        "quality": placed["mean"].astype(float), "quality low": placed["low"].astype(float),
        "quality high": placed["high"].astype(float), "n quality": placed["n"].astype(int),
        "on front": [b is None for b in beaten],
        "beaten by": [None if b is None else placed["method"][b] for b in beaten]}, columns=QUALITY_COST_COLUMNS)
    left_out = [m for m in table["method"] if m not in set(points["method"])]
    return points, said + _sentences(points, on, metric, sorted(left_out))


def _sentences(points: pd.DataFrame, axis: Axis, metric: str, left_out: list[str]) -> list[str]:
    said = []
    front = points.loc[points["on front"], "method"].tolist()
    if front:
        said.append(f"{_listed(front)} {'is' if len(front) == 1 else 'are'} on the front "
                    f"({axis.what} against {metric}, by the point estimates)")
    by_method = points.set_index("method")
    beaten = points[~points["on front"]]
    for method, x, score, winner in zip(beaten["method"], beaten["x"], beaten["quality"], beaten["beaten by"]):
        other = by_method.loc[winner]
        x_words = axis.more if x > other["x"] else axis.same
        y_words = f"scores worse on {metric}" if score != other["quality"] else f"scores the same on {metric}"
        said.append(f"{method} {x_words} and {y_words} than {winner}")
    for method in left_out:
        said.append(f"{method} is not on the chart: no {axis.what} or no {metric} score recorded")
    return said


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _of_sides(store: Store, run_id: str, sides: list[Side], read) -> pd.DataFrame:
    """`read(store, run)` (a frame with a `method` column) of each side's own run, the rows of the side's method,
    the method named by the side's label (RUN_ID:METHOD for another run's)."""
    parts = []
    for run in dict.fromkeys(s.run_id for s in sides):
        names = {s.method: s.label(run_id) for s in sides if s.run_id == run}
        frame = read(store, run)
        parts.append(frame[frame["method"].isin(names)].assign(method=lambda f: f["method"].map(names)))
    return pd.concat(parts or [read(store, run_id).iloc[:0]], ignore_index=True)  # no side: no rows


def tables(store: Store, run_id: str, methods: list[str | Side], metric_ids, metric: str | None = None,
           axis: str | None = None) -> dict[str, pd.DataFrame]:
    """`latency_cost`, `quality_cost` and `pareto` (one sentence a row) for `methods` (methods of the run, or Sides:
    each side's answers and scores from its own run, named by its label); all empty when none of their answers
    carries latency, tokens or cost. metric: the quality axis (default: the first headline metric scored; one of
    `metric_options` of `metric_ids`); axis: the x axis, a name of AXES (default: the first of `axis_options`)."""
    options = metric_options(metric_ids)
    if metric is not None and metric not in options:
        raise ValueError(f"unknown quality metric {metric!r}; choose one of: {', '.join(options) or 'none scored'}")
    if axis is not None and axis not in AXES:
        raise ValueError(f"unknown cost axis {axis!r}; choose one of: {', '.join(AXES)}")
    sides = [Side(run_id, m) if isinstance(m, str) else m for m in methods]
    labels = [s.label(run_id) for s in sides]
    table = latency_cost(_of_sides(store, run_id, sides, usage_rows), labels)
    metric = metric or next(iter(options), None)
    if table.empty or metric is None:
        points, said = quality_cost(pd.DataFrame(columns=LATENCY_COST_COLUMNS), pd.DataFrame(), "")
    else:
        points, said = quality_cost(table, _of_sides(store, run_id, sides, lambda s, run: quality(s, run, metric)),
                                    metric, axis)
    shown = table.astype({c: float for c in LATENCY_COST_COLUMNS if c.endswith(("ms", "low", "high", "USD"))
                          or "per answer" in c})
    return {"latency_cost": shown, "quality_cost": points, "pareto": pd.DataFrame({"sentence": said}, dtype=object)}
