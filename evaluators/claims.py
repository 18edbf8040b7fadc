"""The claim matrix of one sample and every claim-level metric computed from it (pure, no I/O).

A judge fills one `ClaimMatrix` per (question, method): the atomic claims of the answer and of the
reference, each claim's verdict against every retrieved chunk and against the other side, and each
chunk's relevance to the question (DESIGN.md "Judging"). Every claims-family metric is arithmetic
over that one matrix, so they are consistent with each other and cost no extra calls.

Verdicts are `supported`, `contradicted`, `not_found` or `unknown` (the judge said it could not
tell: counted as not supported). `None` is different: the judge gave no verdict at all (a truncated
or short reply). A metric that needs a missing verdict gets status `judge_error`, so the cell can
be retried, never a silently lower score.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from evaluators import formulas
from evaluators.schema import JUDGE_ERROR, Result, not_applicable

SUPPORTED, CONTRADICTED, NOT_FOUND, UNKNOWN = "supported", "contradicted", "not_found", "unknown"
VERDICTS = (SUPPORTED, CONTRADICTED, NOT_FOUND, UNKNOWN)

Verdict = str | None  # None: the judge gave no verdict

# The metric ids `claim_metrics` returns.
CLAIM_METRIC_IDS = ("faithfulness", "hallucination_rate", "context_recall", "wp_recall", "wp_precision",
                    "completeness", "answer_correctness_f1", "context_precision", "context_precision_ap")


@dataclass(frozen=True)
class JudgeFailure:
    """No matrix for a sample: the judge failed (e.g. claim extraction timed out); every claim
    metric of the sample takes this status, so a retry redoes them."""

    status: str  # judge_error or timeout
    error: str


@dataclass(frozen=True)
class ChunkRelevance:
    relevant: bool | None  # None: no verdict
    score: float | None = None  # 0-100, as seed 003's relevance prompt asks
    reason: str | None = None


@dataclass(frozen=True)
class ClaimMatrix:
    answer_claims: tuple[str, ...]
    reference_claims: tuple[str, ...]
    chunk_ids: tuple[str, ...]
    answer_vs_chunks: tuple[tuple[Verdict, ...], ...]  # [answer claim][chunk]
    reference_vs_chunks: tuple[tuple[Verdict, ...], ...]  # [reference claim][chunk]: attributable?
    answer_vs_reference: tuple[Verdict, ...]  # [answer claim]: does the reference support it (TP/FP)?
    reference_vs_answer: tuple[Verdict, ...]  # [reference claim]: does the answer cover it (FN)?
    chunk_relevance: tuple[ChunkRelevance, ...]  # [chunk]
    # [answer claim]: indexes of the reference claims stating the same fact; () when the judge gives none.
    answer_matches: tuple[tuple[int, ...], ...] = ()
    # What a None cell stands for: judge_error, or timeout when the call that should fill it timed out.
    missing_status: str = JUDGE_ERROR
    missing_reason: str | None = None

    def __post_init__(self):
        n_chunks = len(self.chunk_ids)
        shapes = {
            "answer_vs_chunks": (self.answer_vs_chunks, len(self.answer_claims), n_chunks),
            "reference_vs_chunks": (self.reference_vs_chunks, len(self.reference_claims), n_chunks),
        }
        for name, (rows, n_rows, n_cols) in shapes.items():
            if len(rows) != n_rows or any(len(r) != n_cols for r in rows):
                raise ValueError(f"{name} must be {n_rows} x {n_cols}")
        for name, row, n in (("answer_vs_reference", self.answer_vs_reference, len(self.answer_claims)),
                             ("reference_vs_answer", self.reference_vs_answer, len(self.reference_claims)),
                             ("chunk_relevance", self.chunk_relevance, n_chunks)):
            if len(row) != n:
                raise ValueError(f"{name} must have {n} entries, has {len(row)}")
        if self.answer_matches and len(self.answer_matches) != len(self.answer_claims):
            raise ValueError(f"answer_matches must have {len(self.answer_claims)} entries, has {len(self.answer_matches)}")
        every = [v for rows in (self.answer_vs_chunks, self.reference_vs_chunks) for r in rows for v in r]
        every += [*self.answer_vs_reference, *self.reference_vs_answer]
        bad = {v for v in every if v is not None and v not in VERDICTS}
        if bad:
            raise ValueError(f"unknown verdict(s) {sorted(bad)}; expected one of {VERDICTS}")


def combine(verdicts: Sequence[Verdict]) -> Verdict:
    """A claim's verdict against all chunks: supported by any chunk wins, then contradicted by any;
    not_found only when every chunk was judged; missing verdicts leave it open (None)."""
    if SUPPORTED in verdicts:
        return SUPPORTED
    if CONTRADICTED in verdicts:
        return CONTRADICTED
    if None in verdicts:
        return None
    return UNKNOWN if UNKNOWN in verdicts else NOT_FOUND


def answer_claim_verdicts(m: ClaimMatrix) -> list[Verdict]:
    return [combine(row) for row in m.answer_vs_chunks]


def reference_claim_attributions(m: ClaimMatrix) -> list[Verdict]:
    return [combine(row) for row in m.reference_vs_chunks]


def chunks_used_by_answer(m: ClaimMatrix) -> list[bool]:
    """A chunk is used when it supports at least one answer claim (seed 000's 'used chunks')."""
    return [any(row[j] == SUPPORTED for row in m.answer_vs_chunks) for j in range(len(m.chunk_ids))]


def _missing(what: str, verdicts: Sequence[Verdict]) -> Result:
    n = sum(v is None for v in verdicts)
    return Result(None, JUDGE_ERROR, f"the judge gave no verdict for {n} of {len(verdicts)} {what}")


def _share(verdicts: Sequence[Verdict], wanted: str, what: str, empty: Result, detail: str) -> Result:
    if not verdicts:
        return empty
    if None in verdicts:
        return _missing(what, verdicts)
    hits = sum(v == wanted for v in verdicts)
    return Result(formulas.ratio(hits, len(verdicts)), detail=detail.format(hits=hits, total=len(verdicts)))


def claim_metrics(m: ClaimMatrix | JudgeFailure) -> dict[str, Result]:
    """Every claims-family metric of one sample, by metric id (DESIGN.md "Metric ids")."""
    if isinstance(m, JudgeFailure):
        return {metric_id: Result(None, m.status, m.error) for metric_id in CLAIM_METRIC_IDS}
    answer = answer_claim_verdicts(m)
    attributed = reference_claim_attributions(m)
    has_context = bool(m.chunk_ids)
    out = {
        "faithfulness": _faithfulness(answer, has_context),
        "hallucination_rate": _hallucination_rate(answer, has_context),
        "context_recall": _context_recall(attributed, has_context),
        "wp_recall": _wp_recall(answer, has_context),
        "wp_precision": _wp_precision(m),
        "completeness": _share(m.reference_vs_answer, SUPPORTED, "reference claims",
                               Result(1.0, detail="no reference claims"),
                               "{hits}/{total} reference claims covered by the answer"),
        "answer_correctness_f1": _answer_correctness(m),
    }
    out.update(_context_precision(m))
    if m.missing_status != JUDGE_ERROR or m.missing_reason:  # say why the verdicts are missing
        out = {k: _missing_because(r, m) if r.status == JUDGE_ERROR else r for k, r in out.items()}
    return out


def _missing_because(r: Result, m: ClaimMatrix) -> Result:
    return Result(None, m.missing_status, f"{r.detail}: {m.missing_reason}" if m.missing_reason else r.detail)


def _faithfulness(answer: list[Verdict], has_context: bool) -> Result:
    if not has_context:  # seed 000: 1.0 with a warning
        return Result(1.0, detail=formulas.NO_CONTEXT_TO_VERIFY)
    return _share(answer, SUPPORTED, "answer claims", Result(1.0, detail="no claims in the answer (seed 003)"),
                  "{hits}/{total} answer claims supported by the retrieved chunks")


def _hallucination_rate(answer: list[Verdict], has_context: bool) -> Result:
    """Claims the chunks contradict or do not contain; `unknown` is neither supported nor this."""
    if not has_context:
        return not_applicable("no retrieved context to check the answer against")
    if not answer:
        return Result(0.0, detail="no claims in the answer")
    if None in answer:
        return _missing("answer claims", answer)
    bad = sum(v in (CONTRADICTED, NOT_FOUND) for v in answer)
    return Result(formulas.ratio(bad, len(answer)), detail=f"{bad}/{len(answer)} answer claims contradicted or not found")


def _context_recall(attributed: list[Verdict], has_context: bool) -> Result:
    if not attributed:
        return Result(1.0, detail="no reference claims to recall (seed 003)")
    if not has_context:
        return Result(0.0, detail="no retrieved context (seed 003)")
    return _share(attributed, SUPPORTED, "reference claims", Result(1.0),
                  "{hits}/{total} reference claims attributable to the retrieved chunks")


def _wp_recall(answer: list[Verdict], has_context: bool) -> Result:
    """Seed 000's recall: the answer's facts covered by the retrieved chunks; no context -> 1.0."""
    if not has_context:
        return Result(1.0, detail="no retrieved context: 1.0 (seed 000)")
    return _share(answer, SUPPORTED, "answer claims", Result(1.0, detail="no facts in the answer"),
                  "{hits}/{total} answer facts covered by the retrieved chunks")


def _wp_precision(m: ClaimMatrix) -> Result:
    """Seed 000's precision: chunks the answer used / retrieved chunks; no context -> not applicable."""
    if not m.chunk_ids:
        return not_applicable("no retrieved context: precision is NaN (seed 000)")
    if any(None in row for row in m.answer_vs_chunks):
        return _missing("answer claim x chunk pairs", [v for row in m.answer_vs_chunks for v in row])
    used = chunks_used_by_answer(m)
    ids = [c for c, u in zip(m.chunk_ids, used) if u]
    return Result(formulas.ratio(sum(used), len(used)),
                  detail=f"{sum(used)}/{len(used)} chunks used by the answer" + (f": {', '.join(ids)}" if ids else ""))


def _context_precision(m: ClaimMatrix) -> dict[str, Result]:
    """Mean chunk relevance (seed 003) and rank-aware AP@k (seed 002), from the chunk verdicts."""
    if not m.chunk_ids:
        na = not_applicable("no retrieved context")
        return {"context_precision": na, "context_precision_ap": na}
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
    return Result(f1, detail=f"TP {tp}, FP {fp}, FN {fn}")


def tp_fp_fn(m: ClaimMatrix) -> dict[str, list[str]]:
    """Seed 002's transparent output: the claims behind answer_correctness_f1."""
    return {
        "TP": [c for c, v in zip(m.answer_claims, m.answer_vs_reference) if v == SUPPORTED],
        "FP": [c for c, v in zip(m.answer_claims, m.answer_vs_reference) if v != SUPPORTED],
        "FN": [c for c, v in zip(m.reference_claims, m.reference_vs_answer) if v != SUPPORTED],
    }


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
                "reason": _claim_reason(source, verdicts, bool(m.chunk_ids), verdict),
                "other_side_verdict": other[idx],
            })
    return rows


def _claim_reason(source: str, verdicts: Sequence[Verdict], has_context: bool, verdict: Verdict) -> str:
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
