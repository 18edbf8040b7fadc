"""Error analysis queries: the samples matching a filter, worst first, and the human annotations
beside the judge's output (claim verdicts, score overrides, tags, notes) with the pairs that
judge-human agreement is computed from; `view` gives the screen's tables as shown.

The sample list aggregates the run's score cells once per (question, method) in DuckDB, filters,
sorts and LIMITs there, and counts every match with a window: a screen pulls at most `limit` rows
whatever the size of the run.
"""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from evaluators import records
from evaluators.metrics.registry import in_catalogue_order, label_metrics, lookup
from evaluators.queries import FAILED, OK, one_of
from evaluators.queries import claims as qc
from evaluators.queries import humans as qh
from evaluators.queries.overview import default_metric
from evaluators.maths.stats import cohen_kappa
from evaluators.store import Store

# Score columns shown for every listed sample (besides the sort and filter metrics).
SAMPLE_METRICS = ("faithfulness", "answer_correctness_f1", "context_precision", "judge_overall",
                  "hallucination_rate")


def worst_is_lowest(metric: str) -> bool:
    """Worst first means lowest norm first, except for metrics where lower is better
    (hallucination_rate). A metric with no better direction (dont_know) sorts lowest first."""
    return lookup(metric).direction >= 0


def run_facets(store: Store, run_id: str) -> dict[str, list[str]]:
    """What the filters offer: the run's methods, metrics (catalogue order), and the labels present."""
    cur = store.cursor()
    methods = [m for m, in cur.execute(
        "SELECT DISTINCT method FROM scores WHERE run_id = ? ORDER BY method", [run_id]).fetchall()]
    present = {m for m, in cur.execute("SELECT DISTINCT metric FROM scores WHERE run_id = ?", [run_id]).fetchall()}
    labels = cur.execute(
        f"SELECT DISTINCT metric, label FROM scores WHERE run_id = ? AND status = {OK} AND label IS NOT NULL",
        [run_id]).fetchall()
    facets = {"methods": methods, "metrics": in_catalogue_order(present)}
    for metric, order in label_metrics().items():
        seen = {label for m, label in labels if m == metric}
        facets[metric] = [x for x in order if x in seen] + sorted(seen - set(order))
    return facets


