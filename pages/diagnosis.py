"""Diagnosis: why a method wins. Every (question, method) attributed to retrieval or generation, per method the share
of each label with its 95% interval, for two methods the questions one loses that the other answers and why, the rank
metrics by question type; each number of the sentences opens its questions on Claims, a label's bar or row lists them."""
from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from evaluators.presentation.figures import plot_label as label
from evaluators.queries import diagnosis as q
from evaluators.queries.attribution import BOTH, GENERATION, LABELS, OK_LABEL, RETRIEVAL, RULE, UNKNOWN
from evaluators.queries.compare import default_methods, run_methods, selected_point, selected_row
from ui.common import (current_run, downloads, how_computed, md_escape as md, open_question, open_questions,
                       plotly_config, run_header, stop_without_scores, store)

LABEL_COLOURS = {OK_LABEL: "#1a7f37", RETRIEVAL: "#9a6700", GENERATION: "#cf222e", BOTH: "#8250df",
                 UNKNOWN: "#8c959f"}

run = current_run()
run_id = run["run_id"]
run_header("Diagnosis", run)
methods = run_methods(store(), run_id)
if not methods:
    stop_without_scores(run)

pair = default_methods(methods)[0]
if (asked := st.session_state.pop("diag_pair", None)) and set(asked) <= set(methods):  # from Compare: its pair
    st.session_state["diag_a"], st.session_state[f"diag_b_{asked[0]}"] = asked
if len(methods) >= 2:
    left, right = st.columns(2)
    # the default pair where the choice was never made (an index beside a state set above would be ignored)
    first = left.selectbox("Method A", methods, key="diag_a",
                           index=0 if "diag_a" in st.session_state else methods.index(pair[0]))
    others = [m for m in methods if m != first]
    key_b = f"diag_b_{first}"
    second = right.selectbox("Method B", others, key=key_b, index=0 if key_b in st.session_state or pair[1] not in
                             others else others.index(pair[1]))
    pair = [first, second]
with st.spinner("Attributing every question..."):
    tables = q.view(store(), run_id, methods=pair if len(pair) == 2 else None)


def pick(method: str, label: str) -> None:
    """A bar or a row of the shares picked: list its questions below."""
    st.session_state["diag_pick"] = (method, label)


st.caption("Each (question, method) is labelled by the cells below it: **ok** (evidence retrieved, answer right), "
           "**generation miss** (evidence retrieved, answer wrong), **both** (evidence not retrieved, answer wrong), "
           "**retrieval miss** (evidence not retrieved, answer right all the same), **unknown** (a deciding cell "
           "failed, is not applicable or was not computed). The rule is in *How scores are computed* below.")
for line in q.rule_lines(tables["rules"]):
    st.caption(md("Decided by " + line))
for note in q.undecided_notes(tables["rules"]):
    st.warning(md(note))

# -- the pair, in sentences ---------------------------------------------------------------------------

if len(tables["sentences"]):
    st.subheader(f"{md(pair[0])} vs {md(pair[1])}: where each one loses")
    for row in tables["sentences"].to_dict("records"):
        st.markdown("- " + md(row["sentence"]))
        counts = [(r, row[r]) for r in q.REASONS if row[r]]
        for column, (reason, n) in zip(st.columns(max(1, len(counts))), counts):
            if column.button(f"{n}: {reason}", key=f"diag_lost_{row['loser']}_{reason}", width="stretch",
                             help=f"Open these questions on Claims, {row['loser']} beside {row['winner']}."):
                lost = q.behind(tables, method=row["loser"], winner=row["winner"], reason=reason)
                open_questions(lost["question_id"].tolist(), f"{row['loser']} loses to {row['winner']}, {reason}",
                               run_id)
    st.caption("A question is lost when this method's answer is wrong and the other's right (both decided). Its "
               "reason: this method's retrieval missed the evidence (the other found it, or answered without it), "
               "or it retrieved the evidence and its answer ignored it. Each number opens its questions on Claims.")

# -- shares per method ----------------------------------------------------------------------------------

