"""The regression gate: is a candidate run significantly worse than a baseline run, metric by metric?

`gate(store, "RUN_NEW", "RUN_RELEASED")` pairs each gated metric's scores question by question across the two runs
(evaluators.queries.compare.comparison_table: paired difference, 95% CI) and tests all the gate's rows that can fail
as one family: Westfall-Young step-down max-T over the per-question differences (evaluators.maths.family), with the
same sign flip for every metric of a question, so near-duplicate metrics (answer_class, verdict,
answer_correctness_f1) cost the family little and a halving of correctness fails whether 7 or 32 metrics are gated
(Holm treated them as independent and let it pass). The CLI (`python -m evaluators gate`) and `Evaluation.gate`
call it.

The rule, per (method, metric): a regression iff
  - the family-wise p (p_family) is below alpha, and
  - the whole 95% CI of the difference lies on the worse side, beyond the tolerance: for a metric where higher is
    better, ci_high < -tolerance (lower is better: ci_low > tolerance).
The interval, not the point estimate, is held against the tolerance: the gate fails only when the data show the
drop exceeds what was tolerated, so a noisy difference near the tolerance does not flip CI red and green from
one commit to the next. Metrics with no direction (dont_know) are reported and never fail.
With a margin (non-inferiority, `--margin METRIC=DELTA`) the burden is reversed for that metric: it fails unless
the whole 95% CI lies above -DELTA in its better direction ("not shown non-inferior").

Power: each row's minimum detectable effect (mde: evaluators.maths.power, the paired t-test's at this n, alpha
two-sided, 80% power, from the observed SD of the differences; an identical re-run has none, so then from the two
sides' own spread as if unpaired, an upper bound). An MDE above max(tolerance, margin, LARGE_MDE x the metric's
range) is "large": the verdict says the gate cannot detect drops smaller than it. `require_mde` fails the gate
when a metric's MDE exceeds the size the team needs to see.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from evaluators.metrics.registry import find
from evaluators.metrics.registry import in_catalogue_order, lookup
from evaluators.queries import OK as OK_STATUS
from evaluators.queries import versions
from evaluators.queries.compare import (LARGE_MDE, TIE_TOLERANCE, comparison_table, n_changed_references, paired_scores,
                                        run_methods, run_metrics)
from evaluators.queries.headline import HEADLINE
from evaluators.queries.overview import REPLIES_DISAGREE
from evaluators.queries.sides import SEPARATOR, Side
from evaluators.maths.family import max_t
from evaluators.maths.power import POWER, paired_mde
from evaluators.records.run_status import RunStatus
from evaluators.store import Store

ALPHA = 0.05
UNSTABLE_SHOWN = 20  # unstable samples listed in the markdown report; the rest are counted
BLIND_SHOWN = 3  # metrics named in the headline's "cannot detect"; the rest are counted

# Verdicts of a gate row
REGRESSION, OK, BETTER, NO_DIRECTION, NO_PAIRS = "regression", "ok", "better", "no direction", "no pairs"
NOT_NONINFERIOR = "not shown non-inferior"  # a metric with a margin whose CI reaches below -margin
FAILING = (REGRESSION, NOT_NONINFERIOR)


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
    unknown = [m for m in metric_ids if find(m) is None]  # id_recall@5 too
    if unknown:
        raise ValueError(f"unknown metric id(s): {', '.join(unknown)} (see `python -m evaluators metrics`)")


def parse_deltas(items: Iterable[str], flag: str = "--tolerance") -> dict[str, float]:
    """`METRIC=DELTA` items of `flag` -> {metric: delta}; delta in the metric's own scale (points on 1-5, 0-1 for
    ratios). Format errors name the flag and the item; the values are checked by check_deltas."""
    deltas: dict[str, float] = {}
    for item in items:
        metric, separator, delta = item.partition("=")
        metric = metric.strip()
        if not separator or not metric:
            raise ValueError(f"{flag} {item!r} is not METRIC=DELTA, e.g. faithfulness=0.02")
        if metric in deltas:
            raise ValueError(f"{flag} for {metric} is given twice")
        try:
            deltas[metric] = float(delta)
        except ValueError:
            raise ValueError(f"{flag} {item!r}: {delta.strip()!r} is not a number") from None
    return deltas


def parse_tolerances(items: Iterable[str]) -> dict[str, float]:
    return check_tolerances(parse_deltas(items, "--tolerance"))


def check_deltas(deltas: Mapping[str, float] | None, gated: Sequence[str] | None = None, *, what: str = "tolerance",
                 flag: str = "--tolerance", positive: bool = False) -> dict[str, float]:
    """The deltas (tolerances, margins, required MDEs), each for a known metric (one of `gated` when given),
    finite and >= 0 (> 0 when positive). Messages name the CLI flag the values come from."""
    deltas = dict(deltas or {})
    try:
        _known(deltas)
    except ValueError as exc:
        raise ValueError(f"{flag}: {exc}") from None
    bad = {m: d for m, d in deltas.items() if not (isinstance(d, (int, float)) and math.isfinite(d)
                                                   and (d > 0 if positive else d >= 0))}
    if bad:
        raise ValueError(f"{flag} " + ", ".join(f"{m}={d}" for m, d in bad.items()) + f": a {what} is a number "
                         f"{'>' if positive else '>='} 0 in the metric's own scale")
    if gated is not None:
        ungated = [m for m in deltas if m not in gated]
        if ungated:
            raise ValueError(f"{flag}: {what} for {', '.join(ungated)}, which is not gated (gated: "
                             f"{', '.join(gated)})")
    return deltas


def check_tolerances(tolerances: Mapping[str, float] | None, gated: Sequence[str] | None = None) -> dict[str, float]:
    """The tolerances, each for a known metric (one of `gated` when given), finite and >= 0."""
    return check_deltas(tolerances, gated)


def check_alpha(alpha: float) -> float:
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise ValueError(f"alpha must lie between 0 and 1 (e.g. 0.05), got {alpha!r}")
    return float(alpha)


# -- the decision ----------------------------------------------------------------------------------------------

def verdict(row: Mapping, tolerance: float, alpha: float, margin: float | None = None) -> str:
    """The gate's verdict on one comparison row (comparison_table's columns, p_family over the gate's rows).
    With a margin, the metric must show non-inferiority: the CI's worst end above -margin."""
    if not row["n"]:
        return NO_PAIRS
    direction = lookup(row["metric"]).direction
    if not direction:
        return NO_DIRECTION
    low, high, p = row["ci_low"], row["ci_high"], row["p_family"]
    significant = not _missing(p) and p < alpha
    if _missing(low) or _missing(high):  # one pair: no interval, nothing shown either way
        return OK if margin is None else NOT_NONINFERIOR
    # the interval oriented so that > 0 is better for the candidate
    worst, best = sorted((direction * low, direction * high))
    if margin is not None:
        if worst <= -margin:
            return NOT_NONINFERIOR
        return BETTER if significant and worst > 0 else OK
    if not significant:
        return OK
    if best < -tolerance:
        return REGRESSION
    return BETTER if worst > 0 else OK


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


