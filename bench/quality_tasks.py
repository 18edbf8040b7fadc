"""What bench/judge_quality.py compares: per human label, the RAGScope metrics the screens lead with and the baselines.

Every label is compared with the metrics the app presents for that kind of label, good or bad (never only the
best one), as the screens do (evaluators/queries/humans.DIMENSION_METRICS):
- correctness vs a reference: judge_correctness, answer_class (= CORRECT as 1/0), factual_accuracy,
  answer_correctness_f1;
- overall quality: judge_overall, verdict (pass 1 / partial 0.5 / fail 0, the stored value);
- coverage / completeness: judge_completeness, completeness;
- relevance: judge_relevance, answer_relevance;
- faithfulness / support: faithfulness, judge_faithfulness (and the claim verdict on the claim x passage sets).
A reader returns NaN where the engine's cell is not ok (not_applicable, failed): it is left out, never a 0.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from bench.baselines import BASELINES
from calibration.engine_scores import Scored
from calibration.sets import CONTRADICTED, NOT_FOUND, SUPPORTED, Item
from evaluators.maths.text import is_dont_know

VERDICTS = (SUPPORTED, CONTRADICTED, NOT_FOUND)
Reader = Callable[[Scored, Sequence[Item]], np.ndarray]

# -- reading the engine's cells ---------------------------------------------------------------------------------


def cells(frame: pd.DataFrame | None, name: str, items: Sequence[Item]) -> pd.Series:
    """The column `name` for `items` in order; all missing when the run has no such metric."""
    ids = [i.item_id for i in items]
    if frame is None or name not in frame:
        return pd.Series([None] * len(ids), index=ids, dtype=object)
    return frame[name].reindex(ids)


def metric(name: str) -> Reader:
    def values(scored: Scored, items: Sequence[Item]) -> np.ndarray:
        return cells(scored.scores, name, items).to_numpy(dtype=float)
    values.__name__ = name
    return values


def label_is(name: str, wanted: str) -> Reader:
    """1 where the label metric's label is `wanted`, 0 where it is another, NaN where the cell is not ok."""
    def values(scored: Scored, items: Sequence[Item]) -> np.ndarray:
        labels = cells(scored.labels, name, items)
        ok = (cells(scored.statuses, name, items) == "ok").to_numpy()
        return np.where(ok, (labels == wanted).to_numpy(dtype=float), np.nan)
    return values


def response_verdict(scored: Scored, items: Sequence[Item]) -> np.ndarray:
    """The whole answer's verdict from its claims' verdicts against the passage: any contradicted ->
    contradicted; all supported -> supported; else not_found. An answer with no claim is not_found."""
    answer = scored.claims[scored.claims.source == "answer"] if len(scored.claims) else scored.claims
    by_item = answer.groupby("item_id")["verdict"].apply(list).to_dict() if len(answer) else {}
    out = []
    for i in items:
        verdicts = by_item.get(i.item_id, [])
        if not verdicts:
            out.append(NOT_FOUND)
        elif CONTRADICTED in verdicts:
            out.append(CONTRADICTED)
        else:
            out.append(SUPPORTED if all(v == SUPPORTED for v in verdicts) else NOT_FOUND)
    return np.array(out, dtype=object)


def label_or_no(name: str, wanted: str) -> Reader:
    """As label_is, but a cell that is not ok counts as "not `wanted`" (0): where the engine leaves the cell out
    on exactly the items the label is about (answer_class on a question with no reference), ok cells alone
    would measure the selection, not the metric."""
    def values(scored: Scored, items: Sequence[Item]) -> np.ndarray:
        return np.nan_to_num(label_is(name, wanted)(scored, items), nan=0.0)
    return values


def verdict_is_supported(scored: Scored, items: Sequence[Item]) -> np.ndarray:
    return (response_verdict(scored, items) == SUPPORTED).astype(float)


def best_chunk_relevance(scored: Scored, items: Sequence[Item]) -> np.ndarray:
    if not len(scored.chunks):
        return np.full(len(items), np.nan)
    best = scored.chunks.groupby("item_id")["relevance_score"].max()
    return best.reindex([i.item_id for i in items]).to_numpy(dtype=float)


@dataclass(frozen=True)
class Ours:
    """One RAGScope score set beside a label: how to read it, and the product's threshold (binary)."""

    name: str
    read: Reader
    threshold: float | None = None  # a binary label's "yes" from this value on
    metric_id: str = ""  # the catalogue id the figure is quoted under in the app (default: name)
    not_ok_read_as_no: bool = False  # the reader turns a cell that is not ok into 0 (label_or_no)

    @property
    def id(self) -> str:
        return self.metric_id or self.name


# The headline metrics of each kind of label (module doc); thresholds: the product's, for binary labels.
CORRECTNESS = (Ours("judge_correctness", metric("judge_correctness"), 3.0),
               Ours("answer_class = CORRECT", label_is("answer_class", "CORRECT"), 0.5, "answer_class"),
               Ours("factual_accuracy", metric("factual_accuracy"), 60.0),
               Ours("answer_correctness_f1", metric("answer_correctness_f1"), 0.5))
