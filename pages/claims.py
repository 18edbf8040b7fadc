"""Claims: one question at a time. Every method's answer side by side with its claims highlighted
by verdict, its key scores first, the claim table, the retrieved chunks (shared ones marked), the
reference claims, TP/FP/FN, generated questions and the raw judge calls behind the numbers."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from evaluators.metrics.registry import lookup
from evaluators.queries import claims as q
from evaluators.schema import OK
from ui import highlight as hl
from ui.common import current_run, how_computed, store

MAX_COLUMNS = 3  # methods side by side; more are picked in a multiselect

run = current_run()
run_id = run["run_id"]
offline = run["judge"] == "offline"
st.title("Claims")
st.html(hl.caption(f"{run['name']} · judge {run['judge']}" + (f" ({run['judge_model']})" if run["judge_model"] else "")))


# -- the question ----------------------------------------------------------------------------------

def _go(question_id: str) -> None:
    """Callback (runs before the script): show `question_id` here and on every screen that follows it."""
    st.session_state["question_id"] = question_id
    st.session_state["claims-question"] = question_id


search = st.text_input("Search questions", key="claims-search", placeholder="part of a question id or text",
                       help="Case-insensitive; Previous and Next step through the matching questions by id.",
                       on_change=lambda: st.session_state.update({"claims-new-search": True}))
options, n_matches = q.question_options(store(), run_id, search, limit=q.OPTIONS_LIMIT)
if options.empty:
    if search.strip():
        st.warning("No question of this run matches the search. Clear it to see every question.")
    else:
        st.info("This run has no answered question. Check the outputs on **Data**, then evaluate them on **Evaluate**.")
    st.stop()

labels = dict(zip(options["question_id"], options["question"]))
wanted = st.session_state.get("question_id")
new_search = st.session_state.pop("claims-new-search", False)
if wanted not in labels:
    picked = q.question(store(), run_id, wanted) if wanted and not new_search else None
    if picked is not None:
        labels = {wanted: picked["question"], **labels}  # a drill-down to a question the list does not show
    else:
        wanted = options["question_id"].iloc[0]  # a new search, no question yet, or one of another run
st.session_state["question_id"] = wanted
if st.session_state.get("claims-question") != wanted:
    st.session_state["claims-question"] = wanted

pick, back, forward = st.columns([8, 1, 1], vertical_alignment="bottom")
question_id = pick.selectbox(
    "Question", list(labels), key="claims-question", format_func=lambda i: f"{i} · {labels[i][:120]}",
    on_change=lambda: st.session_state.update(question_id=st.session_state["claims-question"]))
previous, following = q.neighbours(store(), run_id, question_id, search)
back.button("Previous", disabled=previous is None, on_click=_go, args=(previous,), width="stretch")
forward.button("Next", disabled=following is None, on_click=_go, args=(following,), width="stretch")
if n_matches > len(options):
    st.caption(f"The list shows the first {len(options)} of {n_matches} questions by id; search to find the others.")

item = {k: v if isinstance(v, str) else "" for k, v in q.question(store(), run_id, question_id).items()}
st.html(hl.text_box(item["question"], label="Question" + (f" · {item['question_type']}" if item["question_type"] else "")))
st.html(hl.text_box(item["reference"], label="Reference answer"))
if item["evidence"]:
    with st.expander("Evidence given in the golden set"):
        st.text(item["evidence"])

answers = q.answers(store(), run_id, question_id)
if answers.empty:
    st.info("No method of this run answered this question.")
    st.stop()
methods = list(answers["method"])
if len(methods) > MAX_COLUMNS:
    methods = st.multiselect("Methods side by side", methods, default=methods[:MAX_COLUMNS], key="claims-methods")
    if not methods:
        st.info("Pick at least one method to compare.")
        st.stop()

scores = q.sample_scores(store(), run_id, question_id)
claim_rows = q.claims(store(), run_id, question_id)
chunk_rows = q.chunks(store(), run_id, question_id)


def _columns():
    """One column per method, in the same order in every section, so the sections line up."""
    return zip(methods, st.columns(len(methods)))


def _method_label(method: str, column) -> None:
    column.html(f'<div style="font-size:0.85em;color:#6b7280">{hl.esc(method)}</div>')


def _shown(row) -> str:
    """A score cell as shown: its label, its rounded value, or its status when it has no value."""
    if row["status"] != OK:
        return row["status"]
    if isinstance(row["label"], str):
        return row["label"]
    return f"{row['value']:.{lookup(row['metric']).range.digits}f}"


def _replies(row) -> str:
    """The value of each judge reply, when the judge was asked several times ("" otherwise)."""
    repeats = row.get("repeats")
    if repeats is None or len(repeats) < 2:
        return ""
    return ", ".join("-" if v is None else f"{v:g}" for v in repeats)


def _human(row) -> str:
    if isinstance(row["human_label"], str):
        return row["human_label"]
    return "" if pd.isna(row["human_value"]) else f"{row['human_value']:g}"


def _ranks(method: str) -> dict[str, list[int]]:
    """chunk_id -> its ranks in the method's list (an id may repeat)."""
    ranks: dict[str, list[int]] = {}
    for cid, idx in chunk_rows.loc[chunk_rows["method"] == method, ["chunk_id", "chunk_idx"]].itertuples(index=False):
        ranks.setdefault(cid, []).append(int(idx))
    return ranks