def samples(store: Store, run_id: str, *, methods: Sequence[str] = (), question_types: Sequence[str] = (),
            metric: str | None = None, low: float | None = None, high: float | None = None,
            verdicts: Sequence[str] = (), answer_classes: Sequence[str] = (), statuses: Sequence[str] = (),
            annotated_only: bool = False, search: str = "", sort_metric: str = "judge_overall",
            limit: int | None = 100) -> tuple[pd.DataFrame, int]:
    """The (question, method) samples of a run that pass every given filter, worst first on
    `sort_metric`, at most `limit` rows (None: all), and the number of all matches.

    Filters (an empty one does not filter): methods; question types ("" for none); `metric`'s value
    in its own scale within [low, high] (a cell that is not ok never passes); the verdict and
    answer-class labels; `statuses`: the sample has at least one cell with one of them; annotated_only:
    the sample has a human annotation; `search`: the question's text or id, or the sample's answer, contains it
    (case-insensitive). Samples whose sort cell is not ok come last."""
    params: dict = {"run_id": run_id, "sort": sort_metric, "filter": metric or sort_metric}
    where = ["TRUE"]
    scan = ["run_id = $run_id"]  # filters applied while scanning the scores, before aggregating
    if methods:
        scan.append("list_contains($methods, method)")
        params["methods"] = list(methods)
    if question_types:
        where.append("list_contains($types, coalesce(g.question_type, ''))")
        params["types"] = list(question_types)
    if metric and low is not None:
        where.append("c.filter_value >= $low - 1e-9")
        params["low"] = float(low)
    if metric and high is not None:
        where.append("c.filter_value <= $high + 1e-9")
        params["high"] = float(high)
    if verdicts:
        where.append("list_contains($verdicts, c.verdict)")
        params["verdicts"] = list(verdicts)
    if answer_classes:
        where.append("list_contains($classes, c.answer_class)")
        params["classes"] = list(answer_classes)
    if statuses:
        where.append("c.n_status > 0")
        params["statuses"] = list(statuses)
    if annotated_only:
        where.append("coalesce(a.n_annotations, 0) > 0")
    if search.strip():
        where.append("""(contains(lower(coalesce(g.question, '')), $search) OR contains(lower(c.question_id), $search)
                         OR EXISTS (SELECT 1 FROM rag_outputs o
                                    WHERE list_contains(r.outputs_dataset_ids, o.dataset_id)
                                      AND o.question_id = c.question_id AND o.method = c.method
                                      AND contains(lower(o.answer), $search)))""")
        params["search"] = search.strip().lower()
    direction = "ASC" if worst_is_lowest(sort_metric) else "DESC"
    columns = ",\n".join(f"max(value) FILTER (metric = '{m}' AND status = {OK}) AS \"{m}\"" for m in SAMPLE_METRICS)
    shown = ", ".join(f'c."{m}"' for m in SAMPLE_METRICS)
    if limit is not None:
        params["limit"] = int(limit)
    frame = store.cursor().execute(
        f"""
        WITH c AS (
            SELECT question_id, method,
                   max(norm) FILTER (metric = $sort AND status = {OK}) AS sort_norm,
                   max(value) FILTER (metric = $sort AND status = {OK}) AS sort_value,
                   max(status) FILTER (metric = $sort) AS sort_status,
                   max(value) FILTER (metric = $filter AND status = {OK}) AS filter_value,
                   max(label) FILTER (metric = 'verdict') AS verdict,
                   max(label) FILTER (metric = 'answer_class') AS answer_class,
                   {"count(*) FILTER (list_contains($statuses, status))" if statuses else "0"} AS n_status,
                   count(*) FILTER (status IN {FAILED}) AS n_failed,
                   {columns}
            FROM scores WHERE {' AND '.join(scan)}
            GROUP BY question_id, method
        ), a AS (
            SELECT question_id, method, count(*) AS n_annotations
            FROM annotations WHERE run_id = $run_id GROUP BY ALL
        )
        SELECT c.question_id, c.method, coalesce(g.question_type, '') AS question_type,
               c.sort_value, c.sort_norm, c.sort_status, c.filter_value, c.verdict, c.answer_class, {shown},
               c.n_failed, coalesce(a.n_annotations, 0) AS n_annotations, g.question,
               count(*) OVER () AS n_matches
        FROM c JOIN runs r ON r.run_id = $run_id
        LEFT JOIN golden_items g ON g.dataset_id = r.golden_dataset_id AND g.question_id = c.question_id
        LEFT JOIN a ON a.question_id = c.question_id AND a.method = c.method
        WHERE {' AND '.join(where)}
        ORDER BY c.sort_norm {direction} NULLS LAST, c.question_id, c.method
        {'LIMIT $limit' if limit is not None else ''}
        """, params).df()
    total = int(frame["n_matches"].iloc[0]) if len(frame) else 0
    return frame.drop(columns="n_matches"), total


def annotations(store: Store, run_id: str, question_id: str | None = None, method: str | None = None,
                limit: int | None = 500) -> pd.DataFrame:
    """The run's annotations, newest first (optionally of one sample), each with what it labels
    and the judge's current output beside it: the claim's verdict, or the score's value and label.
    An imported human rating (`evaluators.store.ratings`) targets its dimension, with its `rating` and `source` file.
    `stale`: the claim at that index now has another text (the sample was re-judged)."""
    return store.cursor().execute(
        f"""
        SELECT a.created_at, a.author, a.question_id, a.method,
               CASE WHEN a.claim_idx IS NOT NULL
                    THEN (CASE a.claim_source WHEN 'answer' THEN 'A' ELSE 'R' END) || (a.claim_idx + 1)
                    ELSE coalesce(a.metric, a.dimension) END AS target,
               a.label, a.override_value, a.rating, a.judge_label, a.judge_value,
               coalesce(c.verdict, s.label) AS judge_label_now,
               s.value AS judge_value_now, a.tags, a.note, a.claim_text,
               (a.claim_text IS NOT NULL AND c.text IS DISTINCT FROM a.claim_text) AS stale,
               a.source, a.metric, a.claim_source, a.claim_idx, a.annotation_id
        FROM annotations a
        LEFT JOIN claims c ON a.claim_idx IS NOT NULL AND c.run_id = a.run_id AND c.question_id = a.question_id
             AND c.method = a.method AND c.source = a.claim_source AND c.claim_idx = a.claim_idx
        LEFT JOIN scores s ON a.metric IS NOT NULL AND s.run_id = a.run_id AND s.question_id = a.question_id
             AND s.method = a.method AND s.metric = a.metric
        WHERE a.run_id = $run_id AND ($qid IS NULL OR a.question_id = $qid) AND ($method IS NULL OR a.method = $method)
        ORDER BY a.created_at DESC, a.annotation_id
        {'LIMIT ' + str(int(limit)) if limit is not None else ''}
        """, {"run_id": run_id, "qid": question_id, "method": method}).df()


