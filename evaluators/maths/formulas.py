"""The pure math of every RAGScope metric: no I/O, no project imports, stdlib only.

The metric definitions come from the seed documents in ``shared/seeds/`` (cited as "seed 000" ...
"seed 003"); their worked examples are the unit tests in ``tests/maths/test_formulas.py``. Every function
is safe to call from a notebook: ``from evaluators.maths.formulas import average_precision``.

API at a glance
---------------
Scales
    scale_to_likert(x) -> float            [0,1] -> [1,5]: 1 + 4x                      (seed 000)
    ratio(part, whole, *, when_empty=nan)  part / whole for counts, `when_empty` if whole == 0
    half_up(x, digits)                     rounded half up (3.25 -> 3.3), as stored scores are
Claims and chunks (ratios in [0, 1]; multiply by 100 for seed 003's percentages)
    faithfulness(supported, total)         supported / total; no claims -> 1.0          (seeds 002, 003)
    hallucination_rate(unsupported, total) unsupported / total; no claims -> 0.0
    context_recall(attributed, total)      attributed / total; no reference claims -> 1.0 (seeds 002, 003)
    completeness(covered, total)           covered reference claims / total; no reference claims -> 1.0
    context_precision_mean(relevances)     mean of 0/1 relevances; no chunks -> NaN      (seed 003)
    average_precision(relevances)          sum_k P@k * rel_k / #relevant; none relevant -> 0.0;
                                           no chunks -> NaN                             (seeds 002, 003)
    claim_f1(tp, fp, fn)                   TP / (TP + 0.5 (FP + FN)); all zero -> NaN    (seed 002)
White paper (seed 000): raw ratios in [0, 1] plus a warning; project with scale_to_likert
    wp_faithfulness(supported, total, has_context) -> Scored   no context -> 1.0, "No context to verify."
    wp_precision(related_chunks, total_chunks) -> Scored       no chunks  -> NaN (not applicable)
    wp_recall(covered, total, has_context) -> Scored           no context -> 1.0
    white_paper_overall(scores, weights=None)                  0.4 C + 0.2 F + 0.2 P + 0.2 R + 0 Rel (1-5)
Rubric and labels
    verdict(overall) / verdict_value(label)          >=4 pass, >=3 partial, else fail; 1/0.5/0 (seed 001)
    factual_accuracy(correctness, completeness, consistency)  0.5 C1 + 0.3 C2 + 0.2 C3, 0-100 (seed 003)
    accuracy_grade(score) / grade_value(grade)       A>=80 B>=60 C>=40 D>=20 else E; 1..0 (seed 003)
    answer_class_value(label)                        CORRECT 1, WRONG 0, DON'T KNOW 0  (DESIGN.md)
Semantic
    semantic_similarity_percent(cos, 2)    round(max(0, cos) * 100, 2)                  (seed 003)
    mean_cosine(similarities)              1/N sum cos; empty -> NaN                     (seed 002)
    f1_from_precision_recall(p, r)         2PR / (P + R); 0 when P + R == 0             (seed 003)
Composite
    ragas_composite(scores, weights=None)  weighted mean, F .3 CP .2 CR .2 AR .3; NaN/None excluded
                                           and the weights renormalised; all missing -> NaN (seed 003)

Conventions (the undocumented edge cases, decided here once)
------------------------------------------------------------
* Counts (supported, total, tp, ...) must be finite, >= 0 and part <= whole, else ValueError;
  non-numbers raise TypeError. A NaN count is an error, not a missing value.
* One-value transforms (scale_to_likert, semantic_similarity_percent, f1_from_precision_recall,
  factual_accuracy) map None/NaN to NaN: "not available" flows through.
* Aggregates over several metrics (ragas_composite, white_paper_overall) skip None/NaN
  and return NaN when nothing is left (or when the weights of what is left sum to 0, e.g. only the
  white paper's relevance, whose weight is 0). Missing keys count as missing scores; unknown keys
  in scores or weights raise ValueError; custom weights must name every component (no silent 0).
* Per-item lists (relevances, similarities) must not contain None/NaN: an unjudged chunk is not an
  irrelevant one, so the caller decides; ValueError otherwise.
* Labels need a number: verdict(NaN) and accuracy_grade(NaN) raise ValueError, as do values outside
  their scale. Non-integer overalls use thresholds: 3.5 -> "partial", 3.99 -> "partial".
* Range checks allow a 1e-9 slack (1e-6 for cosines, which come from float32 embeddings) and clamp.
* Context precision with no chunks is NaN (seeds 000 and 003's table: "NaN (not calculable)"),
  although seed 003's pseudo code returns 0.0: an empty retrieval is not-applicable, not a zero.
* claim_f1 with TP = FP = FN = 0 (no claims on either side) is NaN: seed 002 gives no rule.
* Context recall with no contexts needs no flag: nothing can be attributed, so it is 0.0 (seed 003),
  except that no reference statements gives 1.0 first, as in seed 003's pseudo code.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from numbers import Real
from types import MappingProxyType
from typing import NamedTuple

__all__ = [
    "Scored",
    "RAGAS_WEIGHTS",
    "WHITE_PAPER_WEIGHTS",
    "GRADE_VALUES",
    "VERDICT_VALUES",
    "ANSWER_CLASS_VALUES",
    "NO_CONTEXT_TO_VERIFY",
    "NO_CLAIMS_TO_VERIFY",
    "NO_CONTEXT_FOR_PRECISION",
    "NO_CONTEXT_FOR_RECALL",
    "NO_FACTS_TO_RECALL",
    "scale_to_likert",
    "ratio",
    "half_up",
    "faithfulness",
    "hallucination_rate",
    "context_recall",
    "completeness",
    "context_precision_mean",
    "average_precision",
    "claim_f1",
    "wp_faithfulness",
    "wp_precision",
    "wp_recall",
    "white_paper_overall",
    "verdict",
    "verdict_value",
    "factual_accuracy",
    "accuracy_grade",
    "grade_value",
    "answer_class_value",
    "semantic_similarity_percent",
    "mean_cosine",
    "f1_from_precision_recall",
    "ragas_composite",
]

NAN = float("nan")
SLACK = 1e-9
COSINE_SLACK = 1e-6


class Scored(NamedTuple):
    """A value plus the warning that explains a defaulted one (seed 000's "No context to verify.")."""

    value: float
    warning: str | None = None


# Seed 003, "RAGAS Composite Score", default weights.
RAGAS_WEIGHTS = MappingProxyType({
    "faithfulness": 0.30,
    "context_precision": 0.20,
    "context_recall": 0.20,
    "answer_relevance": 0.30,
})

# Seed 000, summary table "Weighting Suggesting".
WHITE_PAPER_WEIGHTS = MappingProxyType({
    "correctness": 0.4,
    "faithfulness": 0.2,
    "precision": 0.2,
    "recall": 0.2,
    "relevance": 0.0,
})

# DESIGN.md "Metric ids": numeric value/norm of labels.
GRADE_VALUES = MappingProxyType({"A": 1.0, "B": 0.75, "C": 0.5, "D": 0.25, "E": 0.0})
VERDICT_VALUES = MappingProxyType({"pass": 1.0, "partial": 0.5, "fail": 0.0})
ANSWER_CLASS_VALUES = MappingProxyType({"CORRECT": 1.0, "WRONG": 0.0, "DON'T KNOW": 0.0})

# Warnings of the white paper functions. The first is seed 000's wording; the others explain the
# remaining defaulted values the same way.
NO_CONTEXT_TO_VERIFY = "No context to verify."
NO_CLAIMS_TO_VERIFY = "No claims in the answer: nothing unsupported."
NO_CONTEXT_FOR_PRECISION = "No retrieval context: precision is not applicable."
NO_CONTEXT_FOR_RECALL = "No context: recall defaults to 1.0."
NO_FACTS_TO_RECALL = "No facts to recall."


# --------------------------------------------------------------------------- validation helpers

def _is_missing(x: object) -> bool:
    return x is None or (isinstance(x, Real) and math.isnan(x))


def _real(x: object, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, Real):
        raise TypeError(f"{name} must be a number, got {x!r}")
    return float(x)


def _finite(x: object, name: str) -> float:
    v = _real(x, name)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {x!r}")
    return v


def _in_range(x: object, lo: float, hi: float, name: str, slack: float = SLACK) -> float:
    """x as a float in [lo, hi]; values within `slack` outside are clamped, others raise."""
    v = _finite(x, name)
    if v < lo - slack or v > hi + slack:
        raise ValueError(f"{name} must be in [{lo:g}, {hi:g}], got {x!r}")
    return min(max(v, lo), hi)


def _count(x: object, name: str) -> float:
    v = _finite(x, name)
    if v < 0:
        raise ValueError(f"{name} must be >= 0, got {x!r}")
    return v


def _binary(x: object, name: str) -> float:
    # bools are welcome here (relevance verdicts, numpy's too), unlike in counts.
    if _is_missing(x):
        raise ValueError(f"{name} is missing ({x!r}); decide unjudged chunks before scoring")
    if not isinstance(x, (bool, Real)) and not hasattr(x, "dtype"):
        raise TypeError(f"{name} must be 0/1 or a bool, got {x!r}")
    v = float(x)
    if v not in (0.0, 1.0):
        raise ValueError(f"{name} must be 0/1 or a bool, got {x!r}")
    return v


def _label(x: object, name: str) -> str:
    if not isinstance(x, str):
        raise TypeError(f"{name} must be a string, got {x!r}")
    return x.strip()


# --------------------------------------------------------------------------- scales

def scale_to_likert(x: float | None) -> float:
    """1 + 4x: projects a [0, 1] ratio onto the 1-5 scale (seed 000); None/NaN -> NaN."""
    if _is_missing(x):
        return NAN
    return 1.0 + 4.0 * _in_range(x, 0.0, 1.0, "x")


def ratio(part: float, whole: float, *, when_empty: float = NAN) -> float:
    """part / whole for counts with 0 <= part <= whole; `when_empty` (default NaN) when whole == 0."""
    p = _count(part, "part")
    w = _count(whole, "whole")
    if p > w:
        raise ValueError(f"part ({part!r}) exceeds whole ({whole!r})")
    if w == 0:
        return when_empty
    return p / w


def half_up(x: float, digits: int) -> float:
    """x rounded half up (3.25 -> 3.3, as people round a score), not to even; +1e-9 absorbs float noise (4.1499999... -> 4.2)."""
    scale = 10 ** digits
    return math.floor(x * scale + 0.5 + 1e-9) / scale


# --------------------------------------------------------------------------- claims and chunks

def faithfulness(supported: float, total: float) -> float:
    """supported claims / total claims (seeds 002, 003); no claims -> 1.0 (seed 003: "Empty answer = no unsupported claims")."""
    return ratio(supported, total, when_empty=1.0)


def hallucination_rate(unsupported: float, total: float) -> float:
    """unsupported claims / total claims = 1 - faithfulness (seeds 000, 003); no claims -> 0.0."""
    return ratio(unsupported, total, when_empty=0.0)


def context_recall(attributed: float, total: float) -> float:
    """reference claims attributable to the contexts / reference claims (seeds 002, 003); none -> 1.0 (seed 003: "No statements to recall")."""
    return ratio(attributed, total, when_empty=1.0)


def completeness(covered_reference_claims: float, total_reference_claims: float) -> float:
    """covered reference claims / reference claims (claim matrix; counted form of seed 001's completeness); none -> 1.0 as seed 003's recall."""
    return ratio(covered_reference_claims, total_reference_claims, when_empty=1.0)


def context_precision_mean(relevances: Iterable[bool | int]) -> float:
    """1/N sum relevance_i with relevance_i in {0, 1} (seed 003, simple form); no chunks -> NaN."""
    rels = [_binary(r, f"relevances[{i}]") for i, r in enumerate(relevances)]
    if not rels:
        return NAN
    return sum(rels) / len(rels)


def average_precision(relevances: Sequence[bool | int]) -> float:
    """sum_k (Precision@k * rel_k) / number of relevant chunks (seeds 002, 003 AP@K); none relevant -> 0.0, no chunks -> NaN."""
    rels = [_binary(r, f"relevances[{i}]") for i, r in enumerate(relevances)]
    if not rels:
        return NAN
    hits = 0
    total = 0.0
    for k, rel in enumerate(rels, start=1):
        if rel:
            hits += 1
            total += hits / k  # Precision@k, counted only where rel_k = 1
    if hits == 0:
        return 0.0
    return total / hits


def claim_f1(tp: float, fp: float, fn: float) -> float:
    """TP / (TP + 0.5 (FP + FN)), answer correctness (seed 002); TP = FP = FN = 0 -> NaN (not applicable)."""
    t, p, n = _count(tp, "tp"), _count(fp, "fp"), _count(fn, "fn")
    denominator = t + 0.5 * (p + n)
    if denominator == 0:
        return NAN
    return t / denominator


# --------------------------------------------------------------------------- white paper (seed 000)

def wp_faithfulness(supported: float, total: float, has_context: bool) -> Scored:
    """supported facts / total facts in the answer (seed 000); no context -> 1.0 with "No context to verify."."""
    value = faithfulness(supported, total)  # validates the counts either way
    if not has_context:
        return Scored(1.0, NO_CONTEXT_TO_VERIFY)
    if _count(total, "total") == 0:
        return Scored(value, NO_CLAIMS_TO_VERIFY)
    return Scored(value, None)


def wp_precision(related_chunks: float, total_chunks: float) -> Scored:
    """related chunks / total retrieval chunks (seed 000); no retrieval context -> NaN (not applicable)."""
    value = ratio(related_chunks, total_chunks, when_empty=NAN)
    if math.isnan(value):
        return Scored(NAN, NO_CONTEXT_FOR_PRECISION)
    return Scored(value, None)


def wp_recall(covered: float, total: float, has_context: bool) -> Scored:
    """covered facts / total facts in the answer (seed 000); no context -> 1.0; no facts -> 1.0 (seed 003's rule)."""
    value = ratio(covered, total, when_empty=1.0)
    if not has_context:
        return Scored(1.0, NO_CONTEXT_FOR_RECALL)
    if _count(total, "total") == 0:
        return Scored(value, NO_FACTS_TO_RECALL)
    return Scored(value, None)


def _weighted_mean(
    scores: Mapping[str, float | None],
    weights: Mapping[str, float] | None,
    defaults: Mapping[str, float],
    what: str,
    score_range: tuple[float, float] | None = None,
) -> float:
    """sum w_k s_k / sum w_k over the non-missing s_k; NaN when that weight sum is 0."""
    if weights is None:
        weights = defaults
    unknown = sorted(set(scores) - set(defaults))
    if unknown:
        raise ValueError(f"{what}: unknown score keys {unknown}; expected {sorted(defaults)}")
    unknown = sorted(set(weights) - set(defaults))
    if unknown:
        raise ValueError(f"{what}: unknown weight keys {unknown}; expected {sorted(defaults)}")
    missing = sorted(set(defaults) - set(weights))
    if missing:
        raise ValueError(f"{what}: weights must name every component; missing {missing}")
    ws = {k: _count(w, f"weights[{k!r}]") for k, w in weights.items()}

    weighted_sum = 0.0
    total_weight = 0.0
    for key in defaults:  # fixed order: results do not depend on the caller's dict order
        s = scores.get(key)
        if _is_missing(s):
            continue
        if score_range is None:
            v = _finite(s, f"scores[{key!r}]")
        else:
            v = _in_range(s, *score_range, f"scores[{key!r}]")
        weighted_sum += ws[key] * v
        total_weight += ws[key]
    if total_weight == 0:
        return NAN
    return weighted_sum / total_weight


def white_paper_overall(
    scores: Mapping[str, float | None], weights: Mapping[str, float] | None = None
) -> float:
    """0.4 correctness + 0.2 faithfulness + 0.2 precision + 0.2 recall + 0 relevance on 1-5 (seed 000); NaN parts dropped, weights renormalised."""
    return _weighted_mean(scores, weights, WHITE_PAPER_WEIGHTS, "white_paper_overall", (1.0, 5.0))


# --------------------------------------------------------------------------- rubric and labels

def verdict(overall: float) -> str:
    """overall >= 4 "pass", >= 3 "partial", else "fail" (seed 001's verdict table, thresholds for non-integers)."""
    v = _in_range(overall, 1.0, 5.0, "overall")
    if v >= 4.0:
        return "pass"
    if v >= 3.0:
        return "partial"
    return "fail"


def verdict_value(label: str) -> float:
    """pass 1, partial 0.5, fail 0 (DESIGN.md, for seed 001's verdict); case-insensitive."""
    key = _label(label, "label").lower()
    if key not in VERDICT_VALUES:
        raise ValueError(f"unknown verdict {label!r}; expected one of {list(VERDICT_VALUES)}")
    return VERDICT_VALUES[key]


def factual_accuracy(correctness: float | None, completeness: float | None, consistency: float | None) -> float:
    """0.5 C_correct + 0.3 C_complete + 0.2 C_consist on 0-100 (seed 003 GEval); any None/NaN -> NaN."""
    parts = (correctness, completeness, consistency)
    if any(_is_missing(p) for p in parts):
        return NAN
    c1, c2, c3 = (
        _in_range(p, 0.0, 100.0, name)
        for p, name in zip(parts, ("correctness", "completeness", "consistency"))
    )
    return 0.5 * c1 + 0.3 * c2 + 0.2 * c3


def accuracy_grade(score: float) -> str:
    """A >= 80, B >= 60, C >= 40, D >= 20, else E, for a 0-100 factual accuracy (seed 003)."""
    v = _in_range(score, 0.0, 100.0, "score")
    if v >= 80:
        return "A"
    if v >= 60:
        return "B"
    if v >= 40:
        return "C"
    if v >= 20:
        return "D"
    return "E"


def grade_value(grade: str) -> float:
    """A..E -> 1, 0.75, 0.5, 0.25, 0 (DESIGN.md, for seed 003's grades); case-insensitive."""
    key = _label(grade, "grade").upper()
    if key not in GRADE_VALUES:
        raise ValueError(f"unknown grade {grade!r}; expected one of {list(GRADE_VALUES)}")
    return GRADE_VALUES[key]


def answer_class_value(label: str) -> float:
    """CORRECT 1, WRONG 0, DON'T KNOW 0 (DESIGN.md, for seed 003's classes), so a mean is the share correct."""
    key = " ".join(_label(label, "label").upper().replace("\u2019", "'").replace("_", " ").split())
    if key == "DONT KNOW":
        key = "DON'T KNOW"
    if key not in ANSWER_CLASS_VALUES:
        raise ValueError(f"unknown answer class {label!r}; expected one of {list(ANSWER_CLASS_VALUES)}")
    return ANSWER_CLASS_VALUES[key]


# --------------------------------------------------------------------------- semantic

def semantic_similarity_percent(cosine: float | None, digits: int = 2) -> float:
    """round(max(0, cos) * 100, digits), 2 digits in seed 003's semantic_similarity_percentage; None/NaN -> NaN."""
    if _is_missing(cosine):
        return NAN
    c = _in_range(cosine, -1.0, 1.0, "cosine", COSINE_SLACK)
    return round(max(0.0, c) * 100.0, digits)


def mean_cosine(similarities: Iterable[float]) -> float:
    """1/N sum_i cos(E_g,i, E_o), answer relevance in [-1, 1] (seed 002; x100 in seed 003); empty -> NaN."""
    values = [
        _in_range(s, -1.0, 1.0, f"similarities[{i}]", COSINE_SLACK)
        for i, s in enumerate(similarities)
    ]
    if not values:
        return NAN
    return math.fsum(values) / len(values)


def f1_from_precision_recall(p: float | None, r: float | None) -> float:
    """2PR / (P + R), BERTScore F1 (seed 003); 0 when P + R == 0, None/NaN -> NaN; any scale."""
    if _is_missing(p) or _is_missing(r):
        return NAN
    pv, rv = _count(p, "p"), _count(r, "r")
    if pv + rv == 0:
        return 0.0
    return 2.0 * pv * rv / (pv + rv)


# --------------------------------------------------------------------------- composite

def ragas_composite(
    scores: Mapping[str, float | None], weights: Mapping[str, float] | None = None
) -> float:
    """0.30 F + 0.20 CP + 0.20 CR + 0.30 AR (seed 003 ragas_score); None/NaN dropped, weights renormalised; any scale."""
    return _weighted_mean(scores, weights, RAGAS_WEIGHTS, "ragas_composite")
