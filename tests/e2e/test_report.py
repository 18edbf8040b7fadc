"""The report file in a real browser (Debian's headless Chromium through playwright, as tests/e2e/test_browser.py
starts it): the ARAGOG demo's report opened from disk with every request blocked and recorded, its charts drawn, its
headline the numbers of `view overview`, its uploaded text inert, its print layout A4; and the app's "Download
report" button hands the same file over. Screenshots go to tests/e2e/screenshots/ for a human to look at."""
from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from evaluators.demo import ARAGOG, GRAPHRAG
from evaluators.queries import runs
from evaluators.presentation.report import report_html
from evaluators.store import close_store, open_store
from tests.helpers.hostile import A_LINK, HOSTILE_METHOD, IMG, JS_LINK
from tests.helpers.browser import SHOTS, settle, chromium, serving
from tests.helpers import ROOT

pytestmark = pytest.mark.e2e

A4_TEXT_WIDTH = 703  # CSS pixels between the report's A4 margins (210 mm - 2 x 12 mm at 96 per inch)


def _written(db: Path, run_id: str, out: Path) -> Path:
    out.write_text(report_html(open_store(db), run_id), encoding="utf-8")
    close_store(db)
    return out


@pytest.fixture(scope="module")
def aragog(tmp_path_factory, all_demos_db_file) -> tuple[Path, str, Path]:
    """(database, ARAGOG run id, its report file) on a private copy of the evaluated demos."""
    folder = tmp_path_factory.mktemp("report")
    db = folder / "demos.duckdb"
    shutil.copy(all_demos_db_file, db)
    found = runs(open_store(db))
    run_id = found.loc[found["name"] == ARAGOG.name, "run_id"].iloc[0]
    close_store(db)
    return db, run_id, _written(db, run_id, folder / "aragog-report.html")


class Opened:
    """A report file opened in Chromium, every request but the file's own blocked; what happened on the way."""

    def __init__(self, page: Page, path: Path):
        self.page, self.url = page, path.as_uri()
        self.requests, self.blocked, self.errors, self.dialogs = [], [], [], []
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        page.route("**/*", self._route)
        page.goto(self.url)
        self.graphs = page.locator(".plotly-graph-div").count()
        page.wait_for_function("n => document.querySelectorAll('.js-plotly-plot .main-svg').length >= n",
                               arg=self.graphs)

    def _route(self, route):
        if route.request.url == self.url:
            route.continue_()
        else:
            self.blocked.append(route.request.url)
            route.abort()


@contextlib.contextmanager
def opened(path: Path) -> Iterator[Opened]:
    with chromium() as page:
        yield Opened(page, path)


def test_the_aragog_report_opens_offline_and_draws_every_chart(aragog):
    _, _, path = aragog
    text = path.read_text()
    assert path.stat().st_size < 6_000_000, f"{path.stat().st_size:,} bytes"
    with opened(path) as report:
        page = report.page
        assert report.requests == [report.url] and report.blocked == []  # nothing left the file
        assert report.errors == []
        assert report.graphs == text.count("Plotly.newPlot(") == page.locator(".js-plotly-plot").count() >= 3
        assert page.locator(".js-plotly-plot .main-svg").count() >= report.graphs  # each one drawn
        # charts and the text column fit an A4 page's text: printed, nothing is cut off
        widths = page.eval_on_selector_all(".js-plotly-plot, main > *", "els => els.map(e => e.scrollWidth)")
        assert max(widths) <= A4_TEXT_WIDTH
        page.screenshot(path=str(SHOTS / "report-aragog.png"), full_page=True)
        page.emulate_media(media="print")
        pdf = page.pdf(prefer_css_page_size=True, path=str(SHOTS / "report-aragog.pdf"))
    boxes = {tuple(float(x) for x in box) for box in re.findall(rb"/MediaBox \[0 0 ([\d.]+) ([\d.]+)\]", pdf)}
    assert len(boxes) == 1 and all(abs(a - b) < 2 for a, b in zip(boxes.pop(), (595.3, 841.9)))  # A4 in points


