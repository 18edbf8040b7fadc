"""Rubric scores (seeds 000, 001, 003) of one sample: from an LLM judge's holistic ratings, or by a
documented mapping from the offline judge's claim metrics (pure, no I/O).

An LLM judge rates the answer in one holistic call (`judges/prompts.HOLISTIC_SYSTEM`): its reply,
validated, is a `Holistic`, and `judged_rubric` turns it into the 13 rubric cells; only the
formulas are ours (seed 001's verdict from overall_score, seed 000's weighted overall, seed 003's
GEval weights and grades, the uncertainty check before CORRECT/WRONG). The offline judge
(a heuristic, `judges/offline.py`) has no such call, so `offline_rubric` derives the same ids from
the claim metrics it already computed and from the offline answer relevance. Every score made that
way is stored with judge='offline' and the UI labels it a heuristic; the mapping below is all there is.

Inputs (one sample)
-------------------
* claims: the `evaluators.claims.claim_metrics` results (ratios in [0, 1]) plus
  `CONTRADICTED` = `answer_contradicted_by_reference(matrix)`, the share of answer claims the
  reference contradicts, and `GROUNDED` = `judges/grounding.grounded`, faithfulness blended with the
  share of the answer's words found in the chunks (w fitted on dev data; faithfulness alone without context).
* relevance: the semantic family's `answer_relevance` (0-100; offline it is the direct
  question-answer cosine x 100, so it runs lower than an LLM's relevance rating).
* dont_know: why the answer abstains (`evaluators.abstention.abstains`: seed 003's uncertainty phrases
  and the other ways answers abstain), or None.
* correct: P(correct), the offline correctness scorer's probability that people judge the answer
  correct (`judges/correctness.py`, fitted on EVOUNA's dev part; claim-level F1 alone agreed with
  people less than token F1 did, as a sentence around a short reference has one matching claim);
  beyond a short-answer reference it is multiplied by completeness, `metrics/rubric.correct`).

Mapping (L(x) = formulas.scale_to_likert(x) = 1 + 4x, seed 000's projection)
------------------------------------------------------------------------------
| id                 | inputs                                   | offline formula                                   | why |
|--------------------|------------------------------------------|---------------------------------------------------|-----|
| judge_correctness  | correct                                  | round(L(P(correct)), 1)                           | seed 001 "match the ground truth factually", as people judge it (EVOUNA) |
| judge_completeness | completeness                             | round(L(completeness), 1)                         | seed 001 "cover all key points" = reference claims the answer covers |
| judge_faithfulness | GROUNDED                                 | round(L(GROUNDED), 1)                             | seed 001 "grounded in the retrieved context": supported answer claims agreed with people less than the answer's words found in the chunks; the blend beats both on dev data |
| judge_relevance    | answer_relevance                         | round(L(answer_relevance / 100), 1)               | seed 001 "directly addresses the question"; the only offline signal is the question-answer cosine |
| judge_clarity      | -                                        | not_applicable                                    | nothing offline measures writing quality; inventing a score would mislead |
| judge_overall      | the four judge_* above (unrounded)       | round(mean(C, Comp, F, Rel), 1)                   | seed 001's holistic score, as the plain mean of the dimensions we can measure (clarity excluded) |
| verdict            | judge_overall (rounded, as shown)        | formulas.verdict: >= 4 pass, >= 3 partial, else fail; value 1 / 0.5 / 0 | seed 001's table |
| wp_correctness     | correct                                  | round(L(P(correct)), 1) (= judge_correctness)     | seed 000's correctness is the same answer-vs-reference comparison |
| wp_relevance       | answer_relevance                         | round(L(answer_relevance / 100), 1) (= judge_relevance) | seed 000's relevance is the same question-answer check |
| wp_overall         | correct, faithfulness, wp_precision, wp_recall, answer_relevance | round(formulas.white_paper_overall(L(.) of each), 2): 0.4 C + 0.2 F + 0.2 P + 0.2 R + 0 Rel | seed 000's weights; a not_applicable part (precision without context: NaN in seed 000) is left out and the weights renormalised |
| factual_accuracy   | correct, completeness, CONTRADICTED      | round(formulas.factual_accuracy(100 P(correct), 100 completeness, 100 (1 - CONTRADICTED)), 2) | seed 003's GEval criteria 0.5 / 0.3 / 0.2; consistency offline = 100 minus the share of answer claims the reference contradicts |
| accuracy_grade     | factual_accuracy (rounded)               | formulas.accuracy_grade: A >= 80, B >= 60, C >= 40, D >= 20, else E; value formulas.grade_value | seed 003 |
| answer_class       | dont_know, correct                       | DON'T KNOW when the answer abstains (checked first, as seed 003), else CORRECT when P(correct) >= CORRECT_P (0.5), else WRONG; value formulas.answer_class_value | seed 003's classes; the scorer weighs both classes equally, so 0.5 is "as likely correct as not" (judge_correctness >= 3) |

Labels (verdict, accuracy_grade, answer_class) are in `Result.label` (the scores' `label` column, and
the first words of `detail`), their number in `value`.
"round" is `half_up` (3.25 -> 3.3, 4.15 -> 4.2), the way people round a score, not Python's half-to-even.

Missing inputs: a derived cell whose input is not ok is not ok with the input's status (an error
such as judge_error beats not_applicable, so the cell stays retryable) and a detail naming the
input; never a silent 0. The one exception is wp_overall, where a not_applicable part is left out
as seed 000's NaN precision is (an error status still propagates). answer_class is DON'T KNOW
whatever the claim metrics say, as the uncertainty check comes before any judging in seed 003.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evaluators import formulas
from evaluators.claims import CONTRADICTED as _CONTRADICTED_VERDICT
from evaluators.claims import ClaimMatrix, JudgeFailure
from evaluators.schema import JUDGE_ERROR, NOT_APPLICABLE, OK, SKIPPED, Result, not_applicable

# Key of the extra claims input: the share of answer claims the reference contradicts.
CONTRADICTED = "answer_contradicted_by_reference"
GROUNDED = "grounded"  # the offline faithfulness rating's input in [0, 1] (judges/grounding.py)
# answer_class offline: CORRECT from this P(correct) of the correctness scorer on (judge_correctness 3.0);
# the scorer weighs correct and incorrect answers equally, so 0.5 is "as likely correct as not".
CORRECT_P = 0.5

RUBRIC_IDS = (
    "judge_correctness", "judge_completeness", "judge_faithfulness", "judge_relevance", "judge_clarity",
    "judge_overall", "verdict", "wp_correctness", "wp_relevance", "wp_overall", "factual_accuracy",
    "accuracy_grade", "answer_class",
)

def half_up(x: float, digits: int) -> float:
    """x rounded half up (3.25 -> 3.3, as people round a score), not Python's half-to-even; the 1e-9
    absorbs float noise such as mean(4.2, 4.0, 5.0, 3.4) = 4.1499999... -> 4.2."""
    scale = 10 ** digits
    return math.floor(x * scale + 0.5 + 1e-9) / scale


@dataclass(frozen=True)
class Holistic:
    """An LLM judge's holistic ratings of one answer (the validated reply of the holistic call)."""

    ratings: Mapping[str, float]  # seed 001, 1-5: correctness, completeness, faithfulness, relevance, clarity, overall
    verdict: str  # the judge's own pass/partial/fail; the stored verdict is recomputed from ratings["overall"]
    explanation: str
    alignment: tuple[float, str]  # seed 000 correctness, 1-5, with the judge's reasoning
    question_relevance: tuple[float, str]  # seed 000 relevance, 1-5, with reasoning
    geval: Mapping[str, tuple[float, str]]  # seed 003: correctness, completeness, consistency -> (0-100, reasoning)
    classification: str  # CORRECT or WRONG (seed 003; DON'T KNOW is decided before, by the uncertainty check)
    repeats: tuple[Holistic, ...] = ()  # when the judge was asked several times: every reply (see `aggregate`)