def _label(source: str, idx: int) -> str:
    return f"{'A' if source == 'answer' else 'R'}{int(idx) + 1}"


def _marks(method: str, source: str) -> list[hl.ClaimMark]:
    ranks = _ranks(method)
    rows = claim_rows[(claim_rows["method"] == method) & (claim_rows["source"] == source)]
    return [hl.ClaimMark(_label(source, r.claim_idx), r.text, r.verdict,
                         tuple(sorted({k for c in (r.chunk_ids if r.chunk_ids is not None else []) for k in ranks.get(c, [])})),
                         tuple(r.chunk_ids if r.chunk_ids is not None else ()))
            for r in rows.itertuples(index=False)]


# -- answers with their key scores -------------------------------------------------------------------

st.subheader("Answers")
st.html(hl.legend())
if claim_rows.empty:
    st.caption("No claims were extracted for this question: the run computed no claim metrics, or the judge "
               "failed on it (see the scores' status).")
for i, (method, col) in enumerate(_columns()):
    col.html(hl.heading(method))
    mine = {r["metric"]: r for r in scores[scores["method"] == method].to_dict("records")}
    chips = [(m, _shown(mine[m]) + (f" (human {_human(mine[m])})" if _human(mine[m]) else ""))
             for m in q.KEY_METRICS if m in mine]
    col.html(hl.score_chips(chips) if chips else '<i style="color:#6b7280">no key scores in this run</i>')
    answer = answers.loc[answers["method"] == method, "answer"].iloc[0]
    col.html(hl.highlight(answer, _marks(method, "answer"), column=i))
    with col.expander(f"All {len(mine)} scores of this answer"):
        st.dataframe(pd.DataFrame({
            "metric": list(mine), "value": [_shown(r) for r in mine.values()],
            "human": [_human(r) for r in mine.values()], "judge": [r["judge"] for r in mine.values()],
            **({"judge replies": [_replies(r) for r in mine.values()]} if any(map(_replies, mine.values())) else {}),
            "detail": [r["detail"] for r in mine.values()]}), hide_index=True, width="stretch")

# -- claim tables ------------------------------------------------------------------------------------

st.subheader("Answer claims")
st.caption("Verdict of each answer claim against the retrieved chunks (supported by any chunk wins, then "
           "contradicted); the chunks that support it; the reference claims an LLM judge matched to it; the latest "
           "human verdict (labels are added on **Error analysis**).")
for method, col in _columns():
    rows = claim_rows[(claim_rows["method"] == method) & (claim_rows["source"] == "answer")]
    _method_label(method, col)
    if rows.empty:
        col.caption("No answer claims.")
        continue
    col.dataframe(pd.DataFrame({
        "claim": [_label("answer", i) for i in rows["claim_idx"]],
        "verdict": rows["verdict"].to_numpy(),
        "human verdict": rows["human_verdict"].fillna("").to_numpy(),
        "supporting chunks": [", ".join(c) if c is not None else "" for c in rows["chunk_ids"]],
        "text": rows["text"].to_numpy(),
        "matched reference claims": [", ".join(_label("reference", m) for m in c) if c is not None else ""
                                     for c in rows["matched_claims"]],
        "reason": rows["reason"].to_numpy(),
    }), hide_index=True, width="stretch", key=f"claims-table-{method}",
        column_config={"text": st.column_config.TextColumn(width="medium")})

# -- retrieved chunks --------------------------------------------------------------------------------

st.subheader("Retrieved chunks")
st.caption("Relevance is the judge's (score 0-100); a chunk is used when it supports at least one answer claim. "
           "Shared: another method retrieved the very same text. Claim links [n] in the answers jump to chunk n.")
for i, (method, col) in enumerate(_columns()):
    rows = chunk_rows[chunk_rows["method"] == method]
    _method_label(method, col)
    if rows.empty:
        col.caption("No retrieved chunks.")
        continue
    supports = [[_label("answer", x) for x in a] + [_label("reference", x) for x in r]
                for a, r in zip(rows["supports_answer"], rows["supports_reference"])]
    col.dataframe(pd.DataFrame({
        "rank": rows["chunk_idx"].to_numpy() + 1, "chunk_id": rows["chunk_id"].to_numpy(),
        "relevant": rows["relevant"].to_numpy(), "relevance": rows["relevance_score"].round(1).to_numpy(),
        "used": rows["used_by_answer"].to_numpy(), "supports": [", ".join(s) for s in supports],
        "shared with": [", ".join(s) for s in rows["shared_with"]], "text": rows["text"].to_numpy(),
    }), hide_index=True, width="stretch", key=f"chunks-table-{method}")
    col.html(hl.chunk_cards([
        hl.ChunkCard(int(r.chunk_idx), r.chunk_id, r.text, None if pd.isna(r.relevant) else bool(r.relevant),
                     None if pd.isna(r.relevance_score) else float(r.relevance_score),
                     None if pd.isna(r.used_by_answer) else bool(r.used_by_answer), tuple(s), tuple(r.shared_with))
        for r, s in zip(rows.itertuples(index=False), supports)], column=i))

