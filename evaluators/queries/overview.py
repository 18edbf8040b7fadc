"""Overview queries: every metric's mean per method (and question type) with its 95% CI and n,
and the label counts (pass/partial/fail, CORRECT/WRONG/DON'T KNOW, grades A-E).

Aggregation runs in DuckDB (one pass over the run's cells), so a screen stays fast at 50,000
samples x 30 metrics. The interval is Student's t on the scored cells, mean +- t(n-1) sd / sqrt(n):
from these aggregates it needs no second pass, and for the sample sizes of an evaluation it is
within a few percent of the bootstrap that `evaluators.maths.stats.mean_ci` gives per metric.
"""
from __future__ import annotations

import pandas as pd

from evaluators.metrics.claims import ABSTAINS, ANSWER_CLAIMS_ONLY
from evaluators.metrics.registry import in_catalogue_order, label_metrics, lookup
from evaluators.queries import (ALL_TYPES, FAILED, NOT_APPLICABLE, OK, OWN, VIEWS, in_view, one_of,
                                question_types)
from evaluators.queries import system
from evaluators.queries.headline import HEADLINE, headline
from evaluators.maths.stats import t_half_widths
from evaluators.records.run_status import RunStatus
from evaluators.store import Store

DEFAULT_METRIC = HEADLINE[0]  # the by-type chart opens on the white paper's overall rating
LABEL_TABLES = ("verdict", "answer_class", "accuracy_grade")  # side by side, in this order
# A score whose judge replies (asked several times, run config `repeats`) disagree: a rating or a label flips.
REPLIES_DISAGREE = "list_unique(repeats) > 1"


def metric_means(store: Store, run_id: str, by_type: bool = False, confidence: float = 0.95) -> pd.DataFrame:
    """Per method x metric (x question type): mean, sd, CI and n of the scored cells, in the metric's
    own scale and in norm ([0, 1]); n_total counts every cell, failed and not applicable ones too."""
    return runs_metric_means(store, [run_id], by_type=by_type, confidence=confidence).drop(columns="run_id")


def runs_metric_means(store: Store, run_ids: list[str], *, metrics: list[str] | None = None, by_type: bool = False,
                      confidence: float = 0.95) -> pd.DataFrame:
    """`metric_means` of several runs (of `metrics` only, when given) in one scan, with a `run_id` column."""
    type_col = "coalesce(g.question_type, '')" if by_type else f"'{ALL_TYPES}'"
    # one run as an equality, which DuckDB prunes by (the Overview's query); several as a semi-join
    where, params = (["s.run_id = $run"], {"run": run_ids[0]}) if len(run_ids) == 1 else (
        ["s.run_id IN (SELECT unnest($runs))"], {"runs": list(run_ids)})
    params["abstains"] = ABSTAINS  # the cells an abstaining answer leaves out (metrics.claims)
    if metrics is not None:
        where.append("s.metric IN (SELECT unnest($metrics))")
        params["metrics"] = list(metrics)
    frame = store.cursor().execute(
        f"""
        SELECT s.method, s.metric, {type_col} AS question_type, any_value(s.judge) AS judge,
               avg(s.value) FILTER (s.status = {OK}) AS mean,
               avg(s.norm) FILTER (s.status = {OK}) AS mean_norm,
               stddev_samp(s.norm) FILTER (s.status = {OK}) AS sd_norm,
               count(*) FILTER (s.status = {OK}) AS n_scored,
               count(*) AS n_total,
               count(*) FILTER (s.status = {NOT_APPLICABLE}) AS n_not_applicable,
               count(*) FILTER (s.status = {NOT_APPLICABLE} AND starts_with(s.detail, $abstains)) AS n_abstains,
               count(*) FILTER (s.status IN {FAILED}) AS n_failed, s.run_id
        FROM scores s JOIN runs r USING (run_id)
        LEFT JOIN golden_items g ON g.dataset_id = r.golden_dataset_id AND g.question_id = s.question_id
        WHERE {' AND '.join(where)}
        GROUP BY ALL ORDER BY s.run_id, s.metric, question_type, s.method
        """, params).df()
    # The interval stays on the scale (a share of 0.02 has no negative lower bound): clipped in norm,
    # then mapped back to the metric's own scale.
    half = t_half_widths(frame["sd_norm"], frame["n_scored"], confidence)
    frame["ci_low_norm"] = (frame["mean_norm"] - half).clip(0.0, 1.0)
    frame["ci_high_norm"] = (frame["mean_norm"] + half).clip(0.0, 1.0)
    scales = frame["metric"].map(lambda m: lookup(m).range)
    frame["ci_low"] = [s.value(x) for s, x in zip(scales, frame["ci_low_norm"])]
    frame["ci_high"] = [s.value(x) for s, x in zip(scales, frame["ci_high_norm"])]
    return frame


