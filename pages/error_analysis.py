"""Error analysis: the samples that match a filter or a search, worst first; under the list the selected one, its
question, reference, answer (claims highlighted) and chunks beside its labels (claim verdicts, score overrides,
tags, a note) and the judge's output; judge-human agreement."""
from __future__ import annotations

import hashlib
import json

import pandas as pd
import streamlit as st

from evaluators import records
from evaluators.records.judgments import VERDICTS
from evaluators.metrics.registry import lookup
from evaluators.queries import claims as qc
from evaluators.queries import errors as q
from evaluators.queries.compare import selected_row
from evaluators.queries import question_types
from evaluators.presentation import highlight as hl
from ui.common import current_run, downloads, open_question, run_line, stop_without_scores, store

STATUSES = tuple(s for s in records.STATUSES if s != records.OK)  # the statuses a cell can be filtered by
ROW_LIMITS = (50, 100, 500, 1000)

run = current_run()
run_id = run["run_id"]
st.title("Error analysis")
st.html(hl.caption(run_line(run)))
if flash := st.session_state.pop("ea-flash", None):
    st.success(flash)

facets = q.run_facets(store(), run_id)
if not facets["methods"]:
    stop_without_scores(run)

# -- filters -----------------------------------------------------------------------------------------

metrics = facets["metrics"]
types = question_types(store(), run_id)
search = st.text_input("Search questions and answers", key="ea-search",
                       placeholder="part of a question (its text or id) or of an answer",
                       help="Case-insensitive: keeps the samples whose question or answer contains it.")
row1 = st.columns(3)
methods = row1[0].multiselect("Methods", facets["methods"], key="ea-methods", placeholder="every method")
chosen_types = row1[1].multiselect("Question types", types, key="ea-types", placeholder="every type",
                                   format_func=lambda t: t or "(none)")
sort_metric = row1[2].selectbox("Worst first on", metrics, key="ea-sort",
                                index=metrics.index("judge_overall") if "judge_overall" in metrics else 0)

row2 = st.columns([1, 2])
filter_metric = row2[0].selectbox("Metric range", ["(none)", *metrics], key="ea-filter-metric",
                                  help="Keep the samples whose value of this metric, in its own scale, lies in the "
                                       "range. A cell that is not ok (failed, not applicable) never does.")
low = high = None
if filter_metric != "(none)":
    scale = lookup(filter_metric).range
    lowest, highest = scale.low, scale.high
    picked = row2[1].slider(f"Range of {filter_metric}", lowest, highest, (lowest, highest),
                            step=scale.step, key=f"ea-range-{filter_metric}")
    low = picked[0] if picked[0] > lowest else None
    high = picked[1] if picked[1] < highest else None
    if low is None and high is None:
        row2[1].caption("Narrow the range to filter.")

row3 = st.columns([1, 1, 1, 1, 1])
verdicts = row3[0].multiselect("Verdict", facets["verdict"], key="ea-verdicts", placeholder="any")
classes = row3[1].multiselect("Answer class", facets["answer_class"], key="ea-classes", placeholder="any")
statuses = row3[2].multiselect("Has a cell with status", STATUSES, key="ea-statuses", placeholder="any")
limit = row3[3].selectbox("Rows shown", ROW_LIMITS, key="ea-limit", index=1)
annotated_only = row3[4].toggle("Annotated only", key="ea-annotated")

filters = dict(methods=methods, question_types=chosen_types, metric=None if filter_metric == "(none)" else filter_metric,
               low=low, high=high, verdicts=verdicts, answer_classes=classes, statuses=statuses,
               annotated_only=annotated_only, search=search, sort_metric=sort_metric)
tables = q.view(store(), run_id, **filters, limit=limit)
matches, table = tables["matches"].iloc[0], tables["samples"]
total = int(matches["matched"])
if total == 0:
    st.warning("No sample matches these filters" + (" and the search" if search.strip() else "")
               + ". Widen the range or clear a filter" + (" or the search." if search.strip() else "."))
