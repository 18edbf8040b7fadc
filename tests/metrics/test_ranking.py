"""The registered rank metrics (evaluators.metrics.ranking): which documents count as relevant (ids, grades, reference
contexts matched by text), not_applicable with the reason where a question names none, the id@k metrics, and a run
made by evaluate() (a real DuckDB file) whose stored scores equal pytrec_eval's on a generated golden set."""
from __future__ import annotations

import random

import pytest
import pytrec_eval

from evaluators import evaluate
from evaluators.maths import ranking as rk
from evaluators.metrics.ranking import RANK_METRICS, cutoff_ids
from evaluators.metrics.registry import find, in_catalogue_order, lookup, resolve
from evaluators.records import NOT_APPLICABLE, OK, SKIPPED, Chunk, GoldenItem, RagOutput, Sample
from evaluators.runs.lifecycle import RunSpec
from evaluators.store import close_store

NILE = "The Nile is about 6,650 km long and flows north through eleven countries into the sea."
AMAZON = "The Amazon carries more water than any other river and may be longer than the Nile."
NOISE = "Paris is the capital of France and has many museums along the river Seine banks."


def _sample(chunks, **golden) -> Sample:
    return Sample(GoldenItem("q", "How long is the Nile?", "6,650 km", **golden),
                  RagOutput("q", "m", "6,650 km.", tuple(chunks)))


def _one(metric_id: str, sample: Sample):
    (result,) = find(metric_id).scored([sample])
    return result


def test_the_six_ids_are_registered_with_cutoffs_and_trec_eval_as_their_seed():
    assert RANK_METRICS == ("id_hit", "id_recall", "id_precision", "id_mrr", "id_ndcg", "id_map")
    for metric_id in RANK_METRICS:
        m = find(metric_id)
        assert (m.family, m.seed, m.cutoffs, m.higher_is_better) == ("ranking", "trec_eval", True, True)
        assert find(f"{metric_id}@5").id == f"{metric_id}@5" and find(f"{metric_id}@5").k == 5
    assert find("rouge_l@5") is None and find("id_recall@0") is None and find("id_recall@x") is None
    assert lookup("id_ndcg@3").scale == "ratio" and "@3: only the first 3" in lookup("id_ndcg@3").formula
    assert in_catalogue_order(["id_recall@10", "rouge_l", "id_recall@2", "id_recall", "gone"]) == [
        "rouge_l", "id_recall", "id_recall@2", "id_recall@10", "gone"]
    with pytest.raises(KeyError, match="and at a cut-off k, id@k: id_hit"):
        resolve(["id_recall@5", "rouge_l@5"])


def test_ids_with_grades():
    s = _sample([Chunk("d9", "x"), Chunk("d2", "y"), Chunk("d1", "z")],
                relevant_ids=(("d1", 2.0), ("d2", 1.0), ("d7", 1.0), ("d9", 0.0)))
    recall = _one("id_recall", s)
    assert recall.value == pytest.approx(2 / 3) and recall.status == OK
    assert recall.detail == "2 of 3 relevant documents in 3 retrieved (ranks 2, 3)"
    assert recall.counts == {"relevant": 3, "retrieved": 3, "relevant_retrieved": 2}
    assert _one("id_mrr", s).value == 0.5
    assert _one("id_hit@1", s).value == 0.0 and _one("id_hit@2", s).value == 1.0
    assert _one("id_precision@5", s).value == pytest.approx(2 / 5)
    assert _one("id_ndcg", s).value == pytest.approx(rk.ndcg(rk.Judged.of(["d9", "d2", "d1"], s.golden.grades)))


def test_not_applicable_with_the_reason_never_zero():
    none = _sample([Chunk("1", NILE)])
    assert (_one("id_recall", none).status, _one("id_recall", none).detail) == (
        NOT_APPLICABLE, "the question names no relevant document (no relevant_ids, no reference_contexts)")
    ungraded = _sample([Chunk("d1", NILE)], relevant_ids=(("d1", 0.0),))
    assert _one("id_map@3", ungraded).status == NOT_APPLICABLE
    assert "grades none" in _one("id_map@3", ungraded).detail


def test_an_empty_retrieved_list_retrieves_nothing():
    r = _one("id_recall", _sample([], relevant_ids=(("d1", 1.0),)))
    assert (r.value, r.status) == (0.0, OK)
    assert _one("id_precision", _sample([], relevant_ids=(("d1", 1.0),))).value == 0.0


def test_a_stored_list_naming_a_document_twice_is_skipped_with_why():
    r = _one("id_recall", _sample([Chunk("d1", "a"), Chunk("d1", "b")], relevant_ids=(("d1", 1.0),)))
    assert r.status == SKIPPED and "twice" in r.detail


def test_chunks_without_ids_match_reference_contexts_by_text():
    """The rule of MATCH_RULE: 80% of the shorter text's distinct words in the other; a chunk counts once, for the
    reference context it shares most with; a reference context is found once."""
    s = _sample([Chunk("1", NOISE), Chunk("2", NILE.upper() + " Extra words here."), Chunk("3", NILE)],
                reference_contexts=(NILE, AMAZON))
    recall, precision = _one("id_recall", s), _one("id_precision", s)
    assert recall.value == 0.5 and recall.detail == "1 of 2 relevant documents in 3 retrieved (rank 2)"
    assert precision.value == pytest.approx(1 / 3)  # chunk 3 finds NILE again: not a second relevant document
    assert _one("id_mrr", s).value == 0.5


