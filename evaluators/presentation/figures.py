"""Charts drawn from the screens' view tables, the same figure on a page and in a report file.

Pure plotly: a function here takes a view's table and returns a `go.Figure`; the page shows it with
`st.plotly_chart`, the report writes it into its HTML. Plotly reads a few HTML tags in names, labels and hovers
(`<a href>` included), so uploaded text (method names, question types) goes in through `plot_label`.
"""
from __future__ import annotations

import html

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from evaluators.metrics.registry import label_metrics
from evaluators.queries.compare import type_name

# Methods' colours: distinct, readable on a light and on a dark page, and clear of the green / red / amber that mean
# better / worse / partial (D3's category10 without its green and red).
COLOURS = ("#1f77b4", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f")
GREEN, RED, GREY = "#1a7f37", "#cf222e", "#6e7781"  # better, worse, no direction
AMBER = "#d4a72c"
# A label metric's labels in their order (metrics/registry.py): pass / partial / fail; CORRECT / WRONG / DON'T KNOW.
LABEL_COLOURS = {"verdict": (GREEN, AMBER, RED), "answer_class": (GREEN, RED, GREY)}


def plot_label(text: object) -> str:
    """Uploaded text for plotly labels and hovers, which understand a few HTML tags: escaped."""
    return html.escape(str(text))


def plot_wrap(text: object, width: int = 70, max_lines: int = 6) -> str:
    """Escaped text broken into hover lines (plotly does not wrap hovers)."""
    words, lines, line = str(text).split(), [], ""
    for word in words:
        if line and len(line) + len(word) + 1 > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    lines.append(line)
    return "<br>".join(plot_label(x) for x in lines[:max_lines]) + ("…" if len(lines) > max_lines else "")


def method_colours(methods, others=()) -> dict[str, str]:
    """The run's method -> colour mapping, the one every chart of a run uses (Overview, History, Correlations, the
    report): the run's `methods` sorted by name take the palette's colours in turn, so a method keeps its colour in
    every chart whichever methods the chart shows or in what order. `others` (methods of other runs that a chart
    shows beside the run's, e.g. History's) come after them, sorted too, so they never shift the run's colours.
    Pass every method of the run (queries.compare.run_methods), not a chart's selection."""
    ordered = sorted(dict.fromkeys(map(str, methods)))
    ordered += sorted(set(map(str, others)) - set(ordered))
    return {m: COLOURS[i % len(COLOURS)] for i, m in enumerate(ordered)}


def headline(scores: pd.DataFrame, colours: dict[str, str] | None = None) -> go.Figure:
    """The headline's scores (queries.headline `scores`): per item a bar per method with its 95% CI and n; the
    1-5 overall rating in its own panel, the shares and ratios (percent) beside it. `colours`: the run's
    `method_colours` (default: those of the methods shown)."""
    panels = [("1-5", "overall rating (1-5)"), ("%", "shares and ratios (%)")]
    panels = [p for p in panels if (scores["unit"] == p[0]).any()] or panels[1:]
    figure = make_subplots(rows=1, cols=len(panels), subplot_titles=[title for _, title in panels],
                           column_widths=[0.18, 0.82] if len(panels) == 2 else None, horizontal_spacing=0.08)
    colours = colours or method_colours(scores["method"].unique())
    for col, (unit, _) in enumerate(panels, 1):
        part = scores[scores["unit"] == unit]
        for method in sorted(scores["method"].unique()):
            colour, rows = colours.get(method, GREY), part[part["method"] == method]
            figure.add_bar(
                name=plot_label(method), legendgroup=method, showlegend=col == 1, marker_color=colour,
                x=rows["item"], y=rows["value"],
                error_y={"type": "data", "symmetric": False, "array": rows["ci_high"] - rows["value"],
                         "arrayminus": rows["value"] - rows["ci_low"]},
                customdata=rows[["ci_low", "ci_high", "n", "n_total"]],
                hovertemplate="%{x}: %{y:.2f} [%{customdata[0]:.2f}, %{customdata[1]:.2f}]<br>"
                              "n %{customdata[2]} of %{customdata[3]}<extra>%{fullData.name}</extra>",
                row=1, col=col)
        figure.update_yaxes(range=[1, 5] if unit == "1-5" else [0, 100], row=1, col=col)
    figure.update_layout(barmode="group", height=380, margin={"t": 40, "b": 10}, legend_title="method")
    return figure


HEATMAP_ROW = 26  # px per metric (a row of the heatmap): room for the cell's text at size 11


def type_heatmap(cells: pd.DataFrame, metric_order, method_a: str, baseline: str) -> go.Figure:
    """Compare's metric x question type heatmap (queries.compare `heatmap`): a row per metric (in `metric_order`), a
    column per question type; the cell's text is the mean Δ in the view's scale, its colour `advantage` (green better
    for A, red better for B). Metrics are rows: a run scores up to 34 of them, side by side their cells' texts
    would overlap, one above the other each gets a readable row (and the colour bar the height of them all).
    Its width follows its container; a page may set `layout.width` from `heatmap_width`."""
    order = [m for m in metric_order if m in set(cells["metric"])]
    type_order = list(dict.fromkeys(cells["question_type"]))
    z = cells.pivot(index="metric", columns="question_type", values="advantage").reindex(index=order,
                                                                                        columns=type_order)
    text = cells.pivot(index="metric", columns="question_type", values="Δ").reindex(index=order, columns=type_order)
    x_labels = [plot_wrap(type_name(t), width=18, max_lines=2) for t in type_order]  # a column's label, wrapped
    limit = max(0.05, float(z.abs().max().max()) if z.notna().any().any() else 0.05)
    figure = go.Figure(go.Heatmap(
        z=z.to_numpy(), x=x_labels, y=order, zmin=-limit, zmax=limit, zmid=0, xgap=2, ygap=2,
        colorscale=[[0, RED], [0.5, "#f6f8fa"], [1, GREEN]], hoverinfo="skip",
        text=text.map(lambda v: "" if pd.isna(v) else f"{v:+.2f}").to_numpy(), texttemplate="%{text}",
        textfont={"size": 11},
        colorbar={"title": {"text": f"better for<br>{plot_label(method_a)}<br>(norm)", "side": "top"},
                  "thickness": 14, "len": 1, "lenmode": "fraction", "y": 0.5, "yanchor": "middle"}))
    # Plotly reports no clicks on heatmaps in Streamlit (streamlit#8760): invisible square markers on the
    # cell centres carry the clicks and the hover.
    cell_labels = [plot_label(type_name(t)) for t in cells["question_type"]]
    figure.add_trace(go.Scatter(
        x=[plot_wrap(type_name(t), width=18, max_lines=2) for t in cells["question_type"]], y=cells["metric"],
        mode="markers",
        marker={"symbol": "square", "size": HEATMAP_ROW - 4, "color": "rgba(0,0,0,0)"}, showlegend=False,
        customdata=list(zip(cells["question_type"], cells["metric"], cell_labels, cells["n"], cells["Δ"],
                            cells[f"{method_a} mean"], cells[f"{baseline} mean"])),
        hovertemplate="%{customdata[2]} · %{customdata[1]}<br>Δ %{customdata[4]:+.3f} (n %{customdata[3]})<br>"
                      f"{plot_label(method_a)} %{{customdata[5]:.3f}} · {plot_label(baseline)} %{{customdata[6]:.3f}}"
                      "<extra></extra>"))
    figure.update_layout(height=110 + HEATMAP_ROW * len(order), margin={"t": 70, "b": 10, "l": 10, "r": 10},
                         xaxis={"type": "category", "side": "top", "tickangle": 0},
                         yaxis={"type": "category", "autorange": "reversed"})
    return figure


def heatmap_width(n_types: int) -> int:
    """A width in px that fits `type_heatmap`'s columns (metric names, ~150 px a question type, the colour bar), for
    a page whose container is wider than the few columns need."""
    return 330 + 150 * max(n_types, 1)


def label_bars(table: pd.DataFrame, metric: str) -> go.Figure:
    """A label metric's counts per method (Overview's `verdict` or `answer_class` table: a row per method, a column
    per label) as stacked bars, the labels in their order and colours (the good label green)."""
    labels = label_metrics()[metric]
    colours = LABEL_COLOURS.get(metric, COLOURS)
    methods = [plot_label(m) for m in table.index]
    figure = go.Figure()
    for label, colour in zip(labels, colours):
        figure.add_bar(y=methods, x=table[label], name=plot_label(label), orientation="h", marker_color=colour,
                       text=table[label], textposition="inside", customdata=table["n"],
                       hovertemplate=f"%{{y}}: %{{x}} of %{{customdata}} {plot_label(label)}<extra></extra>")
    figure.update_layout(barmode="stack", height=110 + 34 * len(methods), margin={"t": 10, "b": 10},
                         xaxis_title="questions", yaxis={"autorange": "reversed"},
                         legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "traceorder": "normal"})
    return figure


