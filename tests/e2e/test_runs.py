"""End to end in Chromium (as tests/e2e/test_browser.py): a comparison across two runs and the History screen,
on a small database of runs written through the Store API (tests/queries/test_compare.py's runs)."""
from __future__ import annotations

import shutil

import pytest
from playwright.sync_api import expect

from evaluators.store import close_store
from tests.helpers.browser import SHOTS, settle, chromium, serving
from tests.helpers.compare_runs import runs, small  # noqa: F401  (fixtures)

pytestmark = pytest.mark.e2e


@pytest.fixture
def served(runs, tmp_path):  # noqa: F811
    store, first, same_set, edited = runs
    db = tmp_path / "e2e-runs.duckdb"
    close_store(store.path)
    shutil.copy(store.path, db)
    with serving(db) as url, chromium() as page:
        yield page, url, first, edited


def test_compare_across_two_runs_and_their_history_in_the_browser(served):
    page, url, first, edited = served
    page.goto(url)
    page.wait_for_selector("[data-testid='stApp']")
    settle(page)
    # The newest run is in view (the edited golden set's): compare it with the first run.
    page.locator("[data-testid='stSidebarNav']").get_by_role("link", name="Compare", exact=True).click()
    page.wait_for_url(f"{url}/compare")
    settle(page)
    page.get_by_role("combobox", name="Compare with another run").click()
    page.get_by_role("option").filter(has_text=first).click()
    settle(page)
    expect(page.get_by_text("1 question is left out of")).to_be_visible()
    expect(page.get_by_text(f"{first}:m1").first).to_be_visible()
    assert page.locator("[data-testid='stException']").count() == 0
    page.screenshot(path=str(SHOTS / "runs-compare.png"), full_page=True)
    page.locator("[data-testid='stSidebarNav']").get_by_role("link", name="History", exact=True).click()
    page.wait_for_url(f"{url}/history")
    settle(page)
    expect(page.get_by_role("heading", name="History")).to_be_visible()
    expect(page.get_by_text("This is the only run with scores on its golden set")).to_be_visible()
    # The first run's golden set has two runs: its history draws a chart per metric.
    page.locator("[data-testid='stSidebar']").get_by_role("combobox", name="Run").click()
    page.get_by_role("option").filter(has_text=first).click()
    settle(page)
    expect(page.locator(".stPlotlyChart").first).to_be_visible()
    expect(page.get_by_text("Steps from each run to the next")).to_be_visible()
    assert page.locator("[data-testid='stException']").count() == 0
    page.screenshot(path=str(SHOTS / "runs-history.png"), full_page=True)
