"""The report file: one self-contained HTML page of a run, for people who will not open the app.

What was evaluated; Overview's headline; the RAG system's own latency and cost (when its answers record them); each method against the baseline on the headline metrics, with the minimum
detectable effect; the comparison by question type; where each method loses (retrieval or generation); the verdicts and answer classes per
method; the questions where the methods differ most, each side's answer with its claims highlighted and the chunks
they cite; how the scores are computed. Every number comes from a screen's own view (overview, compare, claims,
evaluate): this module lays their tables out and computes none. Uploaded text is escaped (highlight.esc, and
figures.plot_label in charts); plotly.js is inlined once and the page's Content-Security-Policy allows no request,
so the file opens offline and nothing in it reaches the network.
"""
from __future__ import annotations

import base64
import hashlib
import itertools
import json
from datetime import datetime, timezone

import pandas as pd
import plotly.io as pio
import plotly.offline
from plotly.io.json import to_json_plotly

from evaluators import __version__
from evaluators.presentation import figures
from evaluators.runs import sampling
from evaluators.presentation import highlight as hl
from evaluators.judges import of_run
from evaluators.metrics.registry import find
from evaluators.queries import (claims, compare, diagnosis, evaluate, golden_set, one_of, overview, question_types,
                                system, versions)
from evaluators.queries.attribution import RULE
from evaluators.queries.headline import HEADLINE, leader
from evaluators.queries.hypotheses import caption as tests_caption
from evaluators.queries.sides import Side
from evaluators.store import Store

QUESTIONS = 5  # the questions shown where two methods differ most
CORRECTNESS = ("answer_correctness_f1", "answer_class")  # the headline's scores against the reference
LABEL_TITLES = {"verdict": "Pass / partial / fail (seed 001)",
                "answer_class": "CORRECT / WRONG / DON'T KNOW (seed 003)"}
# No request of any kind, and no script but the page's own (each allowed by its hash): styles inline, images only
# as data (plotly's PNG export). Markup that escaped escaping would still run nothing.
POLICY = "default-src 'none'; script-src {hashes}; style-src 'unsafe-inline'; img-src data: blob:"
# Folded parts open when printed, and when a link goes to something in them (a claim's chunk).
UNFOLD = """function unfold(e) { for (; e; e = e.parentElement) if (e.tagName === "DETAILS") e.open = true; }
addEventListener("beforeprint", () => document.querySelectorAll("details").forEach(unfold));
addEventListener("click", event => {
  const link = event.target.closest && event.target.closest('a[href^="#"]');
  if (link) unfold(document.getElementById(link.getAttribute("href").slice(1)));
});"""
CHART_CONFIG = {"displaylogo": False, "responsive": True}
TEMPLATE = pio.templates["plotly"].to_plotly_json()


def report_html(store: Store, run_id: str, *, methods: list[str] | None = None,
                baseline: str | None = None) -> str:
    """The report of `run_id` as one HTML page.

    methods: the methods compared, each METHOD or RUN_ID:METHOD (a method of another run on the same questions;
    default: every method of the run); baseline: the one the others are compared with, added to them when missing
    (default: the headline's leader when compared, else the last method). The headline is Overview's, over every
    method of the run. Raises ValueError for an unknown run, method or baseline."""
    with store.lease():  # one unit of work: the file is held once, not per query
        run = store.run(run_id)
        if run is None:
            raise ValueError(f"no run {run_id!r} in {store.path} (see `python -m evaluators runs`)")
        versions.know(store, run_id)  # the users' metrics (criteria, plug-ins') of the runs compared
        return _Report(store, run, methods, baseline).html()


