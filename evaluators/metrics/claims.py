"""Claim-level metrics: one claim matrix per sample (from the run's judge), nine metrics from it.

The arithmetic is `evaluators.claims.claim_metrics`; here each metric is registered with its scale
and seed. The matrices of a batch are built once by the run context and shared by all nine.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evaluators.claims import claim_metrics
from evaluators.metrics.registry import metric
from evaluators.schema import Result, Sample

NEEDS = ("judge", "reference", "contexts")

# id, higher_is_better, seed, formula
CLAIM_METRICS = [
    ("faithfulness", True, "000, 002, 003",
     "supported answer claims / answer claims, a claim being supported when any retrieved chunk "
     "supports it; no claims -> 1.0 (seed 003); no context -> 1.0 with 'No context to verify.' (seed 000)."),
    ("context_precision", True, "003",
     "relevant chunks / retrieved chunks, relevance judged per chunk against the question (seed 003); "
     "no context -> not applicable."),
    ("context_precision_ap", True, "002",
     "rank-aware: sum_k (precision@k x rel_k) / relevant chunks, e.g. relevances [0, 1, 0] -> 0.5 (seed 002)."),
    ("context_recall", True, "002, 003",
     "reference claims attributable to the retrieved chunks / reference claims; no reference claims -> 1.0, "
     "no context -> 0.0 (seed 003)."),
    ("wp_precision", True, "000",
     "chunks used by the answer (supporting at least one answer claim) / retrieved chunks; no context -> "
     "not applicable (NaN in seed 000). x 1-5 by 1 + 4x."),
    ("wp_recall", True, "000",
     "answer facts covered by the retrieved chunks / answer facts; no context -> 1.0 (seed 000). x 1-5 by 1 + 4x."),
    ("answer_correctness_f1", True, "002",
     "TP / (TP + 0.5 (FP + FN)): TP answer claims the reference supports, FP the other answer claims, FN "
     "reference claims the answer does not cover (seed 002)."),
    ("completeness", True, "002",
     "reference claims covered by the answer / reference claims; no reference claims -> 1.0."),
    ("hallucination_rate", False, "000, 003",
     "answer claims the retrieved chunks contradict or do not contain / answer claims ('hallucinated facts', "
     "seed 000); a claim the judge could not decide counts neither way."),
]


def _compute(metric_id: str):
    def compute(samples: Sequence[Sample], context: Any) -> list[Result]:
        return [claim_metrics(m)[metric_id] for m in context.matrices(samples)]

    return compute


for _id, _higher, _seed, _formula in CLAIM_METRICS:
    metric(_id, family="claims", scale="ratio", higher_is_better=_higher, seed=_seed, formula=_formula,
           needs=NEEDS)(_compute(_id))
