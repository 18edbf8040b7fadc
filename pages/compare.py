"""Compare: methods against a baseline on the same questions. Per metric the paired difference with
its 95% CI, n, p and Holm's p, win/tie/loss and both means; a question type x metric heatmap of the
difference; per question a scatter and the largest disagreements, each one click from Claims."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from evaluators.metrics.registry import in_catalogue_order, lookup
from evaluators.queries import OWN, VIEWS, bounds_in_view
from evaluators.queries import compare as q
from evaluators.queries.compare import scale_text, type_name
from evaluators.queries.hypotheses import caption as tests_caption
from evaluators.queries import ALL_TYPES, question_types
from evaluators.queries.sides import Side
from evaluators.queries.system import AXES, metric_options
from evaluators.presentation import figures
from evaluators.presentation.figures import GREEN, GREY, RED, plot_label as label, plot_wrap as wrap
from ui.common import md_escape as md
from ui.common import (current_run, downloads, how_computed, open_question, plotly_config, report_button,
                       run_header, stop_without_scores, store)
from ui.system import latency_cost_section

# Question types: distinct colours that stay clear of the green / red of better / worse.
PALETTE = ("#1f77b4", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f")
GREEN_BG, RED_BG = "#dafbe1", "#ffebe9"


def listing(metric_ids: list[str], most: int = 6) -> str:
    return ", ".join(f"`{m}`" for m in metric_ids[:most]) + ("…" if len(metric_ids) > most else "")


def jitter(values: pd.Series, span: float, seed: int) -> pd.Series:
    """Display-only spread of points that share a value (1-5 scores, labels, 0/1): a fixed, tiny
    offset per point, so reruns do not move them; hovers show the true scores."""
    offsets = np.random.default_rng(seed).uniform(-0.04, 0.04, len(values)) * span
    return values + offsets


def advantage_css(advantage: float | None, significant: bool) -> str:
    """Green when better for A, red when better for B; a background when Holm-significant."""
    if advantage is None or pd.isna(advantage) or advantage == 0:
        return f"color: {GREY}" if advantage is None or pd.isna(advantage) else ""
    colour, background = (GREEN, GREEN_BG) if advantage > 0 else (RED, RED_BG)
    return f"color: {colour}; font-weight: 600; background-color: {background}" if significant \
        else f"color: {colour}"


def gap_css(frame: pd.DataFrame, column: str, metric: str) -> pd.DataFrame:
    """A question list's colours: its gap column green where A does better on `metric`, red where B does."""
    sign = lookup(metric).direction
    css = pd.DataFrame("", index=frame.index, columns=frame.columns)
    css[column] = [advantage_css(d * sign if sign else None, False) for d in frame[column]]
    return css


def p_text(p: float | None) -> str:
    if p is None or pd.isna(p):
        return "n/a"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def signed(x: float | None) -> str:
    return "" if x is None or pd.isna(x) else f"{x:+.3f}"


# -- the run, its methods, the choices ----------------------------------------------------------------

run = current_run()
run_id = run["run_id"]
run_header("Compare", run)

methods = q.run_methods(store(), run_id)
if not methods:
    stop_without_scores(run)
comparable = q.comparable_runs(store(), run_id)
if len(methods) < 2 and comparable.empty:
    st.info(f"This run scored one method only ({md(methods[0])}), so there is nothing to compare it with. "
            "Upload the outputs of a second method on **Data** (one file may hold several methods, in a "
            "`method` column), then evaluate both in one run on **Evaluate**; or pick another run in the sidebar.")
    st.stop()

run_names = dict(zip(comparable["run_id"], comparable["name"]))
other_run = st.selectbox(
    "Compare with another run", [None, *run_names], index=1 if len(methods) < 2 else 0, key="cmp_other_run",
    format_func=lambda r: "no: methods of this run" if r is None else f"{run_names[r]} ({r})",
    help="Runs whose golden set shares question ids with this run's, those on the same golden set first. Its "
         "methods join the list below as RUN_ID:METHOD; questions whose reference differs are left out.")
