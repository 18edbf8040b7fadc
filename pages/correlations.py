"""Correlations: metric x metric coefficients (Pearson, Spearman or Kendall) on the norm values of the
cells scored `ok`, pairwise complete, per method or pooled; a cell's scatter, each point one click
from Claims."""
from __future__ import annotations

import re

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from evaluators.queries import compare as qc
from evaluators.queries import correlations as q
from evaluators.presentation.figures import method_colours, plot_label as label, plot_wrap as wrap
from ui.common import md_escape as md
from ui.common import (current_run, downloads, how_computed, open_question, plotly_config, run_header,
                       stop_without_scores, store)

NAMES = {"pearson": "Pearson r", "spearman": "Spearman ρ", "kendall": "Kendall τ-b"}
TEXT_UP_TO = 20  # coefficients printed in the cells up to this many metrics; hover beyond


def jitter(values, seed: int):
    """Display-only spread of samples that share a value (1-5 scores, labels, 0/1): a fixed, tiny
    offset per point, so reruns do not move them; hovers show the true values."""
    return values + np.random.default_rng(seed).uniform(-0.04, 0.04, len(values))


run = current_run()
run_id = run["run_id"]
run_header("Correlations", run)

run_metrics = qc.run_metrics(store(), run_id)
if not run_metrics:
    stop_without_scores(run)
methods = qc.run_methods(store(), run_id)

top = st.columns([3, 2, 3])
coefficient = top[0].radio("Coefficient", q.COEFFICIENTS, format_func=NAMES.get, horizontal=True, key="cor_coef",
                           help="Pearson: linear; Spearman: monotonic (ranks); Kendall: concordant pairs, robust to "
                                "ties but slow on large runs (computed only when chosen, then cached).")
method_choice = top[1].selectbox("Samples", [q.ALL_METHODS, *methods], key="cor_method",
                                 help="One method's samples, or all methods' samples pooled (a sample is one "
                                      "question x method).")
method = None if method_choice == q.ALL_METHODS else method_choice
families = qc.metric_families(run_metrics)
chosen_families = top[2].multiselect("Metric families", families, default=families, key="cor_families")
metrics = qc.family_metrics(run_metrics, chosen_families)
if len(metrics) < 2:
    st.info("Pick metric families with at least two metrics between them.")
    st.stop()
# The pair's selectboxes are drawn below the matrix but shape the view: their values from the last script run.
asked_x, asked_y = (st.session_state.get(k) if st.session_state.get(k) in run_metrics else None
                    for k in ("cor_x", "cor_y"))

with st.spinner(f"Computing {NAMES[coefficient]} over every pair of metrics"
                + (" (Kendall takes a few seconds on large runs; cached afterwards)" if coefficient == "kendall"
                   else "") + "..."):
    tables = q.view(store(), run_id, coefficient=coefficient, samples=method_choice, families=chosen_families,
                    x=asked_x, y=asked_y)
coefficients, counts = tables["matrix"], tables["n"]
if coefficients.empty:
    st.info("Fewer than two of these metrics vary across samples scored `ok`, so there is nothing to correlate. "
            "Widen the metric families or pick another method.")
    st.stop()
usable = list(coefficients.index)
left_out = [m for m in metrics if m not in usable]

st.subheader(f"{NAMES[coefficient]} between metrics · {md(method_choice)}")
figure = go.Figure(go.Heatmap(
    z=coefficients.to_numpy(), x=usable, y=usable, zmin=-1, zmax=1, zmid=0, colorscale="RdBu",
    hoverinfo="skip", colorbar={"title": {"text": NAMES[coefficient]}},
    text=coefficients.map(lambda r: "" if r != r else f"{r:.2f}").to_numpy() if len(usable) <= TEXT_UP_TO else None,
    texttemplate="%{text}" if len(usable) <= TEXT_UP_TO else None))