def label_counts(store: Store, run_id: str, by_type: bool = False) -> pd.DataFrame:
    """Per method (x question type) and label metric: how many scored cells carry each label."""
    type_col = "coalesce(g.question_type, '')" if by_type else f"'{ALL_TYPES}'"
    frame = store.cursor().execute(
        f"""
        SELECT s.method, s.metric, {type_col} AS question_type, s.label,
               count(*) AS n
        FROM scores s JOIN runs r USING (run_id)
        LEFT JOIN golden_items g ON g.dataset_id = r.golden_dataset_id AND g.question_id = s.question_id
        WHERE s.run_id = ? AND s.status = {OK} AND s.label IS NOT NULL
        GROUP BY ALL ORDER BY ALL
        """, [run_id]).df()
    return frame


def label_table(counts: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One label metric's counts as method (x question type) rows and one column per label, in the
    labels' order, with the share of the first label (pass rate, share CORRECT, share A)."""
    labels = label_metrics()[metric]
    rows = counts[counts["metric"] == metric]
    table = rows.pivot_table(index=["question_type", "method"], columns="label", values="n", aggfunc="sum",
                             fill_value=0)
    table = table.reindex(columns=list(labels), fill_value=0).astype(int)
    total = table.sum(axis=1)
    table[f"% {labels[0]}"] = (100 * table[labels[0]] / total.where(total > 0)).round(1)
    table["n"] = total
    return table.rename_axis(columns=None).reset_index()


def repeatability(store: Store, run_id: str) -> pd.DataFrame:
    """Per method x metric, over the samples whose judge was asked several times (the `repeats` of a
    score: each reply's own value): the replies per sample, the mean within-sample standard deviation
    of the value, and the share of samples whose replies disagree (a rating or a label that flips).
    Empty for a run asked once per sample."""
    return store.cursor().execute(
        f"""
        SELECT method, metric, max(len(repeats)) AS replies, count(*) AS samples,
               avg(list_stddev_samp(repeats)) AS mean_sd,
               avg(CASE WHEN {REPLIES_DISAGREE} THEN 1.0 ELSE 0.0 END) AS share_disagreeing
        FROM scores
        WHERE run_id = ? AND status = {OK} AND len(repeats) > 1
        GROUP BY ALL ORDER BY metric, method
        """, [run_id]).df()


# What a run is doing, or why it stopped, in the words of the Overview's notice (this run ...).
STATES = {RunStatus.FINISHED: "finished", RunStatus.QUEUED: "is waiting to be computed",
          RunStatus.RUNNING: "is being computed", RunStatus.CANCELLED: "was cancelled",
          RunStatus.INTERRUPTED: "was interrupted", RunStatus.FAILED: "failed",
          RunStatus.BUDGET_REACHED: "stopped when its judge calls reached its budget"}


PROGRESS_COLUMNS = ["status", "unfinished", "state", "samples", "samples scored", "cells", "cells stored"]


def progress(store: Store, run_id: str) -> pd.DataFrame:
    """How much of the run is scored, one row: its `status`, `unfinished` (True but for a finished run: every number of the run
    is then over the cells scored so far), the `state` in words, its samples (question x
    method) and those `samples scored` (every metric's cell stored), its `cells` (samples x metrics) and the
    `cells stored` (ok, not applicable or failed: a failed cell is stored, a missing one was never computed). Empty
    while nothing of the run is scored."""
    rows = store.cursor().execute(
        """
        WITH per_sample AS (SELECT question_id, method, count(*) AS n FROM scores WHERE run_id = $run GROUP BY ALL)
        SELECT r.status, coalesce(r.n_samples, 0) AS samples, len(r.metrics) AS metrics,
               (SELECT count(*) FROM per_sample WHERE n >= len(r.metrics)) AS samples_scored,
               (SELECT coalesce(sum(n), 0) FROM per_sample) AS cells_stored
        FROM runs r WHERE r.run_id = $run
        """, {"run": run_id}).fetchall()
    if not rows:
        raise ValueError(f"unknown run {run_id!r}")
    status, samples, metrics, scored, stored = rows[0]
    if not stored:  # nothing scored: the screen shows no numbers to call partial, and says so itself
        return pd.DataFrame(columns=PROGRESS_COLUMNS)
    cells = int(samples) * int(metrics)
    return pd.DataFrame([{
        "status": status, "unfinished": status != RunStatus.FINISHED,
        "state": STATES.get(status, f"has status {status}"),
        "samples": int(samples), "samples scored": int(scored), "cells": cells, "cells stored": int(stored)}])


def default_metric(metric_ids: list[str]) -> str | None:
    """The metric the by-question-type chart opens on: judge_overall when scored, else the first."""
    return DEFAULT_METRIC if DEFAULT_METRIC in metric_ids else next(iter(metric_ids), None)


def view(store: Store, run_id: str, *, question_type: str = ALL_TYPES, scale: str = OWN,
         metric: str | None = None, baseline: str | None = None,
         quality_metric: str | None = None, cost_axis: str | None = None) -> dict[str, pd.DataFrame]:
    """The Overview screen's tables, as shown: `progress` (how much of the run is scored: a run that is not finished
    shows a notice that its numbers are partial), the headline of all questions (`headline`: per method the primary
    scores with 95% CI and n; `findings`: the differences that hold, in sentences; `judge`, the offline judge's
    measured `agreement` with people and the judge's latest `calibration` against people; queries/headline.py), `metrics` (every metric per method: mean, 95% CI, n), `unscored` (why a
    metric's row has no mean: `unscored`), one table
    per label metric (`verdict`, `answer_class`, `accuracy_grade`: counts and share per method), `repeatability`
    (empty for a run asked once per sample), `by_question_type_chart` (the bars: mean and CI in the chosen
    scale) and `by_question_type` (the table under them, in the metric's own scale); then the RAG system's own latency
    and cost (queries/system.py, over all questions; empty when its answers carry none): `latency_cost` per method,
    `quality_cost` (the chart's points, the Pareto front marked) and `pareto` (in sentences).

    question_type: the questions counted: "All question types" or one of the run's types ("" for none)
    scale: how scores are shown: "own scale", "1-5 (white paper)" or "percent"
    metric: the metric per question type (default: judge_overall when the run has it, else the first)
    baseline: the method the headline compares the others with (default: the one rated best overall)
    quality_metric: the quality axis of the latency and cost chart (default: the first headline metric scored)
    cost_axis: the latency and cost chart's x: cost, median_latency or p95_latency (default: cost if recorded)
    """
    one_of(question_type, [ALL_TYPES, *question_types(store, run_id)], "question type")
    one_of(scale, VIEWS, "scale")
    means = metric_means(store, run_id, by_type=True)
    metric_ids = in_catalogue_order(means["metric"])
    metric = one_of(metric, metric_ids, "metric") if metric is not None else default_metric(metric_ids)
    everything = question_type == ALL_TYPES
    rows = metric_means(store, run_id) if everything else means[means["question_type"] == question_type]
    counts = label_counts(store, run_id, by_type=not everything)
    if not everything:
        counts = counts[counts["question_type"] == question_type]
    methods = sorted(rows["method"].unique())
    by_type = means[(means["metric"] == metric) & means["method"].isin(methods)].reset_index(drop=True)
    per_type = ["question_type", "method", "mean", "ci_low", "ci_high", "n_scored", "n_total"]
    if baseline is not None:
        one_of(baseline, sorted(means["method"].unique()), "baseline")
    top = headline(store, run_id, metric_means(store, run_id) if not everything else rows, baseline=baseline)
    return {
        "progress": progress(store, run_id),
        "headline": top["scores"], "findings": top["findings"], "judge": top["judge"], "agreement": top["agreement"],
        "calibration": top["calibration"],
        "metrics": _cell_table(rows, methods, scale),
        "unscored": unscored(store, run_id),
        **{m: _labels(counts, m) for m in LABEL_TABLES},
        "repeatability": repeatability(store, run_id).rename(columns={
            "replies": "replies per sample", "mean_sd": "mean SD within a sample",
            "share_disagreeing": "samples whose replies disagree"}),
        "by_question_type_chart": in_scale(by_type, scale)[per_type],
        "by_question_type": by_type[per_type].round(3),
        **system.tables(store, run_id, sorted(means["method"].unique()), metric_ids, quality_metric, cost_axis),
    }


def unscored(store: Store, run_id: str) -> pd.DataFrame:
    """The metrics of the run with no cell scored `ok` (e.g. a criterion with the offline judge: "needs an LLM
    judge"), each with its cells' commonest status and reason: metric, status, reason, n (cells) and the note a
    screen shows (why its row has no mean), in catalogue order."""
    frame = store.cursor().execute(
        f"""
        SELECT metric, mode(status) AS status, mode(detail) AS reason, count(*) AS n
        FROM scores WHERE run_id = ? GROUP BY metric HAVING count(*) FILTER (status = {OK}) = 0
        """, [run_id]).df()
    frame["note"] = [f"{m}: no cell scored, {n} {status}" + (f" ({reason})" if isinstance(reason, str) else "")
                     for m, n, status, reason in zip(frame["metric"], frame["n"], frame["status"], frame["reason"])]
    return frame.set_index("metric").loc[in_catalogue_order(frame["metric"])].reset_index()


def in_scale(frame: pd.DataFrame, scale: str) -> pd.DataFrame:
    """mean, ci_low and ci_high in the chosen scale (their norm twins projected, or as stored)."""
    return frame.assign(**{c: in_view(frame[f"{c}_norm"], frame[c], scale) for c in ("mean", "ci_low", "ci_high")})


def _cell_table(frame: pd.DataFrame, methods: list[str], scale: str) -> pd.DataFrame:
    """Metrics x methods: per method its mean, "95% CI" and "n" (scored/total) columns, family and scale first, the
    judge last, metrics in catalogue order. With a metric that scores the answer's own claims (faithfulness, ...), an
    "abstains" column per method on those rows: the answers that abstain, left out of their mean (not applicable), of
    all, so a mean over the answers that answered is read beside how many did not (issue 34)."""
    frame = in_scale(frame, scale)
    frame["ci"] = [f"[{lo:.2f}, {hi:.2f}]" if pd.notna(lo) else "" for lo, hi in zip(frame["ci_low"], frame["ci_high"])]
    frame["n"] = [f"{a}/{b}" for a, b in zip(frame["n_scored"], frame["n_total"])]
    abstentions = frame["metric"].isin(ANSWER_CLAIMS_ONLY).any()
    frame["abstains"] = [abstention_rate(a, b) if m in ANSWER_CLAIMS_ONLY else ""
                         for m, a, b in zip(frame["metric"], frame["n_abstains"], frame["n_total"])]
    wide = frame.pivot(index="metric", columns="method", values=["mean", "ci", "n", "abstains"])
    table = pd.DataFrame(index=wide.index)
    for m in methods:
        table[m] = wide[("mean", m)].astype(float).round(3)
        table[f"{m} 95% CI"] = wide[("ci", m)]
        table[f"{m} n"] = wide[("n", m)]
        if abstentions:
            table[f"{m} abstains"] = wide[("abstains", m)].fillna("")
    table = table.loc[in_catalogue_order(table.index)]
    table.insert(0, "scale", [lookup(m).scale for m in table.index])
    table.insert(0, "family", [lookup(m).family for m in table.index])
    table["judge"] = frame.groupby("metric")["judge"].first().reindex(table.index)
    return table


def abstention_rate(abstained: int, total: int) -> str:
    """How many answers abstain, as Overview shows it beside faithfulness: "5/20 (25%)"."""
    return f"{abstained}/{total} ({abstained / total:.0%})" if total else ""


def _labels(counts: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One label metric's table as shown: a row per method (empty when the run did not score it)."""
    table = label_table(counts, metric)
    return table if table.empty else table.drop(columns="question_type").set_index("method")
