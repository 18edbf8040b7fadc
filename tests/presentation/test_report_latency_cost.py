"""The report's "Latency and cost of the RAG system" section: Overview's latency_cost numbers with their intervals,
the quality-against-cost chart and the Pareto sentences; no section for a run whose answers record none."""
from __future__ import annotations

import re

from evaluators.presentation.report import report_html
from evaluators.queries import overview
from evaluators.store import close_store, open_store
from tests.helpers.usage_run import usage_run

TITLE = "Latency and cost of the RAG system"


def _section(text: str) -> str:
    found = re.search(r'<section id="latency-cost">(.*?)</section>', text, re.S)
    assert found, "no latency and cost section"
    return found.group(1)


def test_the_report_holds_the_section_with_overviews_numbers(tmp_path):
    db = tmp_path / "usage.duckdb"
    run_id = usage_run(db, tmp_path)
    try:
        store = open_store(db)
        text = report_html(store, run_id)
        tables = overview.view(store, run_id)
    finally:
        close_store(db)
    section = _section(text)
    assert TITLE in section
    basic = tables["latency_cost"].set_index("method").loc["basic_search"]
    # the median with its interval, and the p95 whose upper bound 10 answers cannot give
    assert f"{basic['median latency ms']:,.0f} [{basic['median low']:,.0f}, {basic['median high']:,.0f}]" in section
    assert f"{basic['p95 latency ms']:,.0f} [{basic['p95 low']:,.0f}, ?]" in section
    assert f"${basic['mean cost USD']:.3g}" in section
    for sentence in tables["pareto"]["sentence"]:
        assert f"<li>{sentence}.</li>" in section
    assert "Pareto front" in section  # the chart's front trace


def test_a_run_without_usage_has_no_such_section(tmp_path):
    db = tmp_path / "plain.duckdb"
    run_id = usage_run(db, tmp_path, usage=False)
    try:
        text = report_html(open_store(db), run_id)
    finally:
        close_store(db)
    assert 'id="latency-cost"' not in text and TITLE not in text
