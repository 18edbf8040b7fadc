"""The "Latency and cost" section of Overview and Compare: the RAG system's own latency, cost and tokens per method
and its quality against them (queries/system.py's tables, as the screen's view returned them). Drawn only when the
run's answers carry any of them."""
from __future__ import annotations

import streamlit as st

from evaluators.presentation import figures
from evaluators.queries.system import AXES, HOW, axis_options, metric_options
from ui.common import md_escape, plotly_config

NUMBER = st.column_config.NumberColumn


def latency_cost_section(tables: dict, metric_ids, colours: dict[str, str], run_id: str, key: str,
                         axis_key: str) -> str | None:
    """Draws the section (nothing when `latency_cost` is empty); `key` and `axis_key` are the session keys of its
    quality-metric and x-axis picks, read by the page before it calls its view. Returns the text for "How scores
    are computed", if drawn."""
    table = tables["latency_cost"]
    if table.empty:
        return None
    st.subheader("Latency and cost of the RAG system")
    milliseconds = {c: NUMBER(format="%.1f") for c in ("median latency ms", "median low", "median high",
                                                      "p95 latency ms", "p95 low", "p95 high")}
    st.dataframe(table, hide_index=True, width="stretch", column_config={
        **milliseconds, "mean cost USD": NUMBER(format="$%.5f"), "cost low": NUMBER(format="$%.5f"),
        "cost high": NUMBER(format="$%.5f"), "input tokens per answer": NUMBER(format="%.0f"),
        "output tokens per answer": NUMBER(format="%.0f")})
    st.caption("What each method itself spent per answer, over the answers that record it (n per column): median and "
               "p95 latency in ms with distribution-free 95% intervals (order statistics; a bound needs enough "
               "answers: empty below that), mean cost per answer in USD with a bootstrap 95% interval, tokens per "
               "answer. A cost not in the file is the model's list price times the tokens, where the model is listed.")
    quality_pick, axis_pick = st.columns(2)
    options = metric_options(metric_ids)
    if options:
        quality_pick.selectbox("Quality axis", options, key=key, help="A headline metric's mean (95% CI), the "
                               "chart's y.")
    axes = axis_options(table)  # only what these methods record
    if st.session_state.get(axis_key) not in axes:
        st.session_state.pop(axis_key, None)  # recorded by the methods of an earlier pick only: the default again
    if axes:
        axis_pick.selectbox("Cost axis", axes, key=axis_key, format_func=lambda a: AXES[a].title,
                            help="The chart's x: what a method spends per answer. The Pareto front is drawn on it.")
    points = tables["quality_cost"]
    if len(points):
        st.plotly_chart(figures.quality_cost(points, colours), config=plotly_config(f"{run_id}-quality-cost"),
                        key=f"{key}-chart")
    for sentence in tables["pareto"]["sentence"]:
        st.markdown("- " + md_escape(sentence) + ".")  # method names are uploaded text
    return HOW
