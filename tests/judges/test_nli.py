"""The claim-verification cross-encoder (evaluators/judges/nli.py): offline, sane, deterministic, small."""
from __future__ import annotations

import socket

import numpy as np
import pytest

from evaluators.judges import nli

GUITAR = "A man is playing a guitar."


@pytest.fixture(scope="module")
def offline():
    """Any attempt to open a network connection while the model loads fails the test."""
    real = socket.socket.connect

    def refuse(self, address):
        raise AssertionError(f"network access attempted: {address}")

    socket.socket.connect = refuse
    try:
        nli.model()
    finally:
        socket.socket.connect = real
    return nli


def _top(premise: str, hypothesis: str) -> str:
    probs = nli.probabilities([premise], [hypothesis])[0]
    return nli.LABELS[int(np.argmax(probs))]


def test_labels():
    assert nli.LABELS == ("supported", "contradicted", "not_found")


@pytest.mark.parametrize(
    ("hypothesis", "expected"),
    [
        ("A person plays an instrument.", "supported"),
        ("Nobody is playing music.", "contradicted"),
        ("The man is famous.", "not_found"),
    ],
)
def test_obvious_pairs(offline, hypothesis, expected):
    assert _top(GUITAR, hypothesis) == expected


def test_shape_and_sums(offline):
    premises = [GUITAR, "The Eiffel Tower is in Paris. It was completed in 1889.", "x"]
    hypotheses = ["A man plays.", "The Eiffel Tower was finished in 1889.", "An unrelated claim about cats."]
    probs = nli.probabilities(premises, hypotheses)
    assert probs.shape == (3, 3)
    assert np.all(probs >= 0) and np.all(probs <= 1)
    assert np.allclose(probs.sum(axis=1), 1.0, atol=1e-3)
    assert nli.probabilities([], []).shape == (0, 3)
    with pytest.raises(ValueError):
        nli.probabilities([GUITAR], [])


def test_same_pair_alone_and_in_a_batch(offline):
    alone = nli.probabilities([GUITAR], ["Nobody is playing music."])[0]
    long_premise = " ".join(["The committee met on Tuesday to discuss the budget for the coming year."] * 12)
    premises = [long_premise, "Cats sleep.", GUITAR] + [f"Sentence number {i} about the weather." for i in range(40)]
    hypotheses = ["The budget was discussed.", "Dogs bark loudly at night.", "Nobody is playing music."] + [
        "It rained." for _ in range(40)
    ]
    nli._cache.clear()  # computed again, among others: int8 must not let batch mates move a pair's numbers
    batched = nli.probabilities(premises, hypotheses)
    assert np.array_equal(batched[2], alone)
    assert np.array_equal(nli.probabilities(premises[:2], hypotheses[:2]), batched[:2])  # from the cache
    # and the claim is never truncated away: a very long premise still gives a valid row
    assert np.isclose(batched[0].sum(), 1.0, atol=1e-3)


def test_weight_files_are_small():
    weights = nli.WEIGHTS.parent
    files = [nli.WEIGHTS, weights / "nli_minilm.json", weights / "NOTICE"]
    assert all(p.is_file() for p in files), files
    total = sum(p.stat().st_size for p in files)
    assert total <= 30 * 1024 * 1024, total