class _Report:
    """The report's sections, each drawn from the views' tables."""

    def __init__(self, store: Store, run: dict, methods: list[str] | None, baseline: str | None):
        self.store, self.run, self.run_id = store, run, run["run_id"]
        self.judge = of_run(run)
        self.scripts: list[str] = []  # one per figure written; plotly.js goes in once when there is one
        self.columns = itertools.count()  # a side's number, which keeps its chunk cards' anchors unique in the file
        known = compare.run_methods(store, self.run_id)
        self.colours = figures.method_colours(known)  # the run's: each method as coloured as on the screens
        self.sides = compare.sides(store, self.run_id, known if methods is None else methods)
        base = compare.sides(store, self.run_id, [baseline])[0] if baseline is not None else None
        if base is not None and base not in self.sides:
            self.sides.append(base)
        for s in self.sides:  # compare.view checks two or more sides; one alone is checked here
            one_of(s.method, compare.run_methods(store, s.run_id), f"method of run {s.run_id}")
        in_run = base is not None and base.run_id == self.run_id
        self.overview = overview.view(store, self.run_id, baseline=base.method if in_run else None)
        if base is None and self.sides:
            top = leader(self.overview["headline"]) if len(self.overview["headline"]) else None
            base = Side(self.run_id, top) if Side(self.run_id, top) in self.sides else self.sides[-1]
        self.baseline = base
        self.cells = evaluate.view(store, self.run_id)["totals"].iloc[0]
        self.own = versions.as_stored(store, self.run_id)  # the users' metrics as this run stored them

    def label(self, s: Side) -> str:
        return s.label(self.run_id)

    # -- the page ---------------------------------------------------------------------------------------

    def html(self) -> str:
        body = [self.evaluated()]
        if self.cells["Scored"] == 0:
            body.append(_section("scores", "Scores", self.no_scores()))
        else:
            pairs = self.pairs()
            body += [self.headline(), self.latency_cost(), self.differences(pairs), self.criteria(pairs),
                     self.by_type(pairs), self.attribution(pairs), self.distributions(), self.disagreements(pairs),
                     self.how_computed(pairs)]
        head = [plotly.offline.get_plotlyjs()] if self.scripts else []
        head.append(UNFOLD)
        scripts = [*head, *self.scripts]
        hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'"
                          for s in scripts)
        title = hl.esc(f"RAGScope report: {self.run['name']}")
        return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
                f'<meta http-equiv="Content-Security-Policy" content="{POLICY.format(hashes=hashes)}">'
                f'<meta name="viewport" content="width=device-width, initial-scale=1">'
                f"<title>{title}</title><style>{STYLE}</style>"
                + "".join(f"<script>{s}</script>" for s in head) + "</head>\n<body><main>"
                f"<h1>{title}</h1>{''.join(body)}"
                f"<footer>Written by RAGScope {hl.esc(__version__)} on "
                f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC from the screens' own tables.</footer>"
                f"</main></body></html>\n")

    def chart(self, figure) -> str:
        """A figure's div and the script that draws it (plotly.js itself is in the head, once)."""
        div = f"chart-{len(self.scripts) + 1}"
        spec = figure.to_plotly_json()
        # plotly's own template, whichever is the process's default: importing streamlit makes its theme the default,
        # whose template has no automargin (it cut off the axis labels of the app's report) and colours the app's
        # page replaces. So the app and the command write the same file.
        spec["layout"]["template"] = TEMPLATE
        spec = to_json_plotly({**spec, "config": CHART_CONFIG})  # "<" and "/" escaped
        self.scripts.append(f'Plotly.newPlot("{div}", {spec});')
        height = figure.layout.height or 450
        return (f'<div class="chart"><div id="{div}" class="plotly-graph-div" style="height:{height}px"></div>'
                f"<script>{self.scripts[-1]}</script></div>")

    # -- 1. what was evaluated --------------------------------------------------------------------------

    def evaluated(self) -> str:
        golden = golden_set(self.store, self.run_id)
        n = int(golden["n"].sum())
        types = ", ".join(f"{t or 'no type'} ({k})" for t, k in zip(golden["question_type"], golden["n"]))
        model = f" ({self.run['judge_model']})" if self.run["judge_model"] else ""
        sample = sampling.run_note(self.run)
        facts = [
            ("Run", f"{self.run['name']} ({self.run_id}), {self.run['status']}"),
            ("Golden set", f"{golden['name'].iloc[0]}: {n} questions" if n else "none"),
            *([("Sample", f"{sample}, stratified by question type: every number below is the sample's")]
              if sample else []),
            ("Question types", types if any(golden["question_type"]) else "none: the golden set has no question types"),
            ("Methods", ", ".join(self.label(s) for s in self.sides) or "none scored"),
            *[("Another run", f"{r}: {self.store.run(r)['name']}")
              for r in sorted({s.run_id for s in self.sides} - {self.run_id})],
            ("Baseline", self.label(self.baseline) if len(self.sides) > 1 else "none (one method)"),
            ("Judge", f"{self.judge.label}{model}"),
            ("Run date", f"{self.run['created_at']:%Y-%m-%d %H:%M}"),
            ("Cells", ", ".join(f"{int(k):,} {what.lower()}" for what, k in self.cells.items() if k)
             or "none stored yet"),
            ("RAGScope", __version__),
        ]
        description = json.loads(self.run["config"] or "{}").get("description")
        rows = "".join(f"<dt>{hl.esc(k)}</dt><dd>{hl.esc(v)}</dd>" for k, v in facts)
        return _section("evaluated", "What was evaluated",
                        f"<dl>{rows}</dl>" + (_p(description, "note") if description else ""))

    def no_scores(self) -> str:
        if self.cells["Failed"]:
            return _p(f"Every cell of this run failed ({int(self.cells['Failed']):,} failed, "
                      f"{int(self.cells['Not applicable']):,} not applicable): there is no score to report. Re-score "
                      f"the failed cells (python -m evaluators run --retry-failed {self.run_id}, or on Evaluate), then "
                      "write the report again.", "warning")
        return _p(f"This run has no scores yet (status: {self.run['status']}): write the report once it has "
                  "finished.", "warning")

    # -- 2b. the RAG system's own latency and cost (queries/system.py), when its answers record them ---------

    def latency_cost(self) -> str:
        table = self.overview["latency_cost"]
        if table.empty:
            return ""
        points, parts = self.overview["quality_cost"], [_table(_latency_cost_rows(table))]
        if len(points):
            parts.append(self.chart(figures.quality_cost(points, self.colours)))
        sentences = self.overview["pareto"]["sentence"]
        if len(sentences):
            parts.append('<ul class="findings">' + "".join(f"<li>{hl.esc(s)}.</li>" for s in sentences) + "</ul>")
        parts.append(_p(system.HOW, "note"))
        return _section("latency-cost", "Latency and cost of the RAG system", "".join(parts))

    # -- 2. the headline --------------------------------------------------------------------------------

    def headline(self) -> str:
        scores, findings = self.overview["headline"], self.overview["findings"]
        parts = []
        if scores["value"].notna().any():
            figure = figures.headline(scores, self.colours).update_layout(  # the legend under the chart: the page is narrow
                legend={"orientation": "h", "yanchor": "top", "y": -0.32, "x": 0}, height=440, margin={"b": 10})
            parts += [self.chart(figure), _headline_table(scores),
                      _p("All questions, every method of the run (as Overview shows them); each bar is a method's "
                         "mean with its 95% interval, n = questions scored of all. Pass rate: the share of `pass` "
                         "verdicts (seed 001); correct answers: the share classed CORRECT (seed 003).", "note")]
        elif len(scores):  # scored, but no cell ok (not scored at all: the findings say so)
            parts.append(_p("No cell of the headline metrics was scored: they failed or do not apply."))
        lead, *rest = findings["sentence"]
        parts.append(_p(lead, "lead") + ("<ul class=\"findings\">" + "".join(f"<li>{hl.esc(s)}</li>" for s in rest)
                                         + "</ul>" if rest else ""))
        if findings["metric"].notna().any():
            parts.append(_p("A difference is listed when it holds on the questions both methods answered, after the "
                            "correction below; in brackets its 95% interval. " + tests_caption(secondary=False),
                            "note"))
        if not set(scores.dropna(subset=["value"])["metric"]) & set(CORRECTNESS):
            parts.append(_p(f"No score against the reference: this run did not score {' or '.join(CORRECTNESS)}, so "
                            "nothing here says whether the answers are correct; the scores of their grounding in the "
                            "retrieved chunks and of the retrieval stand.", "warning"))
        parts.append(_p(self.judge_note(), "note"))
        return _section("headline", "Headline", "".join(parts))

    def judge_note(self) -> str:
        if self.judge.agreement_measured:
            return ("Scored by the offline judge: heuristics and small local models (word coverage, MiniLM "
                    "similarity, a MiniLM cross-encoder and logistic models fitted on public human labels), not an "
                    "LLM, so treat the scores as indicative. Its measured agreement with people is under How the "
                    "scores are computed.")
        model = f" ({self.run['judge_model']})" if self.run["judge_model"] else ""
        calibrated = self.overview["judge"]["calibrated"].iloc[0] if len(self.overview["judge"]) else None
        if calibrated:
            return f"Scored by {self.judge.label}{model}. {calibrated} (How the scores are computed has each label)."
        return (f"Scored by {self.judge.label}{model}. Its agreement with people has not been measured here: the "
                "offline judge's figures do not carry over (python -m evaluators judge calibrate measures it).")

    # -- 3. the differences and what this golden set can detect ----------------------------------------

    def differences(self, pairs) -> str:
        if not pairs:
            return _section("differences", "Differences and power", _p(self.why_no_comparison()))
        parts = []
        for method, base, _, tables in pairs:
            rows = _pair_rows(tables, method)
            rows = rows[rows["metric"].isin(HEADLINE)] if rows["metric"].isin(HEADLINE).any() else rows
            parts.append(f"<h3>{hl.esc(method)} − {hl.esc(base)}</h3>")
            if rows.empty:
                parts.append(_p(f"No question is scored by both {method} and {base}."))
                continue
            shown = rows.rename(columns={c: "Δ" for c in rows.columns if c.startswith("Δ")})
            parts.append(_table(shown[["metric", "Δ", "95% CI", "p (Holm)", "n", "MDE", "better"]]))
            summary = tables["summary"]
            blind = summary.loc[summary["method"] == method, "cannot detect"]
            blind = {m: v for m, v in (blind.iloc[0] if len(blind) else {}).items() if m in set(rows["metric"])}
            if blind:
                parts.append(_p("Not significant is not \"no difference\": at these n, a difference smaller than the "
                                "MDE may go unseen, on " + ", ".join(f"{m} ({v:.3g})" for m, v in blind.items())
                                + ".", "warning"))
        parts.append(_p("The headline metrics (Compare has every metric), in each metric's own scale. Δ = mean of A − B "
                        "over the n questions both scored, its 95% interval, p (Holm) within the family of tests below; "
                        "MDE: the minimum detectable effect, the smallest |Δ| the paired test finds with 80% power at "
                        f"this n and p < {compare.ALPHA}, from the observed spread. " + tests_caption(secondary=False),
                        "note"))
        return _section("differences", "Differences and power", "".join(parts))

    # -- 3b. the analyst's own metrics (criteria, plug-ins') -----------------------------------------------

    def criteria(self, pairs) -> str:
        """Each user's metric of the run per method (Overview's means) and against the baseline (Compare's rows),
        and those not compared with another run's side for a changed version; nothing for a run without any."""
        table = self.overview["metrics"]
        own = [m for m in table.index if m in self.own]
        if not own:
            return ""
        means = table.loc[own].drop(columns=[c for c in table.columns if c.endswith(" abstains")])
        parts = [_table(means.rename_axis("metric").reset_index())]
        unscored = overview.unscored(self.store, self.run_id)
        parts += [_p(note, "warning") for note in unscored.loc[unscored["metric"].isin(own), "note"]]
        for method, base, _, tables in pairs:
            if tables["metrics"].empty:  # no question scored by both (compare.view's tables are then all empty)
                continue
            rows = _pair_rows(tables, method)
            rows = rows[rows["metric"].isin(own)]
            if len(rows):
                shown = rows.rename(columns={c: "Δ" for c in rows.columns if c.startswith("Δ")})
                parts += [f"<h3>{hl.esc(method)} − {hl.esc(base)}</h3>",
                          _table(shown[["metric", "Δ", "95% CI", "p (Holm)", "n", "MDE", "better"]])]
            parts += [_p(note, "warning") for note in tables["not_compared"]["note"]]
        parts.append(_p("Your own metrics: the analyst's criteria, judged by the LLM judge on each one's scale, and "
                        "plug-ins' metrics; their text under How the scores are computed.", "note"))
        return _section("criteria", "Your criteria", "".join(parts))

    # -- 4. by question type ----------------------------------------------------------------------------

    def pairs(self) -> list[tuple[str, str, str | None, dict]]:
        """(method, baseline, metric, compare.view's tables) for each other method against the baseline, its
        questions on the first headline metric compared (else on Compare's first row); none for one method."""
        labels, base = [self.label(s) for s in self.sides], self.label(self.baseline) if self.baseline else None
        scored = {m for r in {s.run_id for s in self.sides} for m in compare.run_metrics(self.store, r)}
        first = next((m for m in HEADLINE if m in scored), None)
        out = []
        for method in [m for m in labels if m != base]:
            def view(metric):
                return compare.view(self.store, self.run_id, methods=labels, baseline=base, details_for=method,
                                    metric=metric)
            tables = view(first)
            compared = list(_pair_rows(tables, method)["metric"]) if len(tables["metrics"]) else []
            metric = next((m for m in HEADLINE if m in compared), None)
            if metric not in (None, first):  # the first was not compared (its cells failed): the next one
                tables = view(metric)
            out.append((method, base, metric or next(iter(compared), None), tables))
        return out

    def by_type(self, pairs) -> str:
        if not pairs:
            return _section("by-type", "By question type", _p(self.why_no_comparison()))
        if not [t for t in question_types(self.store, self.baseline.run_id) if t]:
            return _section("by-type", "By question type",
                            _p("The golden set has no question types: there is no breakdown by type."))
        parts = []
        for method, base, _, tables in pairs:
            cells = tables["heatmap"]
            # The headline metrics: all of them would not be legible on a page (Compare has every metric).
            cells = cells[cells["metric"].isin(HEADLINE)] if cells["metric"].isin(HEADLINE).any() else cells
            parts.append(f"<h3>{hl.esc(method)} − {hl.esc(base)}</h3>")
            parts.append(_p(f"No question is scored by both {method} and {base}.") if cells.empty else
                         self.chart(figures.type_heatmap(cells, _pair_rows(tables, method)["metric"], method, base)))
        parts.append(_p("The headline metrics (Compare shows every metric). Cell text: the mean Δ (A − B) in the "
                        "metric's own scale; colour: the difference in norm units ([0, 1]) oriented so that green is "
                        "better for A whatever the metric's direction; blank: a metric without a direction.", "note"))
        return _section("by-type", "By question type", "".join(parts))

    def why_no_comparison(self) -> str:
        return f"Only one method ({self.label(self.sides[0])}): there is nothing to compare it with."

    # -- 4b. where each method loses: retrieval or generation (Diagnosis) -----------------------------------

    def attribution(self, pairs) -> str:
        shares = diagnosis.label_shares(self.store, self.run_id)
        shown = {s.method for s in self.sides if s.run_id == self.run_id}
        shares = shares[shares["method"].isin(shown)]
        table = pd.DataFrame({
            "method": shares["method"], "label": shares["label"], "n": shares["n"].astype(str) + " of "
            + shares["of"].astype(str), "share": [f"{v:.0%}" for v in shares["share"].fillna(0)],
            "95% CI": [f"[{lo:.0%}, {hi:.0%}]" if pd.notna(lo) else "" for lo, hi in zip(shares["ci_low"],
                                                                                         shares["ci_high"])]})
        parts = [_table(table)] if len(table) else []
        sentences = [s for _, _, _, tables in pairs for s in tables["attribution"]["sentence"]]
        if sentences:
            parts.append('<ul class="losses">' + "".join(f"<li>{hl.esc(s)}</li>" for s in sentences) + "</ul>")
        parts.append(_p(RULE + " The Diagnosis screen lists the questions behind each number.", "note"))
        return _section("attribution", "Where each method loses: retrieval or generation", "".join(parts))

    # -- 5. verdicts and answer classes -----------------------------------------------------------------

    def distributions(self) -> str:
        views = {self.run_id: self.overview}  # another run's method: that run's Overview
        parts = []
        for metric, title in LABEL_TITLES.items():
            rows = []
            for s in self.sides:
                if s.run_id not in views:
                    views[s.run_id] = overview.view(self.store, s.run_id)
                table = views[s.run_id][metric]
                if s.method in table.index:
                    rows.append(table.loc[[s.method]].rename(index={s.method: self.label(s)}))
            parts.append(f"<h3>{hl.esc(title)}</h3>")
            if rows:
                counts = pd.concat(rows).rename_axis("method")
                parts += [self.chart(figures.label_bars(counts, metric)), _table(counts.reset_index())]
            else:
                parts.append(_p(f"Not scored in this run ({metric})."))
        return _section("distributions", "Verdicts and answer classes", "".join(parts))

    # -- 6. where the methods differ most ---------------------------------------------------------------

    def disagreements(self, pairs) -> str:
        if not pairs:
            return _section("questions", "Where the methods differ most", _p(self.why_no_comparison()))
        parts = [hl.legend()]
        for method, base, metric, tables in pairs:
            gap = f"Δ {method} − {base}"
            rows = tables["disagreements"]
            rows = rows[rows[gap] != 0].head(QUESTIONS) if len(rows) else rows
            parts.append(f"<h3>{hl.esc(method)} vs {hl.esc(base)}" + (f" on {hl.esc(metric)}" if metric else "")
                         + "</h3>")
            if rows.empty:
                parts.append(_p(f"No question is scored differently by {method} and {base}" +
                                (f" on {metric}." if metric else ".")))
                continue
            parts.append(_p(f"The {len(rows)} questions with the largest gap on {metric} (in its own scale), largest "
                            "first: each side's answer with its claims highlighted by verdict, and its retrieved "
                            "chunks.", "note"))
            pair = compare.sides(self.store, self.run_id, [method, base])
            parts += [self.question_card(row, pair, (method, base), metric, gap) for row in rows.to_dict("records")]
        return _section("questions", "Where the methods differ most", "".join(parts))

    def question_card(self, row: dict, pair: list[Side], labels: tuple[str, str], metric: str, gap: str) -> str:
        qid = row["question_id"]
        views = {}
        for s in pair:  # claims.view per run: the two sides may be of two runs
            if s.run_id not in views:
                views[s.run_id] = claims.view(self.store, s.run_id, question_id=qid,
                                              methods=[p.method for p in pair if p.run_id == s.run_id])
        item = views[pair[-1].run_id]["question"].iloc[0]  # the baseline's golden set, as Compare pairs them
        sides = "".join(self.answer(views[s.run_id], s.method, label, metric, row[label])
                        for s, label in zip(pair, labels))
        kind = f" · {item['question_type']}" if item["question_type"] else ""
        return (f'<article class="question"><h4>{hl.esc(item["question"])}</h4>'
                f'<p class="note">{hl.esc(qid + kind)} · {hl.esc(gap)} on {hl.esc(metric)}: '
                f"<b>{hl.esc(_shown(row[gap], signed=True))}</b></p>"
                + hl.text_box(item["reference"], label="Reference answer")
                + f'<div class="sides">{sides}</div></article>')

    def answer(self, tables: dict, method: str, label: str, metric: str, value: float) -> str:
        """One side of a question card: its score, key scores, the answer highlighted, the chunks it cites."""
        mine = {name: tables[name][tables[name]["method"] == method]
                for name in ("answers", "key_scores", "answer_claims", "chunks")}
        key = mine["key_scores"].drop(columns="method")
        chips = [(m, v) for m, v in key.iloc[0].items() if isinstance(v, str)] if len(key) else []
        column = next(self.columns)
        text = mine["answers"]["answer"].iloc[0] if len(mine["answers"]) else ""
        return (f'<div class="side">{hl.heading(label, 4)}'
                f'<p class="score">{hl.esc(metric)}: <b>{hl.esc(_shown(value))}</b></p>'
                + (hl.score_chips(chips) if chips else "")
                + hl.highlight(text, hl.claim_marks(mine["answer_claims"], mine["chunks"]), column=column)
                + f'<details class="chunks"><summary>Retrieved chunks ({len(mine["chunks"])})</summary>'
                + f'{hl.chunk_cards(hl.cards(mine["chunks"]), column=column)}</details></div>')

    # -- 7. how the scores are computed -----------------------------------------------------------------

    def how_computed(self, pairs) -> str:
        metrics = dict.fromkeys([*self.overview["headline"]["metric"], *(m for _, _, m, _ in pairs if m),
                                 *(m for m in self.overview["metrics"].index if m in self.own)])
        shown = [self.own.get(m) or find(m) for m in metrics]  # id_recall@5 too; a criterion as this run stored it
        shown = [m for m in shown if m is not None]
        parts = [_folded(f"Formulas of the {len(shown)} metrics in this report", "".join(
            f"<h3>{hl.esc(m.id)}</h3>" + _p(f"{m.family} · scale {m.scale} · {versions.source(m)}", "note")
            + f"<pre>{hl.esc(m.formula)}</pre>" for m in shown))] if shown else []
        parts.append(_p("Means: of the cells scored `ok`, with Student's t 95% interval; n = questions scored of all "
                        "(not applicable and failed cells are counted in all, never averaged). Differences: paired on "
                        "the questions both methods scored, the mean of A − B with its 95% interval (percentile "
                        "bootstrap; a t interval above 5,000 pairs) and a two-sided paired test (Wilcoxon "
                        "signed-rank), p adjusted within its family of tests. " + tests_caption(secondary=True)))
        if self.judge.agreement_measured:
            agreement = self.overview["agreement"]
            parts.append(_folded("The offline judge against people", _p(
                "Agreement on the test parts of public human-labelled sets, beside the best simple baseline on the "
                "same items (a difference whose interval is above 0: the offline judge agrees with people better). "
                "The offline judge is heuristics and small local models, not an LLM: its scores are indicative.")
                + (_table(agreement, "agreement") if len(agreement) else _p("No measured figure applies."))))
        else:
            parts.append(_p(self.judge_note()))
        calibration = self.overview["calibration"]
        if len(calibration):
            parts.append(_folded("This judge against people (judge calibrate)", _p(
                "Its latest calibration: the judge on a stratified sample of human-labelled items that ship with "
                "RAGScope (test parts of public sets), beside the offline judge and token F1 on the same items, "
                "with 95% bootstrap intervals.") + _table(calibration, "agreement")))
        return _section("how", "How the scores are computed", "".join(parts))


