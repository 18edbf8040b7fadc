"""The regression gate: is a candidate run significantly worse than a baseline run, metric by metric?

`gate(store, "RUN_NEW", "RUN_RELEASED")` pairs each gated metric's scores question by question across the two runs
(evaluators.queries.compare.comparison_table: paired difference, 95% CI, paired test) and adjusts the p-values of
all the gate's rows that can fail together (Holm). The CLI (`python -m evaluators gate`) and `Evaluation.gate` call it.

The rule, per (method, metric): a regression iff
  - the Holm-adjusted p-value is below alpha, and
  - the whole 95% CI of the difference lies on the worse side, beyond the tolerance: for a metric where higher is
    better, ci_high < -tolerance (lower is better: ci_low > tolerance).
The interval, not the point estimate, is held against the tolerance: the gate fails only when the data show the
drop exceeds what was tolerated, so a noisy difference near the tolerance does not flip CI red and green from
one commit to the next. Metrics with no direction (dont_know) are reported and never fail.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from evaluators.metrics import REGISTRY
from evaluators.metrics.registry import in_catalogue_order, lookup
from evaluators.queries import OK as OK_STATUS
from evaluators.queries.compare import comparison_table, n_changed_references, run_methods, run_metrics
from evaluators.queries.headline import HEADLINE
from evaluators.queries.overview import REPLIES_DISAGREE
from evaluators.queries.sides import SEPARATOR, Side
from evaluators.maths.stats import holm
from evaluators.records.run_status import RunStatus
from evaluators.store import Store

ALPHA = 0.05
UNSTABLE_SHOWN = 20  # unstable samples listed in the markdown report; the rest are counted

# Verdicts of a gate row
REGRESSION, OK, BETTER, NO_DIRECTION, NO_PAIRS = "regression", "ok", "better", "no direction", "no pairs"


@dataclass(frozen=True)
class GateSide:
    """`RUN_ID[:METHOD]`: a run, and one of its methods or None (the run's only method, or every method the two
    runs share)."""

    run_id: str
    method: str | None = None

    def __str__(self) -> str:
        return self.run_id if self.method is None else f"{self.run_id}{SEPARATOR}{self.method}"


def parse_side(text: str) -> GateSide:
    """`RUN_ID[:METHOD]`, split at the first colon: run ids hold none, a method name may."""
    run_id, separator, method = str(text).strip().partition(SEPARATOR)
    if not run_id or (separator and not method):
        raise ValueError(f"{text!r} is not RUN_ID or RUN_ID{SEPARATOR}METHOD (see `python -m evaluators runs`)")
    return GateSide(run_id, method or None)


# -- which methods and metrics are gated -------------------------------------------------------------------------

def _named(side: GateSide, methods: Sequence[str]) -> str | None:
    """The side's method, checked against its run's methods; else the run's only method; else None (any)."""
    if side.method is not None:
        if side.method not in methods:
            raise ValueError(f"run {side.run_id} has no method {side.method!r}; its methods: "
                             f"{', '.join(methods) or 'none (no scores)'}")
        return side.method
    if not methods:
        raise ValueError(f"run {side.run_id} has no scores to gate")
    return methods[0] if len(methods) == 1 else None


def pair_methods(candidate: GateSide, baseline: GateSide, candidate_methods: Sequence[str],
                 baseline_methods: Sequence[str]) -> list[tuple[str, str]]:
    """(candidate method, baseline method) pairs to gate. A side names its method, or its run has only one;
    otherwise it takes the other side's method by name, or, when neither side names one, every method present
    in both runs."""
    pairs = _pairs(candidate, baseline, candidate_methods, baseline_methods)
    if candidate.run_id == baseline.run_id and any(a == b for a, b in pairs):
        raise ValueError(f"the candidate and the baseline are the same cells: name two methods of run "
                         f"{candidate.run_id} as RUN_ID{SEPARATOR}METHOD")
    return pairs


