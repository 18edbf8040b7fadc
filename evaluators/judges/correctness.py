"""The offline judge's correctness scorer: P(people judge the answer correct), from a few signals.

Correctness is read as entailment of the reference by the answer. What the reference says beyond the
question is its *key* ("Canberra" for "What is the capital of Australia?"; "William Shakespeare" in
"William Shakespeare wrote Hamlet." asked "Who wrote Hamlet?"): a correct answer states the key, a wrong
one states something else in its place. Topical closeness (cosine, BERTScore) cannot see the difference:
"The capital of Australia is Sydney." is as close to the question's topic as "... is Canberra.". So
beside the similarity signals the scorer reads the key explicitly, and catches contradictions of names,
numbers and negations by rule (`key_evidence`):

  key_recall           share of the key's words (SQuAD tokens less stop words, stemmed) the answer states;
                       the best of a reference's "/"-separated aliases, notes in parentheses left out
  reference_in_answer  the whole normalised reference (an alias) occurs in the answer
  name_conflict        the key names someone or something (capitalised words) the answer never names,
                       while the answer names others the question and reference do not ("Sydney")
  number_conflict      the key has numbers (a year, a count) the answer does not state, while the answer
                       states others ("fell in 1991" for "1989")
  negation_conflict    answer and reference share the key's words but one of them negates them
  missing_with_other   1 - key_recall when the answer says something the question and reference do not
  novel                share of the answer's words in neither the question nor the reference
  token_f1, rouge_l    SQuAD token F1 and ROUGE-L F1 of answer and reference (the simple baselines)
  cosine, bertscore    MiniLM cosine and BERTScore F1, P and R of answer and reference (semantic family)
  bertscore_precision, bertscore_recall
  abstains             the answer abstains (`evaluators.maths.abstention`)
  contradicted         share of answer claims the reference contradicts (offline claim matrix)
  completeness         share of reference claims the answer states (offline claim matrix)
  answer_length, reference_length   min(1, log(1 + words) / log(1 + 200))

A logistic model over them, weighed apart for short and long references (`inputs`; `weights/correctness.json`,
a few KB), is fitted by
`python -m calibration.fit_correctness` on the dev parts of every set where people judged answers against
a reference: EVOUNA (short trivia answers, correct or not) and SQuALITY (long answers, correctness 0-100,
read as the probability of "correct"), each set weighing the same; its regularisation is chosen by
leave-one-set-out validation (fitted without a set, scored on it beside the best simple baseline).
Each class weighs the same within a set, so 0.5 means "as likely correct as not"
(`evaluators.metrics.rubric.CORRECT_P`).

`judge` bounds the model's probability by the rules of `conflicts.py`, which read what a fitted weight cannot
carry because real answers seldom show it: a plain contradiction of the reference caps it at `CONTRADICTED_P`, the
reference's key stated with nothing contradicted lifts it to `STATED_P`.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from evaluators.maths.abstention import abstains
from evaluators.judges import conflicts
from evaluators.judges.offline import negation_mismatch, stem
from evaluators.maths.text import STOP_WORDS, number_values, rouge_l_f1, squad_tokens, token_overlap

WEIGHTS = Path(__file__).with_name("weights") / "correctness.json"
SIGNALS = ("key_recall", "reference_in_answer", "name_conflict", "number_conflict", "negation_conflict",
           "missing_with_other", "novel", "token_f1", "rouge_l", "cosine", "bertscore", "bertscore_precision",
           "bertscore_recall", "abstains", "contradicted", "completeness", "answer_length", "reference_length")
_LONG_WORDS = 200
# The rules' bounds on P(correct) (`judge`): below and above CORRECT_P (0.5), judge_correctness 1.8 and 3.4.
CONTRADICTED_P, STATED_P = 0.2, 0.6
# A short reference names one fact ("Canberra", "1989", "William Shakespeare"); the bench splits its figures there too.
SHORT_REFERENCE_WORDS = 5
# Aliases: EVOUNA's references list them with "/" ("David Seville/Ross Bagdasarian/..."); slashes between longer
# parts are prose ("and/or"), not alternatives.
_ALIAS_WORDS = 12
_PARENTHESES = re.compile(r"\([^)]*\)")
_NAME = re.compile(r"(?<![\w'])[A-Z\u00c0-\u00de][\w'-]*")


@lru_cache(maxsize=1 << 16)
def content_words(text: str) -> frozenset[str]:
    """Stems of the SQuAD tokens of `text` that are not stop words: its content words and numbers."""
    return frozenset(stem(t) for t in squad_tokens(text) if t not in STOP_WORDS)


@lru_cache(maxsize=1 << 16)
def names(text: str) -> frozenset[str]:
    """Stems of the capitalised words of `text` that are not stop words ("Sydney", "Marlowe"; not "The")."""
    out: set[str] = set()
    for m in _NAME.finditer(text):
        word = m.group().lower().removesuffix("'s")
        if word not in STOP_WORDS:
            out.update(stem(t) for t in squad_tokens(word))
    return frozenset(out)


def aliases(reference: str) -> list[str]:
    """The alternatives a reference lists ("a/b", each of at most `_ALIAS_WORDS` words), notes in parentheses left
    out; else the reference."""
    parts = [_PARENTHESES.sub(" ", part).strip() for part in reference.split("/")]
    if any(len(part.split()) > _ALIAS_WORDS for part in parts):
        return [reference]
    return [part for part in parts if part] or [reference]


@dataclass(frozen=True)
class Key:
    """What the answer does with the reference's key (module doc), each in [0, 1]."""

    recall: float
    name_conflict: float
    number_conflict: float
    negation_conflict: float
    missing_with_other: float
    novel: float


