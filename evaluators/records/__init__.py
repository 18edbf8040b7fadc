"""Typed records that flow loaders -> engine -> store.

Plain frozen dataclasses: cheap to build by the hundred thousand and easy to read in a notebook.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# Statuses a score cell can have (DESIGN.md "Store"). A failure is a status, never a NaN or 0.
OK = "ok"
NOT_APPLICABLE = "not_applicable"
JUDGE_ERROR = "judge_error"
TIMEOUT = "timeout"
SKIPPED = "skipped"
STATUSES = (OK, NOT_APPLICABLE, JUDGE_ERROR, TIMEOUT, SKIPPED)
ERROR_STATUSES = (JUDGE_ERROR, TIMEOUT)

# Statuses a judge call can have (judge_calls.status): OK, or what went wrong.
INVALID = "invalid"  # content empty, truncated, unparseable or not matching the schema
INCOMPLETE = "incomplete"  # a valid verification reply that misses verdicts
RATE_LIMITED, SERVER_ERROR, CALL_TIMEOUT = "rate_limited", "server_error", "timeout"
CONNECTION_ERROR, BAD_RESPONSE = "connection_error", "bad_response"  # bad_response: 200 but no completion
BAD_REQUEST, SCHEMA_UNSUPPORTED = "bad_request", "schema_unsupported"
ANSWERED = (OK, INCOMPLETE)  # a call whose reply was used
NOT_SENT = "not_sent"  # a request the run's budget kept from going out (evaluators.runs.budget); never stored


@dataclass(frozen=True)
class Chunk:
    """One retrieved chunk; `chunk_id` is the source's id or its 1-based rank as text."""

    chunk_id: str
    text: str
    score: float | None = None  # the retriever's score, where the source gives one (a trace's retriever span)


@dataclass(frozen=True)
class GoldenItem:
    question_id: str
    question: str
    reference: str
    question_type: str | None = None
    evidence: str | None = None
    reference_contexts: tuple[str, ...] = ()
    checks: tuple[dict, ...] = ()
    # The documents that answer it, each with its grade (> 0 relevant, as in trec_eval), in the order given: a list
    # of ids has grade 1 each. Matched against the retrieved chunks' ids by the rank metrics (metrics/ranking.py).
    relevant_ids: tuple[tuple[str, float], ...] = ()

    @property
    def grades(self) -> dict[str, float]:
        """Each named document's grade."""
        return dict(self.relevant_ids)


@dataclass(frozen=True)
class Usage:
    """What the RAG system itself spent on one answer, from its trace or a file's columns; None where not said."""

    latency_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    model: str | None = None


@dataclass(frozen=True)
class RagOutput:
    question_id: str
    method: str
    answer: str
    contexts: tuple[Chunk, ...] = ()
    usage: Usage | None = None  # None: the source says nothing of latency, tokens or cost


@dataclass(frozen=True)
class Sample:
    """One (question, method) pair: what every metric scores."""

    golden: GoldenItem
    output: RagOutput

    @property
    def key(self) -> tuple[str, str]:
        return (self.golden.question_id, self.output.method)


@dataclass(frozen=True)
class Result:
    """One metric's outcome on one sample. `value` is None exactly when status is not ok."""

    value: float | None
    status: str = OK
    detail: str | None = None
    # The value from each of several judge replies, when the judge was asked more than once (`value` is
    # their aggregate); empty otherwise.
    repeats: tuple[float | None, ...] = ()
    label: str | None = None  # a label metric's label (pass, CORRECT, A, ...), stored beside its number
    # Counts behind the value that programs read back (answer_correctness_f1: TP, FP, FN), stored as data;
    # `detail` is for people and is never parsed.
    counts: Mapping[str, int] | None = None

    def __post_init__(self):
        if (self.status == OK) != (self.value is not None):
            raise ValueError(f"status {self.status!r} with value {self.value!r}")


def not_applicable(why: str) -> Result:
    return Result(None, NOT_APPLICABLE, why)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input file, pointing at where it is."""

    file: str
    row: int | None  # 1-based record number (CSV: data row after the header; JSONL: line)
    field: str | None
    message: str

    def __str__(self) -> str:
        where = [self.file]
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.field is not None:
            where.append(f"field '{self.field}'")
        return f"{', '.join(where)}: {self.message}"


@dataclass
class LoadError(Exception):
    """Every problem found in one or more files; nothing was loaded."""

    problems: list[Problem] = field(default_factory=list)

    def __str__(self) -> str:
        n = len(self.problems)
        head = f"{n} problem{'s' if n != 1 else ''} in the input; nothing was loaded:"
        return "\n".join([head, *(f"  - {p}" for p in self.problems)])