else:
    st.caption(f"{total} samples match; showing {len(table)}, {matches['worst first']} {sort_metric} first (cells of "
               f"{sort_metric} that are not ok last). Select a row to label it or open it on Claims.")

# The table's key follows the filters: a new list starts without a selection (a kept row index would
# point at another sample).
filter_key = hashlib.sha1(json.dumps(filters, sort_keys=True, default=str).encode()).hexdigest()[:10]
# The list at the page's width (its question, method and scores in view at 1400 px), the selected sample under it:
# beside each other both were too narrow to read.
left, right = st.container(), st.container()
with left:
    event = st.dataframe(table, hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
                         key=f"errors-table-{filter_key}", height=min(38 + 35 * max(len(table), 1), 460),
                         column_config={"question": st.column_config.TextColumn(width="large", pinned=True),
                                        "method": st.column_config.TextColumn(width="medium")})
    everything = total > len(table) and st.toggle(f"Export all {total} matches, not only the {len(table)} shown",
                                                  key="ea-export-all")
    export = q.sample_table(store(), run_id, **filters, limit=None)[0] if everything else table
    downloads(export, f"{run_id}-errors", "errors")

selected = event.get("selection", {}).get("rows", []) if event else []

# -- side panel: one sample -------------------------------------------------------------------------


def _author() -> str:
    return st.text_input("Your name", key="ea-author", value=st.session_state.get("annotator", ""),
                         on_change=lambda: st.session_state.update(annotator=st.session_state["ea-author"]),
                         help="Stored with every label you save, with the time.").strip()


def _saved(message: str) -> None:
    st.session_state["ea-flash"] = message
    st.rerun()


def _score_panel(question_id: str, method: str, author: str, shown: pd.DataFrame) -> None:
    st.dataframe(shown, hide_index=True, width="stretch", height=250)
    st.markdown("**Override a score**")
    scores = qc.sample_scores(store(), run_id, question_id)  # the judge's own value and label, stored with an override
    scores = scores[scores["method"] == method]
    catalogue = [m for m in metrics if m in set(scores["metric"])]
    metric = st.selectbox("Metric", catalogue, key="ea-override-metric",
                          index=catalogue.index(sort_metric) if sort_metric in catalogue else 0)
    judge_row = scores[scores["metric"] == metric].iloc[0]
    judge_value = None if pd.isna(judge_row["value"]) else float(judge_row["value"])
    described = lookup(metric)
    if described.labels:
        options = list(described.labels)
        label = st.selectbox("Your label", options, key=f"ea-override-label-{metric}",
                             index=options.index(judge_row["label"]) if judge_row["label"] in options else 0)
        value = described.labels[label]
    else:
        scale = described.range
        lowest, highest = scale.low, scale.high
        label = None
        start = lowest if judge_value is None else min(max(judge_value, lowest), highest)
        value = st.number_input(f"Your value ({lowest:g}-{highest:g})", lowest, highest, start,
                                step=scale.step, key=f"ea-override-value-{metric}")
    why = st.text_input("Why (optional)", key="ea-override-note")
    if st.button("Save override", key="ea-save-override"):
        if not author:
            st.error("Enter your name first: every label is stored with its author.")
        else:
            store().add_annotation(run_id=run_id, question_id=question_id, method=method, author=author, metric=metric,
                                   label=label, override_value=float(value), note=why,
                                   judge_label=judge_row["label"] if isinstance(judge_row["label"], str) else None,
                                   judge_value=judge_value)
            _saved(f"Saved your {metric} for this sample; the judge's value is kept beside it.")