GATE_COLUMNS = ["method", "baseline_method", "metric", "n", "mean_candidate", "mean_baseline", "delta", "ci_low",
                "ci_high", "p_value", "p_family", "tolerance", "margin", "mde", "large_mde", "higher_is_better",
                "verdict"]
DIFFERENCE_COLUMNS = ["method", "baseline", "question_id", "metric", "value_a", "value_b", "delta"]


def family_name(n: int) -> str:
    return f"Westfall-Young max-T over the {n} gated metric{'s' if n != 1 else ''}"


def gate_rows(table: pd.DataFrame, differences: pd.DataFrame, pairs: Sequence[tuple[str, str]],
              metrics: Sequence[str], tolerances: Mapping[str, float], alpha: float,
              margins: Mapping[str, float] | None = None) -> pd.DataFrame:
    """One row per (method pair, gated metric), in that order, from the comparison rows `table` (columns method,
    baseline, metric, n, mean_a, mean_b, delta, ci_low, ci_high: one per pair and metric, a missing one has no
    pairs) and the per-question `differences` (DIFFERENCE_COLUMNS). p_family: Westfall-Young max-T over all these
    rows that can fail (a direction and pairs); p_value: each such row's own sign-flip p from the same flips
    (comparison_table's for the others)."""
    margins = dict(margins or {})
    found = {(r["method"], r["baseline"], r["metric"]): r for r in table.to_dict("records")}
    parts = {key: part for key, part in differences.groupby(["method", "baseline", "metric"], sort=False)}
    rows = []
    for method, baseline in pairs:
        for metric in metrics:
            r = found.get((method, baseline, metric), {})
            n = int(r.get("n") or 0)
            part = parts.get((method, baseline, metric))
            mde = paired_mde(part["value_a"], part["value_b"], alpha) if n and part is not None else None
            bar = max(tolerances.get(metric, 0.0), margins.get(metric, 0.0), LARGE_MDE * lookup(metric).range.width)
            rows.append({"method": method, "baseline_method": baseline, "metric": metric, "n": n,
                         "mean_candidate": r.get("mean_a"), "mean_baseline": r.get("mean_b"), "delta": r.get("delta"),
                         "ci_low": r.get("ci_low"), "ci_high": r.get("ci_high"), "p_value": r.get("p_value"),
                         "p_family": None, "tolerance": float(tolerances.get(metric, 0.0)),
                         "margin": margins.get(metric), "mde": mde,
                         "large_mde": bool(lookup(metric).direction) and (mde is None or mde > bar),
                         "higher_is_better": lookup(metric).higher_is_better})
    frame = pd.DataFrame(rows, columns=[c for c in GATE_COLUMNS if c != "verdict"]).astype({"p_family": object})
    family = [i for i, r in enumerate(rows) if r["n"] and r["higher_is_better"] is not None]
    if family:
        keys = [(rows[i]["method"], rows[i]["baseline_method"], rows[i]["metric"]) for i in family]
        wide = differences.pivot(index="question_id", columns=["method", "baseline", "metric"], values="delta")
        test = max_t(wide.reindex(columns=pd.MultiIndex.from_tuples(keys)).to_numpy(dtype=float),
                     tie_tolerance=TIE_TOLERANCE)
        for i, adjusted, raw in zip(family, test.p_adjusted, test.p_raw):
            frame.at[i, "p_family"], frame.at[i, "p_value"] = adjusted, raw
    frame["verdict"] = [verdict(r, r["tolerance"], alpha, margins.get(r["metric"]))
                        for r in frame.to_dict("records")]
    return frame[GATE_COLUMNS]