st.subheader("Share of each label per method")
shares = tables["shares"]
figure = go.Figure()
for name in LABELS:
    part = shares[shares["label"] == name]
    figure.add_bar(name=name, x=[label(m) for m in part["method"]], y=part["share"], marker_color=LABEL_COLOURS[name],
                   error_y={"type": "data", "symmetric": False, "array": part["ci_high"] - part["share"],
                            "arrayminus": part["share"] - part["ci_low"]},
                   customdata=list(zip(part["method"], [name] * len(part), part["n"], part["of"])),
                   hovertemplate="%{customdata[1]}: %{customdata[2]} of %{customdata[3]} (%{y:.0%})<extra>"
                                 "%{x}</extra>")
figure.update_layout(barmode="group", height=360, margin={"t": 20, "b": 10}, yaxis_tickformat=".0%",
                     legend_title="label")
event = st.plotly_chart(figure, on_select="rerun", selection_mode="points", key="diag_shares",
                        config=plotly_config(f"{run_id}-diagnosis"))
if (clicked := selected_point(event.get("selection", {}).get("points", []))) is not None:
    if st.session_state.get("diag_clicked") != clicked[:2]:  # a new click (a kept selection applies once)
        st.session_state["diag_clicked"] = clicked[:2]
        pick(str(clicked[0]), str(clicked[1]))
table_event = st.dataframe(shares, hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
                           key="diag_shares_table")
st.caption("n of the method's questions, the share and its 95% Wilson interval. Click a bar or a row to list its "
           "questions.")
if (row := selected_row(shares, table_event.get("selection", {}).get("rows", []), "method")) is not None:
    position = table_event["selection"]["rows"][0]
    picked_label = shares["label"].iloc[position]
    if st.session_state.get("diag_row") != (row, picked_label):
        st.session_state["diag_row"] = (row, picked_label)
        pick(row, picked_label)

# -- the questions behind a number ------------------------------------------------------------------------

chosen = st.session_state.get("diag_pick")
if chosen is not None and chosen[0] in methods:
    behind = q.behind(tables, method=chosen[0], label=chosen[1])
    title = f"{chosen[0]} · {chosen[1]}"
    head, go_to = st.columns([8, 2], vertical_alignment="bottom")
    head.subheader(f"Questions: {md(title)}")
    if go_to.button("Open on Claims", key="diag_open_all", width="stretch", disabled=behind.empty,
                    help="These questions on Claims, one after another (Previous, Next)."):
        open_questions(behind["question_id"].drop_duplicates().tolist(), title, run_id)
    listed = st.dataframe(behind, hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
                          key=f"diag_behind_{'|'.join(map(str, chosen))}")
    st.caption(f"{len(behind)} questions, each with the cells that decided its label. Click a row to open the "
               "question on **Claims**.")
    if (qid := selected_row(behind, listed.get("selection", {}).get("rows", []))) is not None:
        open_question(str(qid))

# -- rank metrics -----------------------------------------------------------------------------------------

st.subheader("Rank metrics by question type")
rank = tables["rank_by_type"]
if rank.empty:
    st.info("This run has no rank metrics: its golden set names no relevant document ids (relevant_ids), so "
            "retrieval is judged from the claims (context_recall) alone.")
else:
    st.dataframe(rank, hide_index=True, width="stretch")
    st.caption("Mean of the cells scored `ok` with its 95% t interval and n; a question that names no relevant "
               "document is not applicable, never 0.")
    downloads(rank, f"{run_id}-rank-by-type", "diag-rank")

with st.expander("Every question and method, with the cells that decided its label"):
    every = tables["attribution"]
    chosen_row = st.dataframe(every, hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
                              key="diag_every")
    downloads(every, f"{run_id}-attribution", "diag-every")
    if (qid := selected_row(every, chosen_row.get("selection", {}).get("rows", []))) is not None:
        open_question(str(qid))

how_computed(["id_recall", "context_recall", "answer_class", "answer_correctness_f1", "completeness"], intro=RULE)