def claim_agreement(store: Store, run_id: str, methods: Sequence[str] = ()) -> pd.DataFrame:
    """One row per annotated claim and author (their latest label): the judge's verdict as the
    annotator saw it (or, for a label stored without it, the current one) and the human verdict."""
    return store.cursor().execute(
        """
        SELECT a.question_id, a.method, a.claim_source, a.claim_idx, a.author,
               coalesce(a.judge_label, c.verdict) AS judge_verdict, a.label AS human_verdict
        FROM annotations a
        LEFT JOIN claims c ON c.run_id = a.run_id AND c.question_id = a.question_id AND c.method = a.method
             AND c.source = a.claim_source AND c.claim_idx = a.claim_idx
        WHERE a.run_id = $run_id AND a.claim_idx IS NOT NULL AND a.label IS NOT NULL
          AND (len($methods) = 0 OR list_contains($methods, a.method))
        QUALIFY row_number() OVER (PARTITION BY a.author, a.question_id, a.method, a.claim_source, a.claim_idx
                                   ORDER BY a.created_at DESC, a.annotation_id) = 1
        ORDER BY a.question_id, a.method, a.claim_source, a.claim_idx, a.author
        """, {"run_id": run_id, "methods": list(methods)}).df()


def label_agreement(store: Store, run_id: str, methods: Sequence[str] = ()) -> pd.DataFrame:
    """One row per label-metric cell and author a human relabelled (their latest label): the
    judge's label (as seen, else current) and the human's."""
    labels = ", ".join(f"'{m}'" for m in label_metrics())
    return store.cursor().execute(
        f"""
        SELECT a.metric, a.question_id, a.method, a.author,
               coalesce(a.judge_label, s.label) AS judge_label,
               a.label AS human_label
        FROM annotations a
        LEFT JOIN scores s ON s.run_id = a.run_id AND s.question_id = a.question_id AND s.method = a.method
             AND s.metric = a.metric
        WHERE a.run_id = $run_id AND a.metric IN ({labels}) AND a.label IS NOT NULL
          AND (len($methods) = 0 OR list_contains($methods, a.method))
        QUALIFY row_number() OVER (PARTITION BY a.author, a.question_id, a.method, a.metric
                                   ORDER BY a.created_at DESC, a.annotation_id) = 1
        ORDER BY a.metric, a.question_id, a.method, a.author
        """, {"run_id": run_id, "methods": list(methods)}).df()


def override_summary(store: Store, run_id: str, methods: Sequence[str] = ()) -> pd.DataFrame:
    """Per metric, over the cells a human overrode (latest override per author and cell): n, the
    judge's and the humans' mean value in the metric's scale, and the mean signed and absolute
    difference human - judge."""
    return store.cursor().execute(
        """
        WITH latest AS (
            SELECT a.metric, a.override_value AS human, coalesce(a.judge_value, s.value) AS judge
            FROM annotations a
            LEFT JOIN scores s ON s.run_id = a.run_id AND s.question_id = a.question_id AND s.method = a.method
                 AND s.metric = a.metric
            WHERE a.run_id = $run_id AND a.metric IS NOT NULL AND a.override_value IS NOT NULL
              AND (len($methods) = 0 OR list_contains($methods, a.method))
            QUALIFY row_number() OVER (PARTITION BY a.author, a.question_id, a.method, a.metric
                                       ORDER BY a.created_at DESC, a.annotation_id) = 1
        )
        SELECT metric, count(*) FILTER (judge IS NOT NULL) AS n,
               avg(judge) AS mean_judge, avg(human) FILTER (judge IS NOT NULL) AS mean_human,
               avg(human - judge) AS mean_difference, avg(abs(human - judge)) AS mean_abs_difference
        FROM latest GROUP BY metric ORDER BY metric
        """, {"run_id": run_id, "methods": list(methods)}).df()


