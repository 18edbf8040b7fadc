"""The offline judge's correctness scorer: P(people judge the answer correct), from a few signals.

Claim-level F1 (seed 002) is harsh on the commonest correct answer, a sentence around a short
reference ("Who was behind The Chipmunks?" "David Seville" / "The Chipmunks were created by Ross
Bagdasarian Sr., known as David Seville"): one reference claim, several answer claims, F1 0.4. People
judge such an answer by whether it states the reference, contradicts nothing and actually answers.
So the offline judge's correctness (judge_correctness, wp_correctness, factual_accuracy's correctness,
answer_class) is a logistic model over the signals below, fitted on the dev part of EVOUNA (people's
correct/incorrect verdicts on 5 QA systems' answers to TriviaQA questions) by
`python -m calibration.fit_correctness`, which writes `weights/correctness.json` (a few hundred bytes).

Signals, each in [0, 1] (`signals`):
  reference_recall     share of the reference's SQuAD tokens the answer has
  reference_in_answer  the whole normalised reference occurs in the answer
  token_f1             SQuAD token F1 of answer and reference
  cosine               MiniLM cosine of answer and reference (the semantic_similarity metric's norm)
  bertscore            BERTScore F1 of answer and reference on MiniLM (the bert_score_f1 metric's norm)
  abstains             the answer abstains (`evaluators.abstention`)
  contradicted         share of answer claims the reference contradicts (offline claim matrix)
  answer_length        min(1, log(1 + answer words) / log(1 + 200))
  bertscore_precision  BERTScore's P: how much of the answer the reference accounts for
  bertscore_recall     BERTScore's R: how much of the reference the answer states
(P and R beside F1: 5-fold cross-validated AUROC on EVOUNA's dev part 0.895 with F1 alone, 0.912 with all three.)
The fit weighs both classes equally (class_weight="balanced"), so 0.5 means "as likely correct as not"
whatever the share of correct answers in a data set (`evaluators.metrics.rubric.CORRECT_P`).

Domain: EVOUNA's references are short answers (TriviaQA: a name, date or phrase, often with aliases,
"David Seville/Ross Bagdasarian"). Between two sentences on one topic BERTScore and cosine run high
whatever the facts, so on a sentence reference ("Whitesand Bay is located in Cornwall.") the scorer
alone called "Yes, we would go to Whitesand Bay." correct (P 0.83). A reference that is not a short
answer (`is_short_answer`) is judged by its key points too: P(correct) = the scorer's P x completeness,
the share of the reference's claims the answer states (seed 002's claim verdicts). A list of aliases is a
short answer if one alias is ("Linda Evangelista/We don't wake up for less than $10,000 a day"), and
a parenthesis is a note to the grader ("PRINCE WILLIAM (accept DUKE OF CAMBRIDGE)"). On 1,500 EVOUNA dev
answers (judge_correctness through the engine) AUROC is 0.907 with this rule, 0.911 with no rule at all
and 0.850 when every alias had to be short (274 references "not short" instead of 45).
"""
from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from pathlib import Path

import numpy as np

from evaluators.abstention import abstains
from evaluators.text import squad_tokens, token_overlap

WEIGHTS = Path(__file__).with_name("weights") / "correctness.json"
SIGNALS = ("reference_recall", "reference_in_answer", "token_f1", "cosine", "bertscore", "abstains",
           "contradicted", "answer_length", "bertscore_precision", "bertscore_recall")
_LONG_ANSWER_WORDS = 200
# A short answer: every "/"-separated alternative has at most this many words (EVOUNA's alias lists).
SHORT_ANSWER_WORDS = 5
_PARENTHESES = re.compile(r"\([^)]*\)")


def is_short_answer(reference: str) -> bool:
    """The reference is a short answer, or a list of aliases one of which is, as the scorer was fitted on
    (module doc); words in parentheses do not count."""
    return any(len(_PARENTHESES.sub(" ", alias).split()) <= SHORT_ANSWER_WORDS for alias in reference.split("/"))


def signals(answer: str, reference: str, cosine: float, bertscore: tuple[float, float, float],
            contradicted: float) -> np.ndarray:
    """The scorer's inputs for one answer (module doc), in `SIGNALS` order; `bertscore` is (P, R, F1)."""
    _, recall, f1 = token_overlap(answer, reference)
    ref = " ".join(squad_tokens(reference))
    contained = bool(ref) and f" {ref} " in f" {' '.join(squad_tokens(answer))} "
    words = len(answer.split())
    bert_p, bert_r, bert_f1 = bertscore
    return np.array([recall, float(contained), f1, max(cosine, 0.0), bert_f1, float(abstains(answer) is not None),
                     contradicted, min(1.0, math.log1p(words) / math.log1p(_LONG_ANSWER_WORDS)), bert_p, bert_r],
                    dtype=np.float64)


@lru_cache(maxsize=1)
def _model() -> tuple[np.ndarray, float]:
    fitted = json.loads(WEIGHTS.read_text())
    if tuple(fitted["signals"]) != SIGNALS:
        raise RuntimeError(f"{WEIGHTS} was fitted on signals {fitted['signals']}, not {SIGNALS}: "
                           "re-run python -m calibration.fit_correctness")
    return np.array(fitted["coefficients"], dtype=np.float64), float(fitted["intercept"])


def probability(x: np.ndarray) -> float:
    """P(correct) for one row of `signals`, rounded to 4 decimals (deterministic across platforms)."""
    coefficients, intercept = _model()
    z = float(x @ coefficients + intercept)
    return round(1.0 / (1.0 + math.exp(-z)), 4)


def explain(x: np.ndarray) -> str:
    """The signals, for a score's detail."""
    return ", ".join(f"{name} {value:.2f}" for name, value in zip(SIGNALS, x))