def _pairs(candidate: GateSide, baseline: GateSide, candidate_methods: Sequence[str],
           baseline_methods: Sequence[str]) -> list[tuple[str, str]]:
    mine, theirs = _named(candidate, candidate_methods), _named(baseline, baseline_methods)
    if mine is not None and theirs is not None:
        return [(mine, theirs)]
    if mine is None and theirs is None:
        shared = [m for m in candidate_methods if m in set(baseline_methods)]
        if not shared:
            raise ValueError(f"runs {candidate.run_id} ({', '.join(candidate_methods)}) and {baseline.run_id} "
                             f"({', '.join(baseline_methods)}) share no method: name them as RUN_ID{SEPARATOR}METHOD")
        return [(m, m) for m in shared]
    known, open_side, open_methods = (mine, baseline, baseline_methods) if theirs is None else (
        theirs, candidate, candidate_methods)
    if known not in open_methods:
        raise ValueError(f"run {open_side.run_id} has no method {known!r} but several ({', '.join(open_methods)}): "
                         f"name one as {open_side.run_id}{SEPARATOR}METHOD")
    return [(known, known)]


def choose_metrics(requested: Sequence[str] | None, candidate_metrics: Iterable[str],
                   baseline_metrics: Iterable[str]) -> list[str]:
    """The gated metrics, in catalogue order: the requested ones (each known and scored in both runs), by default
    the headline metrics scored in both runs."""
    shared = set(candidate_metrics) & set(baseline_metrics)
    if requested is None:
        chosen = [m for m in HEADLINE if m in shared]
        if not chosen:
            raise ValueError(f"none of the headline metrics ({', '.join(HEADLINE)}) is scored in both runs: name "
                             f"the metrics to gate (--metrics, or metrics= from Python; both runs have: "
                             f"{', '.join(in_catalogue_order(shared)) or 'none'})")
        return in_catalogue_order(chosen)
    _known(requested)
    missing = [m for m in requested if m not in shared]
    if missing:
        raise ValueError(f"not scored in both runs: {', '.join(missing)} (both runs have: "
                         f"{', '.join(in_catalogue_order(shared)) or 'none'})")
    return in_catalogue_order(dict.fromkeys(requested))


def _known(metric_ids: Iterable[str]) -> None:
    unknown = [m for m in metric_ids if m not in REGISTRY]
    if unknown:
        raise ValueError(f"unknown metric id(s): {', '.join(unknown)} (see `python -m evaluators metrics`)")


def parse_tolerances(items: Iterable[str]) -> dict[str, float]:
    """`METRIC=DELTA` items -> {metric: delta}; delta in the metric's own scale (points on 1-5, 0-1 for ratios)."""
    tolerances: dict[str, float] = {}
    for item in items:
        metric, separator, delta = item.partition("=")
        metric = metric.strip()
        if not separator or not metric:
            raise ValueError(f"--tolerance {item!r} is not METRIC=DELTA, e.g. faithfulness=0.02")
        if metric in tolerances:
            raise ValueError(f"--tolerance for {metric} is given twice")
        try:
            tolerances[metric] = float(delta)
        except ValueError:
            raise ValueError(f"--tolerance {item!r}: {delta.strip()!r} is not a number") from None
    return check_tolerances(tolerances)


def check_tolerances(tolerances: Mapping[str, float] | None, gated: Sequence[str] | None = None) -> dict[str, float]:
    """The tolerances, each for a known metric (one of `gated` when given), finite and >= 0."""
    tolerances = dict(tolerances or {})
    _known(tolerances)
    bad = {m: d for m, d in tolerances.items() if not (isinstance(d, (int, float)) and math.isfinite(d) and d >= 0)}
    if bad:
        raise ValueError("a tolerance is a number >= 0 in the metric's own scale; got "
                         + ", ".join(f"{m}={d}" for m, d in bad.items()))
    if gated is not None:
        ungated = [m for m in tolerances if m not in gated]
        if ungated:
            raise ValueError(f"tolerance for {', '.join(ungated)}, which is not gated (gated: {', '.join(gated)})")
    return tolerances


def check_alpha(alpha: float) -> float:
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise ValueError(f"alpha must lie between 0 and 1 (e.g. 0.05), got {alpha!r}")
    return float(alpha)


# -- the decision ----------------------------------------------------------------------------------------------

def verdict(row: Mapping, tolerance: float, alpha: float) -> str:
    """The gate's verdict on one comparison row (comparison_table's columns, p_holm over the gate's rows)."""
    if not row["n"]:
        return NO_PAIRS
    direction = lookup(row["metric"]).direction
    if not direction:
        return NO_DIRECTION
    low, high = row["ci_low"], row["ci_high"]
    if _missing(row["p_holm"]) or _missing(low) or _missing(high) or not row["p_holm"] < alpha:
        return OK
    # the interval oriented so that > 0 is better for the candidate
    worst, best = sorted((direction * low, direction * high))
    if best < -tolerance:
        return REGRESSION
    return BETTER if worst > 0 else OK


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