# --------------------------------------------------------------------------- the screen


def view(store: Store, run_id: str, *, methods: list[str] | None = None, question_types: list[str] | None = None,
         sort_metric: str | None = None, metric: str | None = None, low: float | None = None,
         high: float | None = None, verdicts: list[str] | None = None, answer_classes: list[str] | None = None,
         statuses: list[str] | None = None, annotated_only: bool = False, search: str = "", limit: int = 100,
         question_id: str | None = None, method: str | None = None) -> dict[str, pd.DataFrame]:
    """The Error analysis screen's tables, as shown: `matches` (how many samples pass the filters, how many
    are listed, worst first on which metric) and `samples` (the listed ones); with a sample selected,
    `sample_text` (its question, reference and answer), `sample_answer_claims`, `sample_chunks`, `sample_scores`,
    `sample_claims` and `sample_labels`; `kappa` (the judge against the humans on claim
    verdicts and on each relabelled label metric) with each one's confusion table ("confusion: <agreement
    on>"); `overrides`; `humans` (the judge against imported human ratings) and `disagreements` (every
    compared pair's largest ones); `labels` (every label of the run). The agreement tables are over the
    methods filtered (every method when none is).

    methods: only these methods
    question_types: only these question types ("" for none)
    sort_metric: worst first on this metric (default: judge_overall when the run has it, else the first)
    metric: keep the samples whose value of this metric, in its own scale, lies in [low, high]
    low: the lowest value of the metric kept
    high: the highest value of the metric kept
    verdicts: only these verdicts (pass, partial, fail)
    answer_classes: only these answer classes (CORRECT, WRONG, DON'T KNOW)
    statuses: only samples with a cell of one of these statuses
    annotated_only: only samples with a human label
    search: only samples whose question (text or id) or answer contains this text, case-insensitive
    limit: rows listed
    question_id: the selected sample's question (with method)
    method: the selected sample's method (with question_id)
    """
    metrics = run_facets(store, run_id)["metrics"]
    sort_metric = one_of(sort_metric, metrics, "metric") if sort_metric is not None else default_metric(metrics)
    if metric is not None:
        one_of(metric, metrics, "metric")
    filters = dict(methods=methods or (), question_types=question_types or (), metric=metric, low=low, high=high,
                   verdicts=verdicts or (), answer_classes=answer_classes or (), statuses=statuses or (),
                   annotated_only=annotated_only, search=search, sort_metric=sort_metric)
    table, total = sample_table(store, run_id, **filters, limit=limit)
    matches = pd.DataFrame([{"matched": total, "shown": len(table), "sort metric": sort_metric,
                             "worst first": "lowest" if worst_is_lowest(sort_metric) else "highest"}])
    selected = sample_panel(store, run_id, question_id, method) if question_id is not None and method else {}
    kappa, confusions = agreement(store, run_id, methods or ())
    rated = qh.judge_vs_humans(store, run_id, methods or ())
    return {"matches": matches, "samples": table, **selected, "kappa": kappa, **confusions,
            "overrides": override_summary(store, run_id, methods or ()).round(3),
            "humans": rated["agreement"].round(3), "disagreements": rated["disagreements"].round(3),
            "labels": annotations(store, run_id, limit=None).drop(columns="annotation_id")}


def sample_table(store: Store, run_id: str, *, sort_metric: str = "judge_overall", metric: str | None = None,
                 limit: int | None = 100, **filters) -> tuple[pd.DataFrame, int]:
    """`samples` as listed on the screen: the question's text and the method first, then the sort (and filter)
    metric, the labels, the key scores, the counts, the question's type and id; and the number of all matches."""
    rows, total = samples(store, run_id, sort_metric=sort_metric, metric=metric, limit=limit, **filters)
    table = rows[["question", "method"]].copy()
    table[sort_metric] = rows["sort_value"]
    if (rows["sort_status"] != records.OK).any():  # say why a cell is empty
        table[f"{sort_metric} status"] = rows["sort_status"]
    if metric and metric != sort_metric:
        table[metric] = rows["filter_value"]
    table["verdict"] = rows["verdict"]
    table["answer_class"] = rows["answer_class"]
    for m in SAMPLE_METRICS:
        if m not in table:
            table[m] = rows[m]
    table["failed cells"] = rows["n_failed"]
    table["labels"] = rows["n_annotations"]
    table["question_type"] = rows["question_type"]
    table["question_id"] = rows["question_id"]
    return table.round(3), total