run_metrics = q.run_metrics(store(), run_id)
default_chosen, default_baseline = q.default_methods(methods)
options = methods
if other_run is not None:
    other_methods = q.run_methods(store(), other_run)
    options = methods + [str(Side(other_run, m)) for m in other_methods]
    default_chosen, default_baseline = q.default_across(methods, other_run, other_methods)
    run_metrics = in_catalogue_order({*run_metrics, *q.run_metrics(store(), other_run)})
top = st.columns([3, 2, 2])
chosen = top[0].multiselect("Methods", options, default=default_chosen,
                            key="cmp_methods" if other_run is None else f"cmp_methods_{other_run}",
                            help="Two methods, or more: each is then compared with the baseline.")
if len(chosen) < 2:
    st.info("Pick at least two methods to compare.")
    st.stop()
baseline = top[1].selectbox("Baseline (B)", chosen, key=f"cmp_baseline_{'|'.join(chosen)}",
                            index=chosen.index(default_baseline) if default_baseline in chosen else len(chosen) - 1,
                            help="Differences are A - B: each other method minus this one.")
others = [m for m in chosen if m != baseline]
one = len(others) == 1
types = question_types(store(), q.sides(store(), run_id, [baseline])[0].run_id)  # the baseline's golden set
chosen_type = top[2].selectbox("Question type", [ALL_TYPES, *types], key="cmp_type",
                               format_func=lambda t: t if t == ALL_TYPES else type_name(t))
row2 = st.columns([3, 4])
families = q.metric_families(run_metrics)
chosen_families = row2[0].multiselect("Metric families", families, default=families, key="cmp_families")
view = row2[1].radio("Show scores in", VIEWS, horizontal=True, key="cmp_view",
                     help="The metric's own scale as stored; the white paper's 1-5 projection (a difference of "
                          "4 x norm); or percent (a difference in percentage points, 100 x norm).")
if not chosen_families:
    st.info("No metric family is selected: pick at least one above.")
    st.stop()
# The details' choices are drawn below the table but shape the view: their values from the last script run
# (a click that changes one reruns the script with it).
if not one and st.session_state.get("cmp_detail") not in others:
    st.session_state["cmp_detail"] = others[0]
method_a = others[0] if one else st.session_state["cmp_detail"]
asked_metric = st.session_state.get("cmp_metric") if st.session_state.get("cmp_metric") in run_metrics else None
cell = st.session_state.get("cmp_cell")
cell = cell if cell and cell[0] in types and cell[1] in run_metrics else None
QUALITY_KEY = f"cmp-quality-{run_id}"  # the latency and cost chart's quality axis, picked in its section below
quality_metric = st.session_state.get(QUALITY_KEY)
quality_metric = quality_metric if quality_metric in metric_options(run_metrics) else None
AXIS_KEY = f"cmp-cost-axis-{run_id}"  # and its x axis
cost_axis = st.session_state.get(AXIS_KEY)
cost_axis = cost_axis if cost_axis in AXES else None

with st.spinner("Pairing the questions and testing every metric..."):
    tables = q.view(store(), run_id, methods=chosen, baseline=baseline, question_type=chosen_type,
                    families=chosen_families, scale=view, details_for=method_a, metric=asked_metric,
                    cell_type=cell and cell[0], cell_metric=cell and cell[1], quality_metric=quality_metric,
                    cost_axis=cost_axis)
shown = tables["metrics"]
pair_sides = q.sides(store(), run_id, [method_a, baseline])


def drill(question_id: str) -> None:
    """A clicked question on Claims: at once within the run in view, else each side in its own run."""
    if {s.run_id for s in pair_sides} == {run_id}:
        open_question(question_id)
    st.caption(f"Question {md(question_id)} on **Claims**, in the run of:")
    for column, s in zip(st.columns(2), pair_sides):
        if column.button(md(s.label(run_id)), key=f"cmp_open_{s}", width="stretch"):
            open_question(question_id, run_id=s.run_id)



