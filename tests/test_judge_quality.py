"""bench/judge_quality.py's plumbing: items through the real engine, and the pieces of its tables."""
import numpy as np
import pandas as pd

from bench.engine_scores import Scored, score_items
from bench.judge_quality import best_threshold, response_verdict, three_way
from calibration.sets import subsample
from calibration.sets import CONTRADICTED, NOT_FOUND, SUPPORTED, Item


def item(item_id: str, answer: str, passage: str) -> Item:
    return Item("t", item_id, item_id, "", "", answer, (passage,), None, "")


def test_items_are_scored_through_the_engine_and_read_back_per_item(tmp_path):
    items = [item("a", "The museum is open on Sundays.", "The museum is open on Sundays."),
             item("b", "Einstein was born in 1879.", "Einstein was born in 1897 in Ulm."),
             item("c", "Paris is the capital of France.", "Bananas grow in the tropics.")]
    scored = score_items(items, ["faithfulness"], tmp_path / "q.duckdb")
    assert list(scored.scores["faithfulness"].reindex(["a", "b", "c"])) == [1.0, 0.0, 0.0]
    assert set(scored.statuses["faithfulness"]) == {"ok"}
    assert list(response_verdict(scored, items)) == [SUPPORTED, CONTRADICTED, NOT_FOUND]
    assert set(scored.chunks["item_id"]) == {"a", "b", "c"}


def test_response_verdict_any_contradiction_then_all_supported():
    claims = pd.DataFrame({"item_id": ["x", "x", "y", "y"], "source": "answer", "claim_idx": [0, 1, 0, 1],
                           "text": "", "verdict": [SUPPORTED, CONTRADICTED, SUPPORTED, NOT_FOUND]})
    empty = pd.DataFrame()
    scored = Scored(empty, empty, empty, claims, empty)
    got = response_verdict(scored, [item("x", "", ""), item("y", "", ""), item("z", "", "")])
    assert list(got) == [CONTRADICTED, NOT_FOUND, NOT_FOUND]  # z has no claim: not_found


def test_baseline_rules_and_the_fixed_subsample():
    assert list(three_way(np.array([0.1, 0.5, 0.9]), 0.3, 0.8)) == [NOT_FOUND, CONTRADICTED, SUPPORTED]
    scores, truth = np.array([0.1, 0.2, 0.7, 0.9]), np.array([False, False, True, True])
    assert 0.2 < best_threshold(scores, truth) <= 0.7
    many = [item(str(i), "", "") for i in range(50)]
    assert subsample(many, 10) == subsample(list(reversed(many)), 10) and len(subsample(many, 10)) == 10
