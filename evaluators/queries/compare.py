"""Compare queries: method A against a baseline B on the same questions.

The pairing (one row per question x metric with both methods' scores, both cells `ok`) is done in
DuckDB as a self-join of `scores`, filtered before any row reaches pandas; the per-metric statistics
come from `evaluators.maths.stats` (paired_comparison, holm). A "win" is always "better for A": for a
metric where lower is better (hallucination_rate) a lower score wins; for a metric with no
direction (dont_know) there are no wins or losses, only the difference.
"""
from __future__ import annotations

import inspect

import numpy as np
import pandas as pd

from evaluators.metrics import REGISTRY
from evaluators.metrics.registry import SCALES, in_catalogue_order, lookup
from evaluators.queries import ALL_TYPES, OK, OWN, VIEWS, difference_in_view, in_view, one_of, question_types
from evaluators.queries import diagnosis, system, versions
from evaluators.queries.hypotheses import family_of, whole_families
from evaluators.maths.power import paired_mde
from evaluators.queries.remember import remembered
from evaluators.queries.sides import SEPARATOR, Side, default_methods, side
from evaluators.maths.stats import holm, paired_comparison
from evaluators.store import Store

# Scores computed by float arithmetic may differ in the last bits: those are ties, not wins.
TIE_TOLERANCE = 1e-9
ALPHA = 0.05
# An MDE above this share of a metric's range is "large": a difference that size or smaller may go unseen (the gate
# says so in its verdict, Compare beside its summary).
LARGE_MDE = 0.1
ORDERS = ("question", "gap", "sample")
NO_TYPE = "(no type)"  # how a question without a type is named on screen
SCATTER_POINTS = 3000  # a reproducible sample above this: a browser draws ~3,000 SVG points smoothly
DISAGREEMENTS = 200
CELL_QUESTIONS = 500
MAX_BOOTSTRAP_N = inspect.signature(paired_comparison).parameters["max_bootstrap_n"].default  # stats' own rule


def run_methods(store: Store, run_id: str) -> list[str]:
    """The methods that have score cells in the run, alphabetically."""
    rows = store.cursor().execute(
        "SELECT DISTINCT method FROM scores WHERE run_id = ? ORDER BY method", [run_id]).fetchall()
    return [m for (m,) in rows]


def run_metrics(store: Store, run_id: str) -> list[str]:
    """The metrics that have score cells in the run, in catalogue order (unknown ids last)."""
    rows = store.cursor().execute("SELECT DISTINCT metric FROM scores WHERE run_id = ?", [run_id]).fetchall()
    return in_catalogue_order(m for (m,) in rows)


def run_ids(store: Store) -> list[str]:
    return [r for (r,) in store.cursor().execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]


def sides(store: Store, run_id: str | None, texts) -> list[Side]:
    """`RUN_ID:METHOD` texts (or bare methods of the run in view) as sides; the run ids are read only when a
    text holds a colon, to tell a run's prefix from a method's own colon."""
    texts = list(texts)
    known = run_ids(store) if any(isinstance(t, str) and SEPARATOR in t for t in texts) else None
    return [side(t, run_id, known) for t in texts]


def comparable_runs(store: Store, run_id: str) -> pd.DataFrame:
    """The other runs with scores whose golden set shares question ids with this run's, those on the same golden
    set first, newest first: run_id, name, created_at, same_golden_set."""
    return store.cursor().execute(
        """
        SELECT r.run_id, r.name, r.created_at, r.golden_dataset_id = $golden AS same_golden_set
        FROM runs r
        WHERE r.run_id <> $run AND r.run_id IN (SELECT DISTINCT run_id FROM scores)
          AND (r.golden_dataset_id = $golden OR r.golden_dataset_id IN (
                SELECT DISTINCT b.dataset_id FROM golden_items a JOIN golden_items b USING (question_id)
                WHERE a.dataset_id = $golden))
        ORDER BY same_golden_set DESC, r.created_at DESC, r.run_id
        """, {"run": run_id, "golden": _golden_dataset(store, run_id)}).df()


