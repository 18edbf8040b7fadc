"""The offline judge's 1-5 faithfulness rating: claim-level faithfulness blended with word support.

Seed 001 rates whether the answer is "grounded in the retrieved context". Claim-level faithfulness
(seed 002: the share of the answer's claims the chunks support) counts a claim as all or nothing, so
a two-claim answer scores 0, 0.5 or 1, and the small offline verifier misses support people see. The
share of the answer's words found in the chunks (`word_support`, SQuAD tokens) tracks people better on
extractive answers (BEGIN, InspectorRAGet's ClapNQ ratings) but is blind to a changed fact that keeps
the words (SummEdits, Fool-Me-Twice), where the claims do better. The rating reads both:

    grounded = w x faithfulness + (1 - w) x word_support        judge_faithfulness = round(1 + 4 grounded, 1)

w is chosen on the dev parts of those four sets (`python -m calibration.fit_grounding`, which writes
weights/grounding.json with every candidate's dev statistics); bench/judge_quality.py reports the test
parts. The faithfulness metric itself stays seed 002's ratio.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from evaluators.records import OK, Result
from evaluators.maths.text import squad_tokens, token_overlap

WEIGHTS = Path(__file__).with_name("weights") / "grounding.json"


def word_support(answer: str, chunks: Sequence[str]) -> float | None:
    """Share of the answer's SQuAD tokens found in the chunks (repeats counted as SQuAD does); 1.0 for
    an answer with no token (nothing in it is unsupported); None without chunk text."""
    context = " ".join(chunks)
    if not squad_tokens(context):
        return None
    if not squad_tokens(answer):
        return 1.0
    return token_overlap(answer, context)[0]


@lru_cache(maxsize=1)
def claims_weight() -> float:
    """w, the weight of claim-level faithfulness (module doc)."""
    return float(json.loads(WEIGHTS.read_text())["claims_weight"])


def grounded(faithfulness: Result, support: float | None) -> Result:
    """The blend in [0, 1] of one answer; faithfulness as it is where it is not ok or there is no
    chunk text (seed 000's "No context to verify." stays)."""
    if faithfulness.status != OK or support is None:
        return faithfulness
    w = claims_weight()
    value = round(w * faithfulness.value + (1 - w) * support, 4)
    return Result(value, detail=f"{w:g} x faithfulness {faithfulness.value:.3f} + "
                                f"{1 - w:g} x word support {support:.3f}")
