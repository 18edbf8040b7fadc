"""Claims screen queries: one question of a run at a time, every method's answer, scores, claims,
chunks, reference claims, TP/FP/FN, generated questions and judge calls; `view` gives the screen's
tables as shown.

Every query is filtered to (run_id, question_id) in SQL, so the screen reads a few hundred rows
whatever the size of the run.
"""
from __future__ import annotations

import pandas as pd

from evaluators.metrics.registry import lookup
from evaluators.queries import one_of
from evaluators.records import OK
from evaluators.store import Store

# The scores shown first for each (question, method), in this order.
KEY_METRICS = ("faithfulness", "answer_correctness_f1", "context_precision", "judge_overall", "verdict",
               "answer_class")
OPTIONS_LIMIT = 500  # questions offered at once in the picker; the search narrows the rest
MAX_COLUMNS = 3  # methods side by side when the screen opens; more are picked in a multiselect

# The run's questions: golden items of its golden set that at least one of its outputs answers.
_RUN_QUESTIONS = """
    SELECT g.question_id, g.question_type, g.question, g.reference, g.evidence
    FROM golden_items g JOIN runs r ON g.dataset_id = r.golden_dataset_id
    WHERE r.run_id = $run_id AND EXISTS (
        SELECT 1 FROM rag_outputs o
        WHERE list_contains(r.outputs_dataset_ids, o.dataset_id) AND o.question_id = g.question_id)
"""
# A question matches a search when its id, its text or one of the run's answers to it contains it.
_SEARCH = """($search = '' OR contains(lower(question_id), lower($search))
              OR contains(lower(question), lower($search))
              OR question_id IN (SELECT o.question_id FROM rag_outputs o JOIN runs r
                                 ON list_contains(r.outputs_dataset_ids, o.dataset_id)
                                 WHERE r.run_id = $run_id AND contains(lower(o.answer), lower($search))))"""


def _among(only: list[str] | None, params: dict) -> str:
    """The condition keeping the questions of `only` (None: every question)."""
    if only is None:
        return "TRUE"
    params["only"] = list(only)
    return "list_contains($only, question_id)"


def question_options(store: Store, run_id: str, search: str = "", limit: int = OPTIONS_LIMIT, *,
                     only: list[str] | None = None) -> tuple[pd.DataFrame, int]:
    """The run's questions whose id or text, or an answer to which, contains `search` (case-insensitive), by id, at most
    `limit` of them, and how many match in all; of the questions `only` when given (a set another screen opened)."""
    params = {"run_id": run_id, "search": search.strip(), "limit": limit}
    frame = store.cursor().execute(
        f"""
        SELECT question_id, coalesce(question_type, '') AS question_type, question, count(*) OVER () AS n_matches
        FROM ({_RUN_QUESTIONS}) WHERE {_SEARCH} AND {_among(only, params)}
        ORDER BY question_id LIMIT $limit
        """, params).df()
    total = int(frame["n_matches"].iloc[0]) if len(frame) else 0
    return frame.drop(columns="n_matches"), total


def neighbours(store: Store, run_id: str, question_id: str, search: str = "", *,
               only: list[str] | None = None) -> tuple[str | None, str | None]:
    """The questions just before and after `question_id` (by id) among those matching `search` (of `only`)."""
    params = {"run_id": run_id, "search": search.strip(), "qid": question_id}
    rows = store.cursor().execute(
        f"""
        SELECT max(question_id) FILTER (question_id < $qid), min(question_id) FILTER (question_id > $qid)
        FROM ({_RUN_QUESTIONS}) WHERE {_SEARCH} AND {_among(only, params)}
        """, params).fetchall()
    return rows[0] if rows else (None, None)


def question(store: Store, run_id: str, question_id: str) -> dict | None:
    """The golden item (question, type, reference, evidence) of one question of the run, or None."""
    frame = store.cursor().execute(f"SELECT * FROM ({_RUN_QUESTIONS}) WHERE question_id = $qid",
                                   {"run_id": run_id, "qid": question_id}).df()
    return None if frame.empty else frame.iloc[0].to_dict()


