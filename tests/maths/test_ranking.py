"""evaluators.maths.ranking against trec_eval itself (pytrec_eval, a test dependency), exactly, on many generated
runs: graded and binary relevance, lists shorter and longer than the cut-offs, relevant documents never retrieved;
then hand-computed values and the refusals.

trec_eval orders a run by score (ties by document id), so each run is fed with scores that encode our order
(n - rank), and the whole-list measures our metrics share a name with are trec_eval's set_ and plain ones.
"""
from __future__ import annotations

import math
import random

import pytest
import pytrec_eval

from evaluators.maths import ranking as rk

CUTOFFS = (1, 2, 3, 5, 10, 20)
MEASURES = {"set_P", "set_recall", "recip_rank", "ndcg", "map", "success", "P", "recall", "ndcg_cut", "map_cut",
            "num_ret"}


def _param(measure: str) -> str:
    return f"{measure}.{','.join(map(str, CUTOFFS))}"


def _generated(seed: int):
    """One question's qrels (graded or binary, some judged not relevant, some negative) and a run over a corpus."""
    rnd = random.Random(seed)
    corpus = [f"d{i}" for i in range(rnd.randint(3, 40))]
    graded = rnd.random() < 0.5
    judged = rnd.sample(corpus, rnd.randint(1, len(corpus)))
    qrels = {doc: (rnd.choice([-1, 0, 1, 2, 3]) if graded else rnd.choice([0, 1])) for doc in judged}
    if not any(g > 0 for g in qrels.values()):
        qrels[judged[0]] = rnd.randint(1, 3)
    ranked = rnd.sample(corpus, rnd.randint(1, len(corpus)))
    return ranked, qrels


def _trec(ranked, qrels) -> dict:
    evaluator = pytrec_eval.RelevanceEvaluator({"q": qrels}, {_param(m) if m in ("success", "P", "recall", "ndcg_cut",
                                                                           "map_cut") else m for m in MEASURES})
    return evaluator.evaluate({"q": {doc: float(len(ranked) - rank) for rank, doc in enumerate(ranked)}})["q"]


def _recip_rank_at(ranked, qrels, k) -> float:
    """trec_eval has no recip_rank cut: its recip_rank of the run cut at k."""
    cut = ranked[:k]
    ev = pytrec_eval.RelevanceEvaluator({"q": qrels}, {"recip_rank"})
    return ev.evaluate({"q": {doc: float(len(cut) - r) for r, doc in enumerate(cut)}})["q"]["recip_rank"]


@pytest.mark.parametrize("seed", range(400))
def test_every_metric_and_cutoff_equals_trec_eval(seed):
    ranked, qrels = _generated(seed)
    trec = _trec(ranked, qrels)
    assert trec["num_ret"] == len(ranked)  # trec_eval read the run we meant
    j = rk.Judged.of(ranked, qrels)
    assert rk.precision(j) == pytest.approx(trec["set_P"], abs=1e-12)
    assert rk.recall(j) == pytest.approx(trec["set_recall"], abs=1e-12)
    assert rk.reciprocal_rank(j) == pytest.approx(trec["recip_rank"], abs=1e-12)
    assert rk.ndcg(j) == pytest.approx(trec["ndcg"], abs=1e-12)
    assert rk.average_precision(j) == pytest.approx(trec["map"], abs=1e-12)
    assert rk.hit(j) == float(any(qrels.get(d, 0) > 0 for d in ranked))
    for k in CUTOFFS:
        assert rk.hit(j, k) == pytest.approx(trec[f"success_{k}"], abs=1e-12), k
        assert rk.precision(j, k) == pytest.approx(trec[f"P_{k}"], abs=1e-12), k
        assert rk.recall(j, k) == pytest.approx(trec[f"recall_{k}"], abs=1e-12), k
        assert rk.ndcg(j, k) == pytest.approx(trec[f"ndcg_cut_{k}"], abs=1e-12), k
        assert rk.average_precision(j, k) == pytest.approx(trec[f"map_cut_{k}"], abs=1e-12), k
        assert rk.reciprocal_rank(j, k) == pytest.approx(_recip_rank_at(ranked, qrels, k), abs=1e-12), k


def test_the_generated_runs_cover_what_matters():
    """The comparison above sees graded runs, misses, hits at rank 1 and lists shorter than a cut-off."""
    runs = [_generated(seed) for seed in range(400)]
    assert any(max(q.values()) > 1 for _, q in runs)
    assert any(not any(q.get(d, 0) > 0 for d in r) for r, q in runs)
    assert any(q.get(r[0], 0) > 0 for r, q in runs)
    assert any(len(r) < 10 for r, _ in runs)


def test_hand_computed():
    # relevant: a (grade 2), c (1), z (1, never retrieved); retrieved b, a, c
    j = rk.Judged.of(["b", "a", "c"], {"a": 2, "c": 1, "z": 1, "b": 0})
    assert rk.hit(j, 1) == 0.0 and rk.hit(j) == 1.0
    assert rk.recall(j) == pytest.approx(2 / 3)
    assert rk.precision(j) == pytest.approx(2 / 3)
    assert rk.precision(j, 5) == pytest.approx(2 / 5)  # trec_eval divides by k
    assert rk.reciprocal_rank(j) == 0.5
    assert rk.average_precision(j) == pytest.approx((1 / 2 + 2 / 3) / 3)
    dcg = 2 / math.log2(3) + 1 / math.log2(4)
    ideal = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert rk.ndcg(j) == pytest.approx(dcg / ideal)


def test_no_relevant_document_is_refused_not_zero():
    with pytest.raises(ValueError, match="no relevant document"):
        rk.Judged.of(["a"], {"a": 0, "b": -1})


def test_a_repeated_id_and_a_bad_cutoff_are_refused():
    with pytest.raises(ValueError, match="twice"):
        rk.Judged.of(["a", "a"], {"a": 1})
    with pytest.raises(ValueError, match="cut-off"):
        rk.recall(rk.Judged.of(["a"], {"a": 1}), 0)
