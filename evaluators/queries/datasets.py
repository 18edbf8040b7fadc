"""Data and Evaluate queries: the stored datasets (`view`: the Data screen's table), which outputs
answer a golden set, and a run's cells.

Counts run in DuckDB (a join on question ids, a GROUP BY per run), so the screens stay fast with
50,000 answers and 1.5 M score cells; no row-level data is pulled into pandas here.
"""
from __future__ import annotations

import pandas as pd

from evaluators.loaders.columns import resolve_columns
from evaluators.loaders.problems import Problems
from evaluators.queries import FAILED, NOT_APPLICABLE, OK
from evaluators.store import Store

MAX_ROWS = 500  # lists on screen are capped; the newest come first


def stored_datasets(store: Store, limit: int = MAX_ROWS) -> pd.DataFrame:
    """Every stored dataset, newest first: rows (golden questions, answers), methods, format, date,
    and how many runs use it."""
    return store.cursor().execute(
        """
        SELECT d.dataset_id, d.name, d.format, d.n_golden, d.n_outputs,
               array_to_string(d.methods, ', ') AS methods, d.created_at,
               (SELECT count(*) FROM runs r WHERE r.golden_dataset_id = d.dataset_id
                                              OR list_contains(r.outputs_dataset_ids, d.dataset_id)) AS n_runs
        FROM datasets d ORDER BY d.created_at DESC, d.name LIMIT ?
        """, [limit]).df()


def view(store: Store, run_id: str | None = None) -> dict[str, pd.DataFrame]:
    """The Data screen's table, as shown: the stored datasets, newest first, at most MAX_ROWS. The screen
    shows no run's data: `run_id` is there because every screen's view is called alike (queries.screens)."""
    stored = stored_datasets(store)
    return {"datasets": stored[["name", "format", "n_golden", "n_outputs", "methods", "n_runs", "created_at",
                                "dataset_id"]].rename(columns={
        "dataset_id": "dataset", "n_golden": "golden questions", "n_outputs": "answers", "n_runs": "runs",
        "created_at": "added"})}


def recognised_columns(columns: list[str], role: str, column_map: dict | None = None) -> dict[str, str]:
    """RAGScope's field -> the file's column the loader reads it from (its aliases, the user's mapping first), for
    a file whose columns are `columns`, read as `role`: what the Data screen's mapping shows as recognised, also
    when the file could not be read (a required column missing: the others are still found)."""
    return resolve_columns(list(columns), role, column_map or {}, Problems(""))


def golden_sets(store: Store) -> pd.DataFrame:
    """The datasets that hold golden items, newest first."""
    return store.cursor().execute(
        "SELECT dataset_id, name, n_golden, created_at FROM datasets WHERE n_golden > 0 "
        "ORDER BY created_at DESC, name LIMIT ?", [MAX_ROWS]).df()


def names_relevant(store: Store, golden_dataset_id: str) -> bool:
    """Does the golden set name any question's relevant documents (relevant_ids, or reference_contexts to match
    chunks to): without them the rank metrics could only say not applicable."""
    return bool(store.cursor().execute(
        "SELECT EXISTS (SELECT 1 FROM golden_items WHERE dataset_id = ? AND "
        "(len(coalesce(relevant_ids, [])) > 0 OR len(coalesce(reference_contexts, [])) > 0))",
        [golden_dataset_id]).fetchone()[0])


def outputs_for_golden(store: Store, golden_dataset_id: str) -> pd.DataFrame:
    """Per outputs dataset and method: its answers and how many answer a question of the golden set
    (what a run would score), newest dataset first."""
    return store.cursor().execute(
        """
        WITH golden AS (SELECT question_id FROM golden_items WHERE dataset_id = ?)
        SELECT d.dataset_id, d.name, o.method, count(*) AS n_answers,
               count(g.question_id) AS n_matched, any_value(d.created_at) AS created_at
        FROM rag_outputs o JOIN datasets d USING (dataset_id)
        LEFT JOIN golden g USING (question_id)
        GROUP BY d.dataset_id, d.name, o.method
        ORDER BY created_at DESC, d.name, o.method
        """, [golden_dataset_id]).df()


def recent_runs(store: Store, limit: int = MAX_ROWS) -> pd.DataFrame:
    """The newest runs (no score counts: cheap enough to list on every rerun)."""
    return store.cursor().execute(
        """
        SELECT run_id, name, status, judge, judge_model, created_at, finished_at, n_samples,
               len(metrics) AS n_metrics
        FROM runs ORDER BY created_at DESC LIMIT ?
        """, [limit]).df()


def run_cells(store: Store, run_id: str) -> pd.DataFrame:
    """Per metric of the run: cells stored ok, not applicable, failed (judge_error, timeout; what a
    re-run recomputes) and still missing (never computed: what a resume computes)."""
    frame = store.cursor().execute(
        f"""
        WITH m AS (SELECT unnest(metrics) AS metric, generate_subscripts(metrics, 1) AS idx, n_samples
                   FROM runs WHERE run_id = ?),
             s AS (SELECT metric, count(*) FILTER (status = {OK}) AS n_ok,
                          count(*) FILTER (status = {NOT_APPLICABLE}) AS n_not_applicable,
                          count(*) FILTER (status IN {FAILED}) AS n_failed,
                          count(*) AS n_stored
                   FROM scores WHERE run_id = ? GROUP BY metric)
        SELECT m.metric, coalesce(s.n_ok, 0) AS n_ok, coalesce(s.n_not_applicable, 0) AS n_not_applicable,
               coalesce(s.n_failed, 0) AS n_failed, coalesce(s.n_stored, 0) AS n_stored, m.n_samples AS n_total
        FROM m LEFT JOIN s USING (metric) ORDER BY m.idx
        """, [run_id, run_id]).df()
    frame["n_missing"] = (frame["n_total"] - frame["n_stored"]).clip(lower=0)
    return frame.drop(columns="n_stored")


def golden_overlap(store: Store, question_ids: list[str]) -> pd.DataFrame:
    """Per stored golden set: how many of `question_ids` it holds (to pick the set an uploaded
    outputs file answers), best match first."""
    return store.cursor().execute(
        """
        WITH asked AS (SELECT DISTINCT unnest(?::VARCHAR[]) AS question_id)
        SELECT d.dataset_id, d.name, d.n_golden, count(a.question_id) AS n_matched, d.created_at
        FROM datasets d JOIN golden_items g USING (dataset_id)
        LEFT JOIN asked a USING (question_id)
        WHERE d.n_golden > 0
        GROUP BY ALL ORDER BY n_matched DESC, d.created_at DESC LIMIT ?
        """, [list(question_ids), MAX_ROWS]).df()