def test_the_text_rule_at_its_threshold():
    ref = frozenset("a b c d e f g h i j".split())
    assert rk.overlap(frozenset("a b c d e f g h x y".split()), ref) == 0.8  # 8 of 10: a match
    assert rk.matched_by_text([frozenset("a b c d e f g x y z".split())], [ref])[0] == ("chunk-1",)  # 7 of 10
    assert rk.matched_by_text([frozenset("a b c d e f g h x y".split())], [ref])[0] == ("ref-1",)
    assert rk.overlap(frozenset("a b c d".split()), ref) == 0.0  # 4 words: too few to say
    assert rk.matched_by_text([frozenset("a b c d e".split())], [ref])[0] == ("ref-1",)  # a piece of it


def test_default_cutoffs_go_up_to_the_longest_list_where_questions_name_relevant_documents():
    ranked = _sample([Chunk(str(i), "x") for i in range(1, 5)], relevant_ids=(("1", 1.0),))
    assert cutoff_ids(["rouge_l", "id_recall"], None, [ranked]) == ["rouge_l", "id_recall", "id_recall@1",
                                                                   "id_recall@3"]
    assert cutoff_ids(["id_hit"], None, [_sample([Chunk("1", "x")] * 12)]) == ["id_hit"]  # nothing to rank
    assert cutoff_ids(["id_hit", "id_mrr@7"], [2, 20], [ranked]) == ["id_hit", "id_mrr@7", "id_hit@2", "id_hit@20"]
    # The default catalogue (not the user's choice): no rank metric where no question names a relevant document
    unranked = _sample([Chunk("1", "x")] * 12)
    assert cutoff_ids(["rouge_l", "id_hit"], None, [unranked], chosen=False) == ["rouge_l"]
    assert cutoff_ids(["rouge_l", "id_hit"], [2], [unranked], chosen=False) == ["rouge_l"]
    assert cutoff_ids(["id_hit"], None, [ranked, unranked], chosen=False) == ["id_hit", "id_hit@1", "id_hit@3"]


@pytest.mark.parametrize("k, words", [((0, 3), "0"), (("x",), "'x'"), ((), "none")])
def test_bad_cutoffs_are_refused_by_name(k, words):
    (problem,) = [p for p in RunSpec(k=k).problems() if p.about == "k"]
    assert problem.message.startswith("cut-offs must be whole ranks from 1 to 9999") and words in problem.message


def _generated_set(seed: int, n: int = 40):
    rnd = random.Random(seed)
    golden, outputs, qrels, runs = [], [], {}, {}
    for q in range(n):
        qid = f"q{q}"
        corpus = [f"doc{rnd.randint(0, 60)}" for _ in range(30)]
        grades = {d: rnd.choice([0, 1, 1, 2, 3]) for d in rnd.sample(sorted(set(corpus)), rnd.randint(1, 6))}
        if not any(grades.values()):
            grades[next(iter(grades))] = 1
        ranked = list(dict.fromkeys(rnd.sample(corpus, rnd.randint(0, 12))))
        if q == 0:  # one hit at rank 1 for sure
            ranked = list(dict.fromkeys([next(d for d, g in grades.items() if g), *ranked]))
        golden.append({"question_id": qid, "question": f"Question {q}?", "reference": "An answer.",
                       "relevant_ids": grades})
        outputs.append({"question_id": qid, "method": "dense", "answer": "An answer.",
                        "contexts": [{"id": d, "text": f"text of {d}"} for d in ranked]})
        qrels[qid], runs[qid] = grades, {d: float(len(ranked) - r) for r, d in enumerate(ranked)}
    return golden, outputs, qrels, runs


def test_a_run_stores_what_pytrec_eval_computes(tmp_path):
    golden, outputs, qrels, runs = _generated_set(7)
    db = tmp_path / "rank.duckdb"
    result = evaluate(golden, outputs, metrics=list(RANK_METRICS), db=db, k=[1, 3, 10])
    try:
        scores = result.scores
    finally:
        close_store(db)
    measures = {"success.1,3,10", "set_recall", "recall.1,3,10", "set_P", "P.1,3,10", "recip_rank", "ndcg",
                "ndcg_cut.1,3,10", "map", "map_cut.1,3,10"}
    trec = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate({q: r for q, r in runs.items() if r})
    names = {"id_recall": "set_recall", "id_precision": "set_P", "id_mrr": "recip_rank", "id_ndcg": "ndcg",
             "id_map": "map"} | {f"id_{ours}@{k}": f"{theirs}_{k}" for k in (1, 3, 10) for ours, theirs in
                                 (("hit", "success"), ("recall", "recall"), ("precision", "P"), ("ndcg", "ndcg_cut"),
                                  ("map", "map_cut"))}
    assert set(scores["metric"]) == set(RANK_METRICS) | {f"{m}@{k}" for m in RANK_METRICS for k in (1, 3, 10)}
    compared = 0
    for row in scores.itertuples():
        if row.metric in names and row.question_id in trec:
            assert row.value == pytest.approx(trec[row.question_id][names[row.metric]], abs=1e-12), row
            compared += 1
        elif row.question_id not in trec:  # retrieved nothing: trec_eval has no run to score, ours is 0
            assert row.value == 0.0 and row.status == OK
    assert compared > 30 * len(names)