GATE_COLUMNS = ["method", "baseline_method", "metric", "n", "mean_candidate", "mean_baseline", "delta", "ci_low",
                "ci_high", "p_value", "p_holm", "tolerance", "higher_is_better", "verdict"]


def gate_rows(table: pd.DataFrame, pairs: Sequence[tuple[str, str]], metrics: Sequence[str],
              tolerances: Mapping[str, float], alpha: float) -> pd.DataFrame:
    """One row per (method pair, gated metric), in that order, from the comparison rows `table` (columns method,
    baseline, metric, n, mean_a, mean_b, delta, ci_low, ci_high, p_value: one per pair and metric, a missing one
    has no pairs). p_holm adjusts the p-values of all these rows that have a direction together."""
    found = {(r["method"], r["baseline"], r["metric"]): r for r in table.to_dict("records")}
    rows = []
    for method, baseline in pairs:
        for metric in metrics:
            r = found.get((method, baseline, metric), {})
            rows.append({"method": method, "baseline_method": baseline, "metric": metric, "n": int(r.get("n") or 0),
                         "mean_candidate": r.get("mean_a"), "mean_baseline": r.get("mean_b"), "delta": r.get("delta"),
                         "ci_low": r.get("ci_low"), "ci_high": r.get("ci_high"), "p_value": r.get("p_value"),
                         "tolerance": float(tolerances.get(metric, 0.0)),
                         "higher_is_better": lookup(metric).higher_is_better})
    frame = pd.DataFrame(rows, columns=[c for c in GATE_COLUMNS if c not in ("p_holm", "verdict")])
    # The family Holm adjusts for: the rows that can fail (a metric with no direction tests nothing here).
    can_fail = frame["higher_is_better"].notna()
    frame["p_holm"] = holm(frame["p_value"].where(can_fail, None).tolist())
    frame["verdict"] = [verdict(r, r["tolerance"], alpha) for r in frame.to_dict("records")]
    return frame[GATE_COLUMNS]


@dataclass(frozen=True, eq=False)
class GateResult:
    """The gate's answer: `rows` (GATE_COLUMNS, one per method pair and metric), `unstable` (samples whose judge
    replies disagree on a gated metric: side, run_id, method, question_id, metric, repeats) and `dropped` (the
    questions left out because their reference differs between the two golden sets)."""

    candidate: str
    baseline: str
    alpha: float
    rows: pd.DataFrame
    unstable: pd.DataFrame
    dropped: int = 0
    notes: tuple[str, ...] = ()  # what a reader should know: questions left out, runs not finished

    @property
    def regressions(self) -> pd.DataFrame:
        return self.rows[self.rows["verdict"] == REGRESSION]

    @property
    def passed(self) -> bool:
        return self.regressions.empty


# -- reports ---------------------------------------------------------------------------------------------------

def _number(x, digits: int, sign: bool = False) -> str:
    if _missing(x):
        return "n/a"
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def _p(x) -> str:
    return "n/a" if _missing(x) else f"{x:.2g}" if x < 0.001 else f"{x:.3f}"


def _cells(row: Mapping) -> dict[str, str]:
    """A row's numbers as shown, in the metric's own scale with its usual decimals."""
    digits = lookup(row["metric"]).range.digits
    return {"delta": _number(row["delta"], digits, sign=True),
            "ci": f"[{_number(row['ci_low'], digits, True)}, {_number(row['ci_high'], digits, True)}]",
            "means": f"{_number(row['mean_candidate'], digits)} vs {_number(row['mean_baseline'], digits)}",
            "p_holm": _p(row["p_holm"]), "tolerance": _number(row["tolerance"], digits)}


def _pair(row: Mapping) -> str:
    same = row["method"] == row["baseline_method"]
    return row["method"] if same else f"{row['method']} vs {row['baseline_method']}"