def default_across(methods: list[str], other_run: str, other_methods: list[str]) -> tuple[list[str], str]:
    """(sides, baseline) of a comparison with another run: the screen's first default method of this run against
    the same method of the other run (else its first), the other run's side as the baseline."""
    mine = default_methods(methods)[0][0]
    theirs = f"{other_run}{SEPARATOR}{mine if mine in other_methods else other_methods[0]}"
    return [mine, theirs], theirs


def _golden_dataset(store: Store, run_id: str) -> str | None:
    # Passed to the joins as a constant: a scalar sub-query there stops DuckDB pushing the filter
    # down (measured 0.9 s against 0.15 s at 25,000 questions x 30 metrics).
    rows = store.cursor().execute("SELECT golden_dataset_id FROM runs WHERE run_id = ?", [run_id]).fetchall()
    return rows[0][0] if rows else None


def _pairing(store: Store, a: Side, b: Side, params: dict[str, object], golden: str | None = None
             ) -> tuple[str, list[str]]:
    """The FROM clause and WHERE conditions pairing side a's cells with side b's (aliases `a`, `b`): the same
    question id and metric, both `ok` with a value. Across two golden sets only the questions whose reference
    is the same in both are paired (`changed_references` lists the others), and a user's metric only where both
    runs have it at one version (`versions.not_compared` names the others). golden: "LEFT" or "" (inner) joins
    the baseline's golden items as `g` (the question's text and type), None joins none."""
    params.update({"run_a": a.run_id, "a": a.method, "run_b": b.run_id, "b": b.method})
    joins = ["FROM scores a", "JOIN scores b ON b.question_id = a.question_id AND b.metric = a.metric"]
    where = ["a.run_id = $run_a", "a.method = $a", "b.run_id = $run_b", "b.method = $b", f"a.status = {OK}",
             f"b.status = {OK}", "a.value IS NOT NULL", "b.value IS NOT NULL"]
    golden_a, golden_b = _golden_dataset(store, a.run_id), _golden_dataset(store, b.run_id)
    if golden is not None:
        joins.append(f"{golden} JOIN golden_items g ON g.dataset_id = $golden AND g.question_id = a.question_id")
        params["golden"] = golden_b
    if golden_a != golden_b:
        params.update(golden_a=golden_a, golden_b=golden_b)
        joins += ["JOIN golden_items ra ON ra.dataset_id = $golden_a AND ra.question_id = a.question_id",
                  "JOIN golden_items rb ON rb.dataset_id = $golden_b AND rb.question_id = a.question_id"]
        where.append("ra.reference = rb.reference")
    if changed := versions.changed(store, a.run_id, b.run_id):  # a user's metric at two versions: not paired
        where.append(f"NOT {_in_list('a.metric', 'changed', list(changed), params)}")
    return "\n".join(joins), where


def changed_references(store: Store, run_a: str, run_b: str, *, limit: int | None = None) -> pd.DataFrame:
    """The questions (same id) of both runs' golden sets whose reference differs, by id: question_id, question
    (run_b's), reference_a, reference_b. Comparisons of the two runs leave them out; empty for one golden set."""
    golden_a, golden_b = _golden_dataset(store, run_a), _golden_dataset(store, run_b)
    if golden_a == golden_b:
        return pd.DataFrame(columns=["question_id", "question", "reference_a", "reference_b"])
    return store.cursor().execute(
        f"""
        SELECT b.question_id, b.question, a.reference AS reference_a, b.reference AS reference_b
        FROM golden_items a JOIN golden_items b ON b.question_id = a.question_id
        WHERE a.dataset_id = $golden_a AND b.dataset_id = $golden_b AND a.reference <> b.reference
        ORDER BY b.question_id {f'LIMIT {int(limit)}' if limit is not None else ''}
        """, {"golden_a": golden_a, "golden_b": golden_b}).df()


def n_changed_references(store: Store, run_a: str, run_b: str) -> int:
    """How many questions `changed_references` finds: those left out when the two runs are compared."""
    golden_a, golden_b = _golden_dataset(store, run_a), _golden_dataset(store, run_b)
    if golden_a == golden_b:
        return 0
    return store.cursor().execute(
        """
        SELECT count(*) FROM golden_items a JOIN golden_items b ON b.question_id = a.question_id
        WHERE a.dataset_id = $golden_a AND b.dataset_id = $golden_b AND a.reference <> b.reference
        """, {"golden_a": golden_a, "golden_b": golden_b}).fetchall()[0][0]


