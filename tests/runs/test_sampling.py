"""evaluators.runs.sampling: a stratified, nested sample of questions, reproducible from its seed."""
from __future__ import annotations

import random
from collections import Counter

import pytest

from evaluators.runs import sampling
from evaluators.records import GoldenItem, RagOutput, Sample

# 7 questions in 3 strata: A (4), B (2) and the questions without a type (1)
SMALL = [("a1", "A"), ("a2", "A"), ("a3", "A"), ("a4", "A"), ("b1", "B"), ("b2", "B"), ("c1", None)]


def _questions(sizes: list[int]) -> list[tuple[str, str]]:
    return [(f"{t}-{i}", f"type{t}") for t, size in enumerate(sizes) for i in range(size)]


def test_exact_picks_of_a_hand_worked_example():
    # sha256("7:<id>") begins: a1 3e09, a2 d8ca, a3 1cd5, a4 0565, b1 4723, b2 a595, c1 4dd4. Ranked inside
    # each stratum by it, key = (rank + 0.5) / size: a4 .125, a3 .375, a1 .625, a2 .875; b1 .25, b2 .75; c1 .5
    assert sampling.order(SMALL, 7) == ["a4", "b1", "a3", "c1", "a1", "b2", "a2"]
    assert sampling.choose(SMALL, 3, 7) == ["a4", "b1", "a3"]
    assert sampling.choose(SMALL, 99, 7) == sampling.order(SMALL, 7)  # n >= M: every question


@pytest.mark.parametrize("sizes", [[50, 30, 15, 5], [7, 3, 1], [20, 20, 20], [33, 17, 6, 4, 2]])
def test_each_stratum_gets_its_proportional_share_within_one(sizes):
    questions = _questions(sizes)
    for seed in (0, 1, 12345):
        for n in range(len(questions) + 1):
            counts = Counter(qid.split("-")[0] for qid in sampling.choose(questions, n, seed))
            for t, size in enumerate(sizes):
                assert abs(counts[str(t)] - n * size / len(questions)) < 1, (sizes, seed, n, t)


def test_a_smaller_sample_is_part_of_every_larger_one():
    questions = _questions([40, 25, 10])
    for seed in (3, 99):
        for n in range(len(questions)):
            assert set(sampling.choose(questions, n, seed)) < set(sampling.choose(questions, n + 1, seed))


def test_the_seed_reproduces_the_sample_whatever_the_input_order():
    questions = _questions([40, 25, 10])
    shuffled = random.Random(5).sample(questions, len(questions))
    assert sampling.choose(questions, 20, 42) == sampling.choose(shuffled, 20, 42)
    assert set(sampling.choose(questions, 20, 42)) != set(sampling.choose(questions, 20, 43))


def test_draw_keeps_every_method_on_the_same_questions():
    golden = [GoldenItem(qid, f"q {qid}", "ref", qtype) for qid, qtype in SMALL]
    samples = [Sample(g, RagOutput(g.question_id, method, "answer")) for g in golden for method in ("x", "y")]
    drawn = sampling.draw(samples, 3, 7)
    assert sorted(s.key for s in drawn.samples) == sorted((q, m) for q in ("a4", "b1", "a3") for m in ("x", "y"))
    assert drawn.config() == {"n": 3, "of": 7, "seed": 7} and not drawn.everything
    assert sampling.draw(samples, 7, 7).everything


def test_notes_and_checks():
    assert sampling.note({"n": 1200, "of": 5000, "seed": 7}) == "sample of 1,200 of 5,000 questions (seed 7)"
    assert sampling.note(None) is None
    for n, seed in ((0, 1), (True, 1), (2.5, 1), (3, -1)):
        with pytest.raises(ValueError, match="whole number"):
            sampling.check(n, seed)
    sampling.check(3, 0)
    assert 0 <= sampling.new_seed() < sampling.SEED_LIMIT