def test_its_headline_is_the_one_of_view_overview(aragog):
    db, run_id, path = aragog
    out = subprocess.run([sys.executable, "-m", "evaluators", "view", "overview", run_id, "--json", "--db", str(db)],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    tables = json.loads(out.stdout)
    expected = {(r["method"], r["item"]): r for r in tables["headline"]}
    with opened(path) as report:
        page = report.page
        drawn = page.evaluate("""() => document.getElementById('chart-1').data.map(
            t => ({name: t.name, x: Array.from(t.x), y: Array.from(t.y)}))""")
        sentences = [*page.locator("p.lead").all_inner_texts(), *page.locator("ul.findings li").all_inner_texts()]
        cells = page.locator("table.headline tr").evaluate_all(
            "rows => rows.map(r => Array.from(r.cells).map(c => c.innerText.replace(/\\s+/g, ' ').trim()))")
    assert sorted((t["name"], x) for t in drawn for x in t["x"]) == sorted(expected)  # every method, every item
    for trace in drawn:
        for item, value in zip(trace["x"], trace["y"]):
            assert value == pytest.approx(expected[(trace["name"], item)]["value"], abs=1e-9)
    assert sentences == [f["sentence"] for f in tables["findings"]]
    methods = cells[0][1:]
    for row in cells[1:]:
        for method, cell in zip(methods, row[1:]):
            r = expected[(method, row[0])]
            digits, sign = (1, "%") if r["unit"] == "%" else (2, "")
            assert cell == (f"{r['value']:.{digits}f}{sign} [{r['ci_low']:.{digits}f}, {r['ci_high']:.{digits}f}] "
                            f"n {r['n']} of {r['n_total']}")


def test_uploaded_text_shows_as_text(hostile_db_file, tmp_path):
    db, run_id = hostile_db_file
    path = _written(db, run_id, tmp_path / "hostile-report.html")
    with opened(path) as report:
        page = report.page
        for chart in page.locator(".js-plotly-plot").all():  # the hovers show method names and question types
            chart.scroll_into_view_if_needed()
            box = chart.bounding_box()
            for fx in (0.3, 0.5, 0.7):
                page.mouse.move(box["x"] + box["width"] * fx, box["y"] + box["height"] * 0.5)
                page.wait_for_timeout(100)
        for payload in (IMG, JS_LINK, A_LINK, HOSTILE_METHOD):
            assert page.get_by_text(payload, exact=False).count() > 0
        hrefs = page.eval_on_selector_all("a", "els => els.map(e => e.getAttribute('href'))")
        live = page.eval_on_selector_all("img, [onerror], [onmouseover], [onclick], iframe, object, embed",
                                         "els => els.map(e => e.outerHTML)")
        page.screenshot(path=str(SHOTS / "report-uploaded-text.png"), full_page=True)
        assert report.dialogs == [] and report.errors == [] and report.blocked == []
    assert hrefs and all(h.startswith("#rs-chunk-") for h in hrefs)  # only the claims' links to their chunks
    assert live == []


def test_the_download_button_hands_over_the_report(aragog, tmp_path):
    db, run_id, _ = aragog
    app_db = tmp_path / "app.duckdb"
    shutil.copy(db, app_db)
    with serving(app_db) as url, chromium() as page:
        page.goto(url)
        page.wait_for_selector("[data-testid='stApp']")
        settle(page)
        button = page.get_by_role("button", name="Download report")
        button.scroll_into_view_if_needed()
        with page.expect_download(timeout=300_000) as download:
            button.click()
        saved = tmp_path / "downloaded.html"
        download.value.save_as(saved)
        name = download.value.suggested_filename
    assert name == f"{run_id}-report.html"
    text = saved.read_text()
    assert f"RAGScope report: {ARAGOG.name}" in text and 3_000_000 < len(text.encode()) < 6_000_000


def by_button(db: Path, run_id: str, out: Path, **choices) -> Path:
    """The report as the app's Download report button builds it: ui.common.report_button's callable (Overview's
    arguments by default), in a process that has imported streamlit, as the app's has."""
    import ui.common

    clicked = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ui.common, "store", lambda: open_store(db))
        patch.setattr(ui.common.st, "download_button", lambda label, data, **kwargs: clicked.append(data))
        ui.common.report_button(run_id, **choices)
        out.write_text(clicked[0](), encoding="utf-8")
    close_store(db)
    return out


