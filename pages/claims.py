"""Claims: one question at a time. Every method's answer side by side with its claims highlighted
by verdict, its key scores first, the claim table, the retrieved chunks (shared ones marked), the
reference claims, TP/FP/FN, generated questions and the raw judge calls behind the numbers."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from evaluators.judges import of_run
from evaluators.queries import claims as q
from evaluators.records import OK
from evaluators.presentation import highlight as hl
from ui.common import current_run, how_computed, md_escape as md, run_line, store

run = current_run()
run_id = run["run_id"]
judge = of_run(run)
st.title("Claims")
st.html(hl.caption(run_line(run)))


# -- the question ----------------------------------------------------------------------------------

def _go(question_id: str) -> None:
    """Callback (runs before the script): show `question_id` here and on every screen that follows it."""
    st.session_state["question_id"] = question_id
    st.session_state["claims-question"] = question_id


search = st.text_input("Search questions and answers", key="claims-search",
                       placeholder="part of a question id or text, or of an answer",
                       help="Case-insensitive: the questions whose id or text, or one of whose answers, contains it. "
                            "Previous and Next step through the matching questions by id.",
                       on_change=lambda: st.session_state.update({"claims-new-search": True}))
# A set another screen opened (Diagnosis: the questions behind a number), in this run only.
subset = st.session_state.get("claims-only")
if subset is not None and subset["run_id"] != run_id:  # opened for another run
    del st.session_state["claims-only"]
    subset = None
only = subset["ids"] if subset else None
if subset:
    note, every = st.columns([8, 2], vertical_alignment="center")
    note.info(f"{len(only)} question{'s' if len(only) != 1 else ''}: {md(subset['title'])}. Previous and Next step "
              "through them.")
    every.button("Every question", key="claims-every", width="stretch",
                 on_click=lambda: st.session_state.pop("claims-only", None))
options, n_matches = q.question_options(store(), run_id, search, limit=q.OPTIONS_LIMIT, only=only)
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
previous, following = q.neighbours(store(), run_id, question_id, search, only=only)
back.button("Previous", disabled=previous is None, on_click=_go, args=(previous,), width="stretch")
forward.button("Next", disabled=following is None, on_click=_go, args=(following,), width="stretch")
if n_matches > len(options):
    st.caption(f"The list shows the first {len(options)} of {n_matches} questions by id; search to find the others.")

answered = list(q.answers(store(), run_id, question_id)["method"])
question_box = st.container()  # filled from the view, which needs the methods picked below it
methods = answered
if len(methods) > q.MAX_COLUMNS:
    methods = st.multiselect("Methods side by side", methods, default=methods[:q.MAX_COLUMNS], key="claims-methods")
tables = q.view(store(), run_id, question_id=question_id, methods=methods)
with question_box:
    item = tables["question"].iloc[0]
    st.html(hl.text_box(item["question"], label="Question" + (f" · {item['question_type']}" if item["question_type"]
                                                               else "")))
    st.html(hl.text_box(item["reference"], label="Reference answer"))
    if item["evidence"]:
        with st.expander("Evidence given in the golden set"):
            st.text(item["evidence"])
if not answered:
    st.info("No method of this run answered this question.")
    st.stop()
if not methods:
    st.info("Pick at least one method to compare.")
    st.stop()


def _columns():
    """One column per method, in the same order in every section, so the sections line up."""
    return zip(methods, st.columns(len(methods)))


def _method_label(method: str, column) -> None:
    column.html(f'<div style="font-size:0.85em;{hl.MUTED}">{hl.esc(method)}</div>')


def _of(name: str, method: str) -> pd.DataFrame:
    """The method's rows of a table of the view, without the method column (the column says it)."""
    frame = tables[name]
    return frame[frame["method"] == method].drop(columns="method")


# -- answers with their key scores -------------------------------------------------------------------

st.subheader("Answers")
st.html(hl.legend())
if tables["answer_claims"].empty and tables["reference_claims"].empty:
    st.caption("No claims were extracted for this question: the run computed no claim metrics, or the judge "
               "failed on it (see the scores' status).")
answer_text = dict(zip(tables["answers"]["method"], tables["answers"]["answer"]))
for i, (method, col) in enumerate(_columns()):
    col.html(hl.heading(method))
    key = _of("key_scores", method)
    chips = [(m, v) for m, v in key.iloc[0].items() if isinstance(v, str)] if len(key) else []
    col.html(hl.score_chips(chips) if chips else f'<i style="{hl.MUTED}">no key scores in this run</i>')
    marks = hl.claim_marks(_of("answer_claims", method), _of("chunks", method))
    col.html(hl.highlight(answer_text[method], marks, column=i))
    scores = _of("scores", method)
    if "judge replies" in scores and not (scores["judge replies"] != "").any():
        scores = scores.drop(columns="judge replies")
    with col.expander(f"All {len(scores)} scores of this answer"):
        st.dataframe(scores, hide_index=True, width="stretch")

# -- claim tables ------------------------------------------------------------------------------------

