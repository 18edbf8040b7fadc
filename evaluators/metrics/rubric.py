"""Rubric scores (seeds 000, 001, 003) of one sample: from an LLM judge's holistic ratings, or by a
documented mapping from the offline judge's claim metrics, and their registration.

An LLM judge rates the answer in one holistic call (`judges/prompts.HOLISTIC_SYSTEM`): its reply,
validated, is a `judgments.Holistic`, and `judged_rubric` turns it into the 13 rubric cells; only the
formulas are ours (seed 001's verdict from overall_score, seed 000's weighted overall, seed 003's
GEval weights and grades, the uncertainty check before CORRECT/WRONG). The offline judge
(a heuristic, `judges/offline.py`) has no such call, so `offline_rubric` derives the same ids from
the claim metrics it already computed and from the offline answer relevance. Every score made that
way is stored with judge='offline' and the UI labels it a heuristic; the mapping below is all there is.

Inputs (one sample)
-------------------
* claims: the `metrics/claims.claim_metrics` results (ratios in [0, 1]) plus
  `CONTRADICTED` = `answer_contradicted_by_reference(matrix)`, the share of answer claims the
  reference contradicts, and `GROUNDED` = `judges/grounding.grounded`, faithfulness blended with the
  share of the answer's words found in the chunks (w fitted on dev data; faithfulness alone without context).
* relevance: the semantic family's `answer_relevance` (0-100; offline it is the direct
  question-answer cosine x 100, so it runs lower than an LLM's relevance rating).
* dont_know: why the answer abstains (`evaluators.maths.abstention.abstains`: seed 003's uncertainty phrases
  and the other ways answers abstain), or None.
* correct: P(correct), the offline correctness scorer's probability that people judge the answer
  correct (`judges/correctness.py`: the reference's key, what it says beyond the question, stated or
  contradicted by the answer, beside similarity signals and the claim metrics; fitted on the dev parts of
  EVOUNA and SQuALITY; claim-level F1 alone agreed with people less than token F1 did, as a sentence around
  a short reference has one matching claim), bounded by rules (`judges/conflicts.py`): at most 0.2 when the
  answer plainly contradicts the reference (another number, unit, name, direction, yes/no, or a list's items
  left out), at least 0.6 when it states the reference's key and contradicts nothing.

Mapping (L(x) = formulas.scale_to_likert(x) = 1 + 4x, seed 000's projection)
------------------------------------------------------------------------------
| id                 | inputs                                   | offline formula                                   | why |
|--------------------|------------------------------------------|---------------------------------------------------|-----|
| judge_correctness  | correct                                  | round(L(P(correct)), 1)                           | seed 001 "match the ground truth factually", as people judge it (EVOUNA) |
| judge_completeness | completeness                             | round(L(completeness), 1)                         | seed 001 "cover all key points" = reference claims the answer covers |
| judge_faithfulness | GROUNDED                                 | round(L(GROUNDED), 1)                             | seed 001 "grounded in the retrieved context": supported answer claims agreed with people less than the answer's words found in the chunks; the blend beats both on dev data |
| judge_relevance    | answer_relevance                         | round(L(answer_relevance / 100), 1)               | seed 001 "directly addresses the question"; the only offline signal is the question-answer cosine |
| judge_clarity      | -                                        | not_applicable                                    | nothing offline measures writing quality; inventing a score would mislead |
| judge_overall      | the four judge_* above (unrounded)       | round(weighted mean(C, Comp, F, Rel), 1) over those that apply, weights `overall_weights` | seed 001's holistic score, as a weighted mean of the dimensions we can measure (clarity excluded), weights fitted by calibration/fit_overall.py on dev answers people judged as a whole; C and Comp need a reference, F retrieved chunks (seed 000's no-context 5.0 is a default, not a rating), so a reference-free, context-free answer is rated on relevance alone |
| verdict            | judge_overall (rounded, as shown)        | formulas.verdict: >= 4 pass, >= 3 partial, else fail; value 1 / 0.5 / 0 | seed 001's table |
| wp_correctness     | correct                                  | round(L(P(correct)), 1) (= judge_correctness)     | seed 000's correctness is the same answer-vs-reference comparison |
| wp_relevance       | answer_relevance                         | round(L(answer_relevance / 100), 1) (= judge_relevance) | seed 000's relevance is the same question-answer check |
| wp_overall         | correct, faithfulness, wp_precision, wp_recall, answer_relevance | round(formulas.white_paper_overall(L(.) of each), 2): 0.4 C + 0.2 F + 0.2 P + 0.2 R + 0 Rel | seed 000's weights; a not_applicable part (precision without context: NaN in seed 000) is left out and the weights renormalised |
| factual_accuracy   | correct, completeness, CONTRADICTED      | round(formulas.factual_accuracy(100 P(correct), 100 completeness, 100 (1 - CONTRADICTED)), 2) | seed 003's GEval criteria 0.5 / 0.3 / 0.2; consistency offline = 100 minus the share of answer claims the reference contradicts |
| accuracy_grade     | factual_accuracy (rounded)               | formulas.accuracy_grade: A >= 80, B >= 60, C >= 40, D >= 20, else E; value formulas.grade_value | seed 003 |
| answer_class       | dont_know, correct                       | DON'T KNOW when the answer abstains (checked first, as seed 003), else CORRECT when P(correct) >= CORRECT_P (0.5), else WRONG; value formulas.answer_class_value | seed 003's classes; the scorer weighs both classes equally, so 0.5 is "as likely correct as not" (judge_correctness >= 3) |

Labels (verdict, accuracy_grade, answer_class) are in `Result.label` (the scores' `label` column, and
the first words of `detail`), their number in `value`.
"round" is `formulas.half_up` (3.25 -> 3.3, 4.15 -> 4.2), the way people round a score, not Python's
half-to-even.

Missing inputs: a derived cell whose input is not ok is not ok with the input's status (an error
such as judge_error beats not_applicable, so the cell stays retryable) and a detail naming the
input; never a silent 0. The one exception is wp_overall, where a not_applicable part is left out
as seed 000's NaN precision is (an error status still propagates). answer_class is DON'T KNOW
whatever the claim metrics say, as the uncertainty check comes before any judging in seed 003.

Scores carry the run's judge (the engine sets it: every metric here needs "judge"), so an offline number
is never mistaken for an LLM's. The whole mapping runs once per batch and is shared by the 13 ids
(`rubric_batch`). Where the rest is: the holistic prompt and schema in `judges/prompts.py`; the scores
table in `store.py`; Overview (label shares), Compare and Error analysis show them.
"""
from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from evaluators.maths import formulas
from evaluators.maths.abstention import abstains
from evaluators.judges import HOLISTIC, correctness, grounding
from evaluators.records.judgments import CONTRADICTED as _CONTRADICTED_VERDICT
from evaluators.records.judgments import DONT_KNOW, ClaimMatrix, Holistic, JudgeFailure
from evaluators.metrics.claims import claim_metrics
from evaluators.metrics.registry import ABSENT, REGISTRY, metric
from evaluators.metrics.semantic import answer_relevance, bertscores, semantic_similarity
from evaluators.records import JUDGE_ERROR, NOT_APPLICABLE, OK, SKIPPED, Result, Sample, not_applicable

