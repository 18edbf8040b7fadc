"""Compare: methods against a baseline on the same questions. Per metric the paired difference with
its 95% CI, n, p and Holm's p, win/tie/loss and both means; a question type x metric heatmap of the
difference; per question a scatter and the largest disagreements, each one click from Claims."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from evaluators.metrics.registry import SCALES, lookup
from evaluators.queries import OWN, VIEWS, bounds_in_view, difference_in_view, in_view
from evaluators.queries import compare as q
from evaluators.queries.overview import ALL_TYPES, question_types
from ui.common import md_escape as md, plot_label as label, plot_wrap as wrap
from ui.common import (current_run, downloads, how_computed, open_question, plotly_config, run_header,
                       stop_without_scores, store)

GREEN, RED, GREY = "#1a7f37", "#cf222e", "#6e7781"
# Question types: distinct colours that stay clear of the green / red of better / worse.
PALETTE = ("#1f77b4", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f")
GREEN_BG, RED_BG = "#dafbe1", "#ffebe9"
NO_TYPE = "(no type)"
SCATTER_POINTS = 3000  # a reproducible sample above this: a browser draws ~3,000 SVG points smoothly
DISAGREEMENTS = 200
CELL_QUESTIONS = 500


def type_name(t: str) -> str:
    return t if t else NO_TYPE


def listing(metric_ids: list[str], most: int = 6) -> str:
    return ", ".join(f"`{m}`" for m in metric_ids[:most]) + ("…" if len(metric_ids) > most else "")


def scale_text(scale: str) -> str:
    return "label (0-1)" if scale == "label" else SCALES[scale].text


def jitter(values: pd.Series, span: float, seed: int) -> pd.Series:
    """Display-only spread of points that share a value (1-5 scores, labels, 0/1): a fixed, tiny
    offset per point, so reruns do not move them; hovers show the true scores."""
    offsets = np.random.default_rng(seed).uniform(-0.04, 0.04, len(values)) * span
    return values + offsets


@st.cache_data(show_spinner=False, max_entries=32)
def cached_table(_store, db: str, run_id: str, version: tuple, baseline: str, others: tuple[str, ...],
                 metrics: tuple[str, ...], question_type: str | None) -> pd.DataFrame:
    return q.comparison_table(_store, run_id, baseline, list(others), metrics=list(metrics),
                              question_type=question_type)


@st.cache_data(show_spinner=False, max_entries=32)
def cached_type_deltas(_store, db: str, run_id: str, version: tuple, method_a: str, method_b: str,
                       metrics: tuple[str, ...]) -> pd.DataFrame:
    return q.type_deltas(_store, run_id, method_a, method_b, metrics=list(metrics))


def advantage_css(advantage: float | None, significant: bool) -> str:
    """Green when better for A, red when better for B; a background when Holm-significant."""
    if advantage is None or pd.isna(advantage) or advantage == 0:
        return f"color: {GREY}" if advantage is None or pd.isna(advantage) else ""
    colour, background = (GREEN, GREEN_BG) if advantage > 0 else (RED, RED_BG)
    return f"color: {colour}; font-weight: 600; background-color: {background}" if significant \
        else f"color: {colour}"


def p_text(p: float | None) -> str:
    if p is None or pd.isna(p):
        return "n/a"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def signed(x: float | None) -> str:
    return "" if x is None or pd.isna(x) else f"{x:+.3f}"


# -- the run, its methods, the choices ----------------------------------------------------------------

run = current_run()
run_id = run["run_id"]
db = store().path
run_header("Compare", run)

methods = q.run_methods(store(), run_id)
if not methods:
    stop_without_scores(run)
if len(methods) < 2:
    st.info(f"This run scored one method only ({md(methods[0])}), so there is nothing to compare it with. "
            "Upload the outputs of a second method on **Data** (one file may hold several methods, in a "
            "`method` column), then evaluate both in one run on **Evaluate**; or pick another run in the sidebar.")
    st.stop()

version = q.scores_version(store(), run_id)
run_metrics = q.run_metrics(store(), run_id)
default_chosen, default_baseline = q.default_methods(methods)
top = st.columns([3, 2, 2])
chosen = top[0].multiselect("Methods", methods, default=default_chosen, key="cmp_methods",
                            help="Two methods, or more: each is then compared with the baseline.")
if len(chosen) < 2:
    st.info("Pick at least two methods to compare.")
    st.stop()
baseline = top[1].selectbox("Baseline (B)", chosen, key=f"cmp_baseline_{'|'.join(chosen)}",
                            index=chosen.index(default_baseline) if default_baseline in chosen else len(chosen) - 1,
                            help="Differences are A - B: each other method minus this one.")
others = [m for m in chosen if m != baseline]
types = question_types(store(), run_id)
chosen_type = top[2].selectbox("Question type", [ALL_TYPES, *types], key="cmp_type",
                               format_func=lambda t: t if t == ALL_TYPES else type_name(t))
type_filter = None if chosen_type == ALL_TYPES else chosen_type
row2 = st.columns([3, 4])
families = list(dict.fromkeys(lookup(m).family for m in run_metrics))
chosen_families = row2[0].multiselect("Metric families", families, default=families, key="cmp_families")
view = row2[1].radio("Show scores in", VIEWS, horizontal=True, key="cmp_view",
                     help="The metric's own scale as stored; the white paper's 1-5 projection (a difference of "
                          "4 x norm); or percent (a difference in percentage points, 100 x norm).")
metrics = [m for m in run_metrics if lookup(m).family in chosen_families]
if not metrics:
    st.info("No metric family is selected: pick at least one above.")
    st.stop()

with st.spinner("Pairing the questions and testing every metric..."):
    table = cached_table(store(), db, run_id, version, baseline, tuple(others), tuple(metrics), type_filter)

# -- per metric ---------------------------------------------------------------------------------------

one = len(others) == 1
names = " vs ".join(md(m) for m in [*others, baseline])
st.subheader(f"{names}: paired differences per metric")
if table.empty:
    st.info("No question has an `ok` score for both methods on the metrics shown"
            + (" for this question type" if type_filter is not None else "")
            + ": widen the selection, or check the run's failed cells on **Evaluate**.")
    st.stop()

table["advantage"] = table["delta_norm"] * table["metric"].map(lambda m: lookup(m).direction).replace(0, float("nan"))
for method in others:
    rows = table[table["method"] == method]
    wins = rows[rows["significant"] & (rows["better"] == method)]["metric"].tolist()
    losses = rows[rows["significant"] & (rows["better"] == baseline)]["metric"].tolist()
    st.markdown(f"**{md(method)}** is significantly better than **{md(baseline)}** on {len(wins)} of "
                f"{len(rows)} metrics and worse on {len(losses)} (Holm-adjusted p < {q.ALPHA})"
                + (f": better on {listing(wins)}" if wins else "") + (f"; worse on {listing(losses)}" if losses else "")
                + ".")

a_name = others[0] if one else "method"
# The difference and its evidence first (TruLens hides them off-screen to the right), then the means.
shown = pd.DataFrame({
    "method": table["method"],
    "metric": table["metric"],
    f"Δ {a_name} − {baseline}" if one else f"Δ vs {baseline}":
        difference_in_view(table["delta_norm"], table["delta"], view).round(3),
    "95% CI": [f"[{lo:+.3f}, {hi:+.3f}]" if pd.notna(lo) else "n/a" for lo, hi in
               zip(difference_in_view(table["ci_low_norm"], table["ci_low"], view),
                   difference_in_view(table["ci_high_norm"], table["ci_high"], view))],
    "p (Holm)": table["p_holm"],
    "n": table["n"],
    f"{a_name} better": table["wins"],
    "ties": table["ties"],
    f"{baseline} better": table["losses"],
    f"{a_name} mean" if one else "mean": in_view(table["mean_a_norm"], table["mean_a"], view).round(3),
    f"{baseline} mean": in_view(table["mean_b_norm"], table["mean_b"], view).round(3),
    "scale": [scale_text(s) for s in table["scale"]],
    "p": table["p_value"],
    "better": table["better"].fillna("no direction"),
    "family": table["family"],
})
if one:
    shown = shown.drop(columns="method")
delta_col = [c for c in shown.columns if c.startswith("Δ")][0]
css = pd.DataFrame("", index=shown.index, columns=shown.columns)
for col in (delta_col, "95% CI", "better"):
    css[col] = [advantage_css(a, s) for a, s in zip(table["advantage"], table["significant"])]
styled = (shown.style.apply(lambda _: css, axis=None)
          .format({"p": p_text, "p (Holm)": p_text, delta_col: signed}, precision=3))
event = st.dataframe(styled, hide_index=True, width="stretch", height=min(38 + 35 * len(shown), 700),
                     on_select="rerun", selection_mode="single-row", key="cmp_table")
st.caption(
    f"Δ = mean of A − B over the n questions scored `ok` for both (B = {md(baseline)}), with its 95% interval "
    "(percentile bootstrap; t-interval above 5,000 pairs). p: two-sided paired test (Wilcoxon signed-rank, Pratt, "
    "from 20 pairs; exact sign-flip permutation below); p (Holm): adjusted over all "
    f"{int(table['p_value'].notna().sum())} rows shown. \"better\" respects each metric's direction (lower "
    "`hallucination_rate` is better); metrics without one (`dont_know`) get no wins or losses. Green: better for A, "
    "red: better for B, shaded when Holm-significant. Means are over the paired questions."
    + ("" if view == OWN else f" Shown in {view}.") + " Click a row to see that metric below.")
missing = [m for m in metrics if m not in set(table["metric"])]
if missing:
    st.caption("Not comparable (no question scored `ok` by both methods): " + ", ".join(f"`{m}`" for m in missing))
downloads(shown, f"{run_id}-compare", "cmp-table")

# A row click picks the metric (and method) of the details below; applied once per new selection, so
# the selectboxes stay free to change afterwards.
picked = event.get("selection", {}).get("rows", [])
if not picked:
    st.session_state.pop("cmp_table_applied", None)  # the same row clicked again later applies again
elif st.session_state.get("cmp_table_applied") != (picked, tuple(shown.columns)):
    st.session_state["cmp_table_applied"] = (picked, tuple(shown.columns))
    row = table.iloc[picked[0]]
    st.session_state["cmp_metric"] = row["metric"]
    st.session_state["cmp_detail"] = row["method"]

# -- the pair in detail -------------------------------------------------------------------------------

if one:
    method_a = others[0]
else:
    if st.session_state.get("cmp_detail") not in others:
        st.session_state["cmp_detail"] = others[0]
    method_a = st.selectbox("Details for", others, key="cmp_detail",
                            format_func=lambda m: f"{m} vs {baseline}")
pair_table = table[table["method"] == method_a]
st.subheader(f"By question type: {md(method_a)} − {md(baseline)}")
deltas = cached_type_deltas(store(), db, run_id, version, method_a, baseline, tuple(metrics))
order = [m for m in pair_table["metric"] if m in set(deltas["metric"])]
if deltas.empty:
    st.info("No question is scored `ok` by both methods.")
else:
    deltas["shown_delta"] = difference_in_view(deltas["delta_norm"], deltas["delta"], view)
    type_order = [t for t in types if t in set(deltas["question_type"])]
    z = deltas.pivot(index="question_type", columns="metric", values="advantage").reindex(index=type_order,
                                                                                         columns=order)
    text = deltas.pivot(index="question_type", columns="metric", values="shown_delta").reindex(index=type_order,
                                                                                              columns=order)
    y_labels = [label(type_name(t)) for t in type_order]
    limit = max(0.05, float(z.abs().max().max()) if z.notna().any().any() else 0.05)
    figure = go.Figure(go.Heatmap(
        z=z.to_numpy(), x=order, y=y_labels, zmin=-limit, zmax=limit, zmid=0,
        colorscale=[[0, RED], [0.5, "#f6f8fa"], [1, GREEN]], hoverinfo="skip",
        text=text.map(lambda v: "" if pd.isna(v) else f"{v:+.2f}").to_numpy(), texttemplate="%{text}",
        textfont={"size": 10 if len(order) <= 24 else 9},
        colorbar={"title": {"text": f"better for<br>{label(method_a)} (norm)"}}))
    # Plotly reports no clicks on heatmaps in Streamlit (streamlit#8760): invisible square markers on the
    # cell centres carry the clicks and the hover.
    cells = deltas[deltas["metric"].isin(order)]
    figure.add_trace(go.Scatter(
        x=cells["metric"], y=[label(type_name(t)) for t in cells["question_type"]], mode="markers",
        marker={"symbol": "square", "size": 30, "color": "rgba(0,0,0,0)"}, showlegend=False,
        customdata=list(zip(cells["question_type"], cells["metric"], [label(type_name(t)) for t in
                                                                     cells["question_type"]],
                            cells["n"], cells["shown_delta"], cells["mean_a"], cells["mean_b"])),
        hovertemplate="%{customdata[2]} · %{customdata[1]}<br>Δ %{customdata[4]:+.3f} (n %{customdata[3]})<br>"
                      f"{label(method_a)} %{{customdata[5]:.3f}} · {label(baseline)} %{{customdata[6]:.3f}}"
                      "<extra></extra>"))
    figure.update_layout(height=170 + 48 * len(type_order), margin={"t": 20, "b": 10},
                         xaxis={"tickangle": -45, "type": "category"},
                         yaxis={"type": "category", "autorange": "reversed"})
    heat = st.plotly_chart(figure, on_select="rerun", selection_mode="points", key="cmp_heatmap",
                           config=plotly_config(f"{run_id}-{method_a}-vs-{baseline}-by-type"))
    st.caption("Cell text: mean Δ in the chosen view; colour: the difference in norm units ([0, 1]) oriented so "
               "green is better for A whatever the metric's direction; blank colour: a metric without a direction. "
               "Hover for n; click a cell to list its questions.")
    by_type = deltas[["question_type", "metric", "n", "mean_a", "mean_b", "delta", "delta_norm"]].rename(
        columns={"mean_a": f"{method_a} mean", "mean_b": f"{baseline} mean"}).round(4)
    downloads(by_type, f"{run_id}-{method_a}-vs-{baseline}-by-type", "cmp-types")
    cell = q.selected_cell(heat.get("selection", {}).get("points", []))
    if cell is not None:
        cell_type, cell_metric = cell
        st.text(f"{type_name(cell_type)} · {cell_metric}: questions by |Δ|, largest first")
        listed = q.paired_scores(store(), run_id, method_a, baseline, metrics=[cell_metric],
                                 question_type=cell_type, order="gap", limit=CELL_QUESTIONS)
        cell_rows = pd.DataFrame({
            method_a: in_view(listed["norm_a"], listed["value_a"], view).round(3),
            baseline: in_view(listed["norm_b"], listed["value_b"], view).round(3),
            "Δ": difference_in_view(listed["delta_norm"], listed["delta"], view).round(3),
            "question": listed["question"], "question_id": listed["question_id"]})
        sign = lookup(cell_metric).direction
        cell_css = pd.DataFrame("", index=cell_rows.index, columns=cell_rows.columns)
        cell_css["Δ"] = [advantage_css(d * sign if sign else None, False) for d in listed["delta_norm"]]
        cell_event = st.dataframe(cell_rows.style.apply(lambda _: cell_css, axis=None).format({"Δ": signed},
                                                                                             precision=3),
                                  hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
                                  key="cmp_cell_questions")
        st.caption(f"{len(cell_rows)} questions" + (f" (the {CELL_QUESTIONS} largest gaps)"
                                                    if len(cell_rows) == CELL_QUESTIONS else "")
                   + ". Click a row to open the question on **Claims**.")
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", cell_type) or "no-type"  # an uploaded name in a file name
        downloads(cell_rows, f"{run_id}-{cell_metric}-{stem}", "cmp-cell")
        if (qid := q.selected_row(cell_rows, cell_event.get("selection", {}).get("rows", []))) is not None:
            open_question(qid)

# -- per question -------------------------------------------------------------------------------------

st.subheader(f"Per question: {md(method_a)} vs {md(baseline)}")
detail_metrics = pair_table["metric"].tolist()
if st.session_state.get("cmp_metric") not in detail_metrics:
    st.session_state["cmp_metric"] = detail_metrics[0]  # the largest significant difference
pick = st.columns([3, 1])
metric = pick[0].selectbox("Metric", detail_metrics, key="cmp_metric",
                           format_func=lambda m: f"{m} ({scale_text(lookup(m).scale)})")
spread = pick[1].checkbox("Spread overlapping points", value=True, key="cmp_jitter",
                          help="Many scores share a value (1-5, labels, 0/1): a tiny display-only offset shows how "
                               "many questions sit on each spot. Hovers give the true scores.")
sign = lookup(metric).direction
pairs_n = int(pair_table.loc[pair_table["metric"] == metric, "n"].iloc[0])
left, right = st.columns(2)

points = q.paired_scores(store(), run_id, method_a, baseline, metrics=[metric], question_type=type_filter,
                         order="sample", limit=SCATTER_POINTS)
points["x"] = in_view(points["norm_a"], points["value_a"], view)
points["y"] = in_view(points["norm_b"], points["value_b"], view)
low, high = bounds_in_view(metric, view)
# Spread only where points really pile up (discrete scores); continuous ones are drawn as they are.
spread = spread and bool(points[["x", "y"]].duplicated().mean() > 0.2)
if spread:
    points["x"], points["y"] = jitter(points["x"], high - low, 1), jitter(points["y"], high - low, 2)
scatter = go.Figure()
trace = go.Scattergl if len(points) > 1000 else go.Scatter
for t in [t for t in types if t in set(points["question_type"])]:
    part = points[points["question_type"] == t]
    i = types.index(t)  # a type keeps its colour whatever the filter
    scatter.add_trace(trace(
        x=part["x"], y=part["y"], mode="markers", name=label(type_name(t)),
        marker={"size": 8, "opacity": 0.7, "color": PALETTE[i % len(PALETTE)]},
        customdata=list(zip(part["question_id"], [wrap(x) for x in part["question"]], part["delta"],
                            in_view(part["norm_a"], part["value_a"], view),
                            in_view(part["norm_b"], part["value_b"], view))),
        hovertemplate="%{customdata[1]}<br>" + f"{label(method_a)} %{{customdata[3]:.3f}} · "
                      f"{label(baseline)} %{{customdata[4]:.3f}}"
                      "<br>Δ (own scale) %{customdata[2]:+.3f}<extra>%{fullData.name}</extra>"))
pad = (high - low) * 0.06  # room for the spread
scatter.add_shape(type="line", x0=low, y0=low, x1=high, y1=high, line={"color": GREY, "dash": "dot"})
scatter.update_layout(height=460, margin={"t": 20, "b": 10}, legend_title="question type",
                      xaxis={"title": f"{label(method_a)} · {metric}", "range": [low - pad, high + pad]},
                      yaxis={"title": f"{label(baseline)} · {metric}", "range": [low - pad, high + pad]})
with left:
    clicked = st.plotly_chart(scatter, on_select="rerun", selection_mode="points", key="cmp_scatter",
                              config=plotly_config(f"{run_id}-{metric}-{method_a}-vs-{baseline}"))
    better_side = {1: f"below the diagonal: {md(method_a)} higher, better",
                   -1: f"below the diagonal: {md(method_a)} higher, worse (lower is better)",
                   0: "no direction for this metric"}[sign]
    st.caption(f"{len(points)} of {pairs_n} paired questions"
               + (" (a fixed random sample)" if len(points) < pairs_n else "")
               + (", spread slightly where they overlap" if spread else "")
               + f"; {better_side}. Click a point to open the question on **Claims**.")
if (qid := q.selected_question(clicked.get("selection", {}).get("points", []))) is not None:
    open_question(qid)

gaps = q.paired_scores(store(), run_id, method_a, baseline, metrics=[metric], question_type=type_filter,
                       order="gap", limit=DISAGREEMENTS)
disagreements = pd.DataFrame({
    method_a: in_view(gaps["norm_a"], gaps["value_a"], view).round(3),
    baseline: in_view(gaps["norm_b"], gaps["value_b"], view).round(3),
    f"Δ {method_a} − {baseline}": difference_in_view(gaps["delta_norm"], gaps["delta"], view).round(3),
    "question type": [type_name(t) for t in gaps["question_type"]],
    "question": gaps["question"],
    "question_id": gaps["question_id"],
})
gap_col = f"Δ {method_a} − {baseline}"
gap_css = pd.DataFrame("", index=disagreements.index, columns=disagreements.columns)
gap_css[gap_col] = [advantage_css(d * sign if sign else None, False) for d in gaps["delta_norm"]]
with right:
    st.markdown(f"**Largest disagreements on `{metric}`**")
    gap_event = st.dataframe(disagreements.style.apply(lambda _: gap_css, axis=None).format({gap_col: signed},
                                                                                           precision=3),
                             hide_index=True, width="stretch", height=420, on_select="rerun",
                             selection_mode="single-row", key="cmp_disagreements")
    st.caption(f"Sorted by |Δ|, largest first ({len(disagreements)} of {pairs_n}). Click a row to open the question "
               "on **Claims**.")
    downloads(disagreements, f"{run_id}-{metric}-disagreements", "cmp-gaps")
if (qid := q.selected_row(disagreements, gap_event.get("selection", {}).get("rows", []))) is not None:
    open_question(qid)

how_computed(pair_table["metric"].tolist())