def mde_failures(rows: pd.DataFrame, required: Mapping[str, float], alpha: float) -> list[str]:
    """For each row of a metric with a required MDE: why the golden set cannot detect that drop, if it cannot."""
    failures = []
    for r in rows.to_dict("records"):
        need = required.get(r["metric"])
        if need is None or (not _missing(r["mde"]) and r["mde"] <= need):
            continue
        digits = lookup(r["metric"]).range.digits
        seen = ("its MDE cannot be estimated (fewer than 2 pairs or no spread)" if _missing(r["mde"]) else
                f"its minimum detectable effect is {r['mde']:.{digits}f} at n {r['n']}")
        failures.append(f"{r['metric']} ({_pair(r)}): this golden set cannot detect a change of "
                        f"{need:.{digits}f} ({seen}; {POWER:.0%} power, alpha {alpha:g}): --require-mde "
                        f"{r['metric']}={need:g} not met")
    return failures


@dataclass(frozen=True, eq=False)
class GateResult:
    """The gate's answer: `rows` (GATE_COLUMNS, one per method pair and metric), `unstable` (samples whose judge
    replies disagree on a gated metric: side, run_id, method, question_id, metric, repeats), `dropped` (the
    questions left out because their reference differs between the two golden sets) and `mde_failures` (why the
    golden set cannot detect a required effect, one line per metric and method pair that fails require_mde)."""

    candidate: str
    baseline: str
    alpha: float
    rows: pd.DataFrame
    unstable: pd.DataFrame
    dropped: int = 0
    notes: tuple[str, ...] = ()  # what a reader should know: questions left out, runs not finished
    mde_failures: tuple[str, ...] = ()

    @property
    def regressions(self) -> pd.DataFrame:
        """The rows that fail: regressions, and metrics with a margin not shown non-inferior."""
        return self.rows[self.rows["verdict"].isin(FAILING)]

    @property
    def family(self) -> str:
        """The family p_family corrects over, said on every report."""
        return family_name(int(self.rows["p_family"].notna().sum()))

    @property
    def blind(self) -> pd.DataFrame:
        """The rows whose minimum detectable effect is large (see the module docstring)."""
        return self.rows[self.rows["large_mde"]]

    @property
    def passed(self) -> bool:
        return self.regressions.empty and not self.mde_failures


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
    margin = None if _missing(row["margin"]) else row["margin"]
    return {"delta": _number(row["delta"], digits, sign=True),
            "ci": f"[{_number(row['ci_low'], digits, True)}, {_number(row['ci_high'], digits, True)}]",
            "means": f"{_number(row['mean_candidate'], digits)} vs {_number(row['mean_baseline'], digits)}",
            "p_family": _p(row["p_family"]),
            "tolerance": "-" if margin is not None else _number(row["tolerance"], digits),
            "margin": "-" if margin is None else _number(margin, digits), "mde": _number(row["mde"], digits)}