def aggregate(replies: Sequence[Holistic]) -> Holistic:
    """Several holistic replies to one answer as one: every score the mean of the replies', the
    verdict and the classification the majority's (a tie goes to the earlier reply's), the first
    reply's texts; `repeats` keeps every reply, so the spread can be shown. One reply is itself."""
    if len(replies) == 1:
        return replies[0]
    first = replies[0]

    def mean(values) -> float:
        return half_up(math.fsum(values) / len(replies), 2)

    def majority(labels: list[str]) -> str:
        return max(labels, key=lambda label: (labels.count(label), -labels.index(label)))

    return Holistic(
        ratings={k: mean(r.ratings[k] for r in replies) for k in first.ratings},
        verdict=majority([r.verdict for r in replies]), explanation=first.explanation,
        alignment=(mean(r.alignment[0] for r in replies), first.alignment[1]),
        question_relevance=(mean(r.question_relevance[0] for r in replies), first.question_relevance[1]),
        geval={k: (mean(r.geval[k][0] for r in replies), first.geval[k][1]) for k in first.geval},
        classification=majority([r.classification for r in replies]), repeats=tuple(replies))


# The seed 001 dimension behind each judge_* id.
JUDGE_DIMENSIONS = {"judge_correctness": "correctness", "judge_completeness": "completeness",
                    "judge_faithfulness": "faithfulness", "judge_relevance": "relevance",
                    "judge_clarity": "clarity", "judge_overall": "overall"}