def answers(store: Store, run_id: str, question_id: str) -> pd.DataFrame:
    """Each method's answer to the question, with its number of retrieved chunks, by method."""
    return store.cursor().execute(
        """
        SELECT o.method, o.answer, len(o.contexts) AS n_chunks
        FROM rag_outputs o JOIN runs r ON list_contains(r.outputs_dataset_ids, o.dataset_id)
        WHERE r.run_id = ? AND o.question_id = ?
        ORDER BY o.method
        """, [run_id, question_id]).df()


def sample_scores(store: Store, run_id: str, question_id: str) -> pd.DataFrame:
    """Every score cell of the question (all methods), with the label of label metrics and the
    latest human override beside the judge's value (never in place of it)."""
    return store.cursor().execute(
        """
        WITH human AS (
            SELECT method, metric, label AS human_label, override_value AS human_value, author AS human_author
            FROM annotations
            WHERE run_id = $run_id AND question_id = $qid AND metric IS NOT NULL
              AND (override_value IS NOT NULL OR label IS NOT NULL)
            QUALIFY row_number() OVER (PARTITION BY method, metric ORDER BY created_at DESC, annotation_id) = 1
        )
        SELECT s.method, s.metric, s.value, s.norm, s.status, s.judge, s.detail, s.repeats,
               s.label,
               h.human_value, h.human_label, h.human_author
        FROM scores s LEFT JOIN human h USING (method, metric)
        WHERE s.run_id = $run_id AND s.question_id = $qid
        ORDER BY s.method, s.metric
        """, {"run_id": run_id, "qid": question_id}).df()


def claims(store: Store, run_id: str, question_id: str) -> pd.DataFrame:
    """Every claim of the question (answer and reference, all methods), with the latest human
    verdict beside the judge's."""
    return store.cursor().execute(
        """
        WITH human AS (
            SELECT method, claim_source AS source, claim_idx, label AS human_verdict, author AS human_author
            FROM annotations
            WHERE run_id = $run_id AND question_id = $qid AND claim_idx IS NOT NULL AND label IS NOT NULL
            QUALIFY row_number() OVER (PARTITION BY method, claim_source, claim_idx
                                       ORDER BY created_at DESC, annotation_id) = 1
        )
        SELECT c.method, c.source, c.claim_idx, c.text, c.verdict, c.chunk_ids, c.matched_claims, c.reason,
               c.other_side_verdict,
               h.human_verdict, h.human_author
        FROM claims c LEFT JOIN human h USING (method, source, claim_idx)
        WHERE c.run_id = $run_id AND c.question_id = $qid
        ORDER BY c.method, c.source, c.claim_idx
        """, {"run_id": run_id, "qid": question_id}).df()


def chunks(store: Store, run_id: str, question_id: str) -> pd.DataFrame:
    """Each method's retrieved chunks in rank order (chunk_idx 0-based) with the judge's relevance,
    whether the answer used it, the answer and reference claims it supports (by claim_idx) and the
    other methods that retrieved the very same text."""
    return store.cursor().execute(
        """
        WITH ranked AS (
            SELECT o.method, unnest(range(len(o.contexts))) AS chunk_idx, unnest(o.contexts) AS c
            FROM rag_outputs o JOIN runs r ON list_contains(r.outputs_dataset_ids, o.dataset_id)
            WHERE r.run_id = $run_id AND o.question_id = $qid
        ), chunk AS (
            SELECT method, chunk_idx, c.chunk_id AS chunk_id, c.text AS text FROM ranked
        ), cl AS (
            SELECT method, source, claim_idx, chunk_ids FROM claims WHERE run_id = $run_id AND question_id = $qid
        )
        SELECT k.method, k.chunk_idx, k.chunk_id, k.text, v.relevant, v.relevance_score, v.used_by_answer,
               v.reason,
               coalesce((SELECT list(cl.claim_idx ORDER BY cl.claim_idx) FROM cl
                         WHERE cl.method = k.method AND cl.source = 'answer'
                           AND list_contains(cl.chunk_ids, k.chunk_id)), []) AS supports_answer,
               coalesce((SELECT list(cl.claim_idx ORDER BY cl.claim_idx) FROM cl
                         WHERE cl.method = k.method AND cl.source = 'reference'
                           AND list_contains(cl.chunk_ids, k.chunk_id)), []) AS supports_reference,
               coalesce((SELECT list(DISTINCT o.method ORDER BY o.method) FROM chunk o
                         WHERE o.method <> k.method AND o.text = k.text), []) AS shared_with
        FROM chunk k
        LEFT JOIN chunk_verdicts v ON v.run_id = $run_id AND v.question_id = $qid AND v.method = k.method
                                  AND v.chunk_idx = k.chunk_idx
        ORDER BY k.method, k.chunk_idx
        """, {"run_id": run_id, "qid": question_id}).df()