def _pair(row: Mapping) -> str:
    same = row["method"] == row["baseline_method"]
    return row["method"] if same else f"{row['method']} vs {row['baseline_method']}"


def describe(row: Mapping) -> str:
    """One line for a row, e.g. 'faithfulness (local_search): delta -0.213, 95% CI [-0.301, -0.125], p (family)
    0.0002, tolerance 0.000, MDE 0.061, n 103' (a margin, when given, after the tolerance)."""
    c = _cells(row)
    limit = f"margin {c['margin']}" if not _missing(row["margin"]) else f"tolerance {c['tolerance']}"
    return (f"{row['metric']} ({_pair(row)}): delta {c['delta']}, 95% CI {c['ci']}, p (family) {c['p_family']}, "
            f"{limit}, MDE {c['mde']}, n {row['n']}")


def blind_spot(result: GateResult) -> str:
    """'cannot detect drops smaller than 0.41 in answer_class, ...': the large MDEs, largest share of range first."""
    rows = sorted(result.blind.to_dict("records"), key=lambda r: -(r["mde"] if not _missing(r["mde"]) else math.inf)
                  / lookup(r["metric"]).range.width)
    if not rows:
        return ""
    named = [f"{_number(r['mde'], lookup(r['metric']).range.digits)} in {r['metric']} ({_pair(r)})"
             if not _missing(r["mde"]) else f"any size in {r['metric']} ({_pair(r)}: MDE not estimable)"
             for r in rows[:BLIND_SHOWN]]
    more = f" and {len(rows) - BLIND_SHOWN} more metric(s)" if len(rows) > BLIND_SHOWN else ""
    return f"cannot detect drops smaller than {', '.join(named)}{more} ({POWER:.0%} power)"


def headline(result: GateResult) -> str:
    n = len(result.regressions) + len(result.mde_failures)
    if result.passed:
        outcome = "PASSED: no regression"
    else:
        parts = [f"{len(result.regressions)} regression{'s' if len(result.regressions) != 1 else ''}"] * bool(
            len(result.regressions))
        parts += [f"{len(result.mde_failures)} required MDE(s) not met"] * bool(result.mde_failures)
        outcome = f"FAILED: {', '.join(parts)}" if n else "FAILED"
    blind = blind_spot(result)
    return (f"gate {outcome} ({result.candidate} against baseline {result.baseline}, alpha {result.alpha:g}, "
            f"{result.family})" + (f"; {blind}" if blind else ""))


def text_report(result: GateResult) -> str:
    """What the CLI prints: each row, then the regressions named, then the outcome."""
    lines = [f"{r['verdict']:>12}  {describe(r)}" for r in result.rows.to_dict("records")]
    lines += [f"note: {note}" for note in result.notes]
    if len(result.unstable):
        lines.append(f"{len(result.unstable)} unstable sample(s): the judge's repeated replies disagree "
                     "(see --markdown)")
    lines += [f"{'REGRESSION' if r['verdict'] == REGRESSION else 'NOT NON-INFERIOR'} {describe(r)}"
              for r in result.regressions.to_dict("records")]
    lines += [f"MDE TOO LARGE {reason}" for reason in result.mde_failures]
    return "\n".join(lines + [headline(result)])


