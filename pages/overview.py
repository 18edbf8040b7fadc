"""Overview: the headline (the primary scores per method and the differences that hold, in words), then per
method every metric's mean with 95% CI and n, the label counts, by question type."""
import json

import plotly.graph_objects as go
import streamlit as st

from evaluators.presentation import figures
from evaluators.queries import OWN, VIEWS
from evaluators.queries import overview as q
from evaluators.queries.compare import run_methods, run_metrics
from evaluators.queries.hypotheses import caption as tests_caption
from evaluators.queries.system import AXES, metric_options
from evaluators.records.run_status import RunStatus
from ui.common import (current_run, downloads, how_computed, md_escape, plotly_config,
                       report_button, run_header, stop_without_scores, store)
from ui.system import latency_cost_section

LABEL_TITLES = {"verdict": "Pass / partial / fail (seed 001)",
                "answer_class": "CORRECT / WRONG / DON'T KNOW (seed 003)",
                "accuracy_grade": "Factual accuracy grade A-E (seed 003)"}

run = current_run()
run_id = run["run_id"]
run_header("Overview", run)
description = json.loads(run["config"] or "{}").get("description")  # what a demo run shows and where from
if description:
    st.info(md_escape(description), icon=":material/info:")

metric_ids = run_metrics(store(), run_id)
if not metric_ids:
    stop_without_scores(run)
notice = st.container()  # a partial run says so first; filled from the view's `progress` below
colours = figures.method_colours(run_methods(store(), run_id))  # one colour per method in every chart of the run

# The headline's control sits with it; its tables are drawn once the controls below it are read too.
headline_area = st.container()
LEADER = "the best rated overall"
with headline_area:
    st.subheader("Headline")
    against = st.selectbox("Each method compared with", [LEADER, *run_methods(store(), run_id)],
                           help="The method the others are compared with in the sentences below the chart: by "
                                "default the one with the best overall rating (else the best on the first headline "
                                "score), or one you choose, e.g. the method in production.")
left, right = st.columns([2, 3])
chosen_type = left.selectbox("Question type", [q.ALL_TYPES, *q.question_types(store(), run_id)])
view = right.radio("Show scores in", VIEWS, horizontal=True,
                   help="The metric's own scale as stored; the white paper's 1-5 projection 1 + 4 x norm; "
                        "or percent, 100 x norm. Labels are shares in every view.")
# The tables above the chart are drawn once its metric, chosen below them, is known.
above = st.container()
st.subheader("By question type")
metric = st.selectbox("Metric", metric_ids, index=metric_ids.index(q.default_metric(metric_ids)))
QUALITY_KEY = f"overview-quality-{run_id}"  # the latency and cost chart's quality axis, picked in its section below
AXIS_KEY = f"overview-cost-axis-{run_id}"  # and its x axis
quality_metric, cost_axis = st.session_state.get(QUALITY_KEY), st.session_state.get(AXIS_KEY)
tables = q.view(store(), run_id, question_type=chosen_type, scale=view, metric=metric,
                baseline=None if against == LEADER else against,
                quality_metric=quality_metric if quality_metric in metric_options(metric_ids) else None,
                cost_axis=cost_axis if cost_axis in AXES else None)

with notice:
    state = tables["progress"].iloc[0] if len(tables["progress"]) else None
    # cancelled, interrupted, stopped at its budget or still running: its numbers are so far
    if state is not None and state["unfinished"]:
        st.warning(md_escape(f"Partial results: this run {state['state']}. {state['samples scored']:,} of "
                             f"{state['samples']:,} samples are scored ({state['cells stored']:,} of "
                             f"{state['cells']:,} cells); every number below is over the cells scored so far.")
                   + ("" if state["status"] in (RunStatus.QUEUED, RunStatus.RUNNING) else " Resume it on **Evaluate**."),
                   icon=":material/hourglass_bottom:")