def tp_fp_fn(store: Store, run_id: str, question_id: str) -> pd.DataFrame:
    """Per method: TP, FP and FN of answer_correctness_f1 (its stored counts) and the
    claims behind them, from each claim's verdict against the other side (seed 002): TP = answer
    claims the reference supports, FP = the other answer claims, FN = reference claims the answer
    does not cover. `lists_match_counts` checks the lists against the counts."""
    return store.cursor().execute(
        """
        WITH f1 AS (
            SELECT method, value AS f1, status, detail, counts['TP'] AS tp, counts['FP'] AS fp, counts['FN'] AS fn
            FROM scores WHERE run_id = $run_id AND question_id = $qid AND metric = 'answer_correctness_f1'
        ), c AS (
            SELECT method,
                   list(text ORDER BY claim_idx) FILTER (source = 'answer' AND other_side_verdict = 'supported')
                       AS tp_claims,
                   list(text ORDER BY claim_idx) FILTER (source = 'answer' AND other_side_verdict <> 'supported')
                       AS fp_claims,
                   list(text ORDER BY claim_idx) FILTER (source = 'reference' AND other_side_verdict <> 'supported')
                       AS fn_claims
            FROM claims WHERE run_id = $run_id AND question_id = $qid GROUP BY method
        )
        SELECT f1.method, f1.f1, f1.status, f1.detail, f1.tp, f1.fp, f1.fn,
               coalesce(c.tp_claims, []) AS tp_claims, coalesce(c.fp_claims, []) AS fp_claims,
               coalesce(c.fn_claims, []) AS fn_claims,
               len(coalesce(c.tp_claims, [])) = f1.tp AND len(coalesce(c.fp_claims, [])) = f1.fp
                   AND len(coalesce(c.fn_claims, [])) = f1.fn AS lists_match_counts
        FROM f1 LEFT JOIN c USING (method)
        ORDER BY f1.method
        """, {"run_id": run_id, "qid": question_id}).df()


def generated_questions(store: Store, run_id: str, question_id: str) -> pd.DataFrame:
    """The questions an LLM judge generated from each method's answer (answer relevance)."""
    return store.cursor().execute(
        "SELECT method, idx, text FROM generated_questions WHERE run_id = ? AND question_id = ? ORDER BY method, idx",
        [run_id, question_id]).df()


def judge_calls(store: Store, run_id: str, question_id: str) -> pd.DataFrame:
    """Every judge call made for the question with its raw request and response, in the order of the
    judge's steps (extraction, verification, holistic, each before its repair call). The calls of one
    batch share `created_at`; within a step they come in the order they were written (the engine's
    order): the time of each retry is not recorded. The `judge_calls` view gives each request back from
    its packed parts; the insertion order (rowid) is the packed table's."""
    return store.cursor().execute(
        """
        SELECT c.method, c.purpose, c.status, c.model, c.input_tokens, c.output_tokens, c.latency_ms, c.cached,
               c.error, c.created_at, c.request, c.response, c.call_id
        FROM judge_calls c JOIN judge_calls_packed p USING (call_id, run_id, question_id)
        WHERE c.run_id = ? AND c.question_id = ?
        ORDER BY c.method, c.created_at,
                 CASE split_part(c.purpose, '_', 1) WHEN 'extraction' THEN 0 WHEN 'verification' THEN 1
                                                    WHEN 'holistic' THEN 2 ELSE 3 END,
                 c.purpose, p.rowid
        """, [run_id, question_id]).df()