def _claims_panel(question_id: str, method: str, author: str, editor: pd.DataFrame) -> None:
    if editor.empty:
        st.caption("No claims were extracted for this sample.")
        return
    st.caption("A = answer claims, R = reference claims; the verdict is against the retrieved chunks. Set your "
               "verdict where you have one (the same as the judge's means you agree), then save.")
    edited = st.data_editor(editor, hide_index=True, width="stretch", disabled=["claim", "judge verdict", "text"],
                            key=f"ea-claims-{question_id}-{method}",
                            column_config={"your verdict": st.column_config.SelectboxColumn(options=list(VERDICTS)),
                                           "text": st.column_config.TextColumn(width="large")})
    if st.button("Save claim verdicts", key="ea-save-claims"):
        claims = qc.claims(store(), run_id, question_id)  # the editor's rows, with what a label is stored with
        claims = claims[claims["method"] == method]
        changed = [(row, human) for row, human, before in zip(claims.itertuples(index=False), edited["your verdict"],
                                                               claims["human_verdict"])
                   if isinstance(human, str) and human != before]
        if not author:
            st.error("Enter your name first: every label is stored with its author.")
        elif not changed:
            st.info("No verdict changed: set one in the column *your verdict* first.")
        else:
            for row, human in changed:
                store().add_annotation(run_id=run_id, question_id=question_id, method=method, author=author,
                                       claim_source=row.source, claim_idx=int(row.claim_idx), label=human,
                                       judge_label=row.verdict, claim_text=row.text)
            agree = sum(human == row.verdict for row, human in changed)
            _saved(f"Saved {len(changed)} claim verdicts ({agree} agree with the judge).")


def _tags_panel(question_id: str, method: str, author: str) -> None:
    with st.form("ea-tags-form", clear_on_submit=True, border=False):
        tags = st.text_input("Tags (comma-separated)", key="ea-tags", placeholder="e.g. retrieval-miss, wrong-entity")
        note = st.text_area("Note", key="ea-note", height=80)
        if st.form_submit_button("Save tags and note"):
            tags_list = [t.strip() for t in tags.split(",") if t.strip()]
            if not author:
                st.error("Enter your name first: every label is stored with its author.")
            elif not tags_list and not note.strip():
                st.info("Nothing to save: write a tag or a note.")
            else:
                store().add_annotation(run_id=run_id, question_id=question_id, method=method, author=author,
                                       tags=tags_list, note=note)
                _saved("Saved your tags and note.")


with right:
    if not selected or not len(table):
        st.info("Select a row of the table to see the sample, label it or open it on Claims.")
    else:
        sample = table.iloc[selected[0]]
        question_id, method = sample["question_id"], sample["method"]
        panel = q.sample_panel(store(), run_id, question_id, method)
        text = panel["sample_text"].iloc[0]
        st.html(hl.heading(f"{question_id} · {method}", level=4))
        what, labels = st.columns([1, 1])
        with what:  # what is labelled: the question, the reference, the answer with its claims by verdict
            st.html(hl.text_box(text["question"], label="Question"))
            st.html(hl.text_box(text["reference"], label="Reference answer"))
            st.html(hl.caption(f"Answer of {method}") + hl.legend()
                    + hl.highlight(text["answer"], hl.claim_marks(panel["sample_answer_claims"],
                                                                  panel["sample_chunks"]), column=0))
            if st.button("Open on Claims", key="ea-open", type="primary"):
                open_question(question_id)
        with labels:  # its labels, the chunks first: a claim's verdict is against them
            author = _author()
            chunks_tab, scores_tab, claims_tab, tags_tab, history_tab = st.tabs(
                [f"Retrieved chunks ({len(panel['sample_chunks'])})", "Scores", "Claim verdicts", "Tags and note",
                 "Labels of this sample"])
            with chunks_tab:
                # the cards the answer's claim links [n] above jump to
                st.html(hl.chunk_cards(hl.cards(panel["sample_chunks"]), column=0))
            with scores_tab:
                _score_panel(question_id, method, author, panel["sample_scores"])
            with claims_tab:
                _claims_panel(question_id, method, author, panel["sample_claims"])
            with tags_tab:
                _tags_panel(question_id, method, author)
            with history_tab:
                if panel["sample_labels"].empty:
                    st.caption("No labels yet.")
                else:
                    st.dataframe(panel["sample_labels"], hide_index=True, width="stretch")

# -- judge-human agreement -----------------------------------------------------------------------------

