"""Rank metrics of the retrieved list against the documents that answer the question (trec_eval's definitions; the
arithmetic is evaluators.maths.ranking, checked against pytrec_eval).

Which retrieved documents are relevant:
* the golden item names its relevant documents (`relevant_ids`, a qrels file): a chunk is relevant when its id has a
  grade > 0 there; the ideal ranking is over every relevant document, retrieved or not;
* it names none but has `reference_contexts`: chunks are matched to them by text (`maths.ranking.MATCH_RULE`), every
  reference context one relevant document;
* neither: the metric does not apply (`not_applicable`, with the reason), never a 0.
An empty retrieved list retrieves nothing: every rank metric is 0 there.

Each metric is also computed at cut-offs, `id_recall@5` (`registry.find`); a run's cut-offs are chosen when it
starts (`run --k`, `evaluate(k=...)`; default those of 1, 3, 5, 10 shorter than the longest retrieved list:
`cutoff_ids`).
Stored as scores rows (store.py) like every metric; the Diagnosis screen reads `id_recall`.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from evaluators.maths import ranking as rk
from evaluators.maths.text import tokens
from evaluators.metrics.registry import REGISTRY, metric
from evaluators.records import OK, SKIPPED, Result, Sample, not_applicable

DEFAULT_CUTOFFS = (1, 3, 5, 10)
_NONE_NAMED = not_applicable("the question names no relevant document (no relevant_ids, no reference_contexts)")
_NONE_RELEVANT = not_applicable("the golden set grades none of this question's documents above 0")
_WHOLE = ("relevant documents are the golden item's relevant_ids (a chunk's id with a grade > 0) or, where it names "
          "none, its reference_contexts matched by text: " + rk.MATCH_RULE + ". Not applicable where the question "
          "names neither (trec_eval).")


def judged(sample: Sample) -> rk.Judged | Result:
    """The sample's retrieved list as trec_eval sees it, or why no rank metric applies (a Result)."""
    golden, chunks = sample.golden, sample.output.contexts
    if golden.relevant_ids:
        ranked, grades = [c.chunk_id for c in chunks], golden.grades
    elif golden.reference_contexts:
        ranked, grades = rk.matched_by_text([frozenset(tokens(c.text)) for c in chunks],
                                            [frozenset(tokens(t)) for t in golden.reference_contexts])
    else:
        return _NONE_NAMED
    if not any(g > 0 for g in grades.values()):
        return _NONE_RELEVANT
    try:
        return rk.Judged.of(ranked, grades)
    except ValueError as exc:  # a list naming a document twice, stored before the loaders refused it
        return Result(None, SKIPPED, f"{exc}; reload the outputs with one id per retrieved document")


def _scored(samples: Sequence[Sample], measure: Callable[[rk.Judged, int | None], float], k: int | None
            ) -> list[Result]:
    out = []
    for s in samples:
        j = judged(s)
        if isinstance(j, Result):
            out.append(j)
            continue
        top = j.top(k)
        ranks = [r for r, g in enumerate(top, 1) if g]
        where = f" (rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))})" if ranks else ""
        scope = f"in the first {k}" if k is not None else f"in {len(top)} retrieved"
        out.append(Result(measure(j, k), OK, f"{len(ranks)} of {len(j.relevant)} relevant documents {scope}{where}",
                          counts={"relevant": len(j.relevant), "retrieved": len(top),
                                  "relevant_retrieved": len(ranks)}))
    return out


def _rank_metric(id: str, scale: str, formula: str, measure: Callable[[rk.Judged, int | None], float]) -> None:
    @metric(id, family="ranking", scale=scale, higher_is_better=True, seed="trec_eval", uses=("contexts",),
            formula=f"{formula}; {_WHOLE}", cutoffs=True)
    def compute(samples: Sequence[Sample], context: Any = None, k: int | None = None) -> list[Result]:
        return _scored(samples, measure, k)


_rank_metric("id_hit", "binary", "1 if a relevant document was retrieved, else 0 (trec_eval success)", rk.hit)
_rank_metric("id_recall", "ratio", "relevant documents retrieved / relevant documents (trec_eval set_recall, "
             "recall_k)", rk.recall)
_rank_metric("id_precision", "ratio", "relevant documents retrieved / documents retrieved (trec_eval set_P; @k: "
             "/ k, P_k, even where fewer were retrieved)", rk.precision)
_rank_metric("id_mrr", "ratio", "1 / rank of the first relevant document retrieved, 0 if none (trec_eval "
             "recip_rank); its mean over questions is the MRR", rk.reciprocal_rank)
_rank_metric("id_ndcg", "ratio", "DCG / ideal DCG with gain = the relevance grade (linear) and discount log2(rank + 1)"
             "; the ideal ranks every relevant document by grade, cut at k like the list (trec_eval ndcg, "
             "ndcg_cut_k)", rk.ndcg)
_rank_metric("id_map", "ratio", "average precision: the sum of the precision at the rank of each relevant document "
             "retrieved / relevant documents (trec_eval map, map_cut_k); its mean over questions is the MAP",
             rk.average_precision)

RANK_METRICS = tuple(m.id for m in REGISTRY.values() if m.cutoffs)


def cutoff_ids(metric_ids: Iterable[str], k: Sequence[int] | None, samples: Sequence[Sample], *,
               chosen: bool = True) -> list[str]:
    """The ids of `metric_ids` with, for each rank metric among them, its cut-offs `id@k` for every k in `k`; None:
    the default cut-offs (1, 3, 5, 10) shorter than the longest retrieved list of `samples` (a cut-off at or past
    every list's length repeats the whole-list value), none where no question names a relevant document (they could
    only say so). chosen=False (the default catalogue, not the user's choice): no rank metric at all where no question
    names one, so a run without relevant documents has no column that can only read "not applicable"."""
    ranked = [s for s in samples if s.golden.relevant_ids or s.golden.reference_contexts]
    ids = [m for m in metric_ids if chosen or ranked or m not in RANK_METRICS]
    if k is None:
        longest = max((len(s.output.contexts) for s in ranked), default=0)
        k = [c for c in DEFAULT_CUTOFFS if c < longest]
    return ids + [f"{m}@{c}" for m in ids if REGISTRY.get(m) is not None and REGISTRY[m].cutoffs for c in k]


def cutoff_problem(k: Sequence[int] | None) -> str | None:
    """What is wrong with cut-offs a user gave (None: nothing)."""
    if k is None:
        return None
    bad = [c for c in k if isinstance(c, bool) or not isinstance(c, int) or not 1 <= c <= 9999]
    if bad or not k:
        return ("cut-offs must be whole ranks from 1 to 9999, like 1,3,5,10; got "
                f"{', '.join(map(repr, bad)) or 'none'}")
    return None