# -- pieces ------------------------------------------------------------------------------------------


def _pair_rows(tables: dict, method: str) -> pd.DataFrame:
    """compare.view's `metrics` rows of one method against the baseline (the table drops `method` for one)."""
    rows = tables["metrics"]
    return rows[rows["method"] == method] if "method" in rows else rows


def _latency_cost_rows(table: pd.DataFrame) -> pd.DataFrame:
    """queries.system's `latency_cost` for reading: each estimate with its 95% interval (a bound that needs more
    answers shown as ?), costs in USD to significant digits, n per column."""
    def interval(value, low, high, form) -> str:
        if pd.isna(value):
            return ""
        bound = [("?" if pd.isna(b) else form(b)) for b in (low, high)]
        return f"{form(value)} [{bound[0]}, {bound[1]}]"
    ms, usd = (lambda v: f"{v:,.0f}"), (lambda v: f"${v:.3g}")
    return pd.DataFrame({
        "method": table["method"],
        "median latency, ms": [interval(*r, ms) for r in zip(table["median latency ms"], table["median low"],
                                                            table["median high"])],
        "p95 latency, ms": [interval(*r, ms) for r in zip(table["p95 latency ms"], table["p95 low"], table["p95 high"])],
        "cost per answer": [interval(*r, usd) for r in zip(table["mean cost USD"], table["cost low"],
                                                           table["cost high"])],
        "tokens in / out": [f"{i:,.0f} / {o:,.0f}" if pd.notna(i) else "" for i, o in
                            zip(table["input tokens per answer"], table["output tokens per answer"])],
        "recorded": table["recorded"]})