st.subheader("Answer claims")
st.caption("Verdict of each answer claim against the retrieved chunks (supported by any chunk wins, then "
           "contradicted); the chunks that support it; the reference claims an LLM judge matched to it; the latest "
           "human verdict (labels are added on **Error analysis**).")
for method, col in _columns():
    rows = _of("answer_claims", method)
    _method_label(method, col)
    if rows.empty:
        col.caption("No answer claims.")
        continue
    col.dataframe(rows, hide_index=True, width="stretch", key=f"claims-table-{method}",
                  column_config={"text": st.column_config.TextColumn(width="medium")})

# -- retrieved chunks --------------------------------------------------------------------------------

st.subheader("Retrieved chunks")
st.caption("Relevance is the judge's (score 0-100); a chunk is used when it supports at least one answer claim. "
           "Shared: another method retrieved the very same text. Claim links [n] in the answers jump to chunk n.")
for i, (method, col) in enumerate(_columns()):
    rows = _of("chunks", method)
    _method_label(method, col)
    if rows.empty:
        col.caption("No retrieved chunks.")
        continue
    col.dataframe(rows, hide_index=True, width="stretch", key=f"chunks-table-{method}")
    col.html(hl.chunk_cards(hl.cards(_of("chunks", method)), column=i))

# -- reference claims --------------------------------------------------------------------------------

st.subheader("Reference claims")
st.caption("Attributable: the reference claim's verdict against the retrieved chunks (context recall). Covered by "
           "the answer: its verdict against the answer's claims (completeness; not covered = FN).")
for method, col in _columns():
    rows = _of("reference_claims", method)
    _method_label(method, col)
    if rows.empty:
        col.caption("No reference claims.")
        continue
    col.dataframe(rows, hide_index=True, width="stretch", key=f"reference-table-{method}",
                  column_config={"text": st.column_config.TextColumn(width="medium")})

# -- TP / FP / FN ------------------------------------------------------------------------------------

st.subheader("TP / FP / FN of answer correctness")
COUNT_LISTS = {"TP": "TP: answer claims the reference supports",
               "FP": "FP: answer claims the reference does not support",
               "FN": "FN: reference claims the answer does not cover"}
for method, col in _columns():
    _method_label(method, col)
    row = _of("tp_fp_fn", method)
    if row.empty:
        col.caption("answer_correctness_f1 was not computed in this run.")
        continue
    row = row.iloc[0]
    if row["status"] != OK or pd.isna(row["TP"]):
        # the detail may quote a judge server's error message: shown escaped, never as markdown
        col.html(hl.caption(f"answer_correctness_f1: {row['status']}"
                            + (f" ({row['detail']})" if isinstance(row["detail"], str) else "")))
        continue
    col.html(hl.score_chips([("TP", str(row["TP"])), ("FP", str(row["FP"])), ("FN", str(row["FN"])),
                             ("F1", f"{row['F1']:.3f}")]))
    listed = _of("tp_fp_fn_claims", method)
    for kind, name in COUNT_LISTS.items():
        col.markdown(f"**{name}**")
        col.html(hl.text_list(list(listed.loc[listed["kind"] == kind, "claim"])))
    if not row["lists match counts"]:
        col.caption("These lists were stored before each claim's verdict against the other side was (a run of an "
                    "older version): the counts above are the exact ones.")

# -- generated questions and judge calls -------------------------------------------------------------

st.subheader("Generated questions")
if not judge.generates_questions:
    st.caption("The offline judge generates no questions: its answer_relevance is the cosine of the question and "
               "the answer.")
elif tables["generated_questions"].empty:
    st.caption("No generated questions were stored for this question (answer_relevance not computed, or the "
               "judge failed).")
else:
    for method, col in _columns():
        _method_label(method, col)
        mine = _of("generated_questions", method)
        if mine.empty:
            col.caption("none")
        else:
            col.dataframe(mine, hide_index=True, width="stretch")

st.subheader("Judge calls")
if not judge.makes_calls:
    st.caption("The offline judge makes no calls: its verdicts are computed locally (see How scores are computed).")
elif tables["judge_calls"].empty:
    st.caption("No judge call was recorded for this question.")
else:
    for method, col in _columns():
        _method_label(method, col)
        mine = _of("judge_calls", method)
        if mine.empty:
            col.caption("none")
            continue
        col.dataframe(mine.drop(columns=["request", "response"]), hide_index=True, width="stretch")
        for n, call in enumerate(mine.itertuples(index=False), start=1):
            with col.expander(f"Call {n}: {call.purpose} · {call.status}" + (" · cached" if call.cached else "")):
                st.caption("Request")
                st.code(call.request or "", language="json", wrap_lines=True)
                st.caption("Response")
                st.code(call.response or "(no response)", language="json", wrap_lines=True)

how_computed([*q.KEY_METRICS, "context_recall", "completeness", "hallucination_rate", "context_utilization",
              "noise_sensitivity_relevant", "noise_sensitivity_irrelevant", "ragchecker_hallucination", "self_knowledge"])