with above:
    table = tables["metrics"]
    st.subheader("Every metric, per method")
    st.dataframe(table, width="stretch", height=min(38 + 35 * len(table), 800))
    st.caption("Mean of the cells scored `ok` with Student's t 95% interval; n = scored / total (not-applicable and "
               "failed cells are counted in total, never averaged). abstains: the answers that abstain (answer_class DON'T "
               "KNOW), of all; faithfulness and the other metrics of the answer's own claims leave them out (not "
               "applicable: no claim to check), so read their mean beside it." + ("" if view == OWN else f" Shown in {view}."))
    for note in tables["unscored"]["note"]:  # a row without a mean says why
        st.caption(md_escape(note))
    downloads(table.reset_index(), f"{run_id}-overview", "overview")

    st.subheader("Verdicts, classes and grades")
    # One table under the other, each the page's width: side by side, three tables of a method name and up to 7
    # counts were cut at 1400 px (their last columns scrolled out of sight).
    for label_metric, title in LABEL_TITLES.items():
        labels = tables[label_metric]
        st.markdown(f"**{title}**" + (": not scored in this run" if labels.empty else ""))
        if not labels.empty:
            st.dataframe(labels, width="stretch", key=f"labels-{label_metric}")

    spread = tables["repeatability"]
    if not spread.empty:
        st.subheader("Judge repeatability")
        st.dataframe(spread, hide_index=True, width="stretch",
                     column_config={"samples whose replies disagree": st.column_config.NumberColumn(format="percent")})
        st.caption("The judge was asked several times per sample (Evaluate's repeats): every score above is the mean "
                   "of the replies (labels: the majority). Here, how much the replies of one sample differ: the "
                   "standard deviation of the metric's value across them (its own scale), and the share of samples "
                   "where they do not all agree (a rating or a verdict that flips).")

    # the RAG system's own latency and cost (all questions), when its answers record them
    system_how = latency_cost_section(tables, metric_ids, colours, run_id, QUALITY_KEY, AXIS_KEY)

with headline_area:
    scores = tables["headline"]
    if scores.empty:
        st.caption("This run scored none of the headline metrics (" + ", ".join(q.HEADLINE) + "): see every "
                   "metric below.")
    else:
        st.plotly_chart(figures.headline(scores, colours), config=plotly_config(f"{run_id}-headline"),
                        key="headline-chart")
        st.caption("All questions of the run; each bar is a method's mean with its 95% interval (hover: n scored of "
                   "all). Pass rate: the share of `pass` verdicts (seed 001); correct answers: the share classed "
                   "CORRECT (seed 003).")
    for sentence in tables["findings"]["sentence"]:
        st.markdown("- " + md_escape(sentence))  # method names are uploaded text
    if tables["findings"]["metric"].notna().any():
        st.caption("A difference is listed when it holds on the questions both methods answered, after the "
                   "correction below; in brackets its 95% interval. Compare has every metric. "
                   + tests_caption(secondary=False))
    judge = tables["judge"].iloc[0]
    model = f" ({judge['model']})" if judge["model"] else ""
    if judge["agreement measured"]:
        st.info("Scored by the **offline judge**: heuristics and small local models (word coverage, MiniLM "
                "similarity, a MiniLM cross-encoder and two logistic models fitted on public human labels), not an "
                "LLM, so treat the scores as indicative. Its measured agreement with people on these metrics is "
                "below (and for every metric in *How scores are computed*).", icon=":material/info:")
        with st.expander("How well the offline judge agrees with people on the headline metrics"):
            st.dataframe(tables["agreement"], hide_index=True, width="stretch")
    elif judge["calibrated"]:
        st.info(md_escape(f"Scored by {judge['label']}{model}. {judge['calibrated']}."), icon=":material/info:")
    else:
        st.info(md_escape(f"Scored by {judge['label']}{model}. Its agreement with people has not been measured "
                          f"here: the offline judge's figures do not carry over. Measure it on labelled items that "
                          f"ship with RAGScope: Evaluate's Calibrate the judge, or python -m evaluators judge "
                          f"calibrate."), icon=":material/info:")
    if len(tables["calibration"]):
        with st.expander("How well this judge agreed with people when it was calibrated"):
            st.dataframe(tables["calibration"], hide_index=True, width="stretch")
with headline_area:  # the headline and the rest of the run as one file to send, against the method chosen above
    report_button(run_id, baseline=None if against == LEADER else against)

bars = tables["by_question_type_chart"]
figure = go.Figure()
for method in sorted(bars["method"].unique()):
    part = bars[bars["method"] == method]
    figure.add_bar(name=figures.plot_label(method), x=[figures.plot_label(t) for t in part["question_type"]],
                   y=part["mean"],
                   marker_color=colours.get(method),
                   error_y={"type": "data", "symmetric": False, "array": part["ci_high"] - part["mean"],
                            "arrayminus": part["mean"] - part["ci_low"]},
                   customdata=part[["n_scored", "n_total"]],
                   hovertemplate="%{x}<br>mean %{y:.3f}<br>n %{customdata[0]}/%{customdata[1]}<extra>"
                                 + figures.plot_label(method) + "</extra>")
figure.update_layout(barmode="group", height=380, margin={"t": 30, "b": 10}, yaxis_title=f"{metric} ({view})",
                     legend_title="method")
st.plotly_chart(figure, config=plotly_config(f"{run_id}-{metric}-by-type"))
st.dataframe(tables["by_question_type"], hide_index=True, width="stretch")

how_computed(table.index, intro=system_how)