OVERALL = (Ours("judge_overall", metric("judge_overall")), Ours("verdict", metric("verdict")))
COMPLETENESS = (Ours("judge_completeness", metric("judge_completeness")), Ours("completeness", metric("completeness")))
RELEVANCE = (Ours("judge_relevance", metric("judge_relevance")), Ours("answer_relevance", metric("answer_relevance")))
SUPPORT = (Ours("faithfulness", metric("faithfulness"), 1.0),
           Ours("claim verdict = supported", verdict_is_supported, 0.5, "faithfulness"),
           Ours("judge_faithfulness", metric("judge_faithfulness"), 4.0))
CLAIM_VERDICT = (Ours("claim verdict", response_verdict, metric_id="faithfulness"),)

# -- what the baselines compare -------------------------------------------------------------------------------


def answer_vs_reference(i: Item) -> tuple[str, str]:
    return i.answer, i.reference


def passage_vs_answer(i: Item) -> tuple[str, str]:
    """Baselines of support: the passage as candidate, the answer as reference, so token recall is
    the share of the answer's tokens found in the passage."""
    return " ".join(i.contexts), i.answer


def answer_vs_question(i: Item) -> tuple[str, str]:
    """Without a reference: token recall is the share of the question's tokens the answer repeats."""
    return i.answer, i.question


def passage_vs_question(i: Item) -> tuple[str, str]:
    return " ".join(i.contexts), i.question


PAIRS = {answer_vs_reference: "the answer vs the reference", passage_vs_answer: "the passage vs the answer",
         answer_vs_question: "the answer vs the question", passage_vs_question: "the passage vs the question"}
# Where there is no reference: the answer's length and its overlap with the question.
REFERENCE_FREE = ("token_f1", "token_recall", "minilm_cosine", "length")


def seed_phrases(items: Sequence[Item]) -> np.ndarray:
    """Seed 003's uncertainty phrases alone: the DON'T KNOW check before the abstention work."""
    return np.array([float(is_dont_know(i.answer) is not None) for i in items])


def extra(name: str) -> Callable[[Item], object]:
    def value(i: Item) -> object:
        return dict(i.extra)[name]
    return value


@dataclass(frozen=True)
class Task:
    set: str
    label: str  # what people said, for the table
    kind: str  # binary | classes | graded | pairwise (graded truth compared within pairs only)
    truth: Callable[[Item], object]
    engine_metrics: tuple[str, ...]
    ours: tuple[Ours, ...]
    pair: Callable[[Item], tuple[str, str]]
    keep: Callable[[Item], bool] = lambda i: True
    extra_baselines: dict = field(default_factory=dict)  # name -> (function of items, threshold or None)
    baselines: tuple[str, ...] = tuple(BASELINES)
    statistic: str = ""  # graded: "Pearson" to lead with it (default Spearman)
    unit: Callable[[Item], str] | None = None  # items of one unit are averaged into one (a squality response)
    within: Callable[[Item], str] | None = None  # pairwise accuracy over the units sharing this key
    beat: tuple[str, ...] = ()  # baselines that the `beat_metrics` must beat (issue 20's targets)
    beat_metrics: tuple[str, ...] = ()


SQUALITY = dict(pair=answer_vs_reference, statistic="Pearson", unit=extra("response"), within=extra("question_key"),
                beat=("token_f1", "rouge_l"), beat_metrics=("judge_correctness", "judge_overall"))
SQUALITY_METRICS = ("judge_correctness", "answer_class", "factual_accuracy", "answer_correctness_f1", "judge_overall",
                    "verdict", "judge_completeness", "completeness")
NO_REFERENCE = dict(pair=answer_vs_question, baselines=REFERENCE_FREE, beat=REFERENCE_FREE,
                    beat_metrics=("judge_relevance", "answer_relevance", "judge_overall"))
HALUQUESTQA_METRICS = ("judge_overall", "verdict", "judge_faithfulness", "faithfulness", "judge_completeness",
                       "completeness", "judge_relevance", "answer_relevance")