def sample_panel(store: Store, run_id: str, question_id: str, method: str) -> dict[str, pd.DataFrame]:
    """One sample's side panel: what is labelled (`sample_text`: the question, its reference answer and the method's
    answer; `sample_answer_claims`: the answer's claims to highlight in it; `sample_chunks`: the chunks it
    retrieved, as Claims shows them), its scores (the judge's value or label, the latest human one and its
    author), its claims (the judge's verdict and the human's, to edit) and its labels, newest first."""
    answered = set(qc.answers(store, run_id, question_id)["method"])
    shown = qc.view(store, run_id, question_id=question_id, methods=[method] if method in answered else [])
    item = shown["question"].iloc[0]
    answer = shown["answers"]["answer"]
    texts = pd.DataFrame([{"question_id": question_id, "method": method, "question": item["question"],
                           "reference": item["reference"], "answer": answer.iloc[0] if len(answer) else ""}])
    scores = qc.sample_scores(store, run_id, question_id)
    scores = scores[scores["method"] == method]
    claim_rows = qc.claims(store, run_id, question_id)
    claim_rows = claim_rows[claim_rows["method"] == method]
    rows = list(scores.itertuples(index=False))
    return {
        "sample_text": texts,
        "sample_answer_claims": shown["answer_claims"].drop(columns="method"),
        "sample_chunks": shown["chunks"].drop(columns="method"),
        "sample_scores": pd.DataFrame({
            "metric": scores["metric"].to_numpy(),
            "judge": [r.label if isinstance(r.label, str) else r.status if r.status != records.OK else round(r.value, 3)
                      for r in rows],
            "human": [r.human_label if isinstance(r.human_label, str) else
                      "" if pd.isna(r.human_value) else round(r.human_value, 3) for r in rows],
            "by": scores["human_author"].fillna("").to_numpy(),
            "detail": scores["detail"].to_numpy(),
        }).astype({"judge": str, "human": str}),
        "sample_claims": pd.DataFrame({
            "claim": [qc.claim_label(s, i) for s, i in zip(claim_rows["source"], claim_rows["claim_idx"])],
            "judge verdict": claim_rows["verdict"].to_numpy(),
            "your verdict": claim_rows["human_verdict"].astype(object).to_numpy(),
            "text": claim_rows["text"].to_numpy(),
        }),
        "sample_labels": annotations(store, run_id, question_id, method).drop(
            columns=["question_id", "method", "metric", "claim_source", "claim_idx", "annotation_id"]),
    }


def agreement(store: Store, run_id: str, methods: Sequence[str] = ()) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """Cohen's kappa of the judge and the humans (each annotator's latest label per item) on claim verdicts
    and on each relabelled label metric: one row each ("agreement on"), and each one's confusion table
    (judge rows x human columns), named "confusion: <agreement on>"."""
    pairs = {"Claim verdicts": claim_agreement(store, run_id, methods).rename(
        columns={"judge_verdict": "judge", "human_verdict": "human"})}
    for label_metric, part in label_agreement(store, run_id, methods).groupby("metric", sort=True):
        pairs[f"{label_metric} labels"] = part.rename(columns={"judge_label": "judge", "human_label": "human"})
    rows, confusions = [], {}
    for title, part in pairs.items():
        k = cohen_kappa(list(part["judge"]), list(part["human"]))
        rows.append({"agreement on": title, "Cohen's kappa": None if k.kappa is None else round(k.kappa, 2),
                     "observed agreement": None if k.observed is None else round(k.observed, 2),
                     "chance agreement": None if k.expected is None else round(k.expected, 2), "n": k.n})
        confusions[f"confusion: {title}"] = k.confusion.rename_axis(index="judge", columns="human").reset_index()
    return pd.DataFrame(rows), confusions