@pytest.fixture(scope="module")
def from_the_app(aragog) -> list[Path]:
    """The reports of the ARAGOG demo (four methods, long method names, no question types) and the GraphRAG-Bench
    one (its question type x metric heatmap), as the app's button writes them."""
    db, run_id, path = aragog
    found = runs(open_store(db))
    graphrag = found.loc[found["name"] == GRAPHRAG.name, "run_id"].iloc[0]
    return [by_button(db, run_id, path.with_name("aragog-app.html")),
            by_button(db, graphrag, path.with_name("graphrag-app.html"))]


OUTSIDE = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).flatMap(plot => {
    const svg = plot.querySelector('svg.main-svg').getBoundingClientRect();
    return Array.from(plot.querySelectorAll('g[class$="tick"] > text, g[class$="title"] > text')).filter(t => {
        const box = t.getBoundingClientRect();
        return box.width > 0 && (box.left < svg.left - 0.5 || box.right > svg.right + 0.5 || box.top < svg.top - 0.5
                                 || box.bottom > svg.bottom + 0.5);
    }).map(t => `${plot.id}: ${t.textContent}`);
})"""


@pytest.mark.parametrize("width", [1000, 1920])
def test_no_axis_label_is_cut_off(from_the_app, width):
    for path in from_the_app:
        with opened(path) as report:
            report.page.set_viewport_size({"width": width, "height": 1000})
            report.page.wait_for_timeout(500)  # the charts are responsive: drawn again at the new width
            ticks = report.page.evaluate("() => document.querySelectorAll('g[class$=\"tick\"] > text').length")
            assert ticks > 20, path.name
            assert report.page.evaluate(OUTSIDE) == [], path.name


BROKEN_WORDS = """() => Array.from(document.querySelectorAll('table th, table td')).flatMap(cell => {
    const broken = [], walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (const word of node.data.matchAll(/\\S+/g)) {  // a word's text on more than one line: broken inside
            const range = document.createRange();
            range.setStart(node, word.index);
            range.setEnd(node, word.index + word[0].length);
            const lines = new Set(Array.from(range.getClientRects()).filter(r => r.width > 0)
                                  .map(r => Math.round(r.top)));
            if (lines.size > 1) broken.push(word[0]);
        }
    }
    return broken;
})"""


@pytest.mark.parametrize("width", [1000, 1920])
def test_tables_wrap_between_words_only(from_the_app, width):
    for path in from_the_app:
        with opened(path) as report:
            page = report.page
            page.set_viewport_size({"width": width, "height": 1000})
            page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
            assert page.locator("table.agreement td").count() > 100  # the appendix's table, opened
            assert page.evaluate(BROKEN_WORDS) == [], path.name
            # a table wider than the page's column scrolls in its box: the page keeps its width
            assert page.evaluate("() => document.documentElement.scrollWidth") <= width


def test_the_appendix_and_the_chunks_are_folded_and_open_when_needed(from_the_app):
    with opened(from_the_app[1]) as report:
        page = report.page
        page.set_viewport_size({"width": 1400, "height": 1000})
        folded = page.evaluate("() => document.documentElement.scrollHeight")
        # 13,665 px before the appendix and the chunks were folded (bench/results/report.md); 9,059 px with the
        # sections "Differences and power" and "Where each method loses" (issues 34, 35)
        assert folded < 10_000
        assert page.locator("details:not([open])").count() == page.locator("details").count() >= 12
        page.screenshot(path=str(SHOTS / "report-graphrag-1400.png"), full_page=True)  # as it opens
        link = page.locator("article.question a[href^='#rs-chunk-']").first
        target = link.get_attribute("href")
        assert not page.locator(target).is_visible()
        link.click()  # a claim's link to its chunk opens the chunks it is in
        expect(page.locator(target)).to_be_in_viewport()
        page.evaluate("() => dispatchEvent(new Event('beforeprint'))")  # printed: everything open
        assert page.locator("details:not([open])").count() == 0