# Key of the extra claims input: the share of answer claims the reference contradicts.
CONTRADICTED = "answer_contradicted_by_reference"
GROUNDED = "grounded"  # the offline faithfulness rating's input in [0, 1] (judges/grounding.py)
# answer_class offline: CORRECT from this P(correct) of the correctness scorer on (judge_correctness 3.0);
# the scorer weighs correct and incorrect answers equally, so 0.5 is "as likely correct as not".
CORRECT_P = 0.5
OVERALL_WEIGHTS = correctness.WEIGHTS.with_name("overall.json")
# The seed 001 dimension behind each judge_* id.
JUDGE_DIMENSIONS = {"judge_correctness": "correctness", "judge_completeness": "completeness",
                    "judge_faithfulness": "faithfulness", "judge_relevance": "relevance",
                    "judge_clarity": "clarity", "judge_overall": "overall"}

NO_CLARITY = "the offline judge has no signal for clarity (writing quality); an LLM judge rates it"


def rubric_batch(samples: Sequence[Sample], context: Any) -> list[dict[str, Result]]:
    """Every rubric id of every sample, computed once per batch and shared by the 13 ids."""
    return context.per_batch("rubric", samples, lambda batch: _rubric_rows(batch, context))


def _rubric_rows(samples: Sequence[Sample], context: Any) -> list[dict[str, Result]]:
    matrices = context.matrices(samples)
    dont_know = [abstains(s.output.answer) for s in samples]
    if context.judge.rates_holistically:
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
                                                            claims["completeness"]),
                                   has_context=any(c.text.strip() for c in sample.output.contexts)))
    return rows


