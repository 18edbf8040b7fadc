"""Overview: per method, every metric's mean with 95% CI and n, the label counts, by question type."""
import json

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from evaluators.metrics.registry import in_catalogue_order, lookup
from evaluators.queries import OWN, VIEWS, in_view
from evaluators.queries import overview as q
from ui.common import (current_run, downloads, how_computed, md_escape, plotly_config,
                       run_header, stop_without_scores, store)

run = current_run()
run_id = run["run_id"]
run_header("Overview", run)
description = json.loads(run["config"] or "{}").get("description")  # what a demo run shows and where from
if description:
    st.info(md_escape(description), icon=":material/info:")

means = q.metric_means(store(), run_id, by_type=True)
if means.empty:
    stop_without_scores(run)
if run["judge"] == "offline":
    st.info("Scores with judge `offline` come from heuristics and small local models (word coverage, MiniLM "
            "similarity, a MiniLM cross-encoder and two logistic models fitted on public human labels), not from "
            "an LLM: treat them as indicative. *How scores are computed* gives each metric's measured agreement "
            "with people beside simple baselines.")

types = q.question_types(store(), run_id)
left, right = st.columns([2, 3])
chosen_type = left.selectbox("Question type", [q.ALL_TYPES, *types])
view = right.radio("Show scores in", VIEWS, horizontal=True,
                   help="The metric's own scale as stored; the white paper's 1-5 projection 1 + 4 x norm; "
                        "or percent, 100 x norm. Labels are shares in every view.")

rows = (q.metric_means(store(), run_id) if chosen_type == q.ALL_TYPES
        else means[means["question_type"] == chosen_type])
methods = sorted(rows["method"].unique())


def cell_table(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    frame["value"] = in_view(frame["mean_norm"], frame["mean"], view)
    frame["low"] = in_view(frame["ci_low_norm"], frame["ci_low"], view)
    frame["high"] = in_view(frame["ci_high_norm"], frame["ci_high"], view)
    frame["ci"] = [f"[{lo:.2f}, {hi:.2f}]" if pd.notna(lo) else "" for lo, hi in zip(frame["low"], frame["high"])]
    frame["n"] = [f"{a}/{b}" for a, b in zip(frame["n_scored"], frame["n_total"])]
    wide = frame.pivot(index="metric", columns="method", values=["value", "ci", "n"])
    table = pd.DataFrame(index=wide.index)
    for m in methods:
        table[m] = wide[("value", m)].astype(float).round(3)
        table[f"{m} 95% CI"] = wide[("ci", m)]
        table[f"{m} n"] = wide[("n", m)]
    table = table.loc[in_catalogue_order(table.index)]
    table.insert(0, "scale", [lookup(m).scale for m in table.index])
    table.insert(0, "family", [lookup(m).family for m in table.index])
    judges = frame.groupby("metric")["judge"].first()
    table["judge"] = judges.reindex(table.index)
    return table


table = cell_table(rows)
st.subheader("Every metric, per method")
st.dataframe(table, width="stretch", height=min(38 + 35 * len(table), 800))
st.caption("Mean of the cells scored `ok` with Student's t 95% interval; n = scored / total (not-applicable and "
           "failed cells are counted in total, never averaged)." + ("" if view == OWN else f" Shown in {view}."))
downloads(table.reset_index(), f"{run_id}-overview", "overview")

st.subheader("Verdicts, classes and grades")
counts = q.label_counts(store(), run_id, by_type=chosen_type != q.ALL_TYPES)
if chosen_type != q.ALL_TYPES:
    counts = counts[counts["question_type"] == chosen_type]
titles = {"verdict": "Pass / partial / fail (seed 001)", "answer_class": "CORRECT / WRONG / DON'T KNOW (seed 003)",
          "accuracy_grade": "Factual accuracy grade A-E (seed 003)"}
for col, metric in zip(st.columns(3), titles):
    col.markdown(f"**{titles[metric]}**")
    labels = q.label_table(counts, metric)
    if labels.empty:
        col.caption("not scored in this run")
    else:
        col.dataframe(labels.drop(columns="question_type").set_index("method"), width="stretch")

spread = q.repeatability(store(), run_id)
if not spread.empty:
    st.subheader("Judge repeatability")
    st.dataframe(spread.rename(columns={
        "replies": "replies per sample", "mean_sd": "mean SD within a sample",
        "share_disagreeing": "samples whose replies disagree"}),
        hide_index=True, width="stretch",
        column_config={"samples whose replies disagree": st.column_config.NumberColumn(format="percent")})
    st.caption("The judge was asked several times per sample (Evaluate's repeats): every score above is the mean of "
               "the replies (labels: the majority). Here, how much the replies of one sample differ: the standard "
               "deviation of the metric's value across them (its own scale), and the share of samples where they "
               "do not all agree (a rating or a verdict that flips).")

st.subheader("By question type")
metric_ids = in_catalogue_order(means["metric"])
metric = st.selectbox("Metric", metric_ids, index=metric_ids.index("judge_overall") if "judge_overall" in metric_ids
                      else 0)
by_type = means[means["metric"] == metric].copy()
figure = go.Figure()
for method in methods:
    part = by_type[by_type["method"] == method]
    value = in_view(part["mean_norm"], part["mean"], view)
    low = in_view(part["ci_low_norm"], part["ci_low"], view)
    high = in_view(part["ci_high_norm"], part["ci_high"], view)
    figure.add_bar(name=method, x=part["question_type"], y=value,
                   error_y={"type": "data", "symmetric": False, "array": high - value, "arrayminus": value - low},
                   customdata=part[["n_scored", "n_total"]],
                   hovertemplate="%{x}<br>mean %{y:.3f}<br>n %{customdata[0]}/%{customdata[1]}<extra>" + method
                                 + "</extra>")
figure.update_layout(barmode="group", height=380, margin={"t": 30, "b": 10}, yaxis_title=f"{metric} ({view})",
                     legend_title="method")
st.plotly_chart(figure, config=plotly_config(f"{run_id}-{metric}-by-type"))
type_table = by_type[["question_type", "method", "mean", "ci_low", "ci_high", "n_scored", "n_total"]].round(3)
st.dataframe(type_table, hide_index=True, width="stretch")

how_computed(table.index)
