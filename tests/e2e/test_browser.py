"""End to end in a real browser: `streamlit run app.py` on 127.0.0.1, driven in Debian's headless
Chromium by playwright (executable_path=/usr/bin/chromium; playwright's own browser download is
never used). Screenshots go to tests/e2e/screenshots/ (git-ignored) for a human to look at."""
from __future__ import annotations

import contextlib
import re
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from evaluators.demo import ARAGOG, CLAPNQ, DEMO_GOLDEN, DEMO_OUTPUTS
from evaluators.metrics import REGISTRY
from evaluators.metrics.ranking import RANK_METRICS
from tests.helpers.browser import SHOTS, TIMEOUT_MS, settle, chromium, serving
from tests.helpers.browser import open_page

pytestmark = pytest.mark.e2e

expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture(scope="module")
def server(tmp_path_factory, all_demos_db_file):
    """The real app on loopback, on a private copy of the database with every demo run evaluated."""
    db = tmp_path_factory.mktemp("e2e") / "e2e.duckdb"
    shutil.copy(all_demos_db_file, db)
    with serving(db) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    """The module's one Chromium (playwright's sync API runs one instance per thread at a time)."""
    with chromium() as first:
        yield first.context.browser


@pytest.fixture(scope="module")
def page(server, browser):
    page = browser.new_page(viewport={"width": 1500, "height": 1000})
    page.set_default_timeout(TIMEOUT_MS)
    yield page
    page.close()


def test_opens_on_the_evaluated_demo_with_its_headline(page, server, all_demos_db_file):
    findings = _headline_findings(all_demos_db_file)
    open_page(page, server)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    expect(page.get_by_text("Every metric, per method")).to_be_visible()
    expect(page.get_by_text(ARAGOG.name).first).to_be_visible()  # the default run: real answers
    expect(page.get_by_text("GPT-3.5-turbo in four haystack RAG pipelines").first).to_be_visible()
    expect(page.get_by_role("heading", name="Headline")).to_be_visible()
    for sentence in findings:  # the lead, then the differences that hold, as the view words them
        expect(page.get_by_text(sentence, exact=True)).to_be_visible()
    # the headline chart and the chart by question type; plotly's chunk loads lazily, so wait for them to be drawn
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 2")
    page.screenshot(path=str(SHOTS / "01-overview.png"), full_page=True)


def _headline_findings(db: Path) -> list[str]:
    """The sentences of the Overview headline of the newest run (the ARAGOG demo), as overview.view words them."""
    from evaluators import queries
    from evaluators.queries import overview
    from evaluators.store import close_store, open_store

    store = open_store(db)
    try:
        findings = overview.view(store, queries.runs(store)["run_id"].iloc[0])["findings"]
    finally:
        close_store(db)
    assert findings["metric"].notna().any(), "the ARAGOG demo's headline should report a difference that holds"
    return findings["sentence"].tolist()


def _default_comparison(db: Path) -> tuple[str, str, int, int, int]:
    """(A, baseline, metrics where A is significantly better, ... worse, metrics compared) of the pair Compare
    opens on in the newest run, computed from the stored scores as the page computes them."""
    from evaluators import queries
    from evaluators.queries import compare as q
    from evaluators.store import close_store, open_store

    store = open_store(db)
    try:
        run_id = queries.runs(store)["run_id"].iloc[0]
        chosen, baseline = q.default_methods(q.run_methods(store, run_id))
        table = q.comparison_table(store, run_id, baseline, chosen, metrics=q.run_metrics(store, run_id))
    finally:
        close_store(db)
    (a,) = [m for m in chosen if m != baseline]
    significant = table[table["significant"]]
    return a, baseline, int((significant["better"] == a).sum()), int((significant["better"] == baseline).sum()), \
        len(table)


def test_compare_shows_significant_differences_between_two_retrieval_settings(page, server, all_demos_db_file):
    a, baseline, better, worse, n = _default_comparison(all_demos_db_file)
    assert better + worse > 0, "the ARAGOG demo should show at least one tested difference between two settings"
    page.locator("[data-testid='stSidebarNav']").get_by_role("link", name="Compare", exact=True).click()
    page.wait_for_url(f"{server}/compare")
    settle(page)
    expect(page.get_by_text(f"{a} is significantly better than {baseline} on {better} of {n} metrics and worse "
                            f"on {worse} (Holm-adjusted p < 0.05 within each family of tests, see below)")).to_be_visible()
    page.screenshot(path=str(SHOTS / "02-compare-retrieval-settings.png"), full_page=True)