def _shown(value, signed: bool = False) -> str:
    return "n/a" if value is None or pd.isna(value) else (f"{value:+.3f}" if signed else f"{value:.3f}")


def _headline_table(scores: pd.DataFrame) -> str:
    """Items x methods: the mean, its 95% interval and n (shares in percent with one decimal, as Overview's sentences
    write them; 1-5 ratings with two)."""
    methods = sorted(scores["method"].unique())
    head = "<tr><th></th>" + "".join(f"<th>{_words(m)}</th>" for m in methods) + "</tr>"
    rows = []
    for item, part in scores.groupby("item", sort=False):
        cells = []
        for m in methods:
            r = part[part["method"] == m]
            if r.empty or pd.isna(r["value"].iloc[0]):
                cells.append("<td>n/a</td>" if len(r) else "<td></td>")
                continue
            r = r.iloc[0]
            d, sign = (1, "%") if r["unit"] == "%" else (2, "")
            interval = f" [{r['ci_low']:.{d}f}, {r['ci_high']:.{d}f}]" if pd.notna(r["ci_low"]) else ""
            cells.append(f'<td><b>{r["value"]:.{d}f}{sign}</b>{interval}'
                         f'<br><span class="n">n {int(r["n"])} of {int(r["n_total"])}</span></td>')
        rows.append(f"<tr><th>{_words(item)}</th>{''.join(cells)}</tr>")
    return f'<div class="table"><table class="headline">{head}{"".join(rows)}</table></div>'