# -- per metric ---------------------------------------------------------------------------------------

names = " vs ".join(md(m) for m in [*others, baseline])
st.subheader(f"{names}: paired differences per metric")
if shown.empty:
    st.info("No question has an `ok` score for both methods on the metrics shown"
            + (" for this question type" if chosen_type != ALL_TYPES else "")
            + ": widen the selection, or check the run's failed cells on **Evaluate**.")
    st.stop()

for s in tables["summary"].to_dict("records"):
    wins, losses = s["better on"], s["worse on"]
    st.markdown(f"**{md(s['method'])}** is significantly better than **{md(baseline)}** on {len(wins)} of "
                f"{s['metrics']} metrics and worse on {len(losses)} (Holm-adjusted p < {q.ALPHA} within each "
                f"family of tests, see below)"
                + (f": better on {listing(wins)}" if wins else "") + (f"; worse on {listing(losses)}" if losses else "")
                + ".")
    if blind := s["cannot detect"]:
        st.caption("Not significant is not \"no difference\": these pairs find a difference the size of the MDE 80% "
                   "of the time and a smaller one less often, on "
                   + ", ".join(f"{md(m)} ({mde:.3g})" for m, mde in list(blind.items())[:5])
                   + (f" and {len(blind) - 5} more" if len(blind) > 5 else "")
                   + " (own scale; column MDE in the view chosen).")
    if n_left := s["left out (reference differs)"]:
        st.warning(f"{n_left} question{'s are' if n_left != 1 else ' is'} left out of {md(s['method'])} vs "
                   f"{md(baseline)}: the reference differs between the two runs' golden sets.")
for note in tables["not_compared"]["note"]:  # a user's metric whose version differs between the two runs
    st.warning(md(note))
if not tables["left_out"].empty:
    with st.expander("Questions left out (their reference differs)"):
        st.dataframe(tables["left_out"], hide_index=True, width="stretch")

row_methods = shown["method"] if "method" in shown else pd.Series(others[0], index=shown.index)
delta_col = [c for c in shown.columns if c.startswith("Δ")][0]
css = pd.DataFrame("", index=shown.index, columns=shown.columns)
for col in (delta_col, "95% CI", "better"):
    css[col] = [advantage_css({a: 1, baseline: -1, "tie": 0}.get(better), p < q.ALPHA)
                for a, better, p in zip(row_methods, shown["better"], shown["p (Holm)"])]
styled = (shown.style.apply(lambda _: css, axis=None)
          .format({"p": p_text, "p (Holm)": p_text, delta_col: signed}, precision=3))
event = st.dataframe(styled, hide_index=True, width="stretch", height=min(38 + 35 * len(shown), 700),
                     on_select="rerun", selection_mode="single-row", key="cmp_table")
st.caption(
    f"Δ = mean of A − B over the n questions scored `ok` for both (B = {md(baseline)}), with its 95% interval "
    "(percentile bootstrap; t-interval above 5,000 pairs). p: two-sided paired test (Wilcoxon signed-rank, Pratt, "
    "from 20 pairs; exact sign-flip permutation below); p (Holm): adjusted within the row's family of tests "
    "(column `tests family`), below. \"better\" respects each metric's direction (lower "
    "`hallucination_rate` is better); metrics without one (`dont_know`) get no wins or losses. Green: better for A, "
    "red: better for B, shaded when Holm-significant. MDE: the minimum detectable effect, the smallest |Δ| the "
    "paired test finds with 80% power at these n pairs and p < 0.05, from their observed spread. Means are over the "
    "paired questions."
    + ("" if view == OWN else f" Shown in {view}.") + " Click a row to see that metric below.")