def paired_scores(store: Store, run_id: str, method_a: str | Side, method_b: str | Side, *,
                  metrics: list[str] | None = None, question_type: str | None = None,
                  question_ids: list[str] | None = None, with_text: bool = True, order: str = "question",
                  limit: int | None = None) -> pd.DataFrame:
    """One row per (question, metric) scored `ok` for both sides: question_id, question_type,
    question (with_text), metric, value_a, value_b (own scale), norm_a, norm_b, delta = value_a -
    value_b and delta_norm = norm_a - norm_b. A side is a Side, `RUN_ID:METHOD` or a method of run_id;
    the text and type come from side B's golden set.

    order: "question" (question id, metric), "gap" (largest |delta_norm| first, for disagreement
    lists) or "sample" (a fixed pseudo-random order, so `limit` gives a reproducible subset).
    question_type "" selects questions without a type.
    """
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    a, b = sides(store, run_id, [method_a, method_b])
    params: dict[str, object] = {}
    join_golden = with_text or question_type is not None
    tables, where = _pairing(store, a, b, params, golden="LEFT" if join_golden else None)
    if metrics is not None:
        where.append(_in_list("a.metric", "m", metrics, params))
    if question_ids is not None:
        where.append(_in_list("a.question_id", "q", question_ids, params))
    if question_type is not None:
        where.append("coalesce(g.question_type, '') = $type")
        params["type"] = question_type
    text_cols = "coalesce(g.question_type, '') AS question_type, g.question," if with_text else ""
    order_by = {"question": "a.question_id, a.metric",
                "gap": "abs(a.norm - b.norm) DESC, a.question_id, a.metric",
                "sample": "hash(a.question_id, a.metric), a.question_id, a.metric"}[order]
    sql = f"""
        SELECT a.question_id, {text_cols} a.metric,
               a.value AS value_a, b.value AS value_b, a.norm AS norm_a, b.norm AS norm_b,
               a.value - b.value AS delta, a.norm - b.norm AS delta_norm
        {tables}
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
    "test", "ci_method", "mean_a_norm", "mean_b_norm", "delta_norm", "ci_low_norm", "ci_high_norm", "tests_family",
    "family_tests", "mde", "mde_norm",
]


def comparison_table(store: Store, run_id: str, baseline: str | Side, methods: list[str | Side], *,
                     metrics: list[str] | None = None, question_type: str | None = None,
                     max_bootstrap_n: int = MAX_BOOTSTRAP_N) -> pd.DataFrame:
    """Per (method, metric): each method against `baseline` on the questions both scored `ok`.

    A method or baseline is a side: a Side, `RUN_ID:METHOD` (any run on the same question ids) or a bare
    method of run_id (the run in view); the `method`, `baseline` and `better` columns name a side by its
    method in run_id, else by `RUN_ID:METHOD`. Across two golden sets, questions whose reference differs are
    left out (`n_changed_references` counts them). question_type filters on the baseline's golden set.

    n pairs; means of both sides over those pairs; delta = mean(A - B) with its 95% interval and a
    two-sided paired test (evaluators.maths.stats.paired_comparison); p_holm adjusts the p-values of each
    pair's declared family of tests together (Holm, evaluators.queries.hypotheses: the headline metrics are the
    primary family, every other metric the secondary one), computed over the whole family whichever `metrics`
    are asked, so a row's p_holm is the same on every screen; `tests_family` names the row's family and
    `family_tests` how many tests its correction counted; wins / ties / losses count questions better for A /
    equal / better for B (None when the metric has no direction); mde the minimum detectable effect of these pairs
    (evaluators.maths.power.paired_mde: the paired t-test's at ALPHA two-sided and 80% power from their observed
    spread; None below 2 pairs or with no spread). Own-scale numbers, plus their `_norm` twins in
    [0, 1] units for ranking across scales. Rows: significant (p_holm < 0.05) first, then by
    |delta_norm|, largest first; metrics with no pair at all are left out. max_bootstrap_n: the interval is
    bootstrapped up to this many pairs, a t-interval above (stats.paired_comparison; History lowers it, as it
    tests many steps at once).
    """
    baseline_side, *others = sides(store, run_id, [baseline, *methods])
    return _comparison_table(store, run_id, baseline_side, others, metrics=metrics, question_type=question_type,
                             max_bootstrap_n=max_bootstrap_n)


@remembered
def _comparison_table(store: Store, run_id: str, baseline: Side, methods: list[Side], *,
                      metrics: list[str] | None, question_type: str | None, max_bootstrap_n: int) -> pd.DataFrame:
    rows = []
    for method in methods:
        if method == baseline:
            continue
        # Every metric of each family the asked metrics belong to: the correction counts the whole family.
        pairs = _value_pairs(store, method, baseline, metrics=whole_families(metrics), question_type=question_type)
        for metric, part in pairs.groupby("metric", sort=False):
            rows.append(_compare_metric(method.label(run_id), baseline.label(run_id), str(metric),
                                        part["value_a"].to_numpy(), part["value_b"].to_numpy(), max_bootstrap_n))
    table = pd.DataFrame(rows, columns=COMPARISON_COLUMNS)
    if table.empty:
        return table
    table = _corrected(table)
    if metrics is not None:
        table = table[table["metric"].isin(metrics)]
        if table.empty:
            return table.reset_index(drop=True)
    for col in ("wins", "ties", "losses"):
        table[col] = table[col].astype("Int64")
    table[["mde", "mde_norm"]] = table[["mde", "mde_norm"]].astype(float)  # NaN where it cannot be said
    catalogue = {m: i for i, m in enumerate(REGISTRY)}
    table["_rank"] = table["metric"].map(catalogue).fillna(len(catalogue))
    table["_gap"] = table["delta_norm"].abs()
    table = table.sort_values(["significant", "_gap", "_rank", "method"], ascending=[False, False, True, True],
                              na_position="last", kind="stable")
    return table.drop(columns=["_rank", "_gap"]).reset_index(drop=True)


def _corrected(table: pd.DataFrame) -> pd.DataFrame:
    """p_holm, significant and the family columns: Holm within each pair's family of tests."""
    table = table.assign(tests_family=table["metric"].map(family_of))
    table["p_holm"], table["family_tests"] = None, 0
    for _, part in table.groupby(["method", "tests_family"], sort=False):
        table.loc[part.index, "p_holm"] = holm(part["p_value"].tolist())
        table.loc[part.index, "family_tests"] = int(part["p_value"].notna().sum())
    table["p_holm"] = table["p_holm"].astype(float)
    table["significant"] = table["p_holm"].lt(ALPHA)
    return table