def describe(row: Mapping) -> str:
    """One line for a row, e.g. 'faithfulness (local_search): delta -0.213, 95% CI [-0.301, -0.125], p (Holm)
    0.0002, tolerance 0.000, n 103'."""
    c = _cells(row)
    return (f"{row['metric']} ({_pair(row)}): delta {c['delta']}, 95% CI {c['ci']}, p (Holm) {c['p_holm']}, "
            f"tolerance {c['tolerance']}, n {row['n']}")


def headline(result: GateResult) -> str:
    n = len(result.regressions)
    outcome = f"FAILED: {n} regression{'s' if n != 1 else ''}" if n else "PASSED: no regression"
    return f"gate {outcome} ({result.candidate} against baseline {result.baseline}, alpha {result.alpha:g}, Holm)"


def text_report(result: GateResult) -> str:
    """What the CLI prints: each row, then the regressions named, then the outcome."""
    lines = [f"{r['verdict']:>12}  {describe(r)}" for r in result.rows.to_dict("records")]
    lines += [f"note: {note}" for note in result.notes]
    if len(result.unstable):
        lines.append(f"{len(result.unstable)} unstable sample(s): the judge's repeated replies disagree "
                     "(see --markdown)")
    lines += [f"REGRESSION {describe(r)}" for r in result.regressions.to_dict("records")]
    return "\n".join(lines + [headline(result)])


def markdown_report(result: GateResult) -> str:
    """A short report fit for a pull-request comment."""
    lines = [f"### RAGScope gate: {'passed' if result.passed else 'failed'}", "",
             f"Candidate `{result.candidate}` against baseline `{result.baseline}`: paired per question, "
             f"Holm-adjusted p < {result.alpha:g} and the 95% CI beyond the tolerance make a regression.", "",
             *_regression_lines(result),
             "| | metric | method | Δ candidate − baseline | 95% CI | p (Holm) | tolerance | means | n |",
             "|---|---|---|---|---|---|---|---|---|"]
    marks = {REGRESSION: "❌ regression", BETTER: "✅ better", OK: "✅", NO_DIRECTION: "➖ no direction",
             NO_PAIRS: "➖ no pairs"}
    for r in result.rows.to_dict("records"):
        c = _cells(r)
        lines.append(f"| {marks[r['verdict']]} | `{r['metric']}` | {_pair(r)} | {c['delta']} | {c['ci']} | "
                     f"{c['p_holm']} | {c['tolerance']} | {c['means']} | {r['n']} |")
    lines += ([""] + [f"Note: {note}" for note in result.notes]) if result.notes else []
    return "\n".join(lines + _unstable_lines(result.unstable)) + "\n"


def _regression_lines(result: GateResult) -> list[str]:
    named = [f"`{r['metric']}` ({_pair(r)})" for r in result.regressions.to_dict("records")]
    return [f"**Regressions**: {', '.join(named)}", ""] if named else []


def _unstable_lines(unstable: pd.DataFrame) -> list[str]:
    if unstable.empty:
        return []
    lines = ["", f"**Unstable samples** ({len(unstable)}): the judge's repeated replies disagree.", "",
             "| side | method | question | metric | replies |", "|---|---|---|---|---|"]
    for r in unstable.head(UNSTABLE_SHOWN).to_dict("records"):
        replies = ", ".join("-" if _missing(v) else f"{v:g}" for v in r["repeats"])
        lines.append(f"| {r['side']} | {r['method']} | `{r['question_id']}` | `{r['metric']}` | {replies} |")
    if len(unstable) > UNSTABLE_SHOWN:
        lines.append(f"\n... and {len(unstable) - UNSTABLE_SHOWN} more.")
    return lines


def junit_xml(result: GateResult) -> bytes:
    """A JUnit XML file: one testsuite, one testcase per (method, metric); a regression is a <failure>, a metric
    that cannot fail (no direction, no pairs) is <skipped>."""
    rows = result.rows.to_dict("records")
    skipped = sum(r["verdict"] in (NO_DIRECTION, NO_PAIRS) for r in rows)
    suite = ET.Element("testsuite", name="ragscope.gate", tests=str(len(rows)), failures=str(len(result.regressions)),
                       errors="0", skipped=str(skipped))
    ET.SubElement(ET.SubElement(suite, "properties"), "property", name="baseline", value=result.baseline)
    for r in rows:
        case = ET.SubElement(suite, "testcase", classname=f"ragscope.gate.{_pair(r)}", name=r["metric"])
        if r["verdict"] == REGRESSION:
            ET.SubElement(case, "failure", message=f"regression: {describe(r)}", type="regression").text = describe(r)
        elif r["verdict"] in (NO_DIRECTION, NO_PAIRS):
            ET.SubElement(case, "skipped", message=f"{r['verdict']}: {describe(r)}")
        else:
            ET.SubElement(case, "system-out").text = f"{r['verdict']}: {describe(r)}"
    suites = ET.Element("testsuites", name=f"RAGScope gate {result.candidate}", tests=suite.get("tests"),
                        failures=suite.get("failures"), errors="0", skipped=str(skipped))
    suites.append(suite)
    return ET.tostring(suites, encoding="utf-8", xml_declaration=True)