st.caption(tests_caption(secondary=True))
missing = [m for m in q.family_metrics(run_metrics, chosen_families) if m not in set(shown["metric"])]
if missing:
    st.caption("Not comparable (no question scored `ok` by both methods): " + ", ".join(f"`{m}`" for m in missing))
downloads(shown, f"{run_id}-compare", "cmp-table")
report_button(run_id, methods=chosen, baseline=baseline, key="cmp-report")  # these methods, as one file to send

# A row click picks the metric (and method) of the details below; applied once per new selection, so
# the selectboxes stay free to change afterwards.
picked = event.get("selection", {}).get("rows", [])
if not picked:
    st.session_state.pop("cmp_table_applied", None)  # the same row clicked again later applies again
elif st.session_state.get("cmp_table_applied") != (picked, tuple(shown.columns)):
    st.session_state["cmp_table_applied"] = (picked, tuple(shown.columns))
    st.session_state["cmp_metric"] = shown["metric"].iloc[picked[0]]
    st.session_state["cmp_detail"] = row_methods.iloc[picked[0]]
    st.rerun()  # the details below are drawn for the picked row

# -- the pair in detail -------------------------------------------------------------------------------

if not one:
    st.selectbox("Details for", others, key="cmp_detail", format_func=lambda m: f"{m} vs {baseline}")
pair_rows = shown[row_methods == method_a]
if len(tables["attribution"]):  # the same attribution as Diagnosis, for the pair in detail
    st.subheader(f"Where each one loses: {md(method_a)} vs {md(baseline)}")
    for sentence in tables["attribution"]["sentence"]:
        st.markdown("- " + md(sentence))
    st.caption("Lost: this method's answer wrong where the other's is right; why: its retrieval missed the evidence, "
               "or it retrieved it and the answer went wrong (How scores are computed on **Diagnosis**).")
    if st.button("Open Diagnosis: the questions behind each number", key="cmp_diagnosis",
                 icon=":material/stethoscope:"):
        st.session_state["diag_pair"] = [method_a, baseline]  # Diagnosis opens on this pair
        st.switch_page("pages/diagnosis.py")
st.subheader(f"By question type: {md(method_a)} − {md(baseline)}")
deltas = tables["heatmap"]
if deltas.empty:
    st.info("No question is scored `ok` by both methods.")
else:
    figure = figures.type_heatmap(deltas, pair_rows["metric"], method_a, baseline)
    # As wide as its question types need (one column per type), not the page: a run without types is one column.
    figure.update_layout(width=figures.heatmap_width(deltas["question_type"].nunique()))
    heat = st.plotly_chart(figure, on_select="rerun", selection_mode="points", key="cmp_heatmap", width="content",
                           config=plotly_config(f"{run_id}-{method_a}-vs-{baseline}-by-type"))
    st.caption("Cell text: mean Δ in the chosen view; colour: the difference in norm units ([0, 1]) oriented so "
               "green is better for A whatever the metric's direction; blank colour: a metric without a direction. "
               "Hover for n; click a cell to list its questions.")
    downloads(tables["by_question_type"], f"{run_id}-{method_a}-vs-{baseline}-by-type", "cmp-types")
    clicked_cell = q.selected_cell(heat.get("selection", {}).get("points", []))
    if clicked_cell != cell:  # a new click, or a chart redrawn without its selection: list that cell's questions
        st.session_state["cmp_cell"] = clicked_cell
        st.rerun()
    if cell is not None:
        cell_type, cell_metric = cell
        st.text(f"{type_name(cell_type)} · {cell_metric}: questions by |Δ|, largest first")
        cell_rows = tables["cell_questions"]
        cell_event = st.dataframe(cell_rows.style.apply(lambda _: gap_css(cell_rows, "Δ", cell_metric), axis=None)
                                  .format({"Δ": signed}, precision=3),
                                  hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
                                  key="cmp_cell_questions")
        st.caption(f"{len(cell_rows)} questions" + (f" (the {q.CELL_QUESTIONS} largest gaps)"
                                                    if len(cell_rows) == q.CELL_QUESTIONS else "")
                   + ". Click a row to open the question on **Claims**.")
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", cell_type) or "no-type"  # an uploaded name in a file name
        downloads(cell_rows, f"{run_id}-{cell_metric}-{stem}", "cmp-cell")
        if (qid := q.selected_row(cell_rows, cell_event.get("selection", {}).get("rows", []))) is not None:
            drill(qid)

