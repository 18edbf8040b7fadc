"""An analyst's criterion as a metric (records/criteria.py): family "criteria", on the criterion's scale, scored from
the LLM judge's CRITERIA part (judges/openai_protocol.py: all of a run's criteria in one call per sample, reason
first, then the score). A judge that cannot judge free text (the offline judge) leaves its cells not_applicable with
the reason, never a number."""
from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from evaluators.judges import CRITERIA
from evaluators.metrics.registry import Metric, register_user
from evaluators.records import JUDGE_ERROR, OK, Result, Sample, not_applicable
from evaluators.records.criteria import Criterion
from evaluators.records.judgments import CriterionScore, JudgeFailure

FAMILY = "criteria"
KIND = "criterion"
NEEDS_LLM = "needs an LLM judge: the {judge} judge cannot judge a free-text criterion"
# each scale an analyst names -> the catalogue's scale its scores are stored on, and how a formula says it
SCALES = {"1-5": "likert", "pass/fail": "binary", "0-1": "ratio"}
_SCALE_TEXT = {"1-5": "1-5", "pass/fail": "pass (1) or fail (0)", "0-1": "0-1"}


def metric_of(c: Criterion) -> Metric:
    """`c` as a metric: it needs the judge, and the reference or the contexts when it reads them (a sample without
    them is not applicable, as for the catalogue's metrics)."""
    needs = ("judge", *(i for i in ("reference", "contexts") if i in c.inputs))
    return Metric(c.id, FAMILY, SCALES[c.scale], c.higher_is_better, needs, "", formula(c), partial(_scores, c),
                  user={"kind": KIND, "version": c.version, "definition": c.definition()})


def register(c: Criterion) -> Metric:
    """Register `c`'s metric (metrics.registry.USER); ValueError when its id is a built-in metric's."""
    return register_user(metric_of(c))


def criterion(m: Metric) -> Criterion | None:
    """The criterion behind metric `m`, or None for any other metric."""
    return Criterion.of_definition(m.user["definition"]) if m.user and m.user["kind"] == KIND else None


def formula(c: Criterion) -> str:
    """What "How scores are computed" says of it: the text, scale, levels and inputs, and how the judge scores it."""
    levels = "".join(f" {k}: {t}" for k, t in sorted(c.levels.items()))
    return (f"Your criterion{f' ({c.name})' if c.name else ''}, version {c.version}: \u201c{c.criterion}\u201d "
            f"Scale {_SCALE_TEXT[c.scale]}{' (levels:' + levels + ')' if levels else ''}; the judge sees "
            f"{', '.join(c.inputs)}{f' and {len(c.examples)} example(s)' if c.examples else ''}. An LLM judge "
            "reasons first, then scores (G-Eval); on 1-5, where the server gives token probabilities, the score is "
            "their probability-weighted mean (Liu et al. 2023), as the cell says. Not applicable with the offline "
            "judge.")


def _scores(c: Criterion, samples: Sequence[Sample], context: Any) -> list[Result]:
    if not context.judge.judges_criteria:
        return [not_applicable(NEEDS_LLM.format(judge=context.judge.name))] * len(samples)
    return [_result(c, j.criteria) for j in context.judged(samples, CRITERIA)]


def _result(c: Criterion, part) -> Result:
    if isinstance(part, JudgeFailure):
        return Result(None, part.status, part.error)
    scored = part.get(c.id) if part is not None else None
    if isinstance(scored, JudgeFailure):
        return Result(None, scored.status, scored.error)
    if not isinstance(scored, CriterionScore):
        return Result(None, JUDGE_ERROR, f"the judge's reply has no score for criterion {c.id}")
    low, high = c.bounds
    if not low <= scored.score <= high:  # the protocol refuses such replies: never stored as a number
        return Result(None, JUDGE_ERROR, f"the judge's score {scored.score!r} is outside the {c.scale} scale")
    how = "G-Eval probability-weighted score" if scored.weighted else "the judge's score"
    detail = f"{how}: {scored.reason}" if scored.reason else how
    return Result(scored.score, OK, detail, repeats=tuple(scored.replies))