# -- the gate --------------------------------------------------------------------------------------------------

def gate(store: Store, candidate: str, baseline: str, *, metrics: Sequence[str] | None = None,
         tolerances: Mapping[str, float] | None = None, alpha: float = ALPHA) -> GateResult:
    """Gate run `candidate` against run `baseline`, each `RUN_ID[:METHOD]`, on `metrics` (default: the headline
    ones scored in both runs) with `tolerances` ({metric: delta >= 0 in its own scale}; default 0). Bad sides,
    metrics, tolerances or alpha raise ValueError with a message for the user."""
    alpha = check_alpha(alpha)
    metrics = [metrics] if isinstance(metrics, str) else metrics
    sides = parse_side(candidate), parse_side(baseline)
    with store.lease():  # one unit of work: every read of the gate
        runs = [_run(store, side) for side in sides]
        pairs = pair_methods(*sides, *(run_methods(store, s.run_id) for s in sides))
        gated = choose_metrics(metrics, *(run_metrics(store, s.run_id) for s in sides))
        tolerances = check_tolerances(tolerances, gated)
        table, dropped = _compare(store, *sides, pairs, gated)
        unstable = unstable_samples(store, *sides, pairs, gated)
    notes = [f"run {r['run_id']} is {r['status']}: gated on the cells it scored" for r in runs
             if r["status"] != RunStatus.FINISHED]
    if dropped:
        notes.append(f"{dropped} question(s) left out: their reference differs between the two golden sets")
    return GateResult(str(sides[0]), str(sides[1]), alpha, gate_rows(table, pairs, gated, tolerances or {}, alpha),
                      unstable, dropped, tuple(notes))


def _run(store: Store, side: GateSide) -> dict:
    run = store.run(side.run_id)
    if run is None:
        raise ValueError(f"no run {side.run_id!r} in {store.path} (see `python -m evaluators runs`)")
    return run


def unstable_samples(store: Store, candidate: GateSide, baseline: GateSide, pairs: Sequence[tuple[str, str]],
                     metrics: Sequence[str]) -> pd.DataFrame:
    """The gated cells, on either side, whose judge was asked several times and whose replies disagree."""
    frames = []
    for name, side, methods in (("candidate", candidate, [a for a, _ in pairs]),
                                ("baseline", baseline, [b for _, b in pairs])):
        frames.append(store.cursor().execute(
            f"""
            SELECT ? AS side, run_id, method, question_id, metric, repeats
            FROM scores
            WHERE run_id = ? AND list_contains(?, method) AND list_contains(?, metric) AND status = {OK_STATUS}
              AND len(repeats) > 1 AND {REPLIES_DISAGREE}
            ORDER BY method, metric, question_id
            """, [name, side.run_id, list(dict.fromkeys(methods)), list(metrics)]).df())
    return pd.concat(frames, ignore_index=True)


def _compare(store: Store, candidate: GateSide, baseline: GateSide, pairs: Sequence[tuple[str, str]],
             metrics: Sequence[str]) -> tuple[pd.DataFrame, int]:
    """comparison_table's rows of each method pair across the two runs (method and baseline columns: the bare
    method names), and how many questions it left out because their reference differs."""
    frames = []
    for method, baseline_method in pairs:
        table = comparison_table(store, candidate.run_id, Side(baseline.run_id, baseline_method),
                                 [Side(candidate.run_id, method)], metrics=list(metrics))
        frames.append(table.assign(method=method, baseline=baseline_method))
    return pd.concat(frames, ignore_index=True), n_changed_references(store, candidate.run_id, baseline.run_id)