# --------------------------------------------------------------------------- the screen


def view(store: Store, run_id: str, *, question_id: str | None = None, search: str = "",
         methods: list[str] | None = None) -> dict[str, pd.DataFrame]:
    """The Claims screen's tables for one question, as shown: the question, each method's answer, its key
    scores (one column per key metric, the human's value beside the judge's) and all its scores, the answer
    claims, the retrieved chunks, the reference claims, TP/FP/FN and the claims behind them, the generated
    questions and the judge calls (with their raw request and response). Every table but the question has
    a `method` column, in method order.

    question_id: the question shown (default: the first by id whose id, text or an answer contains the search)
    search: part of a question's id or text, or of an answer to it, case-insensitive
    methods: the methods side by side (default: the first 3 that answered the question)
    """
    if question_id is None:
        question_id = next(iter(question_options(store, run_id, search, limit=1)[0]["question_id"]), None)
    item = question(store, run_id, question_id) if question_id is not None else None
    if question_id is not None and item is None:
        raise ValueError(f"question {question_id!r} is not one of this run's questions")
    answered = answers(store, run_id, question_id)
    picked = (list(answered["method"])[:MAX_COLUMNS] if methods is None
              else [one_of(m, list(answered["method"]), "method") for m in methods])

    def mine(frame: pd.DataFrame) -> pd.DataFrame:
        return frame[frame["method"].isin(picked)].reset_index(drop=True)

    scores = _scores(mine(sample_scores(store, run_id, question_id)))
    claim_rows = mine(claims(store, run_id, question_id))
    answer_claims, reference_claims = (claim_rows[claim_rows["source"] == s].reset_index(drop=True)
                                       for s in ("answer", "reference"))
    counts = mine(tp_fp_fn(store, run_id, question_id))
    return {
        "question": pd.DataFrame([{k: v if isinstance(v, str) else "" for k, v in item.items()}] if item else [],
                                 columns=QUESTION_COLUMNS),
        "answers": mine(answered)[["method", "answer"]],
        "key_scores": _key_scores(scores),
        "scores": scores,
        "answer_claims": _answer_claims(answer_claims),
        "chunks": _chunks(mine(chunks(store, run_id, question_id))),
        "reference_claims": _reference_claims(reference_claims),
        "tp_fp_fn": _counts(counts),
        "tp_fp_fn_claims": _count_claims(counts),
        "generated_questions": mine(generated_questions(store, run_id, question_id)),
        "judge_calls": mine(judge_calls(store, run_id, question_id))[CALL_COLUMNS].round({"latency_ms": 0}),
    }


QUESTION_COLUMNS = ["question_id", "question_type", "question", "reference", "evidence"]
CALL_COLUMNS = ["method", "purpose", "status", "input_tokens", "output_tokens", "latency_ms", "cached", "error",
                "request", "response"]


def claim_label(source: str, idx: int) -> str:
    """A claim as the screens name it: A1, A2 for the answer's claims, R1 for the reference's."""
    return f"{'A' if source == 'answer' else 'R'}{int(idx) + 1}"


def _joined(items) -> str:
    return "" if items is None else ", ".join(items)


def _shown(row: dict) -> str:
    """A score cell as shown: its label, its rounded value, or its status when it has no value."""
    if row["status"] != OK:
        return row["status"]
    if isinstance(row["label"], str):
        return row["label"]
    return f"{row['value']:.{lookup(row['metric']).range.digits}f}"


def _human(row: dict) -> str:
    if isinstance(row["human_label"], str):
        return row["human_label"]
    return "" if pd.isna(row["human_value"]) else f"{row['human_value']:g}"