@pytest.mark.parametrize("title, path", [("Compare", "compare"), ("Claims", "claims"), ("Correlations", "correlations"),
                                         ("Error analysis", "error_analysis"), ("Data", "data"),
                                         ("Evaluate", "evaluate")])
def test_every_screen_opens_without_an_error(page, server, title, path):
    page.locator("[data-testid='stSidebarNav']").get_by_role("link", name=title, exact=True).click()
    page.wait_for_url(f"{server}/{path}")
    settle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    page.screenshot(path=str(SHOTS / f"screen-{path}.png"), full_page=True)


def test_no_request_leaves_the_machine(page, server):
    """Every asset of every screen comes from the app itself: a request to any other host (a font, an icon, a
    favicon) would tell a third party when and what the app is used for, and fail with no network."""
    outside = []

    def record(route):
        outside.append(route.request.url)
        route.abort()

    page.route(lambda url: not url.startswith(server), record)
    try:
        open_page(page, server)
        for title in ("Compare", "Claims", "Correlations", "Error analysis", "Data", "Evaluate", "Overview"):
            page.locator("[data-testid='stSidebarNav']").get_by_role("link", name=title, exact=True).click()
            settle(page)
    finally:
        page.unroute_all()
    assert outside == []


def test_clicking_a_point_of_the_compare_scatter_opens_the_question_in_claims(page, server):
    page.locator("[data-testid='stSidebarNav']").get_by_role("link", name="Compare", exact=True).click()
    page.wait_for_url(f"{server}/compare")
    settle(page)
    scatter = page.locator(".stPlotlyChart").filter(has=page.locator(".scatterlayer .points path")).last
    scatter.scroll_into_view_if_needed()
    box = scatter.locator(".scatterlayer .points path").first.bounding_box()
    # Plotly's drag layer lies over the points and finds the point under a click itself: click there.
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_timeout(300)
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_url(f"{server}/claims")
    settle(page)
    expect(page.get_by_role("heading", name="Claims").first).to_be_visible()
    assert page.locator("[data-testid='stException']").count() == 0
    page.screenshot(path=str(SHOTS / "02-drilldown-claims.png"), full_page=True)


def test_upload_the_demo_files_and_evaluate_them_with_the_offline_judge(page, server):
    page.locator("[data-testid='stSidebarNav']").get_by_role("link", name="Data", exact=True).click()
    page.wait_for_url(f"{server}/data")
    settle(page)
    uploader = page.locator("[data-testid='stFileUploader']").filter(has_text="Golden sets and RAG outputs")
    uploader.locator("input[type='file']").set_input_files([str(DEMO_GOLDEN), str(DEMO_OUTPUTS)])
    settle(page)
    expect(page.get_by_text(DEMO_GOLDEN.name).first).to_be_visible()
    expect(page.get_by_text(DEMO_OUTPUTS.name).first).to_be_visible()
    page.screenshot(path=str(SHOTS / "03-data-upload.png"), full_page=True)
    assert page.locator("[data-testid='stException']").count() == 0
    page.get_by_role("button", name="Store 2 files").click()  # already stored: a no-op that Evaluate then opens on
    settle(page)
    expect(page.get_by_text("0 new datasets stored, 2 already stored before")).to_be_visible()

    page.locator("[data-testid='stSidebarNav']").get_by_role("link", name="Evaluate", exact=True).click()
    page.wait_for_url(f"{server}/evaluate")
    settle(page)
    page.get_by_role("button", name="All metrics").click()
    settle(page)
    page.get_by_label("Run name").fill("e2e offline run")
    page.get_by_label("Run name").press("Enter")
    settle(page)
    page.get_by_role("button", name="Start the run").click()
    # The run goes on in a background thread; the page polls and shows the new run, which can be
    # opened once it has finished (the offline judge's claims take a while).
    # every catalogue metric but the rank metrics, as this golden set names no relevant document
    n_metrics = len(REGISTRY) - len(RANK_METRICS)
    finished = re.compile(rf"e2e offline run\s+run-\S+ · judge offline · 206 samples x {n_metrics} metrics · finished")
    page.get_by_text(finished).wait_for(timeout=600_000)
    settle(page)
    expect(page.get_by_text(finished)).to_be_visible()
    opened = page.get_by_role("button", name="Open the results")
    page.screenshot(path=str(SHOTS / "04-evaluate-finished.png"), full_page=True)
    opened.click()
    page.wait_for_url(f"{server}/")
    settle(page)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    expect(page.get_by_text("e2e offline run").first).to_be_visible()  # the new run is the one in view
    assert page.locator("[data-testid='stException']").count() == 0
    page.screenshot(path=str(SHOTS / "05-overview-new-run.png"), full_page=True)


