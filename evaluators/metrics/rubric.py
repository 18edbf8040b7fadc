"""Rubric metrics (seeds 000, 001, 003): the 1-5 dimensions, verdict, GEval accuracy, answer classes.

An LLM judge rates each answer in one holistic call (`context.judged(samples, HOLISTIC)`); the
offline judge has none, so it derives the same ids from the claim metrics of the batch, the
semantic family's answer relevance and the uncertainty check. Both paths are in `evaluators.rubric`
(pure, unit-tested there). Scores carry the run's judge (the engine sets it: every metric here
needs "judge"), so an offline number is never mistaken for an LLM's.

The whole mapping runs once per batch and is shared by the 13 ids (`rubric_batch`).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evaluators import formulas
from evaluators.abstention import abstains
from evaluators.claims import claim_metrics
from evaluators.judges import HOLISTIC, correctness, grounding, offline
from evaluators.metrics.registry import metric
from evaluators.metrics.semantic import answer_relevance, bertscores, semantic_similarity
from evaluators.rubric import (CONTRADICTED, CORRECT_P, GROUNDED, answer_contradicted_by_reference, judged_rubric,
                               offline_rubric)
from evaluators.schema import OK, Result, Sample, not_applicable


def rubric_batch(samples: Sequence[Sample], context: Any) -> list[dict[str, Result]]:
    """Every rubric id of every sample, computed once per batch and shared by the 13 ids."""
    return context.per_batch("rubric", samples, lambda batch: _rubric_rows(batch, context))


def _rubric_rows(samples: Sequence[Sample], context: Any) -> list[dict[str, Result]]:
    matrices = context.matrices(samples)
    dont_know = [abstains(s.output.answer) for s in samples]
    if context.judge != offline.JUDGE:
        ratings = [j.holistic for j in context.judged(samples, HOLISTIC)]
        return [judged_rubric(h, claim_metrics(m), dk) for h, m, dk in zip(ratings, matrices, dont_know)]
    rows = []
    relevance = answer_relevance(samples, context)  # embeddings are cached: cheap after the semantic family
    for sample, matrix, rel, dk, similar in zip(samples, matrices, relevance, dont_know, similarities(samples, context)):
        claims = dict(claim_metrics(matrix))
        claims[CONTRADICTED] = answer_contradicted_by_reference(matrix)
        claims[GROUNDED] = grounding.grounded(claims["faithfulness"], grounding.word_support(
            sample.output.answer, [c.text for c in sample.output.contexts]))
        rows.append(offline_rubric(claims, rel, dk, correct(sample, *similar, claims[CONTRADICTED],
                                                            claims["completeness"])))
    return rows


def similarities(samples: Sequence[Sample], context: Any = None) -> list[tuple[float, tuple[float, float, float]]]:
    """Per sample, semantic_similarity / 100 and BERTScore's (P, R, F1) of answer and reference: the semantic
    family's own numbers (cached vectors; BERTScore shared within the batch), as the correctness scorer reads
    them; a pair the family scores 0 (an empty side) reads 0."""
    cosine, bertscore = semantic_similarity(samples), bertscores(samples, context)
    return [((c.value or 0.0) / 100.0, (0.0, 0.0, 0.0) if isinstance(b, Result) else b)
            for c, b in zip(cosine, bertscore)]


def correct(sample: Sample, cosine: float, bertscore: tuple[float, float, float], contradicted: Result,
            completeness: Result) -> Result:
    """The correctness scorer's P(correct) of one sample (judges/correctness.py); beyond a short reference,
    times the completeness (the share of the reference's claims the answer states)."""
    reference = sample.golden.reference
    if not reference.strip():
        return not_applicable("no reference answer to judge correctness against")
    short = correctness.is_short_answer(reference)
    for needed in (contradicted,) if short else (contradicted, completeness):
        if needed.status != OK:
            return needed
    x = correctness.signals(sample.output.answer, reference, cosine, bertscore, contradicted.value)
    p = correctness.probability(x)
    detail = f"P(correct) from {correctness.explain(x)}"
    if short:
        return Result(p, detail=detail)
    return Result(round(p * completeness.value, 4),
                  detail=f"{detail}; the reference is more than a short answer: x completeness {completeness.value:.2f}")


def _compute(metric_id: str):
    def compute(samples: Sequence[Sample], context: Any) -> list[Result]:
        return [row[metric_id] for row in rubric_batch(samples, context)]

    return compute


_L = "1 + 4x (seed 000's projection)"
_RELEVANCE = ("answer_relevance there is the offline direct question-answer cosine x 100, which runs lower than "
              "an LLM's relevance rating")
_LLM = "LLM judge: its 1-5 rating by seed 001's rubric, in the holistic call"
_P = ("P(correct) is the offline correctness scorer (evaluators/judges/correctness.py): a logistic model over "
      "reference recall, reference containment, token F1, MiniLM cosine, BERTScore (F1, P and R), abstention, "
      "contradicted claims and answer length, fitted on the dev part of EVOUNA's human correct/incorrect verdicts; "
      "a reference longer than a short answer (no alias of at most 5 words, parentheses aside) also needs its key "
      "points: P x completeness")

# id, scale, seed, needs, formula
RUBRIC_METRICS = [
    ("judge_correctness", "likert", "001", ("judge", "reference", "embeddings"),
     f"Seed 001: does the answer match the ground truth factually (1-5)? {_LLM}. Offline mapping: "
     f"round(1 + 4 x P(correct), 1), {_L}; {_P}."),
    ("judge_completeness", "likert", "001", ("judge", "reference"),
     f"Seed 001: does the answer cover all key points of the ground truth (1-5)? {_LLM}. Offline mapping: "
     "round(1 + 4 x completeness, 1)."),
    ("judge_faithfulness", "likert", "001", ("judge", "contexts"),
     f"Seed 001: is the answer grounded in the retrieved context (1-5)? {_LLM}. Offline mapping: "
     "round(1 + 4 x (w x faithfulness + (1 - w) x word support), 1), word support = the share of the answer's "
     "SQuAD tokens found in the chunks, w chosen on the dev parts of four human-labelled sets "
     "(evaluators/judges/grounding.py, weights/grounding.json); no context -> 5.0 with 'No context to verify.' "
     "(seed 000)."),
    ("judge_relevance", "likert", "001", ("judge", "embeddings"),
     f"Seed 001: does the answer directly address the question (1-5)? {_LLM}. Offline mapping: "
     f"round(1 + 4 x answer_relevance / 100, 1); {_RELEVANCE}."),
    ("judge_clarity", "likert", "001", ("judge",),
     f"Seed 001: is the answer well written (1-5)? {_LLM}. Offline: not applicable, as the offline judge has "
     "no signal for writing quality."),
    ("judge_overall", "likert", "001", ("judge", "reference", "contexts", "embeddings"),
     f"Seed 001: holistic quality (1-5). {_LLM} (overall_score). Offline mapping: round(mean of the unrounded "
     "correctness (1 + 4 P(correct)), completeness, faithfulness (as judge_faithfulness) and relevance "
     "projections, 1); clarity is not rated offline."),
    ("verdict", "label", "001", ("judge", "reference", "contexts", "embeddings"),
     "Seed 001: pass when overall >= 4, partial when >= 3, else fail, always recomputed from judge_overall "
     "(a judge whose own verdict disagrees is noted in detail); value pass 1, partial 0.5, fail 0, the label "
     "in detail."),
    ("wp_correctness", "likert", "000", ("judge", "reference", "embeddings"),
     "Seed 000: factual alignment of answer and reference (1-5). LLM judge: its 'alignment' rating with "
     "reasoning (an answer as confused as its reference rates high). Offline mapping: "
     "round(1 + 4 x P(correct), 1), as judge_correctness."),
    ("wp_relevance", "likert", "000", ("judge", "embeddings"),
     "Seed 000: is the answer on-topic with the question (1-5)? LLM judge: its 'question_relevance' rating "
     "with reasoning. Offline mapping: round(1 + 4 x answer_relevance / 100, 1), as judge_relevance; "
     f"{_RELEVANCE}."),
    ("wp_overall", "likert", "000", ("judge", "reference", "contexts", "embeddings"),
     "Seed 000: 0.4 correctness + 0.2 faithfulness + 0.2 precision + 0.2 recall + 0 relevance on 1-5, "
     "rounded to 2 decimals; faithfulness, precision (wp_precision) and recall (wp_recall) are the claim "
     "ratios projected 1 + 4x; correctness and relevance are wp_correctness and wp_relevance (LLM judge) or "
     "1 + 4x of P(correct) and answer_relevance / 100 (offline). A not-applicable part (precision "
     "without context) is left out and the weights renormalised."),
    ("factual_accuracy", "percent", "003", ("judge", "reference", "embeddings"),
     "Seed 003 GEval: 0.5 correctness + 0.3 completeness + 0.2 consistency, each 0-100, rounded to 2 "
     "decimals. LLM judge: the three criteria scored step by step with seed 003's rubrics (we apply the "
     "weights, not the judge). Offline mapping: correctness = 100 x P(correct), completeness = "
     "100 x completeness, consistency = 100 minus the share (x100) of answer claims the reference contradicts "
     "(a stand-in for internal consistency)."),
    ("accuracy_grade", "label", "003", ("judge", "reference", "embeddings"),
     "Seed 003: A >= 80, B >= 60, C >= 40, D >= 20, else E of factual_accuracy; value A..E = 1, 0.75, 0.5, "
     "0.25, 0, the grade in detail."),
    ("answer_class", "label", "003", ("judge", "reference", "embeddings"),
     f"Seed 003: DON'T KNOW when the answer has an uncertainty phrase (checked first, no judge needed), else "
     f"CORRECT or WRONG; value CORRECT 1, WRONG 0, DON'T KNOW 0, the label in detail. LLM judge: its "
     f"CORRECT/WRONG by seed 003's criteria. Both judges also class DON'T KNOW the answers that abstain in "
     f"other words (evaluators/abstention.py: 'I couldn't find any information', 'the document does not "
     f"provide', 'there is no single answer', 'it depends', ...). Offline mapping: CORRECT when P(correct) >= "
     f"{CORRECT_P} (judge_correctness >= 3), else WRONG; {_P}."),
]

# The label metrics' labels, in display order, and their values (DESIGN.md "Metric ids").
LABELS = {"verdict": formulas.VERDICT_VALUES, "accuracy_grade": formulas.GRADE_VALUES,
          "answer_class": formulas.ANSWER_CLASS_VALUES}

for _id, _scale, _seed, _needs, _formula in RUBRIC_METRICS:
    metric(_id, family="rubric", scale=_scale, higher_is_better=True, seed=_seed, formula=_formula,
           needs=_needs, labels=LABELS.get(_id))(_compute(_id))