def key_evidence(question: str, answer: str, reference: str) -> Key:
    """The answer against the reference's key, for the alias that fits it best."""
    q_words, a_words = content_words(question), content_words(answer)
    q_names, a_names = names(question), names(answer)
    q_numbers, a_numbers = set(number_values(question)), set(number_values(answer))
    other_names = a_names - q_names - names(reference)
    other_numbers = a_numbers - q_numbers - set(number_values(reference))
    best: tuple | None = None
    for alias in aliases(reference):
        words = content_words(alias)
        key = (words - q_words) or words  # a reference that only repeats the question: all of it
        recall = len(key & a_words) / len(key) if key else 0.0
        key_names = names(alias) - q_names
        key_numbers = set(number_values(alias)) - q_numbers
        # Absent in any case: EVOUNA's alias lists capitalise common nouns ("Sheep", "Thrift") an answer writes in
        # lowercase.
        name_conflict = float(bool(key_names) and not key_names & a_words and bool(other_names))
        number_conflict = float(bool(key_numbers) and not key_numbers <= a_numbers and bool(other_numbers))
        fit = (recall, -name_conflict, -number_conflict)
        if best is None or fit > best[0]:
            best = (fit, recall, name_conflict, number_conflict)
    _, recall, name_conflict, number_conflict = best
    novel = a_words - q_words - content_words(reference)
    return Key(recall, name_conflict, number_conflict, float(negation_mismatch(reference, answer)),
               (1.0 - recall) * float(bool(novel)), len(novel) / len(a_words) if a_words else 0.0)


def _length(text: str) -> float:
    return min(1.0, math.log1p(len(text.split())) / math.log1p(_LONG_WORDS))