def _value_pairs(store: Store, a: Side, b: Side, *, metrics: list[str] | None,
                 question_type: str | None) -> pd.DataFrame:
    """metric, value_a, value_b of every pair: paired_scores' rows without ids, text or order, which
    halves the time at 25,000 questions x 30 metrics (sorting 750,000 string keys was the cost)."""
    params: dict[str, object] = {}
    tables, where = _pairing(store, a, b, params, golden=None if question_type is None else "")
    if metrics is not None:
        where.append(_in_list("a.metric", "m", metrics, params))
    if question_type is not None:
        where.append("coalesce(g.question_type, '') = $type")
        params["type"] = question_type
    return store.cursor().execute(
        f"SELECT a.metric, a.value AS value_a, b.value AS value_b {tables} WHERE {' AND '.join(where)}", params).df()


def _compare_metric(method: str, baseline: str, metric: str, a: np.ndarray, b: np.ndarray,
                    max_bootstrap_n: int) -> dict:
    # The rows come in no set order (a parallel join) and the bootstrap's resamples depend on the order:
    # sorting the pairs by value makes the interval the same on every rerun without sorting in SQL.
    order = np.lexsort((b, a))
    c = paired_comparison(a[order], b[order], tie_tolerance=TIE_TOLERANCE, max_bootstrap_n=max_bootstrap_n)
    mde = paired_mde(a, b, ALPHA)
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
        "mde": mde, "mde_norm": norm_difference(mde),
    }