def _replies(row: dict) -> str:
    """The value of each judge reply, when the judge was asked several times ("" otherwise)."""
    repeats = row["repeats"]
    if repeats is None or len(repeats) < 2:
        return ""
    return ", ".join("-" if v is None else f"{v:g}" for v in repeats)


def _scores(rows: pd.DataFrame) -> pd.DataFrame:
    """Every score of each answer as shown; the judge's replies only when it was asked several times."""
    records = rows.to_dict("records")
    table = pd.DataFrame({"method": rows["method"], "metric": rows["metric"], "value": [_shown(r) for r in records],
                          "human": [_human(r) for r in records], "judge": rows["judge"],
                          "judge replies": [_replies(r) for r in records], "detail": rows["detail"]})
    return table if (table["judge replies"] != "").any() else table.drop(columns="judge replies")


def _key_scores(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per method with a key score, one column per key metric: the score as shown, the human's beside."""
    key = scores[scores["metric"].isin(KEY_METRICS)]
    chips = key.assign(chip=[v + (f" (human {h})" if h else "") for v, h in zip(key["value"], key["human"])])
    wide = chips.pivot(index="method", columns="metric", values="chip")
    return wide.reindex(columns=[m for m in KEY_METRICS if m in wide.columns]).rename_axis(columns=None).reset_index()


def _answer_claims(rows: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "method": rows["method"],
        "claim": [claim_label("answer", i) for i in rows["claim_idx"]],
        "verdict": rows["verdict"],
        "human verdict": rows["human_verdict"].fillna(""),
        "supporting chunks": [_joined(c) for c in rows["chunk_ids"]],
        "text": rows["text"],
        "matched reference claims": [_joined(claim_label("reference", m) for m in c) if c is not None else ""
                                     for c in rows["matched_claims"]],
        "reason": rows["reason"],
    })


def _chunks(rows: pd.DataFrame) -> pd.DataFrame:
    supports = [[claim_label("answer", x) for x in a] + [claim_label("reference", x) for x in r]
                for a, r in zip(rows["supports_answer"], rows["supports_reference"])]
    return pd.DataFrame({
        "method": rows["method"], "rank": rows["chunk_idx"] + 1, "chunk_id": rows["chunk_id"],
        "relevant": rows["relevant"], "relevance": rows["relevance_score"].round(1), "used": rows["used_by_answer"],
        "supports": [_joined(s) for s in supports], "shared with": [_joined(s) for s in rows["shared_with"]],
        "text": rows["text"],
    })


def _reference_claims(rows: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "method": rows["method"],
        "claim": [claim_label("reference", i) for i in rows["claim_idx"]],
        "attributable": rows["verdict"],
        "covered by the answer": rows["other_side_verdict"].fillna("no verdict"),
        "human verdict": rows["human_verdict"].fillna(""),
        "supporting chunks": [_joined(c) for c in rows["chunk_ids"]],
        "text": rows["text"],
    })


def _counts(counts: pd.DataFrame) -> pd.DataFrame:
    """answer_correctness_f1's TP, FP, FN and F1 per method; its status and detail say why a count is missing."""
    return pd.DataFrame({
        "method": counts["method"], "status": counts["status"], "detail": counts["detail"],
        "TP": counts["tp"].astype("Int64"), "FP": counts["fp"].astype("Int64"), "FN": counts["fn"].astype("Int64"),
        "F1": counts["f1"].round(3), "lists match counts": counts["lists_match_counts"],
    })


def _count_claims(counts: pd.DataFrame) -> pd.DataFrame:
    """The claims behind each shown count (kind TP, FP or FN), one row each."""
    shown = counts[(counts["status"] == OK) & counts["tp"].notna()]
    rows = [(method, kind, claim)
            for method, tp, fp, fn in shown[["method", "tp_claims", "fp_claims", "fn_claims"]].itertuples(index=False)
            for kind, listed in (("TP", tp), ("FP", fp), ("FN", fn)) for claim in listed]
    return pd.DataFrame(rows, columns=["method", "kind", "claim"])