# Plotly reports no clicks on heatmaps in Streamlit (streamlit#8760): invisible square markers on the cell
# centres carry the clicks and the hover (with n).
cells = [(x, y) for y in usable for x in usable]
figure.add_trace(go.Scatter(
    x=[x for x, _ in cells], y=[y for _, y in cells], mode="markers", showlegend=False,
    marker={"symbol": "square", "size": max(8, min(30, 600 // len(usable))), "color": "rgba(0,0,0,0)"},
    customdata=[(x, y, "n/a" if coefficients.loc[y, x] != coefficients.loc[y, x] else f"{coefficients.loc[y, x]:.3f}",
                 int(counts.loc[y, x])) for x, y in cells],
    hovertemplate="%{customdata[1]} × %{customdata[0]}<br>" + NAMES[coefficient]
                  + " %{customdata[2]}<br>n %{customdata[3]}<extra></extra>"))
size = min(900, 160 + 24 * len(usable))
figure.update_layout(height=size, margin={"t": 20, "b": 10},
                     xaxis={"tickangle": -45, "type": "category"},
                     yaxis={"type": "category", "autorange": "reversed"})
event = st.plotly_chart(figure, on_select="rerun", selection_mode="points", key="cor_heatmap",
                        config=plotly_config(f"{run_id}-{coefficient}-correlations"))
n_samples = int(counts.to_numpy().diagonal().max())
st.caption(f"On the `norm` values ([0, 1]) of cells scored `ok`; each coefficient uses the samples scored on both "
           f"metrics (pairwise complete; n in the hover; up to {n_samples} samples"
           + (f" of {md(method)}" if method else ", every method pooled") + "). Blank: fewer than "
           f"{q.MIN_PERIODS} samples or a constant metric. Click a cell to see its scatter below.")
if left_out:
    st.caption("Not shown (constant or never scored `ok` here): " + ", ".join(f"`{m}`" for m in left_out))
samples_name = "all" if method is None else re.sub(r"[^A-Za-z0-9_.-]+", "-", method)  # uploaded name, file name
downloads(tables["pairs"], f"{run_id}-{coefficient}-{samples_name}-correlations", "cor-matrix")

# -- one pair ----------------------------------------------------------------------------------------

# A heatmap click picks the pair; applied once per new click, so the selectboxes stay free afterwards.
cell = qc.selected_cell(event.get("selection", {}).get("points", []))
if cell is None:
    st.session_state.pop("cor_cell_applied", None)  # the same cell clicked again later applies again
elif st.session_state.get("cor_cell_applied") != cell:
    st.session_state["cor_cell_applied"] = cell
    st.session_state["cor_x"], st.session_state["cor_y"] = cell
    st.rerun()  # the scatter below is drawn for the clicked pair
default = q.default_pair(coefficients)  # the pair the view shows when none is chosen (or not shown here)
if st.session_state.get("cor_x") not in usable:
    st.session_state["cor_x"] = default[0]
if st.session_state.get("cor_y") not in usable:
    st.session_state["cor_y"] = default[1]
st.subheader("One pair, sample by sample")
pick = st.columns([2, 2, 1])
metric_x = pick[0].selectbox("x", usable, key="cor_x")
metric_y = pick[1].selectbox("y", usable, key="cor_y")
spread = pick[2].checkbox("Spread overlapping points", value=True, key="cor_jitter",
                          help="Many scores share a value (1-5, labels, 0/1): a tiny display-only offset shows how "
                               "many samples sit on each spot. Hovers give the true values.")
if metric_x == metric_y:
    st.info("Pick two different metrics (or click a cell off the diagonal).")
else:
    points = tables["scatter"]
    n_pair = int(counts.loc[metric_x, metric_y])
    r = coefficients.loc[metric_x, metric_y]
    # Spread only where samples really pile up (discrete scores); continuous ones are drawn as they are.
    spread = spread and bool(points[[metric_x, metric_y]].duplicated().mean() > 0.2)
    scatter = go.Figure()
    trace = go.Scattergl if len(points) > 1000 else go.Scatter
    colours = method_colours(methods)  # a method has its colour of every chart of the run, whatever the selection
    for m in sorted(points["method"].unique()):
        part = points[points["method"] == m]
        i = methods.index(m) if m in methods else 0  # its fixed spread
        scatter.add_trace(trace(
            x=jitter(part[metric_x], 2 * i + 1) if spread else part[metric_x],
            y=jitter(part[metric_y], 2 * i + 2) if spread else part[metric_y],
            mode="markers", name=label(m), marker={"size": 8, "opacity": 0.6, "color": colours.get(m)},
            customdata=list(zip(part["question_id"], [wrap(t) for t in part["question"]],
                                [label(t) for t in part["question_type"]], part[metric_x], part[metric_y])),
            hovertemplate="%{customdata[1]}<br>" + f"{metric_x} %{{customdata[3]:.3f}} · {metric_y} "
                          "%{customdata[4]:.3f}<br>%{customdata[2]}<extra>%{fullData.name}</extra>"))
    scatter.update_layout(height=480, margin={"t": 20, "b": 10}, legend_title="method",
                          xaxis={"title": f"{metric_x} (norm)", "range": [-0.06, 1.06]},
                          yaxis={"title": f"{metric_y} (norm)", "range": [-0.06, 1.06]})
    clicked = st.plotly_chart(scatter, on_select="rerun", selection_mode="points", key="cor_scatter",
                              config=plotly_config(f"{run_id}-{metric_x}-vs-{metric_y}"))
    st.caption(f"{NAMES[coefficient]} = " + ("n/a" if r != r else f"{r:.3f}") + f" (n {n_pair}). "
               f"{len(points)} samples shown" + (" (a fixed random sample)" if len(points) < n_pair else "")
               + (", spread slightly where they overlap" if spread else "")
               + ", one point per question x method. Click a point to open the question on **Claims**.")
    if (qid := qc.selected_question(clicked.get("selection", {}).get("points", []))) is not None:
        open_question(qid)

how_computed(usable)