def type_deltas(store: Store, run_id: str, method_a: str | Side, method_b: str | Side, *,
                metrics: list[str] | None = None) -> pd.DataFrame:
    """Per question type (of side B's golden set) x metric (aggregated in DuckDB): n pairs, both means, mean
    delta in the own scale and in norm units, and `advantage` = delta_norm oriented so that > 0 is better for
    A (NaN for metrics without a direction). Sides as in comparison_table."""
    a, b = sides(store, run_id, [method_a, method_b])
    return _type_deltas(store, run_id, a, b, metrics=metrics)


@remembered
def _type_deltas(store: Store, run_id: str, a: Side, b: Side, *, metrics: list[str] | None) -> pd.DataFrame:
    params: dict[str, object] = {}
    tables, where = _pairing(store, a, b, params, golden="LEFT")
    if metrics is not None:
        where.append(_in_list("a.metric", "m", metrics, params))
    frame = store.cursor().execute(
        f"""
        SELECT coalesce(g.question_type, '') AS question_type, a.metric, count(*) AS n,
               avg(a.value) AS mean_a, avg(b.value) AS mean_b,
               avg(a.value - b.value) AS delta, avg(a.norm - b.norm) AS delta_norm
        {tables}
        WHERE {' AND '.join(where)}
        GROUP BY ALL ORDER BY question_type, a.metric
        """, params).df()
    signs = frame["metric"].map(lambda m: lookup(m).direction).replace(0, np.nan)
    frame["advantage"] = frame["delta_norm"] * signs
    return frame


# --------------------------------------------------------------------------------------------
# The Compare screen's tables

TABLES = ("summary", "metrics", "left_out", "not_compared", "heatmap", "by_question_type", "cell_questions",
          "scatter", "disagreements", "attribution", *system.TABLES)
LEFT_OUT = 500  # questions listed per method whose reference differs from the baseline's (all are counted)


