"""Where a (question, method) lost: in retrieval, in generation, in both, or nowhere. The rule, pure (no store).

Two questions are asked of a sample's stored score cells, each answered by the first of its metrics whose cell
is `ok` (a metric the run did not score, or whose cell failed or is not applicable, hands over to the next):

* Did retrieval miss the evidence? `id_recall` = 0 (none of the question's relevant documents was retrieved;
  not applicable where the golden set names none), else `context_recall` = 0 (no reference claim attributable to
  any retrieved chunk: the rule of runs without document ids, such as the GraphRAG demo).
* Is the answer wrong or incomplete? `answer_class` WRONG or DON'T KNOW (its value 0), else
  `answer_correctness_f1` < 0.5, else `completeness` < 0.5 (fewer than half of the reference claims covered).

Labels: `ok` (evidence retrieved, answer right), `generation miss` (evidence retrieved, answer wrong: it ignored
or misused it), `both` (evidence not retrieved and answer wrong), `retrieval miss` (evidence not retrieved, the
answer right all the same: from the model's own knowledge or a lucky guess). A sample where either question has no
`ok` cell to answer it is `unknown`, with why, never `ok`.

An unanswerable question (its reference abstains, as ClapNQ's "The passage does not contain the answer to this
question."): there is no evidence to miss, and the right answer abstains: answer_class DON'T KNOW is right, CORRECT or
WRONG is an answer where none was due (a generation miss); undecided without an ok answer_class.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from evaluators.records import OK
from evaluators.records.judgments import DONT_KNOW  # answer_class's label of an answer that abstains

OK_LABEL = OK  # the label of a sample where nothing went wrong reads as an ok cell does
RETRIEVAL, GENERATION, BOTH, UNKNOWN = "retrieval miss", "generation miss", "both", "unknown"
LABELS = (OK_LABEL, RETRIEVAL, GENERATION, BOTH, UNKNOWN)

RETRIEVAL_METRICS = ("id_recall", "context_recall")  # in the order they decide
ANSWER_METRICS = ("answer_class", "answer_correctness_f1", "completeness")
F1_BELOW = 0.5  # answer_correctness_f1 under this: wrong or incomplete
COMPLETENESS_BELOW = 0.5  # completeness under this: fewer than half of the reference claims covered

RULE = (
    "Retrieval missed the evidence when id_recall = 0 (no relevant document retrieved), or, where id_recall is not "
    "scored ok (no ids), when context_recall = 0 (no reference claim attributable to any retrieved chunk). The "
    "answer is wrong or incomplete when answer_class is WRONG or DON'T KNOW, or, where answer_class is not scored "
    f"ok, when answer_correctness_f1 < {F1_BELOW}, else when completeness < {COMPLETENESS_BELOW}. Labels: ok "
    "(evidence retrieved, answer right), generation miss (evidence retrieved, answer wrong), both (evidence not "
    "retrieved, answer wrong), retrieval miss (evidence not retrieved, answer right all the same); unknown when "
    "no cell of either list is scored ok (failed, not applicable or not computed), with why. An unanswerable "
    "question (its reference abstains, e.g. \"The passage does not contain the answer\") has no evidence to miss, "
    "and its right answer abstains: answer_class DON'T KNOW is ok, any other class a generation miss.")


@dataclass(frozen=True)
class Cell:
    """One stored score cell: its status, value (own scale) and label (answer_class's)."""
    status: str
    value: float | None = None
    label: str | None = None


@dataclass(frozen=True)
class Decision:
    """One question's answer: `yes` (retrieval missed / answer wrong), None when undecided; the metric and cell
    that decided it, or why nothing did."""
    yes: bool | None
    metric: str | None
    value: float | None
    why: str


@dataclass(frozen=True)
class Attribution:
    label: str
    retrieval: Decision
    answer: Decision

    @property
    def reason(self) -> str:
        return f"retrieval: {self.retrieval.why}; answer: {self.answer.why}"


UNANSWERABLE = "unanswerable"  # what decided the retrieval of an unanswerable question: nothing to retrieve
NOTHING_TO_RETRIEVE = Decision(False, UNANSWERABLE, None, "unanswerable (the reference abstains): no evidence to "
                               "retrieve")


def _first_ok(cells: Mapping[str, Cell], metrics: tuple[str, ...]) -> tuple[str | None, Cell | None, str]:
    """The first metric whose cell is ok, or (None, None, what each cell was)."""
    seen = []
    for metric in metrics:
        cell = cells.get(metric)
        if cell is not None and cell.status == OK and cell.value is not None:
            return metric, cell, ""
        seen.append(f"{metric} {'not scored' if cell is None else cell.status}")
    return None, None, ", ".join(seen)


def retrieval_missed(cells: Mapping[str, Cell]) -> Decision:
    metric, cell, seen = _first_ok(cells, RETRIEVAL_METRICS)
    if metric is None:
        return Decision(None, None, None, f"undecided ({seen})")
    missed = cell.value == 0
    return Decision(missed, metric, cell.value,
                    f"{metric} = {cell.value:.3g}: evidence {'not retrieved' if missed else 'retrieved'}")


def answer_wrong(cells: Mapping[str, Cell]) -> Decision:
    metric, cell, seen = _first_ok(cells, ANSWER_METRICS)
    if metric is None:
        return Decision(None, None, None, f"undecided ({seen})")
    if metric == "answer_class":  # CORRECT 1, WRONG 0, DON'T KNOW 0 (DESIGN.md)
        wrong = cell.value == 0
        shown = cell.label or f"{cell.value:.3g}"
        return Decision(wrong, metric, cell.value, f"answer_class {shown}: {'wrong' if wrong else 'right'}")
    below = F1_BELOW if metric == "answer_correctness_f1" else COMPLETENESS_BELOW
    wrong = cell.value < below
    return Decision(wrong, metric, cell.value,
                    f"{metric} = {cell.value:.3g} {'<' if wrong else '>='} {below}: {'wrong' if wrong else 'right'}")


def answer_not_abstaining(cells: Mapping[str, Cell]) -> Decision:
    """An unanswerable question's answer: wrong unless answer_class says it abstains (DON'T KNOW)."""
    cell = cells.get("answer_class")
    if cell is None or cell.status != OK or cell.label is None:
        return Decision(None, None, None, "undecided (unanswerable, answer_class "
                                          f"{'not scored' if cell is None else cell.status})")
    wrong = cell.label != DONT_KNOW
    return Decision(wrong, "answer_class", cell.value, f"answer_class {cell.label}: "
                    + ("answers an unanswerable question" if wrong else "abstains, as it should"))


def attribute(cells: Mapping[str, Cell], *, unanswerable: bool = False) -> Attribution:
    """The label of one (question, method) from its cells by metric id (any others are ignored); `unanswerable`:
    the question's reference abstains (module docstring)."""
    if unanswerable:
        retrieval, answer = NOTHING_TO_RETRIEVE, answer_not_abstaining(cells)
    else:
        retrieval, answer = retrieval_missed(cells), answer_wrong(cells)
    if retrieval.yes is None or answer.yes is None:
        label = UNKNOWN
    elif retrieval.yes:
        label = BOTH if answer.yes else RETRIEVAL
    else:
        label = GENERATION if answer.yes else OK_LABEL
    return Attribution(label, retrieval, answer)
