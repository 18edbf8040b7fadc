"""Tests of bench/baselines.py: hand-computed token overlaps, the official SQuAD v2 script as the
reference for the lexical ones, and the embedding baselines' fixed points (identity = 1) and order
(paraphrase > unrelated). The model loads once per process (~10 s)."""
from __future__ import annotations

import collections
import re
import string

import numpy as np
import pytest

from bench import baselines as bl
from evaluators.judges import embeddings
from evaluators.metrics.semantic import bertscore_prf
from evaluators.maths.text import rouge_l_f1


# The official SQuAD v2.0 evaluation script's functions, verbatim (the reference implementation).
def _normalize_answer(s):
    def remove_articles(text):
        regex = re.compile(r"\b(a|an|the)\b", re.UNICODE)
        return re.sub(regex, " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def _get_tokens(s):
    if not s:
        return []
    return _normalize_answer(s).split()


def _compute_f1(a_gold, a_pred):
    gold_toks = _get_tokens(a_gold)
    pred_toks = _get_tokens(a_pred)
    common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
    num_same = sum(common.values())
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        return int(gold_toks == pred_toks)
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred_toks)
    recall = 1.0 * num_same / len(gold_toks)
    return (2 * precision * recall) / (precision + recall)


# ------------------------------------------------------------------------------------------------
# token F1 / recall / precision


def test_token_scores_hand_computed():
    # "The cat sat." -> [cat, sat]; "a cat sat down" -> [cat, sat, down]; overlap 2
    # P = 2/2, R = 2/3, F1 = 2 * 1 * 2/3 / (1 + 2/3) = 0.8
    cands, refs = ["The cat sat."], ["a cat sat down"]
    assert bl.token_precision(cands, refs).tolist() == [1.0]
    assert bl.token_recall(cands, refs) == pytest.approx([2 / 3])
    assert bl.token_f1(cands, refs) == pytest.approx([0.8])


def test_token_scores_count_repeated_tokens_once_per_match():
    # [cat, cat, cat] vs [cat, dog]: bag overlap min(3, 1) = 1 -> P 1/3, R 1/2, F1 0.4
    cands, refs = ["the the cat cat cat"], ["cat dog"]
    assert bl.token_precision(cands, refs) == pytest.approx([1 / 3])
    assert bl.token_recall(cands, refs) == pytest.approx([1 / 2])
    assert bl.token_f1(cands, refs) == pytest.approx([0.4])


def test_squad_normalisation():
    assert bl.squad_tokens("The U.S. isn't  an ally!") == ("us", "isnt", "ally")
    assert bl.squad_tokens("state-of-the-art") == ("stateoftheart",)  # one token, as in SQuAD
    assert bl.squad_tokens("Theatre, an anthem") == ("theatre", "anthem")  # whole words only
    assert bl.squad_tokens("don’t") == ("don’t",)  # ASCII punctuation only, as in the script
    assert bl.squad_tokens("") == () and bl.squad_tokens("A. The!") == ()


def test_token_scores_empty_conventions():
    cands = ["", "The.", "cat", "", "  "]
    refs = ["", "", "", "cat", "a"]
    # both empty after normalisation -> 1; exactly one empty -> 0
    expected = [1.0, 1.0, 0.0, 0.0, 1.0]
    for f in (bl.token_f1, bl.token_recall, bl.token_precision):
        assert f(cands, refs).tolist() == expected
    assert [_compute_f1(r, c) for c, r in zip(cands, refs)] == expected


def test_token_f1_matches_the_official_script():
    rng = np.random.default_rng(0)
    words = ["The", "a", "an", "cat", "cat,", "Sat", "sat.", "mat", "U.S.", "don't", "(1999)",
             "state-of-the-art", "the-end", "42", "", "theatre", "ÉCOLE", "école"]
    cands = [" ".join(rng.choice(words, size=rng.integers(0, 8))) for _ in range(300)]
    refs = [" ".join(rng.choice(words, size=rng.integers(0, 8))) for _ in range(300)]
    expected = [_compute_f1(r, c) for c, r in zip(cands, refs)]
    assert bl.token_f1(cands, refs) == pytest.approx(expected, abs=1e-12)
    # recall and precision from the script's own quantities
    for c, r, rec, prec in zip(cands, refs, bl.token_recall(cands, refs),
                               bl.token_precision(cands, refs)):
        ct, rt = _get_tokens(c), _get_tokens(r)
        same = sum((collections.Counter(ct) & collections.Counter(rt)).values())
        if not ct or not rt:
            assert rec == prec == float(ct == rt)
        else:
            assert (rec, prec) == pytest.approx((same / len(rt), same / len(ct)))


def test_token_scores_identity_and_unrelated():
    texts = ["Paris is the capital of France.", "42", "The answer is in chapter three."]
    for f in (bl.token_f1, bl.token_recall, bl.token_precision):
        assert f(texts, texts).tolist() == [1.0, 1.0, 1.0]
        assert f(["Bananas grow on plants."], ["Paris is the capital of France."]).tolist() == [0.0]