def view(store: Store, run_id: str, *, methods: list[str] | None = None, baseline: str | None = None,
         question_type: str = ALL_TYPES, families: list[str] | None = None, scale: str = OWN,
         details_for: str | None = None, metric: str | None = None, cell_type: str | None = None,
         cell_metric: str | None = None, quality_metric: str | None = None,
         cost_axis: str | None = None) -> dict[str, pd.DataFrame]:
    """The Compare screen's tables, as shown: `summary` (per method, the metrics where it is significantly better
    or worse than the baseline, and how many questions were left out because their reference differs between
    the two runs' golden sets), `metrics` (per method and metric: the paired difference with its CI, tests,
    wins and means, in the chosen scale), `left_out` (those questions, both references; empty when every side
    shares the baseline's golden set), `not_compared` (the users' metrics, criteria and plug-ins', left out because
    a side's run has them at another version than the baseline's: the baseline's version, then the side's, and a
    note), for the pair in detail `heatmap` (per question type and metric: n, the difference in the chosen scale, both means, and `advantage`, the colour: > 0 better for A, in norm units)
    and `by_question_type` (its export), `cell_questions` (a heatmap cell's questions by gap; empty without
    one), `scatter` (the points per question: both scores in the chosen scale) `disagreements` (the
    largest gaps) and `attribution` (Diagnosis's sentences for the pair in detail: the questions each one loses
    that the other answers, by retrieval or generation; empty for a side of another run). Every table is empty
    when no question is scored `ok` by both methods. Then the RAG system's own latency and cost of the compared
    methods, each side's answers from its own run (queries/system.py; empty when their answers carry none):
    `latency_cost`, `quality_cost` (the chart's points, the Pareto front marked) and `pareto` (in sentences).

    A method is a method of the run in view or `RUN_ID:METHOD`, a method of another run on the same question ids
    (named so in the tables); question types, texts and the types offered come from the baseline's golden set.

    methods: the methods compared, each METHOD or RUN_ID:METHOD (default: local_search, basic_search, else the first 2)
    baseline: B, the method (or RUN_ID:METHOD) every other one is compared with (default: basic_search, else the last)
    question_type: the questions compared: "All question types" or one of the run's types ("" for none)
    families: the metric families compared (default: all of the run's)
    scale: how scores are shown: "own scale", "1-5 (white paper)" or "percent"
    details_for: the method whose pair with the baseline is shown in detail (default: the first other method)
    metric: the metric per question (default, and for a metric not compared here: the table's first row)
    cell_type: the question type of the heatmap cell whose questions are listed ("" for none; with cell_metric)
    cell_metric: the metric of the heatmap cell whose questions are listed (with cell_type)
    quality_metric: the quality axis of the latency and cost chart (default: the first headline metric scored)
    cost_axis: the latency and cost chart's x: cost, median_latency or p95_latency (default: cost if recorded)
    """
    known = run_methods(store, run_id)
    versions.know(store, run_id)
    if not known and methods is None:  # no scores yet
        return {name: pd.DataFrame() for name in TABLES}
    chosen, base = _methods(store, run_id, known, methods, baseline)
    # A side's label names it in the tables and is also a side text that reads back as the same side.
    others = [s.label(run_id) for s in chosen if s != base]
    baseline = base.label(run_id)
    details_for = others[0] if details_for is None else one_of(
        side(details_for, run_id, run_ids(store)).label(run_id), others, "details_for")
    types = question_types(store, base.run_id)
    type_filter = None if one_of(question_type, [ALL_TYPES, *types], "question type") == ALL_TYPES else question_type
    run_metric_ids = in_catalogue_order({m for r in {s.run_id for s in chosen} for m in run_metrics(store, r)})
    metrics = family_metrics(run_metric_ids, families)
    one_of(scale, VIEWS, "scale")
    if metric is not None:
        one_of(metric, run_metric_ids, "metric")
    if (cell_type is None) != (cell_metric is None):
        raise ValueError("a heatmap cell needs both cell_type and cell_metric")
    if cell_metric is not None:
        one_of(cell_metric, run_metric_ids, "cell_metric")
        one_of(cell_type, types, "cell_type")
    table = comparison_table(store, run_id, baseline, others, metrics=metrics, question_type=type_filter)
    left_out = {s.label(run_id): n_changed_references(store, s.run_id, base.run_id) for s in chosen if s != base}
    if table.empty:
        return {name: pd.DataFrame() for name in TABLES}
    compared = table.loc[table["method"] == details_for, "metric"].tolist()
    metric = metric if metric in compared else next(iter(compared), None)
    pair = (details_for, baseline)
    deltas = type_deltas(store, run_id, *pair, metrics=metrics)
    per_question = dict(metrics=[metric], question_type=type_filter)
    return {
        "summary": _summary(table, others, baseline, left_out),
        "metrics": _metric_rows(table, others, baseline, scale),
        "left_out": _left_out(store, run_id, [s for s in chosen if s != base], base),
        "not_compared": versions.not_compared(store, [(base.run_id, s.run_id) for s in chosen if s != base]),
        "heatmap": _heatmap(deltas, [t for t in types if t in set(deltas["question_type"])],
                            [m for m in compared if m in set(deltas["metric"])], scale, *pair),
        "by_question_type": deltas[["question_type", "metric", "n", "mean_a", "mean_b", "delta", "delta_norm"]].rename(
            columns={"mean_a": f"{details_for} mean", "mean_b": f"{baseline} mean"}).round(4),
        "cell_questions": pd.DataFrame() if cell_metric is None else _cell_questions(
            store, run_id, *pair, scale, cell_type, cell_metric),
        "scatter": _scatter(store, run_id, *pair, scale, **per_question),
        "disagreements": _questions(store, run_id, *pair, scale, **per_question, order="gap", limit=DISAGREEMENTS),
        "attribution": _attribution(store, run_id, [details_for, baseline]),
        **system.tables(store, run_id, chosen, run_metric_ids, quality_metric, cost_axis),
    }


def _attribution(store: Store, run_id: str, pair: list[str]) -> pd.DataFrame:
    """Diagnosis's sentences for the pair in detail (where each one loses: retrieval or generation), when both are
    methods of the run in view (a side of another run has its own attribution there)."""
    if any(SEPARATOR in m and side(m, run_id, run_ids(store)).run_id != run_id for m in pair):
        return pd.DataFrame(columns=diagnosis.SENTENCE_COLUMNS)
    return diagnosis.pair_sentences(store, run_id, pair)


