"""The run's declared families of tests: which comparisons one correction covers, so that every screen saying a
difference holds says it over the same family (issue 34: Overview corrected over the headline's tests, Compare
over every metric shown, and the same pair and metric read as significant on one and not on the other).

The rule. Primary family: the headline metrics (HEADLINE), the run's primary comparisons, declared before
looking; Overview's findings, the report's headline and Compare's rows of these metrics. Secondary family: every
other metric, exploratory, corrected on its own. Each family is corrected per pair (a method against its
baseline) by Holm over the family's metrics the pair has pairs on, whichever metrics a screen shows: so the same
two methods, metric and questions get the same adjusted p on every screen, however many other methods or metric
families are on it.
"""
from __future__ import annotations

from collections.abc import Iterable

# The seeds' primary scores, the numbers a run is judged by at a glance (History follows them over runs, the gate
# guards them): the overall 1-5 rating ("the primary metric for comparison", seed 001) and its pass rate,
# correctness against the reference, faithfulness, context precision and recall (seed 002), and the share of
# CORRECT answers (seed 003's CORRECT / WRONG / DON'T KNOW).
HEADLINE = ("judge_overall", "verdict", "answer_correctness_f1", "faithfulness", "context_precision", "context_recall",
            "answer_class")
PRIMARY, SECONDARY = "primary", "secondary"
CORRECTION = "Holm"


def family_of(metric: str) -> str:
    """The family of tests a metric's comparison belongs to: primary for a headline metric, else secondary."""
    return PRIMARY if metric in HEADLINE else SECONDARY


def whole_families(metrics: Iterable[str] | None) -> list[str] | None:
    """The metrics to test so that each family touched by `metrics` is whole: the headline metrics when only they
    are asked, else every metric (None), as the secondary family is every metric not in the headline."""
    if metrics is None:
        return None
    metrics = list(metrics)
    if not metrics:  # nothing asked: nothing to test
        return []
    return list(HEADLINE) if all(family_of(m) == PRIMARY for m in metrics) else None


def caption(*, secondary: bool) -> str:
    """What a screen says about its correction: the family (and the secondary one when it shows it) and the
    method."""
    primary = (f"Primary family: the {len(HEADLINE)} headline metrics ({', '.join(HEADLINE)}), {CORRECTION}-corrected "
               f"together per pair of methods (method against baseline), the same p on Overview, Compare and the "
               f"report")
    if not secondary:
        return primary + "."
    return primary + (f"; secondary (exploratory) family: every other metric, {CORRECTION}-corrected on its own, per "
                      f"pair. Neither depends on the other methods or metric families shown.")