NO_CLARITY = "the offline judge has no signal for clarity (writing quality); an LLM judge rates it"


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


def _likert(metric_id: str, name: str, r: Result, scale: float = 1.0) -> Result:
    bad = _need({name: r}, metric_id)
    if bad:
        return bad
    raw = r.value / scale
    return Result(half_up(formulas.scale_to_likert(raw), 1),
                  detail=f"offline mapping: 1 + 4 x {name} {raw:.3f}" + (f"; {r.detail}" if r.detail else ""))


def offline_rubric(claims: Mapping[str, Result], relevance: Result, dont_know: str | None,
                   correct: Result) -> dict[str, Result]:
    """Every rubric id of one sample, from its claim metrics, answer relevance, abstention and the
    correctness scorer's P(correct) (`correct`, in [0, 1]; the table in the module docstring)."""
    comp = _input(claims, "completeness")
    faith = _input(claims, GROUNDED)
    contradicted = _input(claims, CONTRADICTED)

    out: dict[str, Result] = {
        "judge_correctness": _likert("judge_correctness", "P(correct)", correct),
        "judge_completeness": _likert("judge_completeness", "completeness", comp),
        "judge_faithfulness": _likert("judge_faithfulness", GROUNDED, faith),
        "judge_relevance": _likert("judge_relevance", "answer_relevance", relevance, 100.0),
        "judge_clarity": not_applicable(NO_CLARITY),
        "wp_correctness": _likert("wp_correctness", "P(correct)", correct),
        "wp_relevance": _likert("wp_relevance", "answer_relevance", relevance, 100.0),
    }
    out["judge_overall"] = _overall(correct, comp, faith, relevance)
    out["verdict"] = _verdict(out["judge_overall"])
    out["wp_overall"] = _wp_overall(_white_paper_parts(claims, {
        "correctness": ("P(correct)", _projected(correct)),
        "relevance": ("answer_relevance", _projected(relevance, 100.0))}), "offline mapping")
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


def _overall(correct: Result, comp: Result, faith: Result, relevance: Result) -> Result:
    inputs = {"P(correct)": correct, "completeness": comp, "faithfulness": faith, "answer_relevance": relevance}
    bad = _need(inputs, "judge_overall")
    if bad:
        return bad
    dims = [formulas.scale_to_likert(v) for v in (correct.value, comp.value, faith.value, relevance.value / 100.0)]
    mean = math.fsum(dims) / len(dims)
    parts = ", ".join(f"{n} {d:.2f}" for n, d in zip(("correctness", "completeness", "faithfulness", "relevance"), dims))
    return Result(half_up(mean, 1), detail=f"offline mapping: mean of {parts} (clarity not rated)")


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
    return Result(half_up(value, 2), detail=detail)


def _projected(r: Result, scale: float = 1.0) -> Result:
    """An ok ratio (or percentage, scale 100) on seed 000's 1-5 projection 1 + 4x; other results as they are."""
    return Result(formulas.scale_to_likert(r.value / scale)) if r.status == OK else r


def _factual_accuracy(correct: Result, comp: Result, contradicted: Result) -> Result:
    bad = _need({"P(correct)": correct, "completeness": comp, CONTRADICTED: contradicted}, "factual_accuracy")
    if bad:
        return bad
    c1, c2, c3 = 100.0 * correct.value, 100.0 * comp.value, 100.0 * (1.0 - contradicted.value)
    return Result(half_up(formulas.factual_accuracy(c1, c2, c3), 2),
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
        return Result(formulas.answer_class_value("DON'T KNOW"), detail=f"DON'T KNOW (uncertainty phrase: {dont_know!r})",
                      label="DON'T KNOW")
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
    an aggregate of several replies (`aggregate`), each cell also carries every reply's own value."""
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
    for metric_id, (score, reasoning) in (("wp_correctness", h.alignment), ("wp_relevance", h.question_relevance)):
        out[metric_id] = Result(float(score), detail=f"LLM judge: {reasoning}" if reasoning else "LLM judge")
    out["wp_overall"] = _wp_overall(_white_paper_parts(claims, {
        "correctness": ("wp_correctness", out["wp_correctness"]),
        "relevance": ("wp_relevance", out["wp_relevance"])}), "LLM judge's correctness and relevance, claims projected")
    (c1, why1), (c2, why2), (c3, why3) = (h.geval[k] for k in ("correctness", "completeness", "consistency"))
    out["factual_accuracy"] = Result(
        half_up(formulas.factual_accuracy(c1, c2, c3), 2),
        detail=f"0.5 x correctness {c1:g} + 0.3 x completeness {c2:g} + 0.2 x consistency {c3:g}; "
               f"correctness: {why1}; completeness: {why2}; consistency: {why3}")
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
