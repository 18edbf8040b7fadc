"""Semantic metrics: embedding similarity on the packaged all-MiniLM-L6-v2 (seeds 002, 003).

Every metric embeds its whole batch with one call into `evaluators.embeddings` (distinct texts
only) and takes cosines as row-wise dot products of L2-normalised vectors.

Decisions on what the seeds leave open (the `formula` strings are the short form, shown to users):

* An empty (blank) answer or reference scores 0.0, as seed 003's pseudo code returns for empty
  inputs, with the reason in `detail` (the lexical family calls an empty reference not applicable
  instead; here the seed is explicit).
* bert_score_f1 runs on all-MiniLM-L6-v2's token embeddings, not the seed's
  microsoft/deberta-xlarge-mnli (which cannot be downloaded here): values are not comparable with
  published BERTScores. No idf weighting and no baseline rescaling (bert-score's defaults).
* answer_relevance is the seeds' mean cosine between the question and the questions an LLM judge
  generated from the answer (stored in `generated_questions`); under the offline judge, which
  generates none, it is the direct question-answer cosine, and every `detail` says which.
* Cosines become percentages as seed 003's semantic similarity does: round(max(0, cos) x 100, 2),
  so every value stays within the declared 0-100 scale.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from evaluators import embeddings
from evaluators.embeddings import MAX_TOKENS, MODEL_NAME
from evaluators.formulas import f1_from_precision_recall, mean_cosine, semantic_similarity_percent
from evaluators.metrics.registry import REGISTRY, metric
from evaluators.judges import offline
from evaluators.judgments import JudgeFailure
from evaluators.schema import Result, Sample, not_applicable

_EMPTY_RULE = "0 by seed 003's rule for empty inputs"
_EMPTY_ANSWER = Result(0.0, detail=f"the answer is empty: {_EMPTY_RULE}")
_EMPTY_REFERENCE = Result(0.0, detail=f"the reference is empty: {_EMPTY_RULE}")
_EMPTY_QUESTION = not_applicable("the question is empty")
OFFLINE_RELEVANCE = "offline: direct question-answer cosine, not generated questions"
GENERATED_RELEVANCE = "mean over the judge's generated questions"
_TRUNCATION = f"texts beyond {MAX_TOKENS} word pieces are truncated (the model's limit)"


def _empty_pair(sample: Sample) -> Result | None:
    """The 0.0 result of an empty answer or reference, None when both have text."""
    if not sample.output.answer.strip():
        return _EMPTY_ANSWER
    if not sample.golden.reference.strip():
        return _EMPTY_REFERENCE
    return None


def _pair_cosines(left: list[str], right: list[str]) -> list[float]:
    """cos(left[i], right[i]) for every i, from one `encode` call over both lists."""
    if not left:
        return []  # nothing to embed: do not load the model for it
    vectors = embeddings.encode(left + right)
    cosines = np.einsum("ij,ij->i", vectors[:len(left)], vectors[len(left):])
    return np.clip(cosines, -1.0, 1.0).tolist()  # float32 rounding can step just past +-1


def bertscore_prf(cand_vecs: np.ndarray, ref_vecs: np.ndarray) -> tuple[float, float, float]:
    """Greedy-matching BERTScore (P, R, F1) of one pair, no idf weighting, no rescaling.

    `cand_vecs` (n x d) and `ref_vecs` (m x d) hold one L2-normalised token vector per row, so
    their dot products are cosines. P = mean over candidate tokens of the max cosine to a reference
    token, R = mean over reference tokens of the max cosine to a candidate token, F1 = 2PR/(P+R).
    """
    if not len(cand_vecs) or not len(ref_vecs):
        raise ValueError("BERTScore needs at least one token on each side")
    similarity = np.clip(cand_vecs @ ref_vecs.T, -1.0, 1.0)
    precision = float(similarity.max(axis=1).mean())
    recall = float(similarity.max(axis=0).mean())
    # A negative mean best-match (never seen with this model) is no match at all; the F1 formula
    # takes non-negative P and R.
    return precision, recall, f1_from_precision_recall(max(precision, 0.0), max(recall, 0.0))


# Registered first on purpose: the engine runs metrics in catalogue order, and the token pass also
# caches the sentence vectors of answers and references, so semantic_similarity then costs ~nothing.
@metric(
    "bert_score_f1", family="semantic", scale="percent", higher_is_better=True, seed="003",
    needs=("reference", "embeddings"),
    formula=f"BERTScore F1 x 100 = 2PR / (P + R) x 100 with greedy matching on contextual token "
            f"embeddings: P = mean over answer tokens of the max cosine to a reference token, R = mean "
            f"over reference tokens of the max cosine to an answer token; [CLS]/[SEP] excluded, no idf "
            f"weighting, no baseline rescaling (seed 003, 'BERTScore F1'). Model: {MODEL_NAME}'s last "
            f"layer instead of the seed's microsoft/deberta-xlarge-mnli, which cannot be downloaded here, "
            f"so values are not comparable with published BERTScores; {_TRUNCATION}. An empty answer "
            f"or reference scores 0.",
)
def bert_score_f1(samples: Sequence[Sample], context: Any = None) -> list[Result]:
    percent = REGISTRY["bert_score_f1"].range.value  # (P, R, F1) are on 0-1
    return [r if isinstance(r, Result) else Result(
                percent(r[2]), detail=f"P {percent(r[0]):.2f}, R {percent(r[1]):.2f} ({MODEL_NAME} token embeddings)")
            for r in bertscores(samples, context)]


def bertscores(samples: Sequence[Sample], context: Any = None) -> list[tuple[float, float, float] | Result]:
    """Per sample, BERTScore's (P, R, F1) of answer and reference, or the 0.0 Result of a pair with no token.
    Once per batch: the offline rubric's correctness scorer reads them too (a token pass is not cached)."""
    if context is None:
        return _bertscores(samples)
    return context.per_batch("bertscores", samples, _bertscores)