def similarities(samples: Sequence[Sample], context: Any = None) -> list[tuple[float, tuple[float, float, float]]]:
    """Per sample, semantic_similarity's norm (the cosine, floored at 0) and BERTScore's (P, R, F1) of answer and
    reference: the semantic family's own numbers (cached vectors; BERTScore shared within the batch), as the
    correctness scorer reads them; a pair the family scores 0 (an empty side) reads 0."""
    cosine, bertscore = semantic_similarity(samples), bertscores(samples, context)
    return [(REGISTRY["semantic_similarity"].norm(c.value or 0.0), (0.0, 0.0, 0.0) if isinstance(b, Result) else b)
            for c, b in zip(cosine, bertscore)]


def correct(sample: Sample, cosine: float, bertscore: tuple[float, float, float], contradicted: Result,
            completeness: Result) -> Result:
    """The correctness scorer's P(correct) of one sample (judges/correctness.py)."""
    reference = sample.golden.reference
    if not reference.strip():
        return not_applicable("no reference answer to judge correctness against")
    for needed in (contradicted, completeness):
        if needed.status != OK:
            return needed
    x = correctness.signals(sample.golden.question, sample.output.answer, reference, cosine, bertscore,
                            contradicted.value, completeness.value)
    p, why = correctness.judge(sample.golden.question, sample.output.answer, reference, x)
    return Result(p, detail=why)


def answer_contradicted_by_reference(m: ClaimMatrix | JudgeFailure) -> Result:
    """Share of answer claims whose verdict against the reference is `contradicted` (0 claims -> 0.0)."""
    if isinstance(m, JudgeFailure):
        return Result(None, m.status, m.error)
    verdicts = m.answer_vs_reference
    if not verdicts:
        return Result(0.0, detail="no claims in the answer: nothing contradicts the reference")
    if None in verdicts:
        n = sum(v is None for v in verdicts)
        return Result(None, JUDGE_ERROR, f"the judge gave no verdict for {n} of {len(verdicts)} answer claims "
                                         "against the reference")
    n = sum(v == _CONTRADICTED_VERDICT for v in verdicts)
    return Result(formulas.ratio(n, len(verdicts)), detail=f"{n}/{len(verdicts)} answer claims contradicted by the reference")


def _worst(failed: list[tuple[str, Result]], metric_id: str) -> Result:
    """The not-ok cell of `metric_id` for the failed inputs: an error status beats not_applicable."""
    rank = {NOT_APPLICABLE: 2, SKIPPED: 1}  # errors (judge_error, timeout) rank 0: retryable first
    status = min((r.status for _, r in failed), key=lambda s: rank.get(s, 0))
    why = "; ".join(f"input {name} is {r.status}" + (f" ({r.detail})" if r.detail else "") for name, r in failed)
    return Result(None, status, f"{metric_id}: {why}")


