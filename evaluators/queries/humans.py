"""Judge vs humans (Error analysis): imported human ratings (`evaluators.store.ratings`) beside the judge's
matching metrics.

For each human dimension of a run, the metrics that measure the same thing (`DIMENSION_METRICS`,
plus a dimension named exactly like a metric id), and per metric:
- n: the rated (question, method) items whose metric cell is ok; a cell that is not ok (failed, not
  applicable) is left out, never counted as 0, and the row's note says how many and why;
- for ratings, Spearman's rho of the metric's value against the mean rating of the item's annotators
  (each annotator's latest rating), with a 95% bootstrap CI over questions (an item's methods share
  a question, so whole questions are resampled);
- for labels against a label metric (verdict, answer_class, accuracy_grade), Cohen's kappa of the
  judge's label against the annotators' majority label (compared case-insensitively; a tie has no
  majority and is left out), with the same CI;
- the ceiling: Krippendorff's alpha of the annotators among themselves on the dimension (ordinal for
  ratings, nominal for labels): a judge agreeing with people about as well as they agree with each
  other is as good as one more annotator.
The items where judge and humans disagree most: ratings by the difference of the item's percentile
rank under the metric and under the humans' mean (+: the judge ranks it higher than people do);
labels where the judge's label is not the humans' majority.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from evaluators.metrics.registry import find, lookup
from evaluators.records import OK
from evaluators.maths.stats import bootstrap_ci, cohen_kappa, krippendorff_alpha, spearman
from evaluators.store import Store

# Human dimension (lower case, "_" for spaces and hyphens) -> the metrics that measure the same thing.
DIMENSION_METRICS: dict[str, tuple[str, ...]] = {
    "faithfulness": ("faithfulness", "judge_faithfulness"),
    "answer_relevance": ("answer_relevance", "judge_relevance"),
    "relevance": ("answer_relevance", "judge_relevance"),
    "correctness": ("judge_correctness", "answer_correctness_f1", "answer_class"),
    "completeness": ("completeness", "judge_completeness"),
    "fluency": ("judge_clarity",),
    "clarity": ("judge_clarity",),
}
MIN_ITEMS = 3  # below this a correlation or kappa says nothing
AGREEMENT_COLUMNS = ["dimension", "human_scale", "metric", "n", "n_questions", "spearman", "spearman_low",
                     "spearman_high", "kappa", "kappa_low", "kappa_high", "human_alpha", "alpha_level",
                     "n_rated_items", "n_annotators", "note"]
DISAGREEMENT_COLUMNS = ["dimension", "metric", "question_id", "method", "judge_value", "judge_label", "human_mean",
                        "human_label", "n_annotators", "rank_difference", "question"]


def matching_metrics(dimension: str) -> tuple[str, ...]:
    """The metric ids a human dimension is compared with (the documented mapping, and its own name when that is a
    metric's id: the catalogue's, or a user's criterion or plug-in metric registered from the runs)."""
    key = _normalise(dimension)
    mapped = DIMENSION_METRICS.get(key, ())
    return mapped if find(key) is None or key in mapped else (key, *mapped)


def judge_vs_humans(store: Store, run_id: str, methods: Sequence[str] = (), *, n_boot: int = 1000, seed: int = 0,
                    top: int = 20) -> dict[str, pd.DataFrame]:
    """{"agreement": one row per (human dimension, matching metric), or per dimension without one;
    "disagreements": per compared pair, its `top` items where judge and humans disagree most}.
    Both empty when the run has no imported human rating (over `methods`, when given). n_boot is
    1000, not the usual 2000: Error analysis reruns on every click (about 0.07 s a row at 300 items)."""
    ratings = _latest_ratings(store, run_id, methods)
    if ratings.empty:
        return {"agreement": pd.DataFrame(columns=AGREEMENT_COLUMNS),
                "disagreements": pd.DataFrame(columns=DISAGREEMENT_COLUMNS)}
    dimensions = sorted(ratings["dimension"].unique())
    metrics = sorted({m for d in dimensions for m in matching_metrics(d)})
    cells = _cells(store, run_id, metrics, methods)
    rows, worst = [], []
    for dimension in dimensions:
        rated = _typed(ratings[ratings["dimension"] == dimension])
        items = _items(rated)
        base = {"dimension": dimension, **_ceiling(rated), "n_rated_items": len(items),
                "n_annotators": rated["annotator"].nunique()}
        if not matching_metrics(dimension):
            rows.append({**base, "n": 0, "note": "no matching metric: name the dimension like a metric id "
                                                 "(e.g. faithfulness) to compare it"})
        for metric in matching_metrics(dimension):
            row, pairs = _compare(items, cells[cells["metric"] == metric], metric, n_boot, seed)
            rows.append({**base, "metric": metric, **row})
            worst.append(_disagreements(pairs, dimension, metric).head(top))
    agreement = pd.DataFrame(rows).reindex(columns=AGREEMENT_COLUMNS)
    disagreements = pd.concat([w for w in worst if not w.empty] or [pd.DataFrame(columns=DISAGREEMENT_COLUMNS[:-1])],
                              ignore_index=True)
    questions = _questions(store, run_id)
    disagreements["question"] = disagreements["question_id"].map(questions)
    return {"agreement": agreement, "disagreements": disagreements.reindex(columns=DISAGREEMENT_COLUMNS)}


# --------------------------------------------------------------------------- reading


def _latest_ratings(store: Store, run_id: str, methods: Sequence[str]) -> pd.DataFrame:
    """Each annotator's latest rating or label per item and dimension (a later import corrects one)."""
    return store.cursor().execute(
        """
        SELECT question_id, method, dimension, author AS annotator, rating, label
        FROM annotations
        WHERE run_id = $run_id AND dimension IS NOT NULL AND (rating IS NOT NULL OR label IS NOT NULL)
          AND (len($methods) = 0 OR list_contains($methods, method))
        QUALIFY row_number() OVER (PARTITION BY author, question_id, method, dimension
                                   ORDER BY created_at DESC, annotation_id) = 1
        """, {"run_id": run_id, "methods": list(methods)}).df()


def _cells(store: Store, run_id: str, metrics: list[str], methods: Sequence[str]) -> pd.DataFrame:
    """The run's cells of `metrics`: value, label (label metrics), status and detail."""
    return store.cursor().execute(
        """
        SELECT question_id, method, metric, value, status, detail,
               label
        FROM scores
        WHERE run_id = $run_id AND list_contains($metrics, metric)
          AND (len($methods) = 0 OR list_contains($methods, method))
        """, {"run_id": run_id, "metrics": metrics, "methods": list(methods)}).df()


def _questions(store: Store, run_id: str) -> dict[str, str]:
    rows = store.cursor().execute(
        "SELECT g.question_id, g.question FROM runs r JOIN golden_items g ON g.dataset_id = r.golden_dataset_id "
        "WHERE r.run_id = ?", [run_id]).fetchall()
    return dict(rows)


# --------------------------------------------------------------------------- per dimension


def _typed(rated: pd.DataFrame) -> pd.DataFrame:
    """One kind per dimension: its ratings when it has any, else its labels (case-folded)."""
    if rated["rating"].notna().any():
        return rated[rated["rating"].notna()].assign(kind="rating", value=rated["rating"])
    return rated.assign(kind="label", value=rated["label"].str.casefold())


def _items(rated: pd.DataFrame) -> pd.DataFrame:
    """Per rated (question, method): the annotators' mean rating or majority label, and how many rated it."""
    grouped = rated.groupby(["question_id", "method"], sort=True)["value"]
    if rated["kind"].iloc[0] == "rating":
        items = grouped.agg(human_mean="mean", n_annotators="size").assign(human_label=None)
    else:
        items = grouped.agg(human_label=_majority, n_annotators="size").assign(human_mean=math.nan)
    return items.reset_index().assign(kind=rated["kind"].iloc[0])


def _majority(labels: pd.Series) -> str | None:
    counts = labels.value_counts()
    return counts.index[0] if len(counts) == 1 or counts.iloc[0] > counts.iloc[1] else None


def _ceiling(rated: pd.DataFrame) -> dict:
    """The humans' scale and their agreement among themselves (Krippendorff's alpha)."""
    units = rated.groupby(["question_id", "method"])["value"].agg(list)
    if rated["kind"].iloc[0] == "rating":
        scale, level = f"ratings {rated['value'].min():g}-{rated['value'].max():g}", "ordinal"
    else:
        scale, level = f"labels ({rated['value'].nunique()})", "nominal"
    return {"human_scale": scale, "human_alpha": krippendorff_alpha(units.tolist(), level), "alpha_level": level}


def _compare(items: pd.DataFrame, cells: pd.DataFrame, metric: str, n_boot: int, seed: int) -> tuple[dict, pd.DataFrame]:
    """One agreement row (n, statistics with CIs, a note) and the compared (item, judge, human) pairs."""
    merged = items.merge(cells, on=["question_id", "method"], how="left")
    ok = merged[merged["status"] == OK]
    if merged["status"].isna().all():
        return {"n": 0, "n_questions": 0, "note": f"{metric} is not in this run"}, ok
    kind, note = items["kind"].iloc[0], _note(merged, metric)
    is_label = bool(lookup(metric).labels)
    if kind == "label" and is_label:
        ties = int(ok["human_label"].isna().sum())
        ok = ok[ok["human_label"].notna()].assign(judge_label=lambda f: f["label"].str.casefold())
        note = _join(note, f"{ties} item{'s' if ties != 1 else ''} whose annotators split evenly left out" if ties else "")
    row = {"n": len(ok), "n_questions": ok["question_id"].nunique()}
    if kind == "label" and not is_label:
        note = _join(note, f"people gave labels and {metric} is a score: no statistic")
    elif len(ok) < MIN_ITEMS:
        note = _join(note, f"fewer than {MIN_ITEMS} items with both: no statistic")
    elif kind == "rating":
        row["spearman"], row["spearman_low"], row["spearman_high"] = bootstrap_ci(
            spearman, ok["value"].to_numpy(float), ok["human_mean"].to_numpy(float), groups=ok["question_id"],
            n_boot=n_boot, seed=seed)
    else:
        row["kappa"], row["kappa_low"], row["kappa_high"] = bootstrap_ci(
            _kappa, ok["judge_label"].to_numpy(object), ok["human_label"].to_numpy(object),
            groups=ok["question_id"], n_boot=n_boot, seed=seed)
    return {**row, "note": note}, ok


def _kappa(judge, human) -> float | None:
    return cohen_kappa(list(judge), list(human)).kappa


def _note(merged: pd.DataFrame, metric: str) -> str:
    """Why rated items have no ok cell of the metric: their statuses and the commonest reason."""
    left_out = merged[merged["status"].notna() & (merged["status"] != OK)]
    if left_out.empty:
        return ""
    statuses = ", ".join(f"{n} {status}" for status, n in left_out["status"].value_counts().items())
    reason = left_out["detail"].dropna()
    because = f" ({reason.mode().iloc[0]})" if len(reason) else ""
    everything = "every rated item" if len(left_out) == merged["status"].notna().sum() else "some rated items"
    return f"{metric} is not ok for {everything}, left out: {statuses}{because}"


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def _disagreements(pairs: pd.DataFrame, dimension: str, metric: str) -> pd.DataFrame:
    """The compared items, largest disagreement first."""
    if pairs.empty or (len(pairs) < MIN_ITEMS and pairs["kind"].iloc[0] == "rating"):
        return pd.DataFrame()
    out = pairs.assign(dimension=dimension, metric=metric, judge_value=pairs["value"])
    if pairs["kind"].iloc[0] == "rating":
        out["rank_difference"] = _percentile_rank(out["judge_value"]) - _percentile_rank(out["human_mean"])
        out["judge_label"] = out["label"]
        order = out["rank_difference"].abs().sort_values(ascending=False, kind="stable").index
        return out.loc[order].reindex(columns=DISAGREEMENT_COLUMNS[:-1])
    if "judge_label" not in out:  # labels against a score: nothing to compare
        return pd.DataFrame()
    out = out[out["judge_label"] != out["human_label"]].assign(rank_difference=math.nan)
    return out.sort_values(["question_id", "method"]).reindex(columns=DISAGREEMENT_COLUMNS[:-1])


def _percentile_rank(values: pd.Series) -> pd.Series:
    """0 for the lowest, 1 for the highest; ties share their average rank."""
    return (values.rank(method="average") - 1) / max(len(values) - 1, 1)


def _normalise(dimension: str) -> str:
    return "_".join(dimension.strip().lower().replace("-", " ").split())
