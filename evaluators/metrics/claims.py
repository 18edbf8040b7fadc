"""Claim-level metrics: one claim matrix per sample (`evaluators.records.judgments.ClaimMatrix`, from the run's
judge), the claims family's metrics from it (the seeds' nine and RAGChecker's diagnostics), and the rows of the
`claims` and `chunk_verdicts` tables it is stored as.

Every metric is arithmetic over that one matrix, so they are consistent with each other and cost no
extra calls; the ratios are `formulas`' named functions (RAGChecker's: `maths.ragchecker`). The matrices of a
batch are built once by the run context and shared by all of them. A verdict the judge did not give (None) makes
the metrics that need it judge_error (or the matrix's `missing_status`), never a lower score.

Where the rest is: the LLM judge's extraction and verification prompts in `judges/prompts.py`, the offline
judge in `judges/offline.py`; the tables in `store.py`; the Claims screen (`queries/claims.py`,
`pages/claims.py`) and, with every metric, Overview and Compare.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from evaluators.maths import formulas, ragchecker
from evaluators.maths.abstention import abstains
from evaluators.records.judgments import (CONTRADICTED, NOT_FOUND, SUPPORTED, UNKNOWN, VERDICTS, ClaimMatrix, JudgeFailure,
                                  Verdict, combine)
from evaluators.metrics.registry import metric
from evaluators.records import JUDGE_ERROR, Result, Sample, not_applicable

# RAGChecker's diagnostics (Ru et al. 2024, section 3): each reads the reference's claims and the chunks both.
DIAGNOSTICS = ("context_utilization", "noise_sensitivity_relevant", "noise_sensitivity_irrelevant",
               "ragchecker_hallucination", "self_knowledge")

# The claim metrics that have no value without retrieved chunks, and what their cells then say. The engine
# marks such a cell (`Metric.scored`); `claim_metrics` says the same, as the rubric family reads it too.
NO_CONTEXT = {
    "context_precision": "no retrieved context",
    "context_precision_ap": "no retrieved context",
    "wp_precision": "no retrieved context: precision is NaN (seed 000)",
    "hallucination_rate": "no retrieved context to check the answer against",
    **dict.fromkeys(DIAGNOSTICS, "no retrieved context: RAGChecker's diagnostics weigh the answer against its chunks"),
}

# The claim metrics that score the answer's own claims. An answer that abstains (`abstains`: the DON'T KNOW check
# answer_class makes first, seed 003) has no claim of its own to check, and the seeds are silent on what such an
# answer scores: seed 003's "no claims -> 1.0" is written for an answer that answers ("Empty answer = no
# unsupported claims"), and would make a refusal fully faithful, so that "I don't know" raised faithfulness. These
# cells are not_applicable with the reason; the abstention rate is the `dont_know` share (Overview shows it beside).
# The metrics that compare the answer with the reference (answer_correctness_f1, completeness: seed 002's counts
# give a refusal 0 when the reference has claims), or count the chunks it used (wp_precision: 0 used), keep their
# seed's formula; the context metrics do not read the answer.
# RAGChecker's shares of answer claims (noise sensitivity, hallucination, self-knowledge) are such metrics too: its 0
# for an answer with no claims would make a refusal free of noise and hallucination.
ABSTAINS = "the answer abstains"
ANSWER_CLAIMS_ONLY = ("faithfulness", "hallucination_rate", "wp_recall", "noise_sensitivity_relevant",
                      "noise_sensitivity_irrelevant", "ragchecker_hallucination", "self_knowledge")
_ON_ABSTENTION = (" An answer that abstains (answer_class DON'T KNOW, checked first as seed 003 checks its "
                  "uncertainty phrases before judging; an empty answer too) -> not applicable: no claim of its own "
                  "to check, and the seeds do not score it.")

# What every RAGChecker diagnostic shares (Ru et al. 2024, section 3; amazon-science/RAGChecker ragchecker/metrics.py).
_RAGCHECKER = (" Supported means the judge said supported: contradicted, not found and unknown are not (RAGChecker "
               "counts Entailment only). Needs the reference and retrieved chunks (not applicable without); a "
               "missing verdict in any cell it reads -> judge_error.")

# id, higher_is_better, seed, formula
CLAIM_METRICS = [
    ("faithfulness", True, "000, 002, 003",
     "supported answer claims / answer claims, a claim being supported when any retrieved chunk "
     "supports it; no claims -> 1.0 (seed 003); no context -> 1.0 with 'No context to verify.' (seed 000). It is "
     "RAGChecker's faithfulness (answer claims some chunk entails), except that RAGChecker gives 0 where there are "
     "no claims or no chunks." + _ON_ABSTENTION),
    ("context_precision", True, "003",
     "relevant chunks / retrieved chunks, relevance judged per chunk against the question (seed 003); "
     "no context -> not applicable."),
    ("context_precision_ap", True, "002",
     "rank-aware: sum_k (precision@k x rel_k) / relevant chunks, e.g. relevances [0, 1, 0] -> 0.5 (seed 002)."),
    ("context_recall", True, "002, 003",
     "reference claims attributable to the retrieved chunks / reference claims; no reference claims -> 1.0, "
     "no context -> 0.0 (seed 003). It is RAGChecker's claim recall (its retriever metric: the same count, "
     "registered once), except that RAGChecker gives 0 where there are no reference claims."),
    ("wp_precision", True, "000",
     "chunks used by the answer (supporting at least one answer claim) / retrieved chunks; no context -> "
     "not applicable (NaN in seed 000). x 1-5 by 1 + 4x."),
    ("wp_recall", True, "000",
     "answer facts covered by the retrieved chunks / answer facts; no context -> 1.0 (seed 000). x 1-5 by 1 + 4x."
     + _ON_ABSTENTION),
    ("answer_correctness_f1", True, "002",
     "TP / (TP + 0.5 (FP + FN)): TP answer claims the reference supports, FP the other answer claims, FN "
     "reference claims the answer does not cover (seed 002)."),
    ("completeness", True, "002",
     "reference claims covered by the answer / reference claims; no reference claims -> 1.0."),
    ("hallucination_rate", False, "000, 003",
     "answer claims the retrieved chunks contradict or do not contain / answer claims ('hallucinated facts', "
     "seed 000); a claim the judge could not decide counts neither way." + _ON_ABSTENTION),
    # RAGChecker's diagnostics (evaluators/maths/ragchecker.py). Its claim recall is context_recall (the same count:
    # reference claims some chunk supports / reference claims) and its faithfulness is faithfulness, so neither is
    # registered twice; its hallucination reads the reference too, so it is not hallucination_rate.
    ("context_utilization", True, "RAGChecker",
     "reference claims both in the retrieved chunks and in the answer / reference claims in the retrieved chunks "
     "(RAGChecker's context utilization: how much of the evidence it was given the answer used). No reference claim "
     "in the chunks -> not applicable (RAGChecker: 0): nothing there to use." + _RAGCHECKER),
    ("noise_sensitivity_relevant", False, "RAGChecker",
     "answer claims the reference does not support but a relevant chunk does / answer claims (RAGChecker: the "
     "answer repeats noise that sits beside the evidence). Relevant: the chunk supports at least one reference "
     "claim (RAGChecker's sense, not context_precision's relevance to the question); no answer claims -> 0.0."
     + _RAGCHECKER + _ON_ABSTENTION),
    ("noise_sensitivity_irrelevant", False, "RAGChecker",
     "answer claims the reference does not support, supported only by irrelevant chunks (none supporting a "
     "reference claim) / answer claims; a claim a relevant chunk supports counts in noise_sensitivity_relevant "
     "only, as in RAGChecker; no answer claims -> 0.0." + _RAGCHECKER + _ON_ABSTENTION),
    ("ragchecker_hallucination", False, "RAGChecker",
     "answer claims neither the retrieved chunks nor the reference support / answer claims (RAGChecker's "
     "hallucination: made up, and wrong). Unlike hallucination_rate it reads the reference: a claim outside the "
     "chunks that the reference supports is self_knowledge instead; no answer claims -> 0.0." + _RAGCHECKER
     + _ON_ABSTENTION),
    ("self_knowledge", None, "RAGChecker",
     "answer claims the reference supports but no retrieved chunk does / answer claims (RAGChecker: correct from "
     "the model's own knowledge). No better direction: RAGChecker leaves it to whether the answers should rest "
     "on the chunks only; no answer claims -> 0.0." + _RAGCHECKER + _ON_ABSTENTION),
]


def answer_claim_verdicts(m: ClaimMatrix) -> list[Verdict]:
    return [combine(row) for row in m.answer_vs_chunks]


def reference_claim_attributions(m: ClaimMatrix) -> list[Verdict]:
    return [combine(row) for row in m.reference_vs_chunks]


def chunks_used_by_answer(m: ClaimMatrix) -> list[bool]:
    """A chunk is used when it supports at least one answer claim (seed 000's 'used chunks')."""
    return [any(row[j] == SUPPORTED for row in m.answer_vs_chunks) for j in range(len(m.chunk_ids))]


def claim_metrics(m: ClaimMatrix | JudgeFailure, answer: str | None = None) -> dict[str, Result]:
    """Every claims-family metric of one sample, by metric id (DESIGN.md "Metric ids"). Given the `answer`,
    one that abstains leaves `ANSWER_CLAIMS_ONLY` not applicable, whatever the judge extracted or whether it failed."""
    why = abstains(answer) if answer is not None else None
    out = _claim_metrics(m)
    if why:
        out.update({k: not_applicable(f"{ABSTAINS} ({why}): no claim to check") for k in ANSWER_CLAIMS_ONLY})
    return out


def _claim_metrics(m: ClaimMatrix | JudgeFailure) -> dict[str, Result]:
    if isinstance(m, JudgeFailure):
        return {metric_id: Result(None, m.status, m.error) for metric_id, *_ in CLAIM_METRICS}
    answer = answer_claim_verdicts(m)
    attributed = reference_claim_attributions(m)
    has_context = bool(m.chunk_ids)
    out = {
        "faithfulness": _faithfulness(answer, has_context),
        "hallucination_rate": _hallucination_rate(answer, has_context),
        "context_recall": _context_recall(attributed, has_context),
        "wp_recall": _wp_recall(answer, has_context),
        "wp_precision": _wp_precision(m),
        "completeness": _share(m.reference_vs_answer, formulas.completeness, "reference claims",
                               "no reference claims", "{hits}/{total} reference claims covered by the answer"),
        "answer_correctness_f1": _answer_correctness(m),
    }
    out.update(_context_precision(m))
    out.update(_diagnostics(m))
    if m.missing_status != JUDGE_ERROR or m.missing_reason:  # say why the verdicts are missing
        out = {k: _missing_because(r, m) if r.status == JUDGE_ERROR else r for k, r in out.items()}
    return out


def _missing(what: str, verdicts: Sequence[Verdict]) -> Result:
    n = sum(v is None for v in verdicts)
    return Result(None, JUDGE_ERROR, f"the judge gave no verdict for {n} of {len(verdicts)} {what}")


def _missing_because(r: Result, m: ClaimMatrix) -> Result:
    return Result(None, m.missing_status, f"{r.detail}: {m.missing_reason}" if m.missing_reason else r.detail)


def _share(verdicts: Sequence[Verdict], formula: Callable[[int, int], float], what: str, empty: str, detail: str,
           counted: tuple[str, ...] = (SUPPORTED,)) -> Result:
    """`formula(hits, total)` over the verdicts, a hit being one of `counted`; `empty` is the detail
    when there are none (the formula gives the value), `detail` is formatted with hits and total."""
    if None in verdicts:
        return _missing(what, verdicts)
    hits = sum(v in counted for v in verdicts)
    return Result(formula(hits, len(verdicts)),
                  detail=detail.format(hits=hits, total=len(verdicts)) if verdicts else empty)


def _faithfulness(answer: list[Verdict], has_context: bool) -> Result:
    if not has_context:  # seed 000: 1.0 with its warning, whatever the counts
        value, warning = formulas.wp_faithfulness(0, len(answer), has_context=False)
        return Result(value, detail=warning)
    return _share(answer, formulas.faithfulness, "answer claims", "no claims in the answer (seed 003)",
                  "{hits}/{total} answer claims supported by the retrieved chunks")


def _hallucination_rate(answer: list[Verdict], has_context: bool) -> Result:
    """Claims the chunks contradict or do not contain; `unknown` is neither supported nor this."""
    if not has_context:
        return not_applicable(NO_CONTEXT["hallucination_rate"])
    return _share(answer, formulas.hallucination_rate, "answer claims", "no claims in the answer",
                  "{hits}/{total} answer claims contradicted or not found", counted=(CONTRADICTED, NOT_FOUND))


def _context_recall(attributed: list[Verdict], has_context: bool) -> Result:
    # Without context no claim is attributable (combine of no chunk is not_found): 0 of n, seed 003's 0.0.
    detail = "{hits}/{total} reference claims attributable to the retrieved chunks" if has_context \
        else "no retrieved context (seed 003)"
    return _share(attributed, formulas.context_recall, "reference claims", "no reference claims to recall (seed 003)",
                  detail)


def _wp_recall(answer: list[Verdict], has_context: bool) -> Result:
    """Seed 000's recall: the answer's facts covered by the retrieved chunks; no context -> 1.0."""
    if not has_context:
        return Result(formulas.wp_recall(0, len(answer), has_context=False).value,
                      detail="no retrieved context: 1.0 (seed 000)")
    return _share(answer, lambda hits, total: formulas.wp_recall(hits, total, has_context=True).value, "answer claims",
                  "no facts in the answer", "{hits}/{total} answer facts covered by the retrieved chunks")


def _wp_precision(m: ClaimMatrix) -> Result:
    """Seed 000's precision: chunks the answer used / retrieved chunks; no context -> not applicable."""
    if not m.chunk_ids:
        return not_applicable(NO_CONTEXT["wp_precision"])
    if any(None in row for row in m.answer_vs_chunks):
        return _missing("answer claim x chunk pairs", [v for row in m.answer_vs_chunks for v in row])
    used = chunks_used_by_answer(m)
    ids = [c for c, u in zip(m.chunk_ids, used) if u]
    return Result(formulas.wp_precision(sum(used), len(used)).value,
                  detail=f"{sum(used)}/{len(used)} chunks used by the answer" + (f": {', '.join(ids)}" if ids else ""))


def _context_precision(m: ClaimMatrix) -> dict[str, Result]:
    """Mean chunk relevance (seed 003) and rank-aware AP@k (seed 002), from the chunk verdicts."""
    if not m.chunk_ids:
        return {k: not_applicable(NO_CONTEXT[k]) for k in ("context_precision", "context_precision_ap")}
    relevant = [c.relevant for c in m.chunk_relevance]
    if None in relevant:
        error = _missing("chunks' relevance", relevant)
        return {"context_precision": error, "context_precision_ap": error}
    ranks = ", ".join(str(i + 1) for i, r in enumerate(relevant) if r) or "none"
    detail = f"{sum(relevant)}/{len(relevant)} chunks relevant (ranks {ranks})"
    return {
        "context_precision": Result(formulas.context_precision_mean(relevant), detail=detail),
        "context_precision_ap": Result(formulas.average_precision(relevant), detail=detail),
    }


# What each of RAGChecker's diagnostics reads of the matrix (its METRIC_REQUIREMENTS): a missing verdict there, and
# only there, makes it judge_error.
_DIAGNOSTIC_READS = {
    "context_utilization": ("reference_vs_chunks", "reference_vs_answer"),
    "noise_sensitivity_relevant": ("answer_vs_chunks", "reference_vs_chunks", "answer_vs_reference"),
    "noise_sensitivity_irrelevant": ("answer_vs_chunks", "reference_vs_chunks", "answer_vs_reference"),
    "ragchecker_hallucination": ("answer_vs_chunks", "answer_vs_reference"),
    "self_knowledge": ("answer_vs_chunks", "answer_vs_reference"),
}


def _diagnostics(m: ClaimMatrix) -> dict[str, Result]:
    """RAGChecker's diagnostics (`maths.ragchecker`) from the matrix, supported being entailed."""
    if not m.chunk_ids:
        return {k: not_applicable(NO_CONTEXT[k]) for k in DIAGNOSTICS}

    def entailed(verdicts: Sequence[Verdict]) -> list[bool]:
        return [v == SUPPORTED for v in verdicts]

    d = ragchecker.diagnose([entailed(r) for r in m.answer_vs_chunks], [entailed(r) for r in m.reference_vs_chunks],
                            entailed(m.answer_vs_reference), entailed(m.reference_vs_answer), len(m.chunk_ids))
    n, relevant = d.answer_claims, f"{d.relevant_chunks} of {len(m.chunk_ids)} chunks relevant"

    def share(formula, hits: int, name: str, what: str) -> Result:
        detail = f"{hits}/{n} answer claims {what} ({relevant})" if n else "no claims in the answer"
        return Result(formula(d), detail=detail, counts={name: hits, "answer_claims": n,
                                                         "relevant_chunks": d.relevant_chunks})

    out = {
        "context_utilization": _context_utilization(d),
        "noise_sensitivity_relevant": share(ragchecker.noise_sensitivity_relevant, d.incorrect_in_relevant,
                                            "incorrect_in_relevant",
                                            "unsupported by the reference yet in a relevant chunk"),
        "noise_sensitivity_irrelevant": share(ragchecker.noise_sensitivity_irrelevant, d.incorrect_in_irrelevant,
                                              "incorrect_in_irrelevant",
                                              "unsupported by the reference, in irrelevant chunks only"),
        "ragchecker_hallucination": share(ragchecker.hallucination, d.incorrect_unfaithful, "incorrect_unfaithful",
                                          "in neither the chunks nor the reference"),
        "self_knowledge": share(ragchecker.self_knowledge, d.correct_unfaithful, "correct_unfaithful",
                                "in the reference but in no chunk"),
    }
    for metric_id, reads in _DIAGNOSTIC_READS.items():
        cells = [v for name in reads for v in _cells(m, name)]
        if None in cells:
            out[metric_id] = _missing(f"verdicts it reads ({', '.join(reads)})", cells)
    return out


def _cells(m: ClaimMatrix, name: str) -> list[Verdict]:
    """Every verdict of one part of the matrix: a grid (claims x chunks) or a row (claims vs the other side)."""
    part = getattr(m, name)
    return [v for row in part for v in row] if name.endswith("_chunks") else list(part)


def _context_utilization(d: ragchecker.Diagnosis) -> Result:
    if not d.reference_claims:
        return not_applicable("no reference claims: nothing the chunks could hold to use")
    if not d.recalled:
        return not_applicable(f"none of the {d.reference_claims} reference claims is in the retrieved chunks: "
                              "nothing there to use (see context_recall)")
    return Result(ragchecker.context_utilization(d),
                  detail=f"{d.recalled_covered}/{d.recalled} reference claims in the retrieved chunks stated by "
                         "the answer",
                  counts={"recalled_used": d.recalled_covered, "recalled": d.recalled})


def _answer_correctness(m: ClaimMatrix) -> Result:
    """Seed 002: TP = answer claims the reference supports, FP = the other answer claims,
    FN = reference claims the answer does not cover; F1 = TP / (TP + 0.5 (FP + FN))."""
    if None in m.answer_vs_reference or None in m.reference_vs_answer:
        return _missing("claim pairs between answer and reference", [*m.answer_vs_reference, *m.reference_vs_answer])
    tp = sum(v == SUPPORTED for v in m.answer_vs_reference)
    fp = len(m.answer_vs_reference) - tp
    fn = sum(v != SUPPORTED for v in m.reference_vs_answer)
    f1 = formulas.claim_f1(tp, fp, fn)
    if math.isnan(f1):
        return not_applicable("no claims in the answer nor in the reference")
    return Result(f1, detail=f"TP {tp}, FP {fp}, FN {fn}", counts={"TP": tp, "FP": fp, "FN": fn})


def tp_fp_fn(m: ClaimMatrix) -> dict[str, list[str]]:
    """Seed 002's transparent output: the claims behind answer_correctness_f1."""
    return {
        "TP": [c for c, v in zip(m.answer_claims, m.answer_vs_reference) if v == SUPPORTED],
        "FP": [c for c, v in zip(m.answer_claims, m.answer_vs_reference) if v != SUPPORTED],
        "FN": [c for c, v in zip(m.reference_claims, m.reference_vs_answer) if v != SUPPORTED],
    }


# -- storage: the `claims` and `chunk_verdicts` rows ---------------------------------------------------

def claim_rows(key: dict, m: ClaimMatrix | JudgeFailure) -> list[dict]:
    """The `claims` table rows of one matrix; `key` holds run_id, question_id and method.

    A claim without a verdict is stored as `unknown`, with the reason, never as supported.
    `other_side_verdict` is the claim's verdict against the other side (an answer claim against the
    reference: supported = TP, else FP; a reference claim against the answer: supported = covered,
    else FN), NULL when the judge gave none."""
    if isinstance(m, JudgeFailure):
        return []
    rows = []
    for source, claims, grid, other in (("answer", m.answer_claims, m.answer_vs_chunks, m.answer_vs_reference),
                                        ("reference", m.reference_claims, m.reference_vs_chunks,
                                         m.reference_vs_answer)):
        for idx, (text, verdicts) in enumerate(zip(claims, grid)):
            verdict = combine(verdicts) if m.chunk_ids else None
            rows.append({
                **key, "source": source, "claim_idx": idx, "text": text, "verdict": verdict or UNKNOWN,
                "chunk_ids": [c for c, v in zip(m.chunk_ids, verdicts) if v == SUPPORTED],
                "matched_claims": list(m.answer_matches[idx]) if source == "answer" and m.answer_matches else [],
                "reason": _claim_reason(verdicts, bool(m.chunk_ids), verdict),
                "other_side_verdict": other[idx],
            })
    return rows


def _claim_reason(verdicts: Sequence[Verdict], has_context: bool, verdict: Verdict) -> str:
    if not has_context:
        return "no retrieved context"
    if verdict is None:
        return f"the judge gave no verdict for {sum(v is None for v in verdicts)} of {len(verdicts)} chunks"
    counts = {v: sum(x == v for x in verdicts) for v in VERDICTS if v in verdicts}
    return ", ".join(f"{n} chunk{'s' if n != 1 else ''} {v.replace('_', ' ')}" for v, n in counts.items())


def chunk_rows(key: dict, m: ClaimMatrix | JudgeFailure) -> list[dict]:
    """The `chunk_verdicts` table rows of one matrix."""
    if isinstance(m, JudgeFailure):
        return []
    used = chunks_used_by_answer(m)
    return [
        {**key, "chunk_idx": idx, "chunk_id": chunk_id, "relevant": rel.relevant,
         "relevance_score": rel.score, "used_by_answer": used[idx], "reason": rel.reason}
        for idx, (chunk_id, rel) in enumerate(zip(m.chunk_ids, m.chunk_relevance))
    ]


# -- registration ----------------------------------------------------------------------------------------

def _compute(metric_id: str):
    def compute(samples: Sequence[Sample], context: Any) -> list[Result]:
        return [claim_metrics(m, s.output.answer)[metric_id] for s, m in zip(samples, context.matrices(samples))]

    return compute


for _id, _higher, _seed, _formula in CLAIM_METRICS:
    if _id in DIAGNOSTICS:
        _inputs = dict(needs=("judge", "contexts", "reference"), why_absent={"contexts": NO_CONTEXT[_id]})
    elif _id in NO_CONTEXT:
        _inputs = dict(needs=("judge", "contexts"), uses=("reference",), why_absent={"contexts": NO_CONTEXT[_id]})
    else:
        _inputs = dict(needs=("judge",), uses=("reference", "contexts"))
    metric(_id, family="claims", scale="ratio", higher_is_better=_higher, seed=_seed, formula=_formula,
           **_inputs)(_compute(_id))