def _need(inputs: Mapping[str, Result], metric_id: str) -> Result | None:
    """None when every input is ok, else the propagated not-ok cell."""
    failed = [(name, r) for name, r in inputs.items() if r.status != OK]
    return _worst(failed, metric_id) if failed else None


def _input(results: Mapping[str, Result], name: str) -> Result:
    r = results.get(name)
    if r is None:
        return Result(None, SKIPPED, f"{name} was not computed")
    return r


def _likert(metric_id: str, name: str, r: Result) -> Result:
    """An ok ratio `r` as a 1-5 rating (seed 000's projection), rounded to 1 decimal."""
    bad = _need({name: r}, metric_id)
    if bad:
        return bad
    return Result(formulas.half_up(formulas.scale_to_likert(r.value), 1),
                  detail=f"offline mapping: 1 + 4 x {name} {r.value:.3f}" + (f"; {r.detail}" if r.detail else ""))


def _as_ratio(metric_id: str, r: Result) -> Result:
    """An ok value of `metric_id` on [0, 1] (its norm), as the mapping's other inputs are; others as they are."""
    return dataclasses.replace(r, value=REGISTRY[metric_id].norm(r.value)) if r.status == OK else r


def offline_rubric(claims: Mapping[str, Result], relevance: Result, dont_know: str | None,
                   correct: Result, has_context: bool = True) -> dict[str, Result]:
    """Every rubric id of one sample, from its claim metrics, answer relevance, abstention and the
    correctness scorer's P(correct) (`correct`, in [0, 1]; the table in the module docstring)."""
    comp = _input(claims, "completeness")
    faith = _input(claims, GROUNDED)
    contradicted = _input(claims, CONTRADICTED)
    relevance = _as_ratio("answer_relevance", relevance)

    out: dict[str, Result] = {
        "judge_correctness": _likert("judge_correctness", "P(correct)", correct),
        "judge_completeness": _likert("judge_completeness", "completeness", comp),
        "judge_faithfulness": _likert("judge_faithfulness", GROUNDED, faith),
        "judge_relevance": _likert("judge_relevance", "answer_relevance", relevance),
        "judge_clarity": not_applicable(NO_CLARITY),
        "wp_correctness": _likert("wp_correctness", "P(correct)", correct),
        "wp_relevance": _likert("wp_relevance", "answer_relevance", relevance),
    }
    out["judge_overall"] = _overall(correct, comp, faith, relevance, has_context)
    out["verdict"] = _verdict(out["judge_overall"])
    out["wp_overall"] = _wp_overall(_white_paper_parts(claims, {
        "correctness": ("P(correct)", _projected(correct)),
        "relevance": ("answer_relevance", _projected(relevance))}), "offline mapping")
    out["factual_accuracy"] = _factual_accuracy(correct, comp, contradicted)
    out["accuracy_grade"] = _grade(out["factual_accuracy"])
    out["answer_class"] = _answer_class(dont_know, _offline_class(correct))
    return {i: out[i] for i in RUBRIC_IDS}


def _white_paper_parts(claims: Mapping[str, Result], rated: dict[str, tuple[str, Result]]) -> dict[str, tuple[str, Result]]:
    """Seed 000's five parts on 1-5: correctness and relevance as `rated`, the rest projected from the claims."""
    return {"correctness": rated["correctness"],
            "faithfulness": ("faithfulness", _projected(_input(claims, "faithfulness"))),
            "precision": ("wp_precision", _projected(_input(claims, "wp_precision"))),
            "recall": ("wp_recall", _projected(_input(claims, "wp_recall"))),
            "relevance": rated["relevance"]}


@lru_cache(maxsize=1)
def overall_weights() -> dict[str, float]:
    """judge_overall's weight of each dimension (`calibration/fit_overall.py`; relevance's is above 0)."""
    return json.loads(OVERALL_WEIGHTS.read_text(encoding="utf-8"))["weights"]