TASKS = (
    Task("evouna", "people: the answer is correct (vs the gold answer)", "binary", lambda i: bool(i.label),
         ("answer_correctness_f1", "judge_correctness", "factual_accuracy", "answer_class"), CORRECTNESS,
         answer_vs_reference),
    Task("snli", "people: hypothesis entailed / contradicted / neutral", "classes", lambda i: i.label,
         ("faithfulness", "judge_faithfulness"), CLAIM_VERDICT, passage_vs_answer),
    Task("snli", "people: hypothesis entailed (vs contradicted or neutral)", "binary", lambda i: i.label == SUPPORTED,
         ("faithfulness", "judge_faithfulness"), SUPPORT, passage_vs_answer),
    Task("factcheck_stance", "people: evidence supports / refutes / is irrelevant to the claim", "classes",
         lambda i: i.label, ("faithfulness", "judge_faithfulness"), CLAIM_VERDICT, passage_vs_answer,
         keep=lambda i: i.label in VERDICTS),
    Task("factcheck_stance", "people: evidence supports the claim (vs refutes or is irrelevant)", "binary",
         lambda i: i.label == SUPPORTED, ("faithfulness", "judge_faithfulness"), SUPPORT, passage_vs_answer,
         keep=lambda i: i.label in VERDICTS),
    Task("fool_me_twice", "people: evidence supports (vs refutes) the claim", "binary",
         lambda i: i.label == SUPPORTED, ("faithfulness", "judge_faithfulness"), SUPPORT, passage_vs_answer),
    Task("begin", "people: response fully attributable to the passage", "binary", lambda i: bool(i.label),
         ("faithfulness", "judge_faithfulness"), SUPPORT, passage_vs_answer),
    Task("summedits", "people: summary consistent with the document", "binary", lambda i: bool(i.label),
         ("faithfulness", "judge_faithfulness"), SUPPORT, passage_vs_answer),
    Task("inspectorraget", "people: faithfulness 1-4 (mean of 3)", "graded", lambda i: float(i.label),
         ("faithfulness", "judge_faithfulness"), (SUPPORT[0], SUPPORT[2]), passage_vs_answer),
    Task("inspectorraget", "people: answer relevance 1-4 (mean of 3)", "graded", extra("answer_relevance"),
         ("answer_relevance", "judge_relevance"), RELEVANCE, answer_vs_question),
    Task("inspectorraget", "ClapNQ: the question is unanswerable from the passage (answer should abstain)", "binary",
         lambda i: not extra("answerable")(i), ("answer_class",),
         (Ours("answer_class = DON'T KNOW", label_is("answer_class", "DON'T KNOW"), 0.5, "answer_class"),
          Ours("answer_class = DON'T KNOW, not ok read as no", label_or_no("answer_class", "DON'T KNOW"), 0.5,
               "answer_class", not_ok_read_as_no=True)),
         answer_vs_question, extra_baselines={"seed 003 phrases": (seed_phrases, 0.5)}),
    Task("clapnq", "people: the passage holds the answer (answerable)", "binary", lambda i: bool(i.label),
         ("context_precision",),
         (Ours("context_precision", metric("context_precision"), 0.5),
          Ours("chunk relevance score", best_chunk_relevance, 45.0, "context_precision")),
         passage_vs_question),
    Task("squad2", "people: the passage holds the answer (answerable)", "binary", lambda i: bool(i.label),
         ("context_precision",),
         (Ours("context_precision", metric("context_precision"), 0.5),
          Ours("chunk relevance score", best_chunk_relevance, 45.0, "context_precision")),
         passage_vs_question),
    # SQuALITY: each response is scored against its question's 3 other writers' references and averaged; the
    # issue's targets name judge_correctness and judge_overall on both labels, so both are in both.
    Task("squality", "people: correctness 0-100 (mean of 3), per response", "graded", lambda i: float(i.label),
         SQUALITY_METRICS, CORRECTNESS + OVERALL[:1], **SQUALITY),
    Task("squality", "people: coverage 0-100 (mean of 3), per response", "graded", extra("coverage"),
         SQUALITY_METRICS, COMPLETENESS, **SQUALITY),
    Task("squality", "people: overall 0-100 (mean of 3), per response", "graded", extra("overall"),
         SQUALITY_METRICS, OVERALL + CORRECTNESS[:1], **SQUALITY),
    Task("haluquestqa", "experts: the preferred answer of the two", "pairwise", lambda i: float(bool(i.label)),
         HALUQUESTQA_METRICS, OVERALL, within=extra("pair"), **NO_REFERENCE),
    Task("haluquestqa", "experts: factuality (1 - share of sentences flagged)", "graded", extra("factuality"),
         HALUQUESTQA_METRICS, (OVERALL[0], SUPPORT[2]), **NO_REFERENCE),
    Task("haluquestqa", "experts: completeness (1 - share of sentences flagged)", "graded", extra("completeness"),
         HALUQUESTQA_METRICS, COMPLETENESS, **NO_REFERENCE),
    Task("haluquestqa", "experts: relevance (1 - share of sentences flagged)", "graded", extra("relevance"),
         HALUQUESTQA_METRICS, RELEVANCE, **NO_REFERENCE),
    Task("alce_eli5", "people: usefulness 1-5", "graded", lambda i: float(i.label),
         ("judge_overall", "verdict", "judge_relevance", "answer_relevance"), OVERALL + RELEVANCE, **NO_REFERENCE),
)
# Sets whose statistics compare a question's answers with each other: subsampled by whole groups.
WHOLE_GROUPS = frozenset({"squality", "haluquestqa", "alce_eli5"})
