"""What a judge hands the metrics (DESIGN.md "Judging"): a sample's claim matrix, an LLM judge's holistic
reply, or why there is none. Records only, below `judges/` (which fill them) and `metrics/` (which score
them: `metrics/claims.py`, `metrics/rubric.py`).

A judge fills one `ClaimMatrix` per (question, method): the atomic claims of the answer and of the
reference, each claim's verdict against every retrieved chunk and against the other side, and each
chunk's relevance to the question. Verdicts are `supported`, `contradicted`, `not_found` or `unknown`
(the judge said it could not tell: counted as not supported). `None` is different: the judge gave no
verdict at all (a truncated or short reply). A metric that needs a missing verdict gets status
`judge_error`, so the cell can be retried, never a silently lower score.

`Holistic` is the one declaration of the holistic reply: `judges/prompts.strict_schema` makes the JSON
schema the LLM is asked for from its fields, and validating a reply against it is the parser.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from evaluators.maths import formulas
from evaluators.records import JUDGE_ERROR

SUPPORTED, CONTRADICTED, NOT_FOUND, UNKNOWN = "supported", "contradicted", "not_found", "unknown"
VERDICTS = (SUPPORTED, CONTRADICTED, NOT_FOUND, UNKNOWN)

Verdict = str | None  # None: the judge gave no verdict


@dataclass(frozen=True)
class JudgeFailure:
    """No matrix (or no holistic reply) for a sample: the judge failed (e.g. claim extraction timed
    out); every metric that needs it takes this status, so a retry redoes them."""

    status: str  # judge_error or timeout
    error: str


@dataclass(frozen=True)
class CriterionScore:
    """An LLM judge's score of one answer on one analyst criterion (records/criteria.py), in the criterion's scale.
    `weighted`: the score is G-Eval's probability-weighted one (Liu et al. 2023: the sum of each level times the
    probability the server gave its token), else the score the reply wrote; `replies`: each reply's score when the
    judge was asked more than once (`score` is then their mean, or a pass/fail's majority)."""

    score: float
    reason: str = ""
    weighted: bool = False
    replies: tuple[float, ...] = ()


class JudgeRefused(Exception):
    """The judge server refused the run's key or does not know its model (HTTP 401, 403, 404): no call
    can succeed, so the run stops at once with this message (the cause and what to do), its cells left to
    do for a resume once it is fixed; never a cell status."""


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


# -- the holistic reply --------------------------------------------------------------------------------
# Lenient where leniency loses nothing (texts default to "", labels are trimmed and recased), strict on
# numbers: a rating off its scale is repaired, never clipped. The schema asks for whole 1-5 points, as
# seed 001's rubric does; the parser takes any number on the scale, as a mean of several replies is one.

DONT_KNOW = "DON'T KNOW"
# What the judge may answer: DON'T KNOW is decided before any judging, by the uncertainty check (seed 003).
JUDGED_CLASSES = tuple(label for label in formulas.ANSWER_CLASS_VALUES if label != DONT_KNOW)

_RATING = Field(ge=1, le=5, json_schema_extra={"type": "integer"})


class _Reasoned(BaseModel):
    """A score with the judge's reasoning, asked for first so that the score follows from it."""

    model_config = ConfigDict(frozen=True)

    reasoning: str = ""
    score: float

    @field_validator("reasoning")
    @classmethod
    def _strip(cls, text: str) -> str:
        return text.strip()


class _Rated(_Reasoned):
    score: float = _RATING  # seed 000, 1-5


class _Percent(_Reasoned):
    score: float = Field(ge=0, le=100)  # seed 003 GEval, 0-100


class Holistic(BaseModel):
    """An LLM judge's holistic ratings of one answer: seed 001's six 1-5 ratings and verdict, seed 000's
    alignment and question relevance, seed 003's three GEval criteria and its CORRECT/WRONG class."""

    model_config = ConfigDict(frozen=True)

    correctness: float = _RATING
    completeness: float = _RATING
    faithfulness: float = _RATING
    relevance: float = _RATING
    clarity: float = _RATING
    overall_score: float = _RATING
    # The judge's own verdict: the stored one is recomputed from overall_score (seed 001), so any text will do.
    verdict: str = Field("", json_schema_extra={"enum": list(formulas.VERDICT_VALUES)})
    explanation: str = ""
    alignment: _Rated
    question_relevance: _Rated
    step1_correctness: _Percent
    step2_completeness: _Percent
    step3_consistency: _Percent
    classification: str = Field(json_schema_extra={"enum": list(JUDGED_CLASSES)})
    # When the judge was asked several times: every reply (see `aggregate`); not part of the reply.
    _repeats: tuple[Holistic, ...] = PrivateAttr(())

    @field_validator("verdict")
    @classmethod
    def _verdict(cls, text: str) -> str:
        return text.strip().lower()

    @field_validator("explanation")
    @classmethod
    def _strip(cls, text: str) -> str:
        return text.strip()

    @field_validator("classification")
    @classmethod
    def _class(cls, value: str) -> str:
        label = value.strip().upper()
        if label not in JUDGED_CLASSES:
            raise ValueError(f"classification must be {' or '.join(JUDGED_CLASSES)}, not {value!r}")
        return label

    @property
    def ratings(self) -> dict[str, float]:
        """Seed 001's 1-5 ratings by dimension: correctness, completeness, faithfulness, relevance, clarity, overall."""
        return {"correctness": self.correctness, "completeness": self.completeness, "faithfulness": self.faithfulness,
                "relevance": self.relevance, "clarity": self.clarity, "overall": self.overall_score}

    @property
    def repeats(self) -> tuple[Holistic, ...]:
        return self._repeats


# The reply's numbers: plain scores, and scores with their reasoning.
_SCORES = tuple(name for name, f in Holistic.model_fields.items() if f.annotation is float)
_REASONED = tuple(name for name, f in Holistic.model_fields.items() if f.annotation in (_Rated, _Percent))


def aggregate(replies: Sequence[Holistic]) -> Holistic:
    """Several holistic replies to one answer as one: every score the mean of the replies' (half up to 2
    decimals), the verdict and the classification the majority's (a tie goes to the earlier reply's), the
    first reply's texts; `repeats` keeps every reply, so the spread can be shown. One reply is itself."""
    if len(replies) == 1:
        return replies[0]
    first = replies[0]

    def mean(values) -> float:
        return formulas.half_up(math.fsum(values) / len(replies), 2)

    def majority(labels: list[str]) -> str:
        return max(labels, key=lambda label: (labels.count(label), -labels.index(label)))

    merged = Holistic(
        **{name: mean(getattr(r, name) for r in replies) for name in _SCORES},
        **{name: getattr(first, name).model_copy(update={"score": mean(getattr(r, name).score for r in replies)})
           for name in _REASONED},
        verdict=majority([r.verdict for r in replies]), explanation=first.explanation,
        classification=majority([r.classification for r in replies]))
    merged._repeats = tuple(replies)
    return merged