def _overall(correct: Result, comp: Result, faith: Result, relevance: Result, has_context: bool) -> Result:
    """The weighted mean (`overall_weights`) of the dimensions that apply: correctness and completeness need a
    reference, faithfulness retrieved chunks (seed 000's 'No context to verify.' 5.0 is a default, not a rating);
    an error in any is the cell's."""
    inputs = {"correctness": ("P(correct)", correct), "completeness": ("completeness", comp),
              "faithfulness": (GROUNDED, faith), "relevance": ("answer_relevance", relevance)}
    if not has_context:
        del inputs["faithfulness"]
    errors = {name: r for name, r in inputs.values() if r.status not in (OK, NOT_APPLICABLE)}
    applicable = {dim: r for dim, (_, r) in inputs.items() if r.status == OK}
    if errors or not applicable:
        return _need(errors or {name: r for name, r in inputs.values()}, "judge_overall")
    dims = {dim: formulas.scale_to_likert(r.value) for dim, r in applicable.items()}
    weights = overall_weights()
    mean = math.fsum(weights[dim] * d for dim, d in dims.items()) / math.fsum(weights[dim] for dim in dims)
    parts = ", ".join(f"{dim} {d:.2f} x {weights[dim]:g}" for dim, d in dims.items())
    left_out = [dim for dim in ("correctness", "completeness", "faithfulness", "relevance") if dim not in dims]
    why = f"; not rated: {', '.join(left_out)}" if left_out else ""
    return Result(formulas.half_up(mean, 1),
                  detail=f"offline mapping: weighted mean of {parts} (clarity not rated{why})")


def _verdict(overall: Result) -> Result:
    bad = _need({"judge_overall": overall}, "verdict")
    if bad:
        return bad
    label = formulas.verdict(overall.value)
    return Result(formulas.verdict_value(label), detail=f"{label} (offline judge_overall {overall.value:.1f})",
                  label=label)


def _wp_overall(parts: Mapping[str, tuple[str, Result]], how: str) -> Result:
    """Seed 000's weighted overall of five 1-5 parts (white-paper name -> (input name, Result on 1-5)).
    A not-applicable part (precision without context: NaN in seed 000) is left out and the weights
    renormalised; an error in any part is the cell's error."""
    errors = {name: r for name, r in parts.values() if r.status not in (OK, NOT_APPLICABLE)}
    if errors:
        return _need(errors, "wp_overall")
    scores = {k: (r.value if r.status == OK else None) for k, (_, r) in parts.items()}
    value = formulas.white_paper_overall(scores)
    if math.isnan(value):
        return _need({n: r for n, r in parts.values() if r.status != OK}, "wp_overall")
    detail = f"{how}: " + ", ".join(f"{k} {v:.2f}" for k, v in scores.items() if v is not None)
    left_out = [name for name, r in parts.values() if r.status != OK]
    if left_out:
        detail += f"; left out (not applicable), weights renormalised: {', '.join(left_out)}"
    return Result(formulas.half_up(value, 2), detail=detail)


def _projected(r: Result) -> Result:
    """An ok ratio on seed 000's 1-5 projection 1 + 4x; other results as they are."""
    return Result(formulas.scale_to_likert(r.value)) if r.status == OK else r


def _factual_accuracy(correct: Result, comp: Result, contradicted: Result) -> Result:
    bad = _need({"P(correct)": correct, "completeness": comp, CONTRADICTED: contradicted}, "factual_accuracy")
    if bad:
        return bad
    # The three ratios on factual_accuracy's own 0-100 scale, as GEval's criteria are.
    c1, c2, c3 = map(REGISTRY["factual_accuracy"].range.value, (correct.value, comp.value, 1.0 - contradicted.value))
    return Result(formulas.half_up(formulas.factual_accuracy(c1, c2, c3), 2),
                  detail=f"offline mapping: 0.5 x correctness {c1:.1f} + 0.3 x completeness {c2:.1f} "
                         f"+ 0.2 x consistency {c3:.1f}")


