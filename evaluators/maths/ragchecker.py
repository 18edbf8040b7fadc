"""RAGChecker's diagnostic metrics (Ru et al. 2024, "RAGChecker: A Fine-grained Framework for Diagnosing
Retrieval-Augmented Generation", section 3; amazon-science/RAGChecker `ragchecker/metrics.py`, whose arithmetic this
follows): pure functions over one sample's entailment matrices, no I/O, stdlib only.

The inputs are booleans, True where the judge found entailment (RAGChecker's `to_bool`: only "Entailment" counts;
neutral and contradiction alike are False):

    answer_in_chunks[i][j]      chunk j entails answer claim i             (RAGChecker's retrieved2response)
    reference_in_chunks[k][j]   chunk j entails reference claim k          (retrieved2answer)
    answer_correct[i]           the reference entails answer claim i       (answer2response)
    reference_covered[k]        the answer entails reference claim k       (response2answer)

A *relevant* chunk is RAGChecker's: one that entails at least one reference claim (not a chunk judged relevant to
the question). An answer claim is *faithful* when some chunk entails it, *correct* when the reference does.

    claim recall                reference claims some chunk entails / reference claims (= formulas.context_recall)
    context utilization         recalled reference claims the answer states / recalled reference claims
    noise sensitivity, relevant     incorrect answer claims some relevant chunk entails / answer claims
    noise sensitivity, irrelevant   incorrect answer claims only irrelevant chunks entail / answer claims
    hallucination               incorrect answer claims no chunk entails / answer claims
    self-knowledge              correct answer claims no chunk entails / answer claims

Where RAGChecker returns 0 for an empty input, these say what the empty case is: no answer claims -> 0.0 for the
four shares of answer claims (nothing incorrect, as `formulas.hallucination_rate`), no recalled reference claim ->
NaN for context utilization (nothing in the chunks to use: not applicable, not a failure to use it). The claim
metrics of `metrics/claims.py` decide the rest (no chunks, an answer that abstains, missing verdicts).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from evaluators.maths.formulas import ratio

__all__ = ["Diagnosis", "diagnose", "relevant_chunks", "context_utilization", "noise_sensitivity_relevant",
           "noise_sensitivity_irrelevant", "hallucination", "self_knowledge"]

NAN = float("nan")


class Diagnosis(NamedTuple):
    """The counts behind RAGChecker's diagnostics of one sample. Every answer claim falls in exactly one of
    correct/incorrect x (in a relevant chunk, only in irrelevant ones, in none)."""

    answer_claims: int
    reference_claims: int
    recalled: int  # reference claims some chunk entails
    recalled_covered: int  # of those, the ones the answer states
    relevant_chunks: int  # chunks entailing some reference claim
    incorrect_in_relevant: int  # incorrect answer claims a relevant chunk entails
    incorrect_in_irrelevant: int  # incorrect answer claims only irrelevant chunks entail
    incorrect_unfaithful: int  # incorrect answer claims no chunk entails: hallucinations
    correct_unfaithful: int  # correct answer claims no chunk entails: self-knowledge


def _bools(values: Sequence[bool], name: str, n: int | None = None) -> list[bool]:
    values = list(values)
    if n is not None and len(values) != n:
        raise ValueError(f"{name} must have {n} entries, has {len(values)}")
    for i, v in enumerate(values):
        if not isinstance(v, bool):
            raise TypeError(f"{name}[{i}] must be a bool (entailed or not), got {v!r}")
    return values


def _matrix(rows: Sequence[Sequence[bool]], name: str, n_chunks: int) -> list[list[bool]]:
    return [_bools(row, f"{name}[{i}]", n_chunks) for i, row in enumerate(rows)]


def relevant_chunks(reference_in_chunks: Sequence[Sequence[bool]], n_chunks: int) -> list[bool]:
    """Per chunk: does it entail at least one reference claim (RAGChecker's relevant chunk, `psg_useful`)."""
    rows = _matrix(reference_in_chunks, "reference_in_chunks", n_chunks)
    return [any(row[j] for row in rows) for j in range(n_chunks)]


def diagnose(answer_in_chunks: Sequence[Sequence[bool]], reference_in_chunks: Sequence[Sequence[bool]],
             answer_correct: Sequence[bool], reference_covered: Sequence[bool], n_chunks: int) -> Diagnosis:
    """The counts of one sample (see the module's docstring for the inputs); shapes are checked."""
    answer = _matrix(answer_in_chunks, "answer_in_chunks", n_chunks)
    reference = _matrix(reference_in_chunks, "reference_in_chunks", n_chunks)
    correct = _bools(answer_correct, "answer_correct", len(answer))
    covered = _bools(reference_covered, "reference_covered", len(reference))
    relevant = relevant_chunks(reference, n_chunks)
    recalled = [any(row) for row in reference]
    # RAGChecker keeps the two noise sets exclusive: a claim a relevant chunk entails counts there only.
    in_relevant = [any(e and r for e, r in zip(row, relevant)) for row in answer]
    in_irrelevant = [any(e and not r for e, r in zip(row, relevant)) and not in_rel
                     for row, in_rel in zip(answer, in_relevant)]
    faithful = [any(row) for row in answer]
    return Diagnosis(
        answer_claims=len(answer), reference_claims=len(reference),
        recalled=sum(recalled), recalled_covered=sum(r and c for r, c in zip(recalled, covered)),
        relevant_chunks=sum(relevant),
        incorrect_in_relevant=sum(f and not c for f, c in zip(in_relevant, correct)),
        incorrect_in_irrelevant=sum(f and not c for f, c in zip(in_irrelevant, correct)),
        incorrect_unfaithful=sum(not f and not c for f, c in zip(faithful, correct)),
        correct_unfaithful=sum(not f and c for f, c in zip(faithful, correct)),
    )


def context_utilization(d: Diagnosis) -> float:
    """Recalled reference claims the answer states / recalled reference claims; none recalled -> NaN
    (RAGChecker: 0)."""
    return ratio(d.recalled_covered, d.recalled)


def noise_sensitivity_relevant(d: Diagnosis) -> float:
    """Incorrect answer claims entailed by a relevant chunk / answer claims; no answer claims -> 0.0."""
    return ratio(d.incorrect_in_relevant, d.answer_claims, when_empty=0.0)


def noise_sensitivity_irrelevant(d: Diagnosis) -> float:
    """Incorrect answer claims entailed only by irrelevant chunks / answer claims; no answer claims -> 0.0."""
    return ratio(d.incorrect_in_irrelevant, d.answer_claims, when_empty=0.0)


def hallucination(d: Diagnosis) -> float:
    """Incorrect answer claims no chunk entails / answer claims (RAGChecker's hallucination, not
    `formulas.hallucination_rate`, which ignores the reference); no answer claims -> 0.0."""
    return ratio(d.incorrect_unfaithful, d.answer_claims, when_empty=0.0)


def self_knowledge(d: Diagnosis) -> float:
    """Correct answer claims no chunk entails / answer claims; no answer claims -> 0.0."""
    return ratio(d.correct_unfaithful, d.answer_claims, when_empty=0.0)