def markdown_report(result: GateResult) -> str:
    """A short report fit for a pull-request comment."""
    blind = blind_spot(result)
    lines = [f"### RAGScope gate: {'passed' if result.passed else 'failed'}", "",
             f"Candidate `{result.candidate}` against baseline `{result.baseline}`: paired per question; "
             f"p (family) is the {result.family} (sign flips of whole questions, so correlated metrics are not "
             f"counted as independent tests). p (family) < {result.alpha:g} and the 95% CI beyond the tolerance "
             "make a regression; a metric with a margin fails unless its CI lies above -margin. MDE: the smallest "
             f"change this golden set detects with {POWER:.0%} power at alpha {result.alpha:g}.", "",
             *([f"**Power**: {blind}.", ""] if blind else []),
             *_regression_lines(result),
             "| | metric | method | Δ candidate − baseline | 95% CI | p (family) | tolerance | margin | MDE | means "
             "| n |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    marks = {REGRESSION: "❌ regression", NOT_NONINFERIOR: "❌ not shown non-inferior", BETTER: "✅ better",
             OK: "✅", NO_DIRECTION: "➖ no direction", NO_PAIRS: "➖ no pairs"}
    for r in result.rows.to_dict("records"):
        c = _cells(r)
        lines.append(f"| {marks[r['verdict']]} | `{r['metric']}` | {_pair(r)} | {c['delta']} | {c['ci']} | "
                     f"{c['p_family']} | {c['tolerance']} | {c['margin']} | {c['mde']} | {c['means']} | {r['n']} |")
    lines += ([""] + [f"Note: {note}" for note in result.notes]) if result.notes else []
    return "\n".join(lines + _unstable_lines(result.unstable)) + "\n"


def _regression_lines(result: GateResult) -> list[str]:
    named = [f"`{r['metric']}` ({_pair(r)})" for r in result.regressions.to_dict("records")]
    lines = [f"**Regressions**: {', '.join(named)}", ""] if named else []
    return lines + ([f"**Required MDE not met**: {reason}" for reason in result.mde_failures] + [""]
                    if result.mde_failures else [])


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
    """A JUnit XML file: one testsuite, one testcase per (method, metric); a regression or a metric not shown
    non-inferior is a <failure>, a metric that cannot fail (no direction, no pairs) is <skipped>; each required MDE
    not met is one more testcase with a <failure>. The family and each row's MDE are in the text."""
    rows = result.rows.to_dict("records")
    skipped = sum(r["verdict"] in (NO_DIRECTION, NO_PAIRS) for r in rows)
    tests, failures = len(rows) + len(result.mde_failures), len(result.regressions) + len(result.mde_failures)
    suite = ET.Element("testsuite", name="ragscope.gate", tests=str(tests), failures=str(failures),
                       errors="0", skipped=str(skipped))
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name="baseline", value=result.baseline)
    ET.SubElement(properties, "property", name="family", value=result.family)
    for r in rows:
        case = ET.SubElement(suite, "testcase", classname=f"ragscope.gate.{_pair(r)}", name=r["metric"])
        said = describe(r) + (f"; cannot detect drops smaller than {_cells(r)['mde']} ({POWER:.0%} power)"
                              if r["large_mde"] else "")
        if r["verdict"] in FAILING:
            ET.SubElement(case, "failure", message=f"{r['verdict']}: {said}", type=r["verdict"]).text = said
        elif r["verdict"] in (NO_DIRECTION, NO_PAIRS):
            ET.SubElement(case, "skipped", message=f"{r['verdict']}: {said}")
        else:
            ET.SubElement(case, "system-out").text = f"{r['verdict']}: {said}"
    for reason in result.mde_failures:
        case = ET.SubElement(suite, "testcase", classname="ragscope.gate.require-mde", name=reason.split()[0])
        ET.SubElement(case, "failure", message=reason, type="require-mde").text = reason
    suites = ET.Element("testsuites", name=f"RAGScope gate {result.candidate}", tests=suite.get("tests"),
                        failures=suite.get("failures"), errors="0", skipped=str(skipped))
    suites.append(suite)
    return ET.tostring(suites, encoding="utf-8", xml_declaration=True)


# -- the gate --------------------------------------------------------------------------------------------------