def _grade(accuracy: Result) -> Result:
    bad = _need({"factual_accuracy": accuracy}, "accuracy_grade")
    if bad:
        return bad
    grade = formulas.accuracy_grade(accuracy.value)
    return Result(formulas.grade_value(grade), detail=f"{grade} (factual_accuracy {accuracy.value:.2f})", label=grade)


def _answer_class(dont_know: str | None, judged: Result) -> Result:
    """DON'T KNOW when the answer has an uncertainty phrase (checked first, as in seed 003), else `judged`."""
    if dont_know:
        return Result(formulas.answer_class_value(DONT_KNOW), detail=f"{DONT_KNOW} (uncertainty phrase: {dont_know!r})",
                      label=DONT_KNOW)
    return judged


def _offline_class(correct: Result) -> Result:
    bad = _need({"P(correct)": correct}, "answer_class")
    if bad:
        return bad
    label = "CORRECT" if correct.value >= CORRECT_P else "WRONG"
    return Result(formulas.answer_class_value(label),
                  detail=f"{label} (offline: P(correct) {correct.value:.3f} {'>=' if label == 'CORRECT' else '<'} {CORRECT_P})",
                  label=label)


# -- an LLM judge's holistic ratings -------------------------------------------------------------------

def judged_rubric(h: Holistic | JudgeFailure, claims: Mapping[str, Result], dont_know: str | None) -> dict[str, Result]:
    """Every rubric id of one sample from an LLM judge's holistic ratings; wp_overall also takes the
    claim metrics (seed 000's faithfulness, precision and recall are ratios projected onto 1-5). From
    an aggregate of several replies (`judgments.aggregate`), each cell also carries every reply's own value."""
    if isinstance(h, JudgeFailure):
        failed = Result(None, h.status, f"holistic call: {h.error}")
        out = {i: failed for i in RUBRIC_IDS}
        out["answer_class"] = _answer_class(dont_know, failed)  # DON'T KNOW needs no judge
        return out
    said = f"LLM judge: {h.explanation}" if h.explanation else "LLM judge"
    out = {i: Result(float(h.ratings[dim]), detail=said) for i, dim in JUDGE_DIMENSIONS.items()}
    overall = h.ratings["overall"]
    label = formulas.verdict(overall)
    note = "" if h.verdict == label else f"; the judge said {h.verdict!r}: recomputed from overall_score (seed 001)"
    out["verdict"] = Result(formulas.verdict_value(label), detail=f"{label} (overall_score {overall:g}){note}",
                            label=label)
    for metric_id, rated in (("wp_correctness", h.alignment), ("wp_relevance", h.question_relevance)):
        why = f"LLM judge: {rated.reasoning}" if rated.reasoning else "LLM judge"
        out[metric_id] = Result(float(rated.score), detail=why)
    out["wp_overall"] = _wp_overall(_white_paper_parts(claims, {
        "correctness": ("wp_correctness", out["wp_correctness"]),
        "relevance": ("wp_relevance", out["wp_relevance"])}), "LLM judge's correctness and relevance, claims projected")
    c1, c2, c3 = h.step1_correctness, h.step2_completeness, h.step3_consistency
    out["factual_accuracy"] = Result(
        formulas.half_up(formulas.factual_accuracy(c1.score, c2.score, c3.score), 2),
        detail=f"0.5 x correctness {c1.score:g} + 0.3 x completeness {c2.score:g} + 0.2 x consistency {c3.score:g}; "
               f"correctness: {c1.reasoning}; completeness: {c2.reasoning}; consistency: {c3.reasoning}")
    out["accuracy_grade"] = _grade(out["factual_accuracy"])
    out["answer_class"] = _answer_class(dont_know, Result(formulas.answer_class_value(h.classification),
                                                          detail=f"{h.classification} (LLM judge)",
                                                          label=h.classification))
    if h.repeats:
        each = [judged_rubric(r, claims, dont_know) for r in h.repeats]
        out = {i: dataclasses.replace(r, repeats=tuple(e[i].value for e in each),
                                      detail=f"{r.detail}; mean or majority of {len(each)} replies")
               for i, r in out.items()}
    return {i: out[i] for i in RUBRIC_IDS}