def test_token_precision_against_a_passage():
    passage = "Marie Curie won the Nobel Prize in Physics in 1903 and in Chemistry in 1911."
    cands = ["Curie won in 1911.", "Einstein won in 1921."]
    # [curie, won, in, 1911] all in the passage; [einstein, won, in, 1921]: won, in only
    assert bl.token_precision(cands, [passage] * 2).tolist() == [1.0, 0.5]
    assert bl.token_recall(cands, [passage] * 2)[0] < 0.5


# ------------------------------------------------------------------------------------------------
# rouge_l and length


def test_rouge_l_is_the_projects_rouge_l_f1():
    cands = ["The cat sat on the mat.", "", "completely different words", "same text"]
    refs = ["A cat sat on a mat", "something", "nothing alike here", "same text"]
    out = bl.rouge_l(cands, refs)
    assert out.tolist() == [rouge_l_f1(c, r) for c, r in zip(cands, refs)]
    assert out[3] == 1.0 and out[1] == 0.0


def test_length_counts_words():
    assert bl.length(["The cat  sat.\n down", "", "  ", "one"]).tolist() == [4.0, 0.0, 0.0, 1.0]
    assert bl.length(["a b"], ["ignored", "refs"]).tolist() == [2.0]


# ------------------------------------------------------------------------------------------------
# embedding baselines

PARAPHRASE = ("The capital of France is Paris.", "Paris is France's capital city.")
UNRELATED = ("The capital of France is Paris.", "Photosynthesis turns light into chemical energy.")


@pytest.mark.parametrize("f", [bl.minilm_cosine, bl.bertscore_minilm], ids=["cosine", "bertscore"])
def test_embedding_baselines_identity_order_and_empty(f):
    texts = ["The capital of France is Paris.", "Photosynthesis needs light."]
    assert f(texts, texts) == pytest.approx([1.0, 1.0], abs=1e-5)
    scores = f([PARAPHRASE[0], UNRELATED[0]], [PARAPHRASE[1], UNRELATED[1]])
    assert scores[0] > scores[1] + 0.1
    assert np.all((-1.0 <= scores) & (scores <= 1.0))
    assert f(["", "Paris", "   "], ["Paris", "", "   "]).tolist() == [0.0, 0.0, 0.0]
    assert f([], []).shape == (0,)


def test_minilm_cosine_is_the_dot_product_of_encode_and_encodes_each_text_once(monkeypatch):
    cands = [PARAPHRASE[0], UNRELATED[0], PARAPHRASE[0]]
    refs = [PARAPHRASE[1], UNRELATED[1], PARAPHRASE[0]]
    calls = []
    real = embeddings.encode

    def spy(texts):
        calls.append(list(texts))
        return real(texts)

    monkeypatch.setattr(embeddings, "encode", spy)
    out = bl.minilm_cosine(cands, refs)
    assert len(calls) == 1 and sorted(calls[0]) == sorted(set(cands + refs))
    vectors = real(cands + refs).astype(float)
    expected = np.einsum("ij,ij->i", vectors[:3], vectors[3:])
    assert out == pytest.approx(expected, abs=1e-6)


def test_bertscore_minilm_is_bertscore_prf_f1():
    c, r = PARAPHRASE
    tokens = embeddings.token_embeddings([c, r])
    assert bl.bertscore_minilm([c], [r])[0] == pytest.approx(bertscore_prf(*tokens)[2], abs=1e-6)


def test_bertscore_minilm_chunks_give_the_same_scores(monkeypatch):
    cands = [PARAPHRASE[0], UNRELATED[0], "", "Paris."]
    refs = [PARAPHRASE[1], UNRELATED[1], "x", PARAPHRASE[0]]
    whole = bl.bertscore_minilm(cands, refs)
    monkeypatch.setattr(bl, "_BERTSCORE_CHUNK", 1)
    assert bl.bertscore_minilm(cands, refs) == pytest.approx(whole, abs=1e-6)
    assert whole[2] == 0.0


# ------------------------------------------------------------------------------------------------
# BASELINES and input checks


def test_baselines_loop():
    assert list(bl.BASELINES) == [
        "token_f1", "token_recall", "rouge_l", "minilm_cosine", "bertscore_minilm", "length",
    ]
    cands = ["The cat sat.", "", "Paris is the capital."]
    refs = ["a cat sat down", "nothing", "The capital is Paris."]
    scores = {name: f(cands, refs) for name, f in bl.BASELINES.items()}
    for name, values in scores.items():
        assert isinstance(values, np.ndarray), name
        assert values.dtype == float and values.shape == (3,), name
    assert scores["token_f1"][0] == pytest.approx(0.8)
    assert scores["length"].tolist() == [3.0, 0.0, 4.0]


@pytest.mark.parametrize("f", list(bl.BASELINES.values())[:-1] + [bl.token_precision])
def test_inputs_are_checked(f):
    with pytest.raises(ValueError, match="same length"):
        f(["a", "b"], ["a"])
    with pytest.raises(ValueError, match=r"refs\[1\] must be a str"):
        f(["a", "b"], ["a", None])
    with pytest.raises(ValueError, match=r"cands\[0\] must be a str"):
        f([float("nan")], ["a"])
