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


# --------------------------------------------------------------------------- chunks without ids

MATCH_SHARE = 0.8  # of the shorter text's distinct words found in the other
MATCH_MIN_WORDS = 5  # distinct words the shorter text needs: a 2-word chunk matches too much
MATCH_RULE = (f"a chunk matches a reference context when at least {MATCH_SHARE:.0%} of the distinct words of the "
              f"shorter of the two (lowercase [a-z0-9]+ runs, at least {MATCH_MIN_WORDS}) occur in the other; each "
              "chunk counts for the reference context it shares the most with (ties: the first), and only the first "
              "chunk to match a reference context is relevant, as trec_eval counts a document once")


def overlap(chunk: frozenset[str], reference: frozenset[str]) -> float:
    """The share of the shorter word set found in the other (0 when the shorter has too few words)."""
    shorter = min(len(chunk), len(reference))
    return len(chunk & reference) / shorter if shorter >= MATCH_MIN_WORDS else 0.0


def matched_by_text(chunks: Sequence[frozenset[str]], references: Sequence[frozenset[str]]
                    ) -> tuple[tuple[str, ...], dict[str, float]]:
    """Ids for chunks that carry none, read from the reference contexts (`MATCH_RULE`): a chunk that matches reference
    context j is document `ref-j`, every other chunk its own `chunk-i`; every reference context is relevant (grade 1).
    The words of each text are given as sets (`maths.text.tokens`)."""
    ranked, claimed = [], set()
    for i, words in enumerate(chunks, 1):
        shares = [overlap(words, ref) for ref in references]
        best = max(range(len(shares)), key=shares.__getitem__, default=None)
        doc = f"ref-{best + 1}" if best is not None and shares[best] >= MATCH_SHARE else None
        ranked.append(doc if doc is not None and doc not in claimed else f"chunk-{i}")
        claimed.add(doc)
    return tuple(ranked), {f"ref-{j}": 1.0 for j in range(1, len(references) + 1)}