def test_error_analysis_shows_judge_vs_humans_on_the_clapnq_demo(page, server):
    """The ClapNQ demo's human ratings beside the judge (last: it changes the run in view)."""
    page.locator("[data-testid='stSidebar'] [data-testid='stSelectbox']").filter(has_text="Run").click()
    page.get_by_role("option", name=re.compile(re.escape(CLAPNQ.name))).click()
    settle(page)
    page.locator("[data-testid='stSidebarNav']").get_by_role("link", name="Error analysis", exact=True).click()
    page.wait_for_url(f"{server}/error_analysis")
    settle(page)
    heading = page.get_by_role("heading", name="Judge vs humans")
    heading.scroll_into_view_if_needed()
    expect(heading).to_be_visible()
    # The caption is drawn only over a non-empty agreement table (else: "No human ratings imported").
    expect(page.get_by_text("Per human dimension and matching metric")).to_be_visible()
    assert page.locator("[data-testid='stException']").count() == 0
    page.screenshot(path=str(SHOTS / "06-judge-vs-humans.png"), full_page=True)


# -- every screen at two widths in both themes ------------------------------------------------------------------

THEMES = ("light", "dark")
WIDTHS = (1400, 1920)
SCREENS = (("Overview", ""), ("Compare", "compare"), ("History", "history"), ("Claims", "claims"),
           ("Diagnosis", "diagnosis"), ("Correlations", "correlations"), ("Error analysis", "error_analysis"),
           ("Data", "data"), ("Evaluate", "evaluate"))
RESULTS = {"", "compare", "history", "claims", "diagnosis", "correlations", "error_analysis"}
FIRST_COLUMNS = 3  # a table's first columns, always wholly in view (its name or question, then what it says of it)
FITTING_COLUMNS = 8  # a result table this narrow shows every column when it has the page's width (>= 800 px)
MIN_CONTRAST = 4.5  # WCAG 2 AA, normal text

# Per st.dataframe (a canvas: glide-data-grid): its column count, the columns it draws (glide keeps an accessible
# table of the cells in view: one <th> per column at least partly visible, numbered by aria-colindex), its content
# width and its viewport's.
TABLES_JS = """() => [...document.querySelectorAll('[data-testid="stDataFrame"]')].map(frame => {
    const grid = frame.querySelector('[role=grid]'), scroller = frame.querySelector('.dvn-scroller');
    if (!frame.checkVisibility() || !grid) return null;  // in a closed expander or another tab
    return {columns: +grid.getAttribute('aria-colcount'),
            drawn: [...grid.querySelectorAll('thead th')].map(h => [+h.getAttribute('aria-colindex'), h.textContent]),
            content: scroller.scrollWidth, width: scroller.clientWidth};
})"""
# The highlighted claims of the answers: each one's text colour and background, as the browser computed them.
MARKS_JS = """() => [...document.querySelectorAll('mark')].map(m => {
    const style = getComputedStyle(m);
    return {text: m.textContent.slice(0, 40), color: style.color, background: style.backgroundColor};
})"""