def _methods(store: Store, run_id: str, known: list[str], methods: list[str] | None,
             baseline: str | None) -> tuple[list[Side], Side]:
    """The sides compared and the baseline: the chosen ones (methods of the run in view, `known`, or of another
    run), checked, or the screen's defaults."""
    chosen, default_baseline = default_methods(known)
    picked = [Side(run_id, m) for m in chosen] if methods is None else [
        _checked(store, run_id, known, s) for s in sides(store, run_id, methods)]
    if len(picked) < 2:
        raise ValueError(f"pick at least two methods to compare; the run has {', '.join(known)}")
    labels = [s.label(run_id) for s in picked]
    if baseline is None:
        return picked, Side(run_id, default_baseline) if default_baseline in labels else picked[-1]
    wanted = one_of(side(baseline, run_id, run_ids(store)).label(run_id), labels, "baseline")
    return picked, picked[labels.index(wanted)]


def _checked(store: Store, run_id: str, known: list[str], chosen: Side) -> Side:
    """A side whose run scored its method (`sides` reads a prefix that is no run as part of a method's name)."""
    if chosen.run_id == run_id:
        one_of(chosen.method, known, "method")
    else:
        one_of(chosen.method, run_methods(store, chosen.run_id), f"method of run {chosen.run_id}")
    return chosen


def _left_out(store: Store, run_id: str, others: list[Side], base: Side) -> pd.DataFrame:
    """Per method, the questions left out because their reference differs from the baseline's (LEFT_OUT at most)."""
    parts = [changed_references(store, s.run_id, base.run_id, limit=LEFT_OUT).assign(method=s.label(run_id))
             for s in others]
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    columns = {"method": "method", "question_id": "question_id", "question": "question",
               "reference_a": "method's reference", "reference_b": "baseline's reference"}
    return frame.reindex(columns=list(columns)).rename(columns=columns)


def metric_families(metric_ids: list[str]) -> list[str]:
    """The families of these metrics, in the metrics' order."""
    return list(dict.fromkeys(lookup(m).family for m in metric_ids))


def family_metrics(metric_ids: list[str], families: list[str] | None) -> list[str]:
    """The metrics of the chosen families (all when None), each family checked against those of the metrics."""
    known = metric_families(metric_ids)
    chosen = known if families is None else [one_of(f, known, "family") for f in families]
    return [m for m in metric_ids if lookup(m).family in chosen]


def type_name(question_type: str) -> str:
    return question_type if question_type else NO_TYPE


def scale_text(scale: str) -> str:
    return "label (0-1)" if scale == "label" else SCALES[scale].text


def _summary(table: pd.DataFrame, others: list[str], baseline: str, left_out: dict[str, int]) -> pd.DataFrame:
    """Per method: on how many metrics it is significantly better or worse than the baseline (Holm), and which;
    `cannot detect`: the metrics with a direction where it is neither, but whose MDE exceeds LARGE_MDE of the
    metric's range (metric -> MDE, own scale): "not significant" there says little; how many questions were left
    out because their reference differs between the two golden sets."""
    rows = []
    for method in others:
        part = table[table["method"] == method]
        better = part.loc[part["significant"] & (part["better"] == method), "metric"].tolist()
        worse = part.loc[part["significant"] & (part["better"] == baseline), "metric"].tolist()
        blind = part[~part["significant"] & part["higher_is_better"].notna()
                     & part["mde_norm"].astype(float).gt(LARGE_MDE)]
        rows.append({"method": method, "baseline": baseline, "metrics": len(part), "significantly better": len(better),
                     "significantly worse": len(worse), "better on": better, "worse on": worse,
                     "cannot detect": {m: round(float(v), 6) for m, v in zip(blind["metric"], blind["mde"])},
                     "left out (reference differs)": left_out.get(method, 0)})
    return pd.DataFrame(rows)