# -- reference claims --------------------------------------------------------------------------------

st.subheader("Reference claims")
st.caption("Attributable: the reference claim's verdict against the retrieved chunks (context recall). Covered by "
           "the answer: its verdict against the answer's claims (completeness; not covered = FN).")
for method, col in _columns():
    rows = claim_rows[(claim_rows["method"] == method) & (claim_rows["source"] == "reference")]
    _method_label(method, col)
    if rows.empty:
        col.caption("No reference claims.")
        continue
    col.dataframe(pd.DataFrame({
        "claim": [_label("reference", i) for i in rows["claim_idx"]],
        "attributable": rows["verdict"].to_numpy(),
        "covered by the answer": rows["other_side_verdict"].fillna("no verdict").to_numpy(),
        "human verdict": rows["human_verdict"].fillna("").to_numpy(),
        "supporting chunks": [", ".join(c) if c is not None else "" for c in rows["chunk_ids"]],
        "text": rows["text"].to_numpy(),
    }), hide_index=True, width="stretch", key=f"reference-table-{method}",
        column_config={"text": st.column_config.TextColumn(width="medium")})

# -- TP / FP / FN ------------------------------------------------------------------------------------

st.subheader("TP / FP / FN of answer correctness")
counts = q.tp_fp_fn(store(), run_id, question_id)
for method, col in _columns():
    _method_label(method, col)
    row = counts[counts["method"] == method]
    if row.empty:
        col.caption("answer_correctness_f1 was not computed in this run.")
        continue
    row = row.iloc[0]
    if row["status"] != OK or pd.isna(row["tp"]):
        # the detail may quote a judge server's error message: shown escaped, never as markdown
        col.html(hl.caption(f"answer_correctness_f1: {row['status']}"
                            + (f" ({row['detail']})" if isinstance(row["detail"], str) else "")))
        continue
    col.html(hl.score_chips([("TP", str(int(row["tp"]))), ("FP", str(int(row["fp"]))), ("FN", str(int(row["fn"]))),
                             ("F1", f"{row['f1']:.3f}")]))
    for name, claims_list in (("TP: answer claims the reference supports", row["tp_claims"]),
                              ("FP: answer claims the reference does not support", row["fp_claims"]),
                              ("FN: reference claims the answer does not cover", row["fn_claims"])):
        col.markdown(f"**{name}**")
        col.html(hl.text_list(list(claims_list)))
    if not row["lists_match_counts"]:
        col.caption("These lists were stored before each claim's verdict against the other side was (a run of an "
                    "older version): the counts above are the exact ones.")

# -- generated questions and judge calls -------------------------------------------------------------

st.subheader("Generated questions")
generated = q.generated_questions(store(), run_id, question_id)
if offline:
    st.caption("The offline judge generates no questions: its answer_relevance is the cosine of the question and "
               "the answer.")
elif generated.empty:
    st.caption("No generated questions were stored for this question (answer_relevance not computed, or the "
               "judge failed).")
else:
    for method, col in _columns():
        _method_label(method, col)
        mine = generated[generated["method"] == method]
        if mine.empty:
            col.caption("none")
        else:
            col.dataframe(mine[["idx", "text"]], hide_index=True, width="stretch")

st.subheader("Judge calls")
calls = q.judge_calls(store(), run_id, question_id)
if offline:
    st.caption("The offline judge makes no calls: its verdicts are computed locally (see How scores are computed).")
elif calls.empty:
    st.caption("No judge call was recorded for this question.")
else:
    for method, col in _columns():
        _method_label(method, col)
        mine = calls[calls["method"] == method]
        if mine.empty:
            col.caption("none")
            continue
        col.dataframe(mine[["purpose", "status", "input_tokens", "output_tokens", "latency_ms", "cached", "error"]]
                      .round({"latency_ms": 0}), hide_index=True, width="stretch")
        for n, call in enumerate(mine.itertuples(index=False), start=1):
            with col.expander(f"Call {n}: {call.purpose} · {call.status}" + (" · cached" if call.cached else "")):
                st.caption("Request")
                st.code(call.request or "", language="json", wrap_lines=True)
                st.caption("Response")
                st.code(call.response or "(no response)", language="json", wrap_lines=True)

how_computed([*q.KEY_METRICS, "context_recall", "completeness", "hallucination_rate"])
