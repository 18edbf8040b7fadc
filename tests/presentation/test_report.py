"""The report file (evaluators/presentation/report.py) on real DuckDB files: every section present with the numbers and sentences
of the screens' own views, runs it cannot fully report say so, uploaded text stays text, and the `report` command's
exit codes."""
import re
from html.parser import HTMLParser

import plotly.offline
import pytest

from evaluators.metrics import REGISTRY
from evaluators.queries import compare, diagnosis, overview
from evaluators.queries.headline import HEADLINE
from evaluators.presentation.report import report_html
from evaluators.store import close_store, open_store
from tests.helpers.hostile import A_LINK, HOSTILE_METHOD, IMG, JS_LINK
from tests.helpers.calibration import calibration_row
from tests.helpers.cli import cli
from tests.helpers.headline_run import headline_run
from tests.helpers.shared_db import held_elsewhere

SECTIONS = ["evaluated", "headline", "differences", "by-type", "attribution", "distributions", "questions", "how"]
BLOCKS = {"p", "li", "td", "th", "h1", "h2", "h3", "h4", "dt", "dd", "pre", "div", "mark"}
VOID = {"meta", "br", "img", "link", "input", "hr"}


class Page(HTMLParser):
    """A report as a browser reads it: every tag with its attributes, the text of each section, and the text of each
    block with its section and the classes of the elements around it."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.sections: dict[str, str] = {}
        self.blocks: list[dict] = []
        self._open: list[tuple[str, dict, dict | None]] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "section":
            self.sections[attrs["id"]] = ""
        block = None
        if tag in BLOCKS:
            block = {"tag": tag, "text": "", "section": self._section(), "attrs": attrs,
                     "classes": {c for _, a, _ in self._open for c in (a.get("class") or "").split()}
                     | set((attrs.get("class") or "").split())}
            self.blocks.append(block)
        if tag not in VOID:
            self._open.append((tag, attrs, block))

    def handle_endtag(self, tag):
        while self._open and self._open.pop()[0] != tag:
            pass

    def handle_data(self, data):
        if any(t in ("script", "style", "title") for t, _, _ in self._open):
            return
        if (section := self._section()) is not None:
            self.sections[section] += data
        for _, _, block in self._open:
            if block is not None:
                block["text"] += data

    def _section(self):
        return next((a["id"] for t, a, _ in reversed(self._open) if t == "section"), None)

    def texts(self, tag: str, cls: str | None = None, section: str | None = None) -> list[str]:
        return [b["text"].strip() for b in self.blocks if b["tag"] == tag and (cls is None or cls in b["classes"])
                and (section is None or b["section"] == section)]

    def count(self, tag: str, cls: str | None = None) -> int:
        return sum(1 for t, a in self.tags if t == tag and (cls is None or cls in (a.get("class") or "").split()))


def _graphs(text: str) -> int:
    return Page(text).count("div", "plotly-graph-div")


def _check_headline(page: Page, tables: dict) -> None:
    """The headline's table shows overview.view's numbers (as its sentences write them) and its sentences."""
    scores = tables["headline"]
    methods = sorted(scores["method"].unique())
    cells = [b["text"].strip() for b in page.blocks if "headline" in b["classes"] and b["tag"] in ("td", "th")]
    width = len(methods) + 1
    assert cells[1:width] == methods
    rows = [cells[i:i + width] for i in range(width, len(cells), width)]
    shown = {row[0]: dict(zip(methods, row[1:])) for row in rows}
    assert len(shown) == scores["item"].nunique()
    for r in scores.itertuples():
        digits = 1 if r.unit == "%" else 2
        assert shown[r.item][r.method] == (f"{r.value:.{digits}f}{'%' if r.unit == '%' else ''} "
                                           f"[{r.ci_low:.{digits}f}, {r.ci_high:.{digits}f}]n {r.n} of {r.n_total}")
    assert [*page.texts("p", "lead"), *page.texts("li", "findings")] == list(tables["findings"]["sentence"])


def test_the_demo_report_holds_every_section_with_the_views_content(demo):
    store, run_id = demo
    text = report_html(store, run_id)
    page = Page(text)
    assert list(page.sections) == SECTIONS and all(page.sections[s].strip() for s in SECTIONS)
    assert len(text.encode()) < 6_000_000
    # plotly.js once, in the file; nothing fetched: no script, style or image from elsewhere, links in the page only
    assert text.count(plotly.offline.get_plotlyjs()) == 1
    assert not [a for t, a in page.tags if t == "script" and "src" in a]
    assert not [t for t, _ in page.tags if t in ("link", "img", "iframe", "object", "embed")]
    assert all(a["href"].startswith("#") for t, a in page.tags if t == "a")
    policy = next(a["content"] for t, a in page.tags if a.get("http-equiv") == "Content-Security-Policy")
    assert policy.startswith("default-src 'none'; script-src 'sha256-")  # only its own scripts, by their hashes
    # headline (the chart, the table, the sentences), a heatmap, the two distributions: every chart drawn once
    assert page.count("div", "plotly-graph-div") == text.count("Plotly.newPlot(") == 4
    tables = overview.view(store, run_id)
    _check_headline(page, tables)
    facts = dict(zip(page.texts("dt"), page.texts("dd")))
    assert facts["Golden set"].endswith(": 103 questions") and facts["Methods"] == "basic_search, local_search"
    assert facts["Baseline"] == "local_search"  # the headline's leader: each other method is compared with it
    assert all(t in facts["Question types"] for t in overview.question_types(store, run_id))
    assert "Run date" in facts and facts["RAGScope"]
    # the differences on the headline metrics as Compare gives them, each with its minimum detectable effect
    assert page.texts("h3", section="differences") == ["basic_search − local_search"]
    pair = compare.view(store, run_id, methods=["basic_search", "local_search"], baseline="local_search")["metrics"]
    pair = pair[pair["metric"].isin(HEADLINE)]
    cells = page.texts("td", section="differences")
    assert page.texts("th", section="differences") == ["metric", "Δ", "95% CI", "p (Holm)", "n", "MDE", "better"]
    assert cells[::7] == list(pair["metric"]) and len(pair) > 3
    assert cells[5::7] == [f"{v:.3f}".rstrip("0").rstrip(".") for v in pair["MDE"]]
    # the comparison: the heatmap of the pair, the five largest gaps on the first headline metric, as Compare lists them
    assert page.texts("h3", section="by-type") == ["basic_search − local_search"]
    gaps = compare.view(store, run_id, methods=["basic_search", "local_search"], baseline="local_search",
                        metric="judge_overall")["disagreements"]
    gaps = gaps[gaps["Δ basic_search − local_search"] != 0].head(5)
    assert page.texts("h3", section="questions") == ["basic_search vs local_search on judge_overall"]
    # where each one loses, as Compare and Diagnosis say it (issue 35)
    attributed = compare.view(store, run_id, methods=["basic_search", "local_search"], baseline="local_search")
    assert page.texts("li", section="attribution") == list(attributed["attribution"]["sentence"])
    shares = diagnosis.view(store, run_id)["shares"]
    assert page.texts("td", section="attribution")[2::5] == [f"{n} of {of}" for n, of in zip(shares["n"], shares["of"])]
    assert page.texts("h4", section="questions")[::3] == list(gaps["question"])  # each card: its question, 2 sides
    assert page.count("article", "question") == 5 and page.count("div", "side") == 10
    assert page.count("mark") > 0  # claims highlighted by verdict
    anchors = [a["id"] for t, a in page.tags if a.get("id", "").startswith("rs-chunk-")]
    assert anchors and len(anchors) == len(set(anchors))  # each side's chunks their own, for the claims' links
    assert {a["href"][1:] for t, a in page.tags if t == "a"} <= set(anchors)
    # the distributions, as Overview counts them
    rows = page.texts("td", section="distributions")
    for metric in ("verdict", "answer_class"):
        for method, counts in tables[metric].iterrows():
            assert [method, *(str(int(v)) for v in counts.iloc[:3])] == rows[:4]
            rows = rows[6:]
    # how the scores are computed: the headline metrics' formulas, the offline judge's measured agreement
    formulas = page.texts("pre", section="how")
    assert all(REGISTRY[m].formula.strip() in formulas for m in tables["headline"]["metric"].unique())
    assert len(page.texts("td", section="how")) == tables["agreement"].size > 0


def test_methods_and_baseline_choose_the_comparison(tmp_path):
    store, run_id = headline_run(tmp_path)  # m1 is better than m2, m3 answers as m2 does
    page = Page(report_html(store, run_id))
    assert page.texts("h3", section="questions") == ["m2 vs m1 on judge_overall", "m3 vs m1 on judge_overall"]
    page = Page(report_html(store, run_id, methods=["m2", "m3"], baseline="m3"))
    facts = dict(zip(page.texts("dt"), page.texts("dd")))
    assert (facts["Methods"], facts["Baseline"]) == ("m2, m3", "m3")
    assert page.texts("h3", section="questions") == ["m2 vs m3 on judge_overall"]
    assert page.texts("p", section="questions")[-1] == ("No question is scored differently by m2 and m3 on "
                                                       "judge_overall.")
    assert page.texts("td", section="distributions")[::6] == ["m2", "m3", "m2", "m3"]
    _check_headline(page, overview.view(store, run_id, baseline="m3"))  # Overview's headline, against the baseline
    page = Page(report_html(store, run_id, methods=["m1", "m2"], baseline="m3"))  # a baseline joins the methods
    assert page.texts("h3", section="questions") == ["m1 vs m3 on judge_overall", "m2 vs m3 on judge_overall"]
    for methods, baseline in ((["m1", "m9"], None), (["m1"], "m9"), (None, "m9")):
        with pytest.raises(ValueError, match="'m9' is not one of"):
            report_html(store, run_id, methods=methods, baseline=baseline)
    with pytest.raises(ValueError, match="no run"):
        report_html(store, "run-missing")


def test_a_method_of_another_run_is_compared_with_this_one(tmp_path):
    store, before = headline_run(tmp_path, methods=("m1", "m2"))
    _, after = headline_run(tmp_path, methods=("m1", "m2"))  # the same database, a later run
    other = f"{before}:m2"
    page = Page(report_html(store, after, methods=["m1", other], baseline=other))
    facts = dict(zip(page.texts("dt"), page.texts("dd")))
    assert facts["Methods"] == f"m1, {other}" and facts["Another run"] == f"{before}: h"
    assert page.texts("h3", section="questions") == [f"m1 vs {other} on judge_overall"]
    assert page.count("article", "question") == 5
    counts = overview.view(store, before)["verdict"].loc["m2"]
    assert page.texts("td", section="distributions")[6:10] == [other, *(str(int(v)) for v in counts.iloc[:3])]
    assert page.texts("h3", section="by-type") == [] and "no question types" in page.sections["by-type"]


def test_a_run_with_one_method_says_there_is_nothing_to_compare(tmp_path):
    store, run_id = headline_run(tmp_path, methods=("m1",))
    text = report_html(store, run_id)
    page = Page(text)
    for section in ("differences", "by-type", "questions"):
        assert page.sections[section].endswith("Only one method (m1): there is nothing to compare it with.")
    assert "Only one method (m1)" in page.texts("p", "lead")[0]
    assert _graphs(text) == 3  # the headline and the two distributions


def test_a_run_without_correctness_against_the_reference_says_so(tmp_path):
    store, run_id = headline_run(tmp_path, metrics=("judge_overall", "verdict", "faithfulness"))
    page = Page(report_html(store, run_id))
    warning = page.texts("p", "warning", section="headline")
    assert warning and "did not score answer_correctness_f1 or answer_class" in warning[0]
    assert "Not scored in this run (answer_class)." in page.sections["distributions"]
    (tmp_path / "with").mkdir()
    store, run_id = headline_run(tmp_path / "with", metrics=("judge_overall", "answer_class"))
    assert not Page(report_html(store, run_id)).texts("p", "warning")  # one of them is enough


def test_a_run_whose_cells_all_failed_says_so(tmp_path):
    store, run_id = headline_run(tmp_path, status="judge_error")
    text = report_html(store, run_id)
    page = Page(text)
    assert list(page.sections) == ["evaluated", "scores"]
    assert page.texts("p", "warning", section="scores")[0].startswith("Every cell of this run failed (480 failed")
    assert "plotly" not in text.lower() and len(text) < 20_000  # no chart: no plotly.js


def test_uploaded_text_stays_text(hostile_db_file):
    db, run_id = hostile_db_file
    text = report_html(open_store(db), run_id)
    close_store(db)
    page = Page(text)
    # only the report's own markup: no image, no script but plotly's, no link out, no event handler
    assert {t for t, _ in page.tags} <= {"html", "head", "meta", "title", "style", "script", "body", "main", "h1",
                                         "h2", "h3", "h4", "section", "dl", "dt", "dd", "p", "ul", "li", "div",
                                         "table", "thead", "tbody", "tr", "th", "td", "b", "i", "br", "span", "mark",
                                         "sup", "sub", "a", "pre", "article", "footer", "details", "summary"}
    assert not [a for _, a in page.tags if any(k.startswith("on") for k in a)]
    assert all(a["href"].startswith("#") for t, a in page.tags if t == "a")
    shown = "".join(page.sections.values())
    for payload in (IMG, JS_LINK, A_LINK, HOSTILE_METHOD, "<script>alert(5)</script>Fact"):
        assert payload in shown  # shown as written, as text
    assert IMG in page.texts("h1")[0] and page.texts("h4", section="questions")[0].startswith(IMG)
    # in the charts too: plotly reads a few tags in names and labels, so they go in escaped (JSON hides "<" again)
    figures = text[text.index("Plotly.newPlot("):]
    assert '"name":"&lt;b onmouseover=alert(4)&gt;tuned&lt;\\u002fb&gt;"' in figures
    assert set(re.findall(r'"(\w+)":"\\u003cb onmouseover', figures)) == {"legendgroup"}  # an id, never shown


def test_the_report_command_writes_the_file_and_exits_2_or_3_when_it_cannot(tmp_path, monkeypatch):
    store, run_id = headline_run(tmp_path)
    close_store(store.path)
    db, out = store.path, tmp_path / "report.html"
    assert "write a run's report" in cli("--help").stdout  # listed among the commands
    done = cli("report", run_id, "--out", str(out), db=db)
    assert done.returncode == 0, done.stderr
    assert f"wrote {out}" in done.stdout and _graphs(out.read_text()) == 3  # no question types: no heatmap
    assert cli("report", "run-missing", "--out", str(out), db=db).returncode == 2
    wrong = cli("report", run_id, "--methods", "m1,m9", "--out", str(tmp_path / "x.html"), db=db)
    assert wrong.returncode == 2 and "m9" in wrong.stderr and not (tmp_path / "x.html").exists()
    assert cli("report", run_id, "--baseline", "m9", "--out", str(out), db=db).returncode == 2
    assert cli("report", run_id, "--out", str(tmp_path / "no" / "dir.html"), db=db).returncode == 2
    assert cli("report", run_id, "--out", str(out), db=tmp_path / "none.duckdb").returncode == 2
    monkeypatch.setenv("RAGSCOPE_DB_WAIT", "1")
    with held_elsewhere(db):
        held = cli("report", run_id, "--out", str(out), db=db)
    assert held.returncode == 3 and "in use by another process" in held.stderr, held.stderr


@pytest.mark.usefixtures("navigation_pages")
def test_overview_and_compare_offer_the_report_without_building_it(app_at, monkeypatch):
    built = []
    monkeypatch.setattr("evaluators.presentation.report.report_html", lambda *a, **k: built.append(a) or "")
    for page in (None, "pages/compare.py"):
        at = app_at(page)
        assert [b.proto.label for b in at.get("download_button")].count("Download report") == 1
    assert built == []  # the report is built when the button is clicked (tests/e2e/test_report.py), not on a rerun


def masked(page: str) -> str:
    """A report without the minute it was written (its footer's only moving part)."""
    return re.sub(r"on \d{4}-\d\d-\d\d \d\d:\d\d UTC", "on <when> UTC", page)


@pytest.mark.usefixtures("navigation_pages")
def test_the_download_button_writes_the_file_the_report_command_writes(app_at, monkeypatch, tmp_path):
    """The button's file is built in the app's process, where importing streamlit makes its plotly template the
    default (no automargin: the heatmap's labels were clipped); the command's in a process without streamlit."""
    import streamlit as st

    clicked, button = {}, st.download_button

    def recording(label, data, *args, **kwargs):
        if label == "Download report":
            clicked[kwargs["key"]] = data  # what the click builds, with Overview's own arguments
        return button(label, data, *args, **kwargs)

    monkeypatch.setattr(st, "download_button", recording)
    at = app_at()  # Overview on its defaults
    run_id = at.session_state["run_id"]
    app_page = clicked["report"]()
    out = tmp_path / "cli.html"
    done = cli("report", run_id, "--out", str(out), db=app_at.db)
    assert done.returncode == 0, done.stderr
    assert "by-type" in app_page and _graphs(app_page) == 4  # headline, heatmap, two label charts
    assert masked(app_page) == masked(out.read_text())


def test_the_report_says_how_far_the_runs_judge_agreed_with_people_when_calibrated(tmp_path):
    store, run_id = headline_run(tmp_path, judge=("openai", "gpt-5-mini"))
    note = Page(report_html(store, run_id)).texts("p", "note", section="headline")[-1]
    assert "has not been measured here" in note and "judge calibrate" in note
    store.save_calibration(judge="openai", judge_model="gpt-5-mini", judge_config={}, n_items=200, seed=0,
                           cost_usd=0.4, status="finished", note="", rows=[calibration_row(), calibration_row(
                               "faithfulness", 0.7, sets="begin", metric="judge_faithfulness")])
    page = Page(report_html(store, run_id))
    note = page.texts("p", "note", section="headline")[-1]
    assert ("gpt-5-mini agrees with people: correctness AUROC 0.91 [0.87, 0.94] on 200 labelled items; the offline "
            "judge 0.78") in note
    cells = page.texts("td", "agreement", section="how")
    assert "0.91 [0.87, 0.94]" in cells and "0.70 [0.87, 0.94]" in cells and "begin" in cells


def test_the_report_says_which_family_of_tests_its_findings_are_corrected_over(tmp_path):
    # issue 34: the report's headline names the primary family and its correction, How scores are computed both
    from evaluators.queries import hypotheses
    from tests.helpers.family_run import A, B, family_run

    store, run_id = family_run(tmp_path)
    try:
        page = Page(report_html(store, run_id, methods=[A, B], baseline=B))
        headline = " ".join(page.sections["headline"].split())
        assert f"{A} gets better pass / partial / fail verdicts than {B}" in headline
        assert hypotheses.caption(secondary=False) in headline
        assert hypotheses.caption(secondary=True) in " ".join(page.sections["how"].split())
    finally:
        close_store(tmp_path / "f.duckdb")
