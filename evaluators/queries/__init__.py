"""Read side: one function per view, each returning a DataFrame the app shows and the CLI exports."""
from __future__ import annotations

import pandas as pd

from evaluators import records
from evaluators.records.run_status import RunStatus
from evaluators.metrics.registry import SCALES, lookup
from evaluators.runs.budget import run_calls, run_cost  # noqa: F401 (what a run spent: the screens read it here)
from evaluators.store import Store

# Cell statuses as SQL literals, from evaluators.records (the one list): `status = {OK}`, `status IN {FAILED}`.
OK, NOT_APPLICABLE, SKIPPED = f"'{records.OK}'", f"'{records.NOT_APPLICABLE}'", f"'{records.SKIPPED}'"
# A failed cell: the statuses a retry redoes (records.ERROR_STATUSES).
FAILED = "(" + ", ".join(f"'{s}'" for s in records.ERROR_STATUSES) + ")"

ALL_TYPES = "All question types"  # a screen's question-type choice that keeps every question


def question_types(store: Store, run_id: str) -> list[str]:
    """The question types of the run's golden set, most frequent first ("" when a question has none)."""
    return list(golden_set(store, run_id)["question_type"])


def golden_set(store: Store, run_id: str) -> pd.DataFrame:
    """The run's golden set by question type, most frequent first: its name, the type ("" for none), its questions."""
    return store.cursor().execute(
        """
        SELECT d.name, coalesce(g.question_type, '') AS question_type, count(*) AS n
        FROM golden_items g JOIN runs r ON g.dataset_id = r.golden_dataset_id JOIN datasets d USING (dataset_id)
        WHERE r.run_id = ? GROUP BY ALL ORDER BY n DESC, question_type
        """, [run_id]).df()


# How a score is shown (the screens' switch): its own scale, seed 000's 1-5 projection or percent.
OWN, LIKERT, PERCENT = "own scale", "1-5 (white paper)", "percent"
VIEWS = (OWN, LIKERT, PERCENT)
_VIEW_SCALES = {LIKERT: SCALES["likert"], PERCENT: SCALES["percent"]}


def in_view(norm: pd.Series, own: pd.Series, view: str) -> pd.Series:
    """Scores in the chosen view: own scale as stored, or norm projected onto 1-5 or 0-100."""
    return _VIEW_SCALES[view].value(norm) if view in _VIEW_SCALES else own


def bounds_in_view(metric: str, view: str) -> tuple[float, float]:
    """The lowest and highest score a metric can show in the chosen view."""
    scale = _VIEW_SCALES.get(view, lookup(metric).range)
    return scale.low, scale.high


def difference_in_view(norm: pd.Series, own: pd.Series, view: str) -> pd.Series:
    """A difference in the chosen view: own units, points on 1-5 or percentage points."""
    return _VIEW_SCALES[view].difference(norm) if view in _VIEW_SCALES else own


def one_of(value, allowed, what: str):
    """`value` when it is one of `allowed`, else a ValueError naming them: a screen's option that cannot apply
    (the CLI's `view` reports it with exit code 2)."""
    if value not in allowed:
        raise ValueError(f"{what} {value!r} is not one of: {', '.join(repr(a) for a in allowed) or 'none'}")
    return value


def runs(store: Store, *, cells: bool = False) -> pd.DataFrame:
    """Every run, newest first; with `cells`, how many cells it has per status (a scan of every score: the
    app's run picker, drawn on every page, goes without; 1.2 s at 20 runs of 300,000 cells)."""
    counts = (f""", count(s.metric) AS n_cells, count(s.metric) FILTER (s.status = {OK}) AS n_ok,
               count(s.metric) FILTER (s.status IN {FAILED}) AS n_failed""" if cells else "")
    return store.cursor().execute(
        f"""
        SELECT r.run_id, r.name, r.created_at, r.status, r.judge, r.judge_model, r.n_samples,
               len(r.metrics) AS n_metrics {counts}, r.finished_at, r.error
        FROM runs r {'LEFT JOIN scores s USING (run_id) GROUP BY ALL' if cells else ''}
        ORDER BY r.created_at DESC
        """
    ).df()


# A run this small is a try-out (a smoke test of a new pipeline, a two-sample check of a judge's settings), not the
# run a new session should open on: fewer samples (question x method) than this.
TINY_RUN = 20


def default_run(runs: pd.DataFrame) -> str | None:
    """The run a new session opens on, from `runs` (newest first): the newest finished run that is not a try-out
    (at least TINY_RUN samples); else the newest finished run; else the newest run (a first start: the demo
    being computed, whose pages fill in when it has finished). None without runs."""
    if runs.empty:
        return None
    finished = runs[runs["status"] == RunStatus.FINISHED]
    sized = finished[finished["n_samples"].fillna(0) >= TINY_RUN]
    for candidates in (sized, finished, runs):
        if len(candidates):
            return str(candidates["run_id"].iloc[0])
    return None


def run_scores(store: Store, run_id: str) -> pd.DataFrame:
    """The run's score cells, long format, with the question's text and type beside them."""
    return store.cursor().execute(
        """
        SELECT s.question_id, g.question_type, s.method, s.metric, s.value, s.norm, s.status, s.judge,
               s.detail, g.question
        FROM scores s
        JOIN runs r USING (run_id)
        LEFT JOIN golden_items g ON g.dataset_id = r.golden_dataset_id AND g.question_id = s.question_id
        WHERE s.run_id = ?
        ORDER BY s.method, s.question_id, s.metric
        """,
        [run_id],
    ).df()


def wide(scores: pd.DataFrame) -> pd.DataFrame:
    """`run_scores` as one row per (question, method) and one column per metric (values in own scale)."""
    return scores.pivot(index=["question_id", "question_type", "method"], columns="metric",
                        values="value").reset_index().rename_axis(columns=None)


def method_summary(store: Store, run_id: str) -> pd.DataFrame:
    """Per method and metric: mean of the scored cells with n scored / n total (never a bare mean)."""
    return store.cursor().execute(
        f"""
        SELECT method, metric, any_value(judge) AS judge,
               avg(value) FILTER (status = {OK}) AS mean,
               count(*) FILTER (status = {OK}) AS n_scored,
               count(*) AS n_total,
               count(*) FILTER (status = {NOT_APPLICABLE}) AS n_not_applicable,
               count(*) FILTER (status = {SKIPPED}) AS n_skipped,
               count(*) FILTER (status IN {FAILED}) AS n_failed
        FROM scores WHERE run_id = ?
        GROUP BY method, metric ORDER BY metric, method
        """,
        [run_id],
    ).df()


def summary_table(store: Store, run_id: str) -> pd.DataFrame:
    """Metrics x methods, each cell "mean (n=scored/total)"; "n/a" when no cell could be scored."""
    summary = method_summary(store, run_id)
    if summary.empty:
        return pd.DataFrame()
    summary["cell"] = [
        f"{mean:.3f} (n={n}/{total})" if n else f"n/a (n=0/{total})"
        for mean, n, total in summary[["mean", "n_scored", "n_total"]].itertuples(index=False)
    ]
    table = summary.pivot(index="metric", columns="method", values="cell").rename_axis(columns=None)
    judges = summary.groupby("metric")["judge"].first()
    return table.assign(judge=judges.reindex(table.index))