def gate(store: Store, candidate: str, baseline: str, *, metrics: Sequence[str] | None = None,
         tolerances: Mapping[str, float] | None = None, alpha: float = ALPHA,
         margins: Mapping[str, float] | None = None, require_mde: Mapping[str, float] | None = None) -> GateResult:
    """Gate run `candidate` against run `baseline`, each `RUN_ID[:METHOD]`, on `metrics` (default: the headline
    ones scored in both runs) with `tolerances` ({metric: delta >= 0 in its own scale}; default 0), `margins`
    ({metric: delta >= 0}: non-inferiority instead of the regression test) and `require_mde` ({metric: the change
    in its own scale the golden set must detect}). Bad sides, metrics, tolerances, margins or alpha raise
    ValueError with a message for the user."""
    alpha = check_alpha(alpha)
    metrics = [metrics] if isinstance(metrics, str) else metrics
    sides = parse_side(candidate), parse_side(baseline)
    with store.lease():  # one unit of work: every read of the gate
        runs = [_run(store, side) for side in sides]
        versions.know(store, sides[0].run_id)  # the users' metrics (criteria, plug-ins') of the runs
        pairs = pair_methods(*sides, *(run_methods(store, s.run_id) for s in sides))
        changed = _changed_versions(store, *sides, metrics)
        gated = choose_metrics(metrics, *([m for m in run_metrics(store, s.run_id) if m not in changed]
                                          for s in sides))
        tolerances = check_tolerances(tolerances, gated)
        margins = check_deltas(margins, gated, what="margin", flag="--margin")
        both = [m for m in margins if m in tolerances]
        if both:
            raise ValueError(f"--tolerance and --margin both given for {', '.join(both)}: a metric takes a tolerance "
                             "(the regression test) or a margin (non-inferiority), not both")
        require_mde = check_deltas(require_mde, gated, what="required MDE", flag="--require-mde", positive=True)
        table, differences, dropped = _compare(store, *sides, pairs, gated)
        unstable = unstable_samples(store, *sides, pairs, gated)
    notes = [f"run {r['run_id']} is {r['status']}: gated on the cells it scored" for r in runs
             if r["status"] != RunStatus.FINISHED]
    notes += changed.values()
    if dropped:
        notes.append(f"{dropped} question(s) left out: their reference differs between the two golden sets")
    rows = gate_rows(table, differences, pairs, gated, tolerances, alpha, margins)
    return GateResult(str(sides[0]), str(sides[1]), alpha, rows, unstable, dropped, tuple(notes),
                      tuple(mde_failures(rows, require_mde, alpha)))


def _changed_versions(store: Store, candidate: GateSide, baseline: GateSide,
                      requested: Sequence[str] | None) -> dict[str, str]:
    """The users' metrics the two runs have at different versions, each with the note that says it is not compared
    (from the baseline's version to the candidate's); ValueError naming them when one was asked for by name."""
    changed = {m: versions.note(m, *v) for m, v in versions.changed(store, baseline.run_id, candidate.run_id).items()}
    if asked := [changed[m] for m in requested or () if m in changed]:
        raise ValueError("; ".join(asked) + ": a changed criterion asks the judge another question, so its scores "
                         "are not gated against the old ones (gate it against a run of the same version)")
    return changed


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
             metrics: Sequence[str]) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """comparison_table's rows of each method pair across the two runs (method and baseline columns: the bare
    method names), the per-question differences behind them (DIFFERENCE_COLUMNS, compare.paired_scores: the same
    pairing) and how many questions were left out because their reference differs."""
    frames, differences = [], []
    for method, baseline_method in pairs:
        a, b = Side(candidate.run_id, method), Side(baseline.run_id, baseline_method)
        table = comparison_table(store, candidate.run_id, b, [a], metrics=list(metrics))
        frames.append(table.assign(method=method, baseline=baseline_method))
        paired = paired_scores(store, candidate.run_id, a, b, metrics=list(metrics), with_text=False)
        differences.append(paired.assign(method=method, baseline=baseline_method)[DIFFERENCE_COLUMNS])
    return (pd.concat(frames, ignore_index=True), pd.concat(differences, ignore_index=True),
            n_changed_references(store, candidate.run_id, baseline.run_id))