def quality_cost(points: pd.DataFrame, colours: dict[str, str] | None = None) -> go.Figure:
    """The RAG system's quality against its cost or latency (queries.system `quality_cost`): a point per method with
    its 95% intervals on both axes, the Pareto front (no other method cheaper and better) joined by a line and its
    points drawn as diamonds; the others as circles."""
    colours = colours or method_colours(points["method"])
    figure = go.Figure()
    front = points[points["on front"]].sort_values("x")
    figure.add_scatter(x=front["x"], y=front["quality"], mode="lines", name="Pareto front", hoverinfo="skip",
                       line={"color": GREY, "dash": "dot"})
    for row in points.to_dict("records"):
        on_front, method, x, y = bool(row["on front"]), row["method"], row["x"], row["quality"]
        figure.add_scatter(
            x=[x], y=[y], mode="markers", name=plot_label(method),
            marker={"size": 14 if on_front else 11, "symbol": "diamond" if on_front else "circle",
                    "color": colours.get(method, GREY), "line": {"width": 1, "color": "#24292f"}},
            error_x={"type": "data", "symmetric": False, "array": [_gap(row["x high"], x)],
                     "arrayminus": [_gap(x, row["x low"])]},
            error_y={"type": "data", "symmetric": False, "array": [_gap(row["quality high"], y)],
                     "arrayminus": [_gap(y, row["quality low"])]},
            hovertemplate=f"{plot_label(method)}<br>%{{x:.4g}} · {plot_label(row['metric'])} %{{y:.3f}}"
                          f"<br>{'on the Pareto front' if on_front else 'beaten on both axes'}<extra></extra>")
    axis = points["axis"].iloc[0] if len(points) else ""
    metric = points["metric"].iloc[0] if len(points) else ""
    figure.update_layout(height=400, margin={"t": 30, "b": 10}, xaxis_title=axis,
                         yaxis_title=f"{metric} (mean, 95% CI)", legend_title="method")
    return figure


def _gap(upper, lower) -> float:
    """An error bar's length; 0 where an interval bound does not exist (too few answers)."""
    return 0.0 if pd.isna(upper) or pd.isna(lower) else float(upper) - float(lower)
