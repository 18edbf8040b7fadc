"""Lexical metrics: deterministic string checks of an answer against its reference (seeds 004, 003).

Every metric here is pure text processing, no judge and no model: the text helpers are in
`evaluators.maths.text` (with the decisions on numbers, keywords, citations and don't know), the
per-question checks in `evaluators.maths.checks`.

Decisions on what the seeds leave open (the `formula` strings are the short form, shown to users):

* exact_match uses seed 004's normalisation only (lowercase, strip, collapse whitespace):
  punctuation and apostrophe style still count.
* An empty reference makes every metric that needs one not applicable, and a question without checks
  checks_pass_rate: the engine marks those cells (`Metric.inapplicable`), so the functions here see
  only samples that have what they need.
* checks_pass_rate: a malformed check makes the sample `skipped` with the reason (the loader should
  have refused it: `validate_check`).

Where the rest is: no prompt (no judge); each score is a row of `scores` (`store.py`), shown on Overview,
Compare, Correlations and Error analysis (`queries/overview.py`, `queries/compare.py`, ...).
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from evaluators.maths.checks import CheckTimeout, check_name, run_check, validate_check
from evaluators.metrics.registry import metric
from evaluators.records import OK, SKIPPED, Result, Sample, not_applicable
from evaluators.maths.text import (
    EMPTY_ANSWER,
    citation_indicators,
    is_dont_know,
    keyword_coverage_counts,
    normalize,
    number_values,
    rouge_l_f1,
    tokens,
)

CITATIONS_FOR_FULL_SCORE = 3.0
_JSON = json.JSONEncoder(ensure_ascii=False)  # = json.dumps(x, ensure_ascii=False), without a new encoder per call
MAX_LISTED = 10  # keywords/numbers listed in a `detail`

_ONE = Result(1.0)
_ZERO = Result(0.0)
_NO_NUMBERS = not_applicable("no numbers in the reference")
_NO_KEYWORDS = not_applicable("no keywords in the reference")
_NO_TOKENS = not_applicable("the reference has no [a-z0-9] tokens")


def _word_count(text: str) -> int:
    """Whitespace-separated words (seed 004's word count), read off the cached normal form."""
    text = normalize(text)
    return text.count(" ") + 1 if text else 0


def _listed(items: Sequence[str]) -> str:
    head = ", ".join(items[:MAX_LISTED])
    return head + (f" (+{len(items) - MAX_LISTED} more)" if len(items) > MAX_LISTED else "")


@lru_cache(maxsize=4096)  # reference numbers repeat across methods
def _fmt(x: float) -> str:
    return f"{x:.15g}"


@metric(
    "exact_match", family="lexical", scale="binary", higher_is_better=True, seed="004",
    needs=("reference",),
    formula="1 if normalize(answer) == normalize(reference) else 0; normalize = lowercase, "
            "strip, collapse whitespace runs (seed 004, 'Exact Match').",
)
def exact_match(samples: Sequence[Sample], context: Any = None) -> list[Result]:
    return [_ONE if normalize(s.output.answer) == normalize(s.golden.reference) else _ZERO for s in samples]


@metric(
    "keyword_coverage", family="lexical", scale="ratio", higher_is_better=True, seed="004",
    needs=("reference",),
    formula="(matched keywords) / (total expected keywords). Keywords of the reference: capitalised "
            "phrases ('Territory 118', 'Rule C-1'), numbers and percentages ('0.305%', '$604'; matched "
            "by value) and important words (4+ letters, not stop words); case-insensitive, on word "
            "boundaries (seed 004).",
)
def keyword_coverage(samples: Sequence[Sample], context: Any = None) -> list[Result]:
    out = []
    for s in samples:
        matched, total, missing = keyword_coverage_counts(s.golden.reference, s.output.answer)
        if not total:
            out.append(_NO_KEYWORDS)
            continue
        detail = f"{matched}/{total} reference keywords found"
        if missing:
            detail += f"; missing: {_listed(missing)}"
        out.append(Result(matched / total, OK, detail))  # positional: a quarter faster than detail=
    return out


@metric(
    "number_match", family="lexical", scale="ratio", higher_is_better=True, seed="004",
    needs=("reference",),
    formula="(matched numbers) / (total expected numbers), over the sets of numeric values of "
            "reference and answer ($, %, thousands separators stripped; '-' is a sign only before "
            "a number, not in 'C-1') (seed 004, 'Number Match').",
)
def number_match(samples: Sequence[Sample], context: Any = None) -> list[Result]:
    out = []
    for s in samples:
        expected = number_values(s.golden.reference)
        if not expected:
            out.append(_NO_NUMBERS)
            continue
        found = number_values(s.output.answer)
        missing = [v for v in expected if v not in found]
        matched = len(expected) - len(missing)
        detail = f"{matched}/{len(expected)} reference numbers found"
        if missing:
            detail += f"; missing: {_listed([_fmt(v) for v in missing])}"
        out.append(Result(matched / len(expected), OK, detail))
    return out


@metric(
    "answer_completeness", family="lexical", scale="ratio", higher_is_better=True, seed="004",
    needs=("reference",),
    formula="(length_score + keyword_score) / 2 with length_score = min(answer_words / "
            "reference_words, 1.0) and keyword_score = keyword_coverage; the length score alone "
            "when the reference has no keywords (seed 004, 'Answer Completeness').",
)
def answer_completeness(samples: Sequence[Sample], context: Any = None) -> list[Result]:
    out = []
    for s in samples:
        ref_words = _word_count(s.golden.reference)  # > 0: the engine scores only samples with a reference
        answer_words = _word_count(s.output.answer)
        length_score = min(answer_words / ref_words, 1.0)
        matched, total, _ = keyword_coverage_counts(s.golden.reference, s.output.answer)
        length = f"length {answer_words}/{ref_words} words -> {length_score:.3f}"
        if total:
            value = (length_score + matched / total) / 2
            detail = f"{length}; keywords {matched}/{total} -> {matched / total:.3f}"
        else:
            value = length_score
            detail = f"{length}; no keywords in the reference, so the length score alone"
        out.append(Result(value, OK, detail))
    return out


@metric(
    "citation_quality", family="lexical", scale="ratio", higher_is_better=True, seed="004",
    formula="min(found_indicators / 3.0, 1.0), counting the distinct source indicators 'source:', "
            "'table:', 'page', 'document', 'pdf', 'according to', 'based on', 'from' in the answer "
            "(case-insensitive, on word boundaries) (seed 004, 'Source Citation Quality').",
)
def citation_quality(samples: Sequence[Sample], context: Any = None) -> list[Result]:
    return [_citation_result(citation_indicators(s.output.answer)) for s in samples]


@lru_cache(maxsize=512)  # one Result per set of indicators found (at most 2^8), shared
def _citation_result(found: tuple[str, ...]) -> Result:
    if not found:
        return Result(0.0, detail="no source indicators")
    return Result(min(len(found) / CITATIONS_FOR_FULL_SCORE, 1.0), detail="found: " + ", ".join(found))


@metric(
    "checks_pass_rate", family="lexical", scale="ratio", higher_is_better=True, seed="004",
    needs=("checks",),
    formula="passed checks / total checks of the question; check types contains, not_contains, "
            "regex, number, list_items (seed 004's EF_1/EF_2/EF_3 fact checks, generalised).",
)
def checks_pass_rate(samples: Sequence[Sample], context: Any = None) -> list[Result]:
    out = []
    for s in samples:
        checks = s.golden.checks
        error, fragments = _prepared_checks(checks)
        if error:
            out.append(Result(None, SKIPPED, error))
            continue
        answer = s.output.answer
        try:
            flags = [run_check(c, answer) for c in checks]
        except CheckTimeout as exc:  # a pattern that backtracks without end on this answer
            out.append(Result(None, SKIPPED, str(exc)))
            continue
        detail = "[" + ", ".join([f + ("true}" if ok else "false}") for f, ok in zip(fragments, flags)]) + "]"
        out.append(Result(sum(flags) / len(flags), OK, detail))
    return out


# Every method's sample of a question shares its `checks` tuple, and the engine scores a question's
# methods in different batches: validate and pre-render each tuple once, keyed by identity. An entry
# holds its tuple, so the id cannot be reused by another object while the entry lives. (Checks are
# not edited in place: a golden set is reloaded, into new tuples.)
_PREPARED: dict[int, tuple[tuple, tuple[str | None, tuple[str, ...]]]] = {}
_PREPARED_MAX = 1 << 16  # questions; emptied when full


def _prepared_checks(checks: tuple) -> tuple[str | None, tuple[str, ...]]:
    entry = _PREPARED.get(id(checks))
    if entry is None or entry[0] is not checks:
        if len(_PREPARED) >= _PREPARED_MAX:
            _PREPARED.clear()
        entry = _PREPARED[id(checks)] = (checks, _prepare_checks(checks))
    return entry[1]


def _prepare_checks(checks: Sequence[Mapping]) -> tuple[str | None, tuple[str, ...]]:
    """(error, JSON fragments '{"name": ..., "type": ..., "passed": ' of each check)."""
    fragments = []
    for i, check in enumerate(checks, 1):
        problem = validate_check(check)
        if problem:
            return f"malformed checks: check {i}: {problem}", ()
        name = _JSON.encode(check_name(check))
        fragments.append(f'{{"name": {name}, "type": "{check["type"]}", "passed": ')
    return None, tuple(fragments)  # plain tuples: kept for the run, they leave the collector's books


@metric(
    "rouge_l", family="lexical", scale="ratio", higher_is_better=True, seed="003",
    needs=("reference",),
    formula="ROUGE-L F1 as GraphRAG-Bench reports it: LCS-based F1 over lowercase word tokens "
            "[a-z0-9]+, no stemming; P = LCS / answer_tokens, R = LCS / reference_tokens, "
            "F1 = 2PR / (P + R), 0 when nothing is in common.",
)
def rouge_l(samples: Sequence[Sample], context: Any = None) -> list[Result]:
    out = []
    for s in samples:
        if not tokens(s.golden.reference):
            out.append(_NO_TOKENS)
            continue
        out.append(Result(rouge_l_f1(s.output.answer, s.golden.reference)))
    return out


@metric(
    "dont_know", family="lexical", scale="binary", higher_is_better=None, seed="003",
    formula="1 if the answer contains an uncertainty phrase (\"i don't know\", \"i do not know\", "
            "\"unknown\", \"not sure\", \"cannot determine\", \"no information\", \"insufficient "
            "data\", \"unable to answer\", \"cannot answer\", \"don't have enough information\", "
            "\"not available\", \"no data\") or is a very short (< 10 chars) non-answer containing "
            "'unknown', 'n/a', 'none' or 'null', else 0; an empty answer counts as don't know "
            "(seed 003, 'Don't Know Answers Count'; the mean is the share of don't-know answers).",
)
def dont_know(samples: Sequence[Sample], context: Any = None) -> list[Result]:
    out = []
    for s in samples:
        phrase = is_dont_know(s.output.answer)
        out.append(_ZERO if phrase is None else Result(1.0, detail=f"matched {phrase!r}" if phrase != EMPTY_ANSWER else EMPTY_ANSWER))
    return out