def _metric_rows(table: pd.DataFrame, others: list[str], baseline: str, scale: str) -> pd.DataFrame:
    """comparison_table as shown: the difference and its evidence first (TruLens hides them off-screen to the
    right), then the means; the method column only when several methods face the baseline."""
    one = len(others) == 1
    a_name = others[0] if one else "method"
    shown = pd.DataFrame({
        "method": table["method"],
        "metric": table["metric"],
        f"Δ {a_name} − {baseline}" if one else f"Δ vs {baseline}":
            difference_in_view(table["delta_norm"], table["delta"], scale).round(3),
        "95% CI": [f"[{lo:+.3f}, {hi:+.3f}]" if pd.notna(lo) else "n/a" for lo, hi in
                   zip(difference_in_view(table["ci_low_norm"], table["ci_low"], scale),
                       difference_in_view(table["ci_high_norm"], table["ci_high"], scale))],
        "p (Holm)": table["p_holm"],
        "n": table["n"],
        # the smallest |Δ| these n pairs find 80% of the time: a non-significant Δ below it is not "no difference"
        "MDE": difference_in_view(table["mde_norm"], table["mde"], scale).round(3),
        f"{a_name} better": table["wins"],
        "ties": table["ties"],
        f"{baseline} better": table["losses"],
        f"{a_name} mean" if one else "mean": in_view(table["mean_a_norm"], table["mean_a"], scale).round(3),
        f"{baseline} mean": in_view(table["mean_b_norm"], table["mean_b"], scale).round(3),
        "scale": [scale_text(s) for s in table["scale"]],
        "p": table["p_value"],
        "better": table["better"].fillna("no direction"),
        "family": table["family"],
        "tests family": table["tests_family"],  # the family p (Holm) is corrected over (queries.hypotheses)
    })
    return shown.drop(columns="method") if one else shown


def _heatmap(deltas: pd.DataFrame, types: list[str], metrics: list[str], scale: str, method_a: str,
             baseline: str) -> pd.DataFrame:
    """The heatmap's cells, question types (rows) and metrics (columns) in the screen's order."""
    cells = deltas[deltas["question_type"].isin(types) & deltas["metric"].isin(metrics)]
    cells = cells.sort_values(["question_type", "metric"], key=lambda c: c.map(
        {v: i for i, v in enumerate(types if c.name == "question_type" else metrics)}))
    return pd.DataFrame({
        "question_type": cells["question_type"], "metric": cells["metric"], "n": cells["n"],
        "Δ": difference_in_view(cells["delta_norm"], cells["delta"], scale),
        f"{method_a} mean": cells["mean_a"], f"{baseline} mean": cells["mean_b"], "advantage": cells["advantage"],
    }).reset_index(drop=True)


def _scatter(store: Store, run_id: str, method_a: str, baseline: str, scale: str, **query) -> pd.DataFrame:
    """The scatter's points: both scores in the chosen scale (the axes), the gap in the own scale (the hover)."""
    points = paired_scores(store, run_id, method_a, baseline, **query, order="sample", limit=SCATTER_POINTS)
    return pd.DataFrame({
        "question_id": points["question_id"], "question_type": points["question_type"], "question": points["question"],
        method_a: in_view(points["norm_a"], points["value_a"], scale),
        baseline: in_view(points["norm_b"], points["value_b"], scale), "Δ (own scale)": points["delta"]})


def _cell_questions(store: Store, run_id: str, method_a: str, baseline: str, scale: str, cell_type: str,
                    cell_metric: str) -> pd.DataFrame:
    """A heatmap cell's questions, largest gap first: both scores and the gap ("Δ") in the chosen scale."""
    rows = _questions(store, run_id, method_a, baseline, scale, metrics=[cell_metric], question_type=cell_type,
                      order="gap", limit=CELL_QUESTIONS)
    return rows.rename(columns={f"Δ {method_a} − {baseline}": "Δ"}).drop(columns="question type")


def _questions(store: Store, run_id: str, method_a: str, baseline: str, scale: str, **query) -> pd.DataFrame:
    """Paired questions as listed: both scores and the gap in the chosen scale, the type, the question."""
    rows = paired_scores(store, run_id, method_a, baseline, **query)
    return pd.DataFrame({
        method_a: in_view(rows["norm_a"], rows["value_a"], scale).round(3),
        baseline: in_view(rows["norm_b"], rows["value_b"], scale).round(3),
        f"Δ {method_a} − {baseline}": difference_in_view(rows["delta_norm"], rows["delta"], scale).round(3),
        "question type": [type_name(t) for t in rows["question_type"]],
        "question": rows["question"],
        "question_id": rows["question_id"],
    })


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
