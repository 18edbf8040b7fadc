"""Rank metrics of one retrieved list against a question's relevant documents, with trec_eval's definitions
(trec_eval 9 / pytrec_eval, which tests/maths/test_ranking.py compares every function with, exactly).

`ranked` is the retrieved ids in the retriever's order (no repeats: the loaders refuse a list naming an id
twice), `grades` each relevant document's grade. As in trec_eval a document is relevant when its grade is > 0
(its default relevance level 1, for whole grades), and a document absent from `grades` is not relevant. `k` cuts
the list at rank k (None: the whole list). Precision at k divides by k, as trec_eval's P_k does, even when fewer
than k documents were retrieved. Every function needs at least one relevant document: a question that names none
has no rank metric (the metric says `not_applicable`), never a 0.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Judged:
    """One retrieved list as trec_eval sees it: each rank's grade (0: not relevant) and the question's grades."""

    gains: tuple[float, ...]  # the grade of the document at each rank, 0 where not relevant
    relevant: tuple[float, ...]  # the grades > 0 of every relevant document, retrieved or not

    @classmethod
    def of(cls, ranked: Sequence[str], grades: Mapping[str, float]) -> Judged:
        relevant = tuple(g for g in grades.values() if g > 0)
        if not relevant:
            raise ValueError("no relevant document: rank metrics need at least one document with a grade > 0")
        if len(set(ranked)) != len(ranked):
            raise ValueError("the retrieved list names a document twice")
        return cls(tuple(max(grades.get(doc, 0.0), 0.0) for doc in ranked), relevant)

    def top(self, k: int | None) -> tuple[float, ...]:
        if k is not None and k < 1:
            raise ValueError(f"a cut-off is a rank >= 1, not {k}")
        return self.gains if k is None else self.gains[:k]


def hit(j: Judged, k: int | None = None) -> float:
    """1 when a relevant document is among the first k (trec_eval's success_k), else 0."""
    return float(any(j.top(k)))


def recall(j: Judged, k: int | None = None) -> float:
    """Relevant documents among the first k / every relevant document (recall_k; set_recall for the whole list)."""
    return sum(1 for g in j.top(k) if g) / len(j.relevant)


def precision(j: Judged, k: int | None = None) -> float:
    """Relevant documents among the first k / k (P_k); for the whole list / the documents retrieved (set_P), 0 for
    an empty list."""
    top = j.top(k)
    denominator = len(top) if k is None else k
    return sum(1 for g in top if g) / denominator if denominator else 0.0


def reciprocal_rank(j: Judged, k: int | None = None) -> float:
    """1 / the rank of the first relevant document among the first k, 0 when none is (recip_rank)."""
    return next((1.0 / rank for rank, g in enumerate(j.top(k), 1) if g), 0.0)


def _dcg(gains: Sequence[float]) -> float:
    return sum(g / math.log2(rank + 1) for rank, g in enumerate(gains, 1) if g)


def ndcg(j: Judged, k: int | None = None) -> float:
    """DCG / ideal DCG, gain = the grade (linear), discount log2(rank + 1); the ideal ranks every relevant document
    by grade, cut at k as the list is (ndcg, ndcg_cut_k)."""
    ideal = sorted(j.relevant, reverse=True)
    return _dcg(j.top(k)) / _dcg(ideal if k is None else ideal[:k])


def average_precision(j: Judged, k: int | None = None) -> float:
    """The mean over every relevant document of the precision at its rank, 0 for one not among the first k (map,
    map_cut_k)."""
    found, total = 0, 0.0
    for rank, g in enumerate(j.top(k), 1):
        if g:
            found += 1
            total += found / rank
    return total / len(j.relevant)
