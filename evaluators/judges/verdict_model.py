"""The offline judge's verdict on one (claim, passage) pair, from the heuristic and the cross-encoder.

Neither part alone agrees with people everywhere: the word-coverage heuristic (numbers, negations,
names) is precise on extractive answers, the fine-tuned cross-encoder (`nli.py`) reads paraphrase and
contradiction the heuristic misses. A multinomial logistic model over both (`SIGNALS`, computed by
`offline.signals`) decides, fitted by `python -m calibration.fit_verdicts` on dev items the cross-
encoder never trained on (its validation slice); weights in `weights/verdict_model.json` (a few
hundred bytes). The most likely of supported / contradicted / not_found is the verdict.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np

from evaluators.judges import nli

WEIGHTS = Path(__file__).with_name("weights") / "verdict_model.json"
LABELS = nli.LABELS  # supported, contradicted, not_found
SIGNALS = ("heuristic_supported", "heuristic_contradicted", "heuristic_not_found",
           "nli_supported", "nli_contradicted", "nli_not_found", "coverage", "cosine")


@lru_cache(maxsize=1)
def _model() -> tuple[np.ndarray, np.ndarray]:
    fitted = json.loads(WEIGHTS.read_text())
    if tuple(fitted["signals"]) != SIGNALS or tuple(fitted["labels"]) != LABELS:
        raise RuntimeError(f"{WEIGHTS} was fitted on other signals or labels: re-run python -m calibration.fit_verdicts")
    return np.array(fitted["coefficients"], dtype=np.float64), np.array(fitted["intercepts"], dtype=np.float64)


def scores(x: np.ndarray) -> np.ndarray:
    """The three labels' logits for one row of signals, rounded (ties and platforms: deterministic)."""
    coefficients, intercepts = _model()
    return np.round(coefficients @ x + intercepts, 6)


def verdict(x: np.ndarray) -> str:
    return LABELS[int(np.argmax(scores(x)))]
