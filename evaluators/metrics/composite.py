"""Composite metrics (seed 003): `ragas_score`, the weighted mean of the four RAGAS metrics.

Inputs per sample: faithfulness, context_precision and context_recall from the claim matrix (x100)
and answer_relevance from the semantic family (already 0-100). As in seed 003's pseudo code a
missing (not applicable) input is left out and the weights of the others renormalised; when every
input is missing the cell is not applicable. A sample without retrieved context uses answer
relevance alone, as seed 003's `llm_with_context` row (F, CP, CR "N/A", RAGAS = AR = 82.29): the
seed-000 defaults for no context (faithfulness 1.0, recall 0.0) are not evidence about retrieval.
An input that failed (judge_error, timeout, skipped) is not left out silently: the cell takes its
status, so a retry recomputes it.

Where the rest is: no prompt of its own (its inputs come from `metrics/claims.py` and
`metrics/semantic.py`); each score is a row of `scores` (`store.py`), shown on Overview, Compare,
Correlations and Error analysis.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evaluators.maths import formulas
from evaluators.metrics.claims import claim_metrics
from evaluators.metrics.registry import REGISTRY, SCALES, metric
from evaluators.metrics.semantic import answer_relevance
from evaluators.records import NOT_APPLICABLE, OK, Result, Sample, not_applicable

RAGAS_INPUTS = ("faithfulness", "context_precision", "context_recall", "answer_relevance")
_NO_CONTEXT = "no retrieved context (N/A in seed 003)"


def ragas_from_results(inputs: Mapping[str, Result]) -> Result:
    """ragas_score of one sample from its four input Results, each taken onto 0-100 (seed 003's scale)."""
    failed = {k: r for k, r in inputs.items() if r.status not in (OK, NOT_APPLICABLE)}
    if failed:
        name, r = next(iter(failed.items()))
        return Result(None, r.status, f"ragas_score: input {name} is {r.status}" + (f" ({r.detail})" if r.detail else ""))
    scores = {k: _percent(k, inputs[k].value) if k in inputs and inputs[k].status == OK else None
              for k in RAGAS_INPUTS}
    value = formulas.ragas_composite(scores)
    left_out = [f"{k} ({inputs[k].detail or 'not applicable'})" if k in inputs else k
                for k in RAGAS_INPUTS if scores[k] is None]
    if value != value:  # NaN: nothing left
        return not_applicable("ragas_score: no input available: " + "; ".join(left_out))
    used = ", ".join(f"{k} {v:.2f} (w {formulas.RAGAS_WEIGHTS[k]:.2f})" for k, v in scores.items() if v is not None)
    detail = f"used: {used}"
    if left_out:
        detail += "; left out, weights renormalised: " + "; ".join(left_out)
    return Result(round(value, 2), detail=detail)


def _percent(metric_id: str, value: float) -> float:
    """A value of `metric_id` on 0-100: a ratio through its norm, a percentage as it is (no round trip)."""
    percent = SCALES["percent"]
    m = REGISTRY[metric_id]
    return value if m.range is percent else percent.value(m.norm(value))


@metric(
    "ragas_score", family="composite", scale="percent", higher_is_better=True, seed="003",
    needs=("judge", "embeddings"), uses=("reference", "contexts"),  # a part that does not apply is left out
    formula="Seed 003: 0.30 faithfulness + 0.20 context_precision + 0.20 context_recall + 0.30 answer_relevance, "
            "each 0-100 (the claim ratios x100); missing (not applicable) inputs are left out and the weights "
            "renormalised, e.g. F 100, CP NaN, CR 100, AR 83.27 -> 93.73; without retrieved context only answer "
            "relevance counts; nothing available -> not applicable. Offline: the inputs come from the offline judge's "
            "claim matrix and the direct question-answer cosine.",
)
def ragas_score(samples: Sequence[Sample], context: Any) -> list[Result]:
    relevance = answer_relevance(samples, context)
    out = []
    for sample, matrix, rel in zip(samples, context.matrices(samples), relevance):
        claims = claim_metrics(matrix)
        if sample.output.contexts:
            inputs = {k: claims[k] for k in RAGAS_INPUTS[:3]}
        else:
            inputs = {k: not_applicable(_NO_CONTEXT) for k in RAGAS_INPUTS[:3]}
        inputs["answer_relevance"] = rel
        out.append(ragas_from_results(inputs))
    return out