# -- per question -------------------------------------------------------------------------------------

st.subheader(f"Per question: {md(method_a)} vs {md(baseline)}")
detail_metrics = pair_rows["metric"].tolist()
if st.session_state.get("cmp_metric") not in detail_metrics:
    st.session_state["cmp_metric"] = detail_metrics[0]  # the largest significant difference, as the view chose
pick = st.columns([3, 1])
metric = pick[0].selectbox("Metric", detail_metrics, key="cmp_metric",
                           format_func=lambda m: f"{m} ({scale_text(lookup(m).scale)})")
spread = pick[1].checkbox("Spread overlapping points", value=True, key="cmp_jitter",
                          help="Many scores share a value (1-5, labels, 0/1): a tiny display-only offset shows how "
                               "many questions sit on each spot. Hovers give the true scores.")
sign = lookup(metric).direction
pairs_n = int(pair_rows.loc[pair_rows["metric"] == metric, "n"].iloc[0])
left, right = st.columns(2)

points = tables["scatter"]
x, y = points[method_a], points[baseline]
low, high = bounds_in_view(metric, view)
# Spread only where points really pile up (discrete scores); continuous ones are drawn as they are.
spread = spread and bool(pd.concat([x, y], axis=1).duplicated().mean() > 0.2)
if spread:
    x, y = jitter(x, high - low, 1), jitter(y, high - low, 2)
scatter = go.Figure()
trace = go.Scattergl if len(points) > 1000 else go.Scatter
for t in [t for t in types if t in set(points["question_type"])]:
    part = points["question_type"] == t
    i = types.index(t)  # a type keeps its colour whatever the filter
    scatter.add_trace(trace(
        x=x[part], y=y[part], mode="markers", name=label(type_name(t)),
        marker={"size": 8, "opacity": 0.7, "color": PALETTE[i % len(PALETTE)]},
        customdata=list(zip(points.loc[part, "question_id"], [wrap(text) for text in points.loc[part, "question"]],
                            points.loc[part, "Δ (own scale)"], points.loc[part, method_a],
                            points.loc[part, baseline])),
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
    drill(qid)

disagreements = tables["disagreements"]
gap_col = f"Δ {method_a} − {baseline}"
with right:
    st.markdown(f"**Largest disagreements on `{metric}`**")
    gap_event = st.dataframe(disagreements.style.apply(lambda _: gap_css(disagreements, gap_col, metric), axis=None)
                             .format({gap_col: signed}, precision=3),
                             hide_index=True, width="stretch", height=420, on_select="rerun",
                             selection_mode="single-row", key="cmp_disagreements",
                             # a short header, so both scores and the gap fit the half page at 1400 px
                             column_config={gap_col: st.column_config.NumberColumn("Δ A − B", help=gap_col)})
    st.caption(f"Sorted by |Δ|, largest first ({len(disagreements)} of {pairs_n}). Click a row to open the question "
               "on **Claims**.")
    downloads(disagreements, f"{run_id}-{metric}-disagreements", "cmp-gaps")
if (qid := q.selected_row(disagreements, gap_event.get("selection", {}).get("rows", []))) is not None:
    drill(qid)

# -- the RAG system's own latency and cost of the compared methods (each from its own run), when their answers record
# them; another run's sides coloured after this run's methods, which keep their colours
colours = figures.method_colours(methods, others=[m for m in chosen if m not in methods])
system_how = latency_cost_section(tables, run_metrics, colours, run_id, QUALITY_KEY, AXIS_KEY)

how_computed(detail_metrics, intro=system_how)