st.subheader("Judge-human agreement")
st.caption("Cohen's kappa between the judge and the humans, over each annotator's latest label per item; the judge's "
           "side is the verdict or label the annotator saw. Kappa 1 is perfect agreement, 0 is chance level. "
           + ("Over the methods picked above." if methods else "Over every method."))


for block in tables["kappa"].to_dict("records"):
    st.markdown(f"**{block['agreement on']}**")
    if block["n"] == 0:
        st.caption("No annotated items yet.")
        continue
    cells = st.columns(4)
    kappa = block["Cohen's kappa"]
    cells[0].metric("Cohen's kappa", "n/a" if pd.isna(kappa) else f"{kappa:.2f}")
    cells[1].metric("Observed agreement", f"{block['observed agreement']:.0%}")
    cells[2].metric("Chance agreement", f"{block['chance agreement']:.0%}")
    cells[3].metric("n", block["n"])
    st.dataframe(tables[f"confusion: {block['agreement on']}"].set_index("judge"), width="content",
                 key=f"ea-kappa-{block['agreement on']}")
if not tables["overrides"].empty:
    st.markdown("**Score overrides**")
    st.dataframe(tables["overrides"], hide_index=True, width="stretch")
    st.caption("Per metric over the overridden cells: n, the judge's and the humans' mean in the metric's own scale, "
               "and the mean difference human - judge.")

# -- judge vs imported human ratings ------------------------------------------------------------------

st.subheader("Judge vs humans")
if tables["humans"].empty:
    st.caption("No human ratings imported for this run: import a file of ratings on **Data** (Import human labels), "
               "or with `python -m evaluators labels import FILE --run RUN_ID`.")
else:
    st.caption("Per human dimension and matching metric: n rated answers whose metric cell is ok (other cells are "
               "left out, never counted as 0; the note says why), Spearman's rho of the metric against the mean human "
               "rating, Cohen's kappa where both are labels (majority label), each with a 95% bootstrap CI over "
               "questions, and the annotators' agreement among themselves (Krippendorff's alpha) as the ceiling. "
               + ("Over the methods picked above." if methods else "Over every method."))
    st.dataframe(tables["humans"], hide_index=True, width="stretch", key="ea-humans",
                 column_config={"note": st.column_config.TextColumn(width="large")})
    downloads(tables["humans"], f"{run_id}-judge-vs-humans", "ea-humans")
    gaps = tables["disagreements"]
    pairs = list(dict.fromkeys(zip(gaps["dimension"], gaps["metric"])))
    if pairs:
        picked = st.selectbox("Largest disagreements of", range(len(pairs)), key="ea-humans-pair",
                              format_func=lambda i: f"{pairs[i][0]} vs {pairs[i][1]}")
        dimension, metric = pairs[picked]
        shown = gaps[(gaps["dimension"] == dimension) & (gaps["metric"] == metric)].reset_index(drop=True)
        gap_event = st.dataframe(shown.drop(columns=["dimension", "metric"]).dropna(axis=1, how="all"),
                                 hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
                                 key=f"ea-humans-gaps-{picked}",
                                 # question, method and the sort metric in view at 1400 px (long method names cut short)
                         column_config={"question": st.column_config.TextColumn(width="medium", pinned=True),
                                        "method": st.column_config.TextColumn(width="medium")})
        st.caption("Ratings: largest |rank difference| first (the item's percentile rank under the metric minus under "
                   "the mean human rating; + means the judge ranks it higher than people do). Labels: the items "
                   "whose judge label is not the humans' majority. Click a row to open the question on **Claims**.")
        if (qid := selected_row(shown, gap_event.get("selection", {}).get("rows", []))) is not None:
            open_question(qid)

st.subheader("All labels of this run")
every = tables["labels"]
if every.empty:
    st.caption("No labels yet: select a sample above and save a verdict, an override, tags or a note.")
else:
    st.dataframe(every, hide_index=True, width="stretch", height=300)
    downloads(every.assign(created_at=every["created_at"].dt.strftime("%Y-%m-%dT%H:%M:%S")),
              f"{run_id}-annotations", "annotations")