def _bertscores(samples: Sequence[Sample]) -> list[tuple[float, float, float] | Result]:
    out: list = [_empty_pair(s) for s in samples]
    todo = [i for i, r in enumerate(out) if r is None]
    answers = [samples[i].output.answer for i in todo]
    tokens = embeddings.token_embeddings(answers + [samples[i].golden.reference for i in todo]) if todo else []
    for k, i in enumerate(todo):
        cand, ref = tokens[k], tokens[len(todo) + k]
        if not len(cand) or not len(ref):  # e.g. only zero-width or control characters
            side = "answer" if not len(cand) else "reference"
            out[i] = Result(0.0, detail=f"the {side} has no token the model reads: {_EMPTY_RULE}")
            continue
        out[i] = bertscore_prf(cand, ref)
    return out


@metric(
    "semantic_similarity", family="semantic", scale="percent", higher_is_better=True, seed="003",
    needs=("reference", "embeddings"),
    formula=f"round(max(0, cos(a, g)) x 100, 2) with a, g the {MODEL_NAME} sentence embeddings "
            f"(mean-pooled, normalised) of answer and reference (seed 003, 'Semantic Similarity "
            f"Percentage'); {_TRUNCATION}. An empty answer or reference scores 0.",
)
def semantic_similarity(samples: Sequence[Sample], context: Any = None) -> list[Result]:
    out = [_empty_pair(s) for s in samples]
    todo = [i for i, r in enumerate(out) if r is None]
    cosines = _pair_cosines([samples[i].output.answer for i in todo], [samples[i].golden.reference for i in todo])
    for i, cosine in zip(todo, cosines):
        out[i] = Result(semantic_similarity_percent(cosine), detail=f"cosine {cosine:.4f}")
    return out


@metric(
    "answer_relevance", family="semantic", scale="percent", higher_is_better=True, seed="002, 003",
    needs=("judge", "embeddings"),
    formula=f"round(max(0, mean_i cos(question, q_i)) x 100, 2) over the N = 3 questions q_i an LLM judge "
            f"generates from the answer (seeds 002/003), on {MODEL_NAME} sentence embeddings; a judge that "
            f"finds nothing in the answer to ask about generates none: 0. Offline judge: the direct "
            f"question-answer cosine round(max(0, cos(question, answer)) x 100, 2), in the spirit of seed "
            f"003's 'Alternative Direct Assessment' (it runs lower than the generated-question variant); "
            f"{_TRUNCATION}. An empty answer scores 0.",
)
def answer_relevance(samples: Sequence[Sample], context: Any = None) -> list[Result]:
    if context is None or context.judge == offline.JUDGE:
        return _relevance(samples, [(s.output.answer,) for s in samples], OFFLINE_RELEVANCE)
    questions = [j.generated_questions for j in context.judged(samples)]
    out: list[Result | None] = [None] * len(samples)
    todo = []
    for i, generated in enumerate(questions):
        if isinstance(generated, JudgeFailure):
            out[i] = Result(None, generated.status, f"no generated questions: {generated.error}")
        elif not generated:
            out[i] = Result(0.0, detail="the judge generated no question from the answer (nothing in it to ask about)")
        else:
            todo.append(i)
    judged = _relevance([samples[i] for i in todo], [questions[i] for i in todo], GENERATED_RELEVANCE)
    for i, result in zip(todo, judged):
        out[i] = result
    return out


def _relevance(samples: Sequence[Sample], probes: Sequence[Sequence[str]], how: str) -> list[Result]:
    """mean_i cos(question, probe_i) as a percentage per sample; `how` says what the probes are."""
    out: list[Result | None] = []
    questions: list[str] = []
    flat_probes: list[str] = []
    for s, sample_probes in zip(samples, probes):
        if not s.output.answer.strip():
            out.append(_EMPTY_ANSWER)
        elif not s.golden.question.strip():
            out.append(_EMPTY_QUESTION)
        else:
            out.append(None)
            questions += [s.golden.question] * len(sample_probes)
            flat_probes += sample_probes
    cosines = iter(_pair_cosines(questions, flat_probes))
    for i, (result, sample_probes) in enumerate(zip(out, probes)):
        if result is None:
            each = [next(cosines) for _ in sample_probes]
            mean = mean_cosine(each)
            per_probe = f" ({', '.join(f'{c:.4f}' for c in each)})" if len(each) > 1 else ""
            out[i] = Result(semantic_similarity_percent(mean), detail=f"{how}; cosine {mean:.4f}{per_probe}")
    return out
