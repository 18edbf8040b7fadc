"""History: for the golden set of the run in view, each method's headline metrics over its runs in time order,
mean with 95% CI per run, and every step to a method's next run marked when its paired difference is significant
after Holm."""
from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from evaluators.queries import OWN, VIEWS
from evaluators.metrics.registry import in_catalogue_order
from evaluators.queries import history as q
from evaluators.queries.compare import ALPHA
from evaluators.queries.compare import run_methods
from ui.common import (current_run, downloads, how_computed, md_escape as md, plotly_config, run_header,
                       stop_without_scores, store)
from evaluators.presentation.figures import method_colours, plot_label as label, plot_wrap as wrap

CHANGE_COLOURS = {"better": "#1a7f37", "worse": "#cf222e"}

run = current_run()
run_id = run["run_id"]
run_header("History", run)
runs = q.golden_runs(store(), run_id)
scored = run_id in set(runs["run_id"])
if not scored and len(runs) < 2:
    # Nothing of this run is scored yet: it is not "the only run with scores", and with fewer than two other runs
    # that have scores there is no history to show either.
    stop_without_scores(run)
if not scored:
    st.info(f"This run has no scores yet (status: {run['status']}), so it is not among the points below; they are "
            f"the {len(runs)} other runs with scores on its golden set.")
elif len(runs) < 2:
    st.info("This is the only run with scores on its golden set, so there is no history yet. Evaluate new outputs "
            "against the same golden set on **Evaluate**: each run then adds a point here.")
    st.stop()

cells = q.run_cells(store(), runs["run_id"].tolist())
known_methods = sorted(cells["method"].unique())
known_metrics = in_catalogue_order(cells["metric"].unique())
top = st.columns([2, 3, 2])
methods = top[0].multiselect("Methods", known_methods, default=known_methods, key="hist_methods")
# The run's colours (as on its Overview), the methods of other runs of the golden set after them
colours = method_colours(run_methods(store(), run_id), others=known_methods)
metrics = top[1].multiselect("Metrics", known_metrics, default=q.default_metrics(known_metrics), key="hist_metrics",
                             help="Opens on the headline metrics: the seeds' primary scores.")
scale = top[2].radio("Show scores in", VIEWS, key="hist_view")
if not methods or not metrics:
    st.info("Pick at least one method and one metric.")
    st.stop()
with st.spinner("Comparing each run with the next..."):
    tables = q.view(store(), run_id, methods=methods, metrics=metrics, scale=scale)
points, steps = tables["points"], tables["steps"]
st.caption(f"{len(runs)} runs on this golden set, oldest first. A point: the mean of the cells scored `ok` with "
           "its 95% interval, as the run's Overview gives it. A star: a step from a method's run to its next one "
           f"whose paired difference (over the questions both scored `ok`) is significant, Holm-adjusted p < {ALPHA} "
           f"over all {len(steps)} steps shown; green better, red worse in the metric's direction."
           + ("" if scale == OWN else f" Shown in {scale}."))

# Run names are long (a demo's is 90 characters): plotly hides tick labels that overlap, so each is wrapped short.
ticks = [wrap(f"{p}. {name}", width=28, max_lines=3) for p, name in zip(runs["position"], runs["name"])]
for metric in metrics:
    figure = go.Figure()
    for method in methods:
        line = points[(points["metric"] == metric) & (points["method"] == method)]
        figure.add_trace(go.Scatter(
            x=line["position"], y=line["mean"], mode="lines+markers", name=label(method),
            marker={"color": colours[method]}, line={"color": colours[method]},
            error_y={"type": "data", "symmetric": False, "array": line["ci_high"] - line["mean"],
                     "arrayminus": line["mean"] - line["ci_low"]},
            customdata=list(zip(line["run_id"], line["n"])),
            hovertemplate=f"{label(method)}<br>%{{customdata[0]}}<br>mean %{{y:.3f}} (n %{{customdata[1]}})"
                          "<extra></extra>"))
        marked = steps[(steps["metric"] == metric) & (steps["method"] == method) & steps["significant"]]
        ends = line.set_index("position")["mean"].reindex(marked["to_position"])
        figure.add_trace(go.Scatter(
            x=marked["to_position"], y=ends.to_numpy(), mode="markers", showlegend=False,
            marker={"symbol": "star", "size": 16,
                    "color": [CHANGE_COLOURS.get(c, "#6e7781") for c in marked["change"]]},
            customdata=list(zip(marked["delta"], marked["p (Holm)"])),
            hovertemplate=f"{label(method)}: significant step<br>Δ %{{customdata[0]:+.3f}}, "
                          "p (Holm) %{customdata[1]:.3g}<extra></extra>"))
    figure.update_layout(title=metric, height=360, margin={"t": 40, "b": 10},
                         xaxis={"tickmode": "array", "tickvals": runs["position"], "ticktext": ticks})
    st.plotly_chart(figure, key=f"hist_{metric}", config=plotly_config(f"{run_id}-history-{metric}"))

for note in tables["not_compared"]["note"]:  # a user's metric whose version changed: no step across the change
    st.warning(md(note))
st.subheader("Steps from each run to the next")
st.dataframe(steps, hide_index=True, width="stretch")
downloads(steps, f"{run_id}-history-steps", "hist-steps")
st.caption("mde: the minimum detectable effect of the step, the smallest |delta| the paired test finds with 80% power "
           f"at its n and p < {ALPHA}, from the observed spread; a step that is not significant but whose mde is large "
           "may hide a change that size.")
st.subheader("Per run")
st.dataframe(points, hide_index=True, width="stretch")
downloads(points, f"{run_id}-history", "hist-points")
with st.expander("The runs"):
    st.dataframe(runs, hide_index=True, width="stretch")
    st.caption(md(f"Runs on the golden set of {run['name']}; a golden set is the same when its content is."))
how_computed(metrics)