def signals(question: str, answer: str, reference: str, cosine: float, bertscore: tuple[float, float, float],
            contradicted: float, completeness: float) -> np.ndarray:
    """The scorer's inputs for one answer (module doc), in `SIGNALS` order; `bertscore` is (P, R, F1)."""
    key = key_evidence(question, answer, reference)
    normalised = " ".join(squad_tokens(answer))
    contained = any(ref and f" {ref} " in f" {normalised} " for ref in (" ".join(squad_tokens(a)) for a in aliases(reference)))
    bert_p, bert_r, bert_f1 = bertscore
    return np.array([key.recall, float(contained), key.name_conflict, key.number_conflict, key.negation_conflict,
                     key.missing_with_other, key.novel, token_overlap(answer, reference)[2],
                     rouge_l_f1(answer, reference), max(cosine, 0.0), bert_f1, bert_p, bert_r,
                     float(abstains(answer) is not None), contradicted, completeness, _length(answer),
                     _length(reference)], dtype=np.float64)


def is_long(reference: str) -> bool:
    """A reference none of whose aliases (`aliases`) is a short answer of at most `SHORT_REFERENCE_WORDS` words:
    the scorer weighs its signals apart (`inputs`). "David Seville/Ross Bagdasarian" is short."""
    return all(len(alias.split()) > SHORT_REFERENCE_WORDS for alias in aliases(reference))


def inputs(x: np.ndarray, long: bool) -> np.ndarray:
    """The logistic model's inputs (`INPUTS`): the signals, the signals again for a long reference (0 for a short
    one), and the long-reference flag, so that short and long answers share what holds for both and differ where
    the evidence differs ("key_recall" means one named fact on a short reference, a summary's coverage on a long one)."""
    flag = float(long)
    return np.concatenate([x, x * flag, [flag]])


INPUTS = (*SIGNALS, *(f"long reference x {name}" for name in SIGNALS), "long reference")


@lru_cache(maxsize=1)
def _model() -> tuple[np.ndarray, float]:
    fitted = json.loads(WEIGHTS.read_text())
    if tuple(fitted["inputs"]) != INPUTS:
        raise RuntimeError(f"{WEIGHTS} was fitted on inputs {fitted['inputs']}, not {INPUTS}: "
                           "re-run python -m calibration.fit_correctness")
    return np.array(fitted["coefficients"], dtype=np.float64), float(fitted["intercept"])


def probability(x: np.ndarray, long: bool) -> float:
    """P(correct) for one row of `signals` against a long or short reference, rounded to 4 decimals (deterministic
    across platforms)."""
    coefficients, intercept = _model()
    z = float(inputs(x, long) @ coefficients + intercept)
    return round(1.0 / (1.0 + math.exp(-z)), 4)


def judge(question: str, answer: str, reference: str, x: np.ndarray) -> tuple[float, str]:
    """P(correct) and why: the logistic model's `probability`, then the rules of `conflicts` on top, which carry
    what the model cannot weigh (a stated contradiction is rare in the answers it was fitted on): a contradicted
    answer gets at most `CONTRADICTED_P`, one that states the reference's key and contradicts nothing at least
    `STATED_P`. Against a "/"-separated list of aliases, the answer contradicts the reference when it contradicts
    every alias and states its key when it states one alias's."""
    long = is_long(reference)
    p = probability(x, long)
    why = f"P(correct) from {explain(x)} ({'long' if long else 'short'} reference)"
    listed = aliases(reference)
    refs = listed if len(listed) > 1 else [reference]  # parentheses kept: "0 °C (32 °F)" holds both
    reasons = [conflicts.contradiction(question, answer, ref) for ref in refs]
    if all(reasons):
        return min(p, CONTRADICTED_P), f"{why}; the answer {reasons[0]}: at most {CONTRADICTED_P}"
    if any(why is None and conflicts.key_stated(question, answer, ref) for ref, why in zip(refs, reasons)):
        return max(p, STATED_P), f"{why}; the answer states the reference's key and contradicts nothing: at least {STATED_P}"
    return p, why


def explain(x: np.ndarray) -> str:
    """The signals, for a score's detail."""
    return ", ".join(f"{name} {value:.2f}" for name, value in zip(SIGNALS, x))