# -- registration --------------------------------------------------------------------------------------

def _compute(metric_id: str):
    def compute(samples: Sequence[Sample], context: Any) -> list[Result]:
        return [row[metric_id] for row in rubric_batch(samples, context)]

    return compute


_L = "1 + 4x (seed 000's projection)"
_RELEVANCE = ("answer_relevance there is the offline direct question-answer cosine x 100, which runs lower than "
              "an LLM's relevance rating")
_LLM = "LLM judge: its 1-5 rating by seed 001's rubric, in the holistic call"
_P = ("P(correct) is the offline correctness scorer (evaluators/judges/correctness.py): a logistic model over "
      "the reference's key (what it says beyond the question: the share of its words the answer states, and "
      "whether the answer names another person or thing, another number, or negates it), token F1, ROUGE-L, "
      "MiniLM cosine, BERTScore (F1, P and R), abstention, contradicted claims, completeness and lengths, fitted "
      "on the dev parts of EVOUNA (short answers judged correct or not) and SQuALITY (long answers rated 0-100); "
      "then bounded by rules (evaluators/judges/conflicts.py): at most 0.2 when the answer plainly contradicts the "
      "reference (another number, unit, name, direction or yes/no, or items of its list left out), at least 0.6 "
      "when it states what the reference says beyond the question and contradicts nothing")

# id, scale, seed, inputs read, formula. Each is rated with or without a reference and chunks (an LLM judge rates
# what it is shown; offline, a part that cannot apply is left out or says why), so the judge and the embedder are
# what it needs, the rest what it uses.
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
    ("judge_overall", "likert", "001", ("judge", "embeddings"),
     f"Seed 001: holistic quality (1-5). {_LLM} (overall_score). Offline mapping: round(weighted mean of the "
     "unrounded correctness (1 + 4 P(correct)), completeness, faithfulness (as judge_faithfulness) and relevance "
     "projections that apply, 1): correctness and completeness need a reference, faithfulness retrieved chunks; "
     "clarity is not rated offline. The weights (evaluators/judges/weights/overall.json) are fitted by "
     "calibration/fit_overall.py on dev answers people judged as a whole (EVOUNA, SQuALITY overall), chosen "
     "leave-one-set-out."),
    ("verdict", "label", "001", ("judge", "embeddings"),
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
     f"other words (evaluators/maths/abstention.py: 'I couldn't find any information', 'the document does not "
     f"provide', 'there is no single answer', 'it depends', ...). Offline mapping: CORRECT when P(correct) >= "
     f"{CORRECT_P} (judge_correctness >= 3), else WRONG; {_P}."),
]

RUBRIC_IDS = tuple(metric_id for metric_id, *_ in RUBRIC_METRICS)

# The label metrics' labels, in display order, and their values (DESIGN.md "Metric ids").
LABELS = {"verdict": formulas.VERDICT_VALUES, "accuracy_grade": formulas.GRADE_VALUES,
          "answer_class": formulas.ANSWER_CLASS_VALUES}

for _id, _scale, _seed, _reads, _formula in RUBRIC_METRICS:
    metric(_id, family="rubric", scale=_scale, higher_is_better=True, seed=_seed, formula=_formula,
           needs=tuple(i for i in _reads if i not in ABSENT), uses=tuple(i for i in _reads if i in ABSENT),
           labels=LABELS.get(_id))(_compute(_id))