def _table(frame: pd.DataFrame, cls: str = "") -> str:
    """A view's table as HTML, every cell escaped, numbers rounded as the screens show them."""
    def cell(v) -> str:
        if isinstance(v, float):
            return "" if pd.isna(v) else _words(f"{v:.3f}".rstrip("0").rstrip("."))
        return _words(v)
    head = "".join(f"<th>{_words(c)}</th>" for c in frame.columns)
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>"
                   for row in frame.itertuples(index=False))
    return f'<div class="table"><table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _words(text: object) -> str:
    """Escaped text for a table cell, whose lines break between words only: a word with a hyphen (a method name, a
    label such as "(1-5)", a negative number), where a browser would break a line too, is kept whole."""
    words = "" if text is None else str(text)
    return " ".join(f'<span class="w">{hl.esc(w)}</span>' if "-" in w else hl.esc(w) for w in words.split(" "))


def _folded(summary: str, body: str) -> str:
    """A part of the page shown when its summary is clicked (opened for printing)."""
    return f"<details><summary>{hl.esc(summary)}</summary>{body}</details>"


def _section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{hl.esc(title)}</h2>{body}</section>'


def _p(text: str, kind: str = "") -> str:
    return f'<p class="{kind}">{hl.esc(text)}</p>' if kind else f"<p>{hl.esc(text)}</p>"