def _luminance(rgb: str) -> float:
    """WCAG 2's relative luminance of a CSS rgb()/rgba() colour."""
    channels = [int(c) / 255 for c in re.findall(r"[\d.]+", rgb)[:3]]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(foreground: str, background: str) -> float:
    """WCAG 2's contrast ratio of two colours, 1 to 21."""
    light, dark = sorted((_luminance(foreground), _luminance(background)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def test_contrast_of_wcag_examples():
    assert contrast("rgb(0, 0, 0)", "rgb(255, 255, 255)") == pytest.approx(21)
    assert contrast("rgb(118, 118, 118)", "rgba(255, 255, 255, 1)") == pytest.approx(4.54, abs=0.01)  # #767676


def _cut_tables(page: Page, path: str) -> list[str]:
    """The tables of the screen whose first columns are not wholly in view, or (a result table of at most
    FITTING_COLUMNS columns at the page's width) that scroll sideways: what is wrong with each."""
    frames = page.locator("[data-testid='stDataFrame']")
    for i in range(frames.count()):  # drawn when scrolled into view (not those in a closed expander or tab)
        if frames.nth(i).is_visible():
            frames.nth(i).scroll_into_view_if_needed()
            with contextlib.suppress(PlaywrightTimeout):  # one hidden as the page redraws: not measured
                frames.nth(i).locator("[role=grid]").wait_for(state="attached", timeout=15_000)
    wrong = []
    for table in filter(None, page.evaluate(TABLES_JS)):
        drawn = sorted(table["drawn"])
        names = [name for _, name in drawn]
        first = min(FIRST_COLUMNS, table["columns"])
        scrolls = table["content"] > table["width"] + 1
        # the first columns drawn from the left; if the table scrolls, one more after them, so they are whole
        if [i for i, _ in drawn[:first]] != list(range(1, first + 1)) or (scrolls and len(drawn) <= first):
            wrong.append(f"first columns cut: {names} drawn of {table['columns']}, {table['width']} px wide")
        elif (path in RESULTS and scrolls and table["columns"] <= FITTING_COLUMNS and table["width"] >= 800):
            wrong.append(f"{table['columns']} columns need {table['content']} px of {table['width']}: {names}")
    return wrong


def _shoot(page: Page, name: str, width: int) -> None:
    """A screenshot of the whole screen: the viewport as tall as Streamlit's scrolling container's content, once
    that has stopped growing (charts and tables are laid out after the script run)."""
    height = -1
    for _ in range(12):
        page.wait_for_timeout(600)
        now = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
        if now == height:
            break
        height = now
    page.set_viewport_size({"width": width, "height": min(max(height, 900), 16000)})
    page.wait_for_timeout(500)
    page.screenshot(path=str(SHOTS / name))
    page.set_viewport_size({"width": width, "height": 1200})


@pytest.fixture(scope="module", params=THEMES)
def themed(request, tmp_path_factory, all_demos_db_file):
    """(theme, URL): the app on a private copy of the demo database in Streamlit's light or dark theme."""
    db = tmp_path_factory.mktemp(f"e2e-{request.param}") / "themed.duckdb"
    shutil.copy(all_demos_db_file, db)
    with serving(db, "--theme.base", request.param) as url:
        yield request.param, url


def test_every_screen_reads_well_at_1400_and_1920_px_in_both_themes(themed, browser):
    """Each screen at both widths: no error, no table whose first columns are cut, the highlighted claims of the
    answers on Claims and in Error analysis' selected sample readable (WCAG contrast >= 4.5:1 with their
    background); a screenshot of each in tests/e2e/screenshots/<theme>-<width>-<screen>.png for a person to look
    at (Error analysis with its first sample selected)."""
    theme, url = themed
    problems = []
    page = browser.new_page(viewport={"width": WIDTHS[0], "height": 1200})
    page.set_default_timeout(TIMEOUT_MS)
    try:
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 1200})
            for title, path in SCREENS:
                open_page(page, url, path)
                expect(page.get_by_role("heading", name=title).first).to_be_visible()
                assert page.locator("[data-testid='stException']").count() == 0, (theme, width, title)
                assert page.locator("[data-testid='stAppDeployButton']").count() == 0  # client.toolbarMode viewer
                # plotly's chunk loads lazily: wait until every chart is drawn
                page.wait_for_function("[...document.querySelectorAll('.stPlotlyChart')]"
                                       ".every(chart => chart.querySelector('.main-svg'))")
                problems += [f"{theme} {width} px {title}: {p}" for p in _cut_tables(page, path)]
                if path == "error_analysis":  # the first sample of the list: its answer, reference and chunks
                    grid = page.locator("[data-testid='stDataFrame']").first.bounding_box()
                    page.mouse.click(grid["x"] + 16, grid["y"] + 35 + 17)  # its row's checkbox (a canvas)
                    settle(page)
                    expect(page.get_by_text("Reference answer").first).to_be_visible()
                if path == "claims":
                    page.locator("mark").first.wait_for()  # the answers of the first question, claims highlighted
                if path in ("claims", "error_analysis"):  # (the worst sample's answer may have no claim to mark)
                    marks = page.evaluate(MARKS_JS)
                    problems += [f"{theme} {width} px {title}: {m['text']!r} {m['color']} on {m['background']}: "
                                 f"contrast {contrast(m['color'], m['background']):.1f}"
                                 for m in marks if contrast(m["color"], m["background"]) < MIN_CONTRAST]
                _shoot(page, f"{theme}-{width}-{path or 'overview'}.png", width)
    finally:
        page.close()
    assert not problems, "\n".join(problems)