STYLE = """
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; color: #1f2328;
       margin: 0; background: #fff; }
/* The width of an A4 page's text (186 mm): charts drawn on screen print as they are, uncut. */
main { max-width: 700px; margin: 0 auto; padding: 24px 30px 48px; }
h1 { font-size: 1.6em; margin: 0 0 12px; }
h2 { font-size: 1.3em; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; margin-top: 32px; }
h3 { font-size: 1.05em; margin: 20px 0 6px; }
h4 { font-size: 1em; margin: 0 0 4px; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
dt { color: #57606a; } dd { margin: 0; }
.note { color: #57606a; font-size: 0.9em; }
.warning { background: #fff8c5; border-left: 4px solid #d4a72c; padding: 6px 10px; }
.lead { font-weight: 600; }
.findings li, .losses li { margin: 2px 0; }
table { border-collapse: collapse; font-size: 0.8em; margin: 8px 0; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; text-align: left; vertical-align: top; }
thead th, table.headline tr:first-child th { background: #f6f8fa; }
.n { color: #57606a; font-size: 0.9em; }
pre { white-space: pre-wrap; background: #f6f8fa; padding: 8px; font-size: 0.85em; }
.chart { margin: 8px 0; }
.question { border: 1px solid #d0d7de; border-radius: 6px; padding: 12px; margin: 14px 0; }
.sides { display: grid; grid-template-columns: 1fr 1fr; gap: 16px; margin-top: 8px; }
.side { min-width: 0; }
/* A long URL wraps in text: the page keeps its width. A table's cells wrap between words only (a metric id or a
   method name stays whole); a table wider than the page scrolls sideways. */
dd { overflow-wrap: break-word; } .side { overflow-wrap: anywhere; }
.table { overflow-x: auto; } .w { white-space: nowrap; }
table.agreement { font-size: 0.75em; } table.agreement td:nth-child(2) { min-width: 12em; }
.score { margin: 2px 0 6px; }
summary { cursor: pointer; color: #0969da; margin: 8px 0; } .chunks summary { font-size: 0.9em; }
footer { margin-top: 40px; color: #57606a; font-size: 0.85em; }
@page { size: A4; margin: 14mm 12mm; }
@media print {
  body { font-size: 10pt; }
  main { max-width: none; padding: 0; }
  h2 { break-after: avoid; }
  .chart, .question, table, dl { break-inside: avoid; page-break-inside: avoid; }
  .modebar-container { display: none !important; }
  .chunks > div { max-height: none !important; overflow: visible !important; }
  /* Paper does not scroll: a table wider than the page breaks its words there, as a last resort. */
  .table { overflow: visible; } .w { white-space: normal; } th, td { overflow-wrap: anywhere; }
  a { color: inherit; text-decoration: none; }
}
"""
