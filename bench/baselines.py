"""Simple baselines that bench/judge_quality.py sets beside RAGScope's metrics.

A metric earns its cost (an LLM judge, claim extraction) only if it agrees with human labels
better than something cheap does. These are the cheap things: lexical overlap, the embedding
similarities RAGScope already ships, and the answer's length (judges, and humans, are known to
favour longer answers; a metric that only tracks length should be seen for what it is).

Every function takes two equal-length lists of texts, candidates (answers) and references, and
returns one float per pair as a numpy array; `BASELINES` lists them, name -> function(cands, refs),
so a caller can compute all of them in one loop:

    scores = {name: f(answers, references) for name, f in BASELINES.items()}

token_f1 / token_recall / token_precision
    SQuAD v2's official `compute_f1` arithmetic and answer normalisation, reproduced exactly
    (see `squad_tokens`). recall = overlap / reference tokens, precision = overlap / candidate
    tokens (the useful one when the "reference" is a retrieved passage). Both sides empty after
    normalisation -> 1.0, one side empty -> 0.0, as in SQuAD (where an empty reference means "no
    answer").
rouge_l
    `evaluators.maths.text.rouge_l_f1`, the project's ROUGE-L F1 (its own tokens, not SQuAD's); 0.0
    when either side is empty, both included.
minilm_cosine
    Cosine of the packaged all-MiniLM-L6-v2 sentence vectors (`evaluators.judges.embeddings.encode`).
bertscore_minilm
    BERTScore F1 on the same model's token vectors (`evaluators.judges.embeddings.token_embeddings` and
    `evaluators.metrics.semantic.bertscore_prf`): greedy matching, no idf, no rescaling.
length
    The candidate's length in whitespace-separated words (ignores refs).

The two embedding baselines score a pair 0.0 when either text is empty or whitespace only, the
rule RAGScope's semantic metrics apply (seed 003), where SQuAD would give 1.0 to two empty texts.
"""
from __future__ import annotations

import sys
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from bench/ as a script's sibling, as the other bench files
    sys.path.insert(0, str(ROOT))

from evaluators.judges import embeddings  # noqa: E402
from evaluators.metrics.semantic import bertscore_prf  # noqa: E402
from evaluators.maths.text import rouge_l_f1, squad_tokens  # noqa: E402

__all__ = [
    "BASELINES",
    "squad_tokens",
    "token_f1",
    "token_recall",
    "token_precision",
    "rouge_l",
    "minilm_cosine",
    "bertscore_minilm",
    "length",
]

# squad_tokens (evaluators.maths.text, shared with the offline correctness scorer) is the official script's
# normalisation: `string.punctuation` only, so "don't" -> "dont" but a curly "don’t" keeps its
# apostrophe, and "state-of-the-art" becomes one token: "SQuAD token F1" means what it means elsewhere.
# Pairs per token_embeddings call in bertscore_minilm: a text's token vectors take up to
# 256 x 384 float32 (384 KiB), so all of a benchmark's at once could need gigabytes.
_BERTSCORE_CHUNK = 128


def _texts(cands: Sequence[str], refs: Sequence[str] | None) -> tuple[list[str], list[str]]:
    """Both sides as lists of str, same length; anything else is a ValueError naming the row."""
    out = []
    for name, values in (("cands", cands), ("refs", refs)):
        values = [] if values is None else list(values)
        for i, v in enumerate(values):
            if not isinstance(v, str):
                raise ValueError(f"{name}[{i}] must be a str, got {type(v).__name__}: {v!r}")
        out.append(values)
    if refs is not None and len(out[0]) != len(out[1]):
        raise ValueError(
            f"cands and refs must have the same length (one reference per candidate); "
            f"got {len(out[0])} and {len(out[1])}"
        )
    return out[0], out[1]


def _overlaps(cands: Sequence[str], refs: Sequence[str]) -> np.ndarray:
    """(n, 3) int array: bag-of-tokens overlap, candidate tokens, reference tokens per pair."""
    cands, refs = _texts(cands, refs)
    bags: dict[str, Counter[str]] = {}  # a passage or reference shared by many pairs: once

    def bag(text: str) -> Counter[str]:
        if text not in bags:
            bags[text] = Counter(squad_tokens(text))
        return bags[text]

    out = np.zeros((len(cands), 3), dtype=np.int64)
    for i, (c, r) in enumerate(zip(cands, refs)):
        bc, br = bag(c), bag(r)
        out[i] = sum((bc & br).values()), bc.total(), br.total()
    return out


def _ratio(numerator: np.ndarray, denominator: np.ndarray, both_empty: np.ndarray) -> np.ndarray:
    out = np.where(both_empty, 1.0, 0.0)  # SQuAD: 1 if both are empty, 0 if only one is
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def token_precision(cands: Sequence[str], refs: Sequence[str]) -> np.ndarray:
    """Share of the candidate's SQuAD tokens found in the reference (bag overlap / candidate)."""
    common, n_cand, n_ref = _overlaps(cands, refs).T
    return _ratio(common, np.where(n_ref > 0, n_cand, 0), (n_cand == 0) & (n_ref == 0))


def token_recall(cands: Sequence[str], refs: Sequence[str]) -> np.ndarray:
    """Share of the reference's SQuAD tokens found in the candidate (bag overlap / reference)."""
    common, n_cand, n_ref = _overlaps(cands, refs).T
    return _ratio(common, np.where(n_cand > 0, n_ref, 0), (n_cand == 0) & (n_ref == 0))


def token_f1(cands: Sequence[str], refs: Sequence[str]) -> np.ndarray:
    """SQuAD v2's token F1: 2PR / (P + R) = 2 overlap / (candidate + reference tokens)."""
    common, n_cand, n_ref = _overlaps(cands, refs).T
    # Written as 2c / (|c| + |r|), equal to 2PR/(P+R); 0 overlap -> 0, as in the script.
    return _ratio(2 * common, np.where((n_cand > 0) & (n_ref > 0), n_cand + n_ref, 0),
                  (n_cand == 0) & (n_ref == 0))


def rouge_l(cands: Sequence[str], refs: Sequence[str]) -> np.ndarray:
    """ROUGE-L F1 per pair, `evaluators.maths.text.rouge_l_f1` (0.0 when either side is empty)."""
    cands, refs = _texts(cands, refs)
    return np.array([rouge_l_f1(c, r) for c, r in zip(cands, refs)], dtype=float)


def _non_empty_pairs(cands: list[str], refs: list[str]) -> list[int]:
    return [i for i, (c, r) in enumerate(zip(cands, refs)) if c.strip() and r.strip()]


def minilm_cosine(cands: Sequence[str], refs: Sequence[str]) -> np.ndarray:
    """Cosine of the all-MiniLM-L6-v2 sentence vectors of each pair (0.0 for an empty side).

    The distinct texts of both lists are encoded once, in one call; the vectors are unit
    length, so the cosine is their dot product (clipped to [-1, 1] against float32 rounding).
    """
    cands, refs = _texts(cands, refs)
    out = np.zeros(len(cands))
    todo = _non_empty_pairs(cands, refs)
    if not todo:
        return out  # no model load for nothing to embed
    distinct = list(dict.fromkeys([cands[i] for i in todo] + [refs[i] for i in todo]))
    row = {text: k for k, text in enumerate(distinct)}
    vectors = embeddings.encode(distinct).astype(np.float64)
    left = vectors[[row[cands[i]] for i in todo]]
    right = vectors[[row[refs[i]] for i in todo]]
    out[todo] = np.clip(np.einsum("ij,ij->i", left, right), -1.0, 1.0)
    return out


def bertscore_minilm(cands: Sequence[str], refs: Sequence[str]) -> np.ndarray:
    """BERTScore F1 on all-MiniLM-L6-v2 token vectors per pair (0.0 for an empty side).

    Empty means whitespace only, or no token the model reads ([CLS]/[SEP] excluded). Pairs are
    embedded _BERTSCORE_CHUNK at a time, each chunk's distinct texts once, to bound memory.
    """
    cands, refs = _texts(cands, refs)
    out = np.zeros(len(cands))
    todo = _non_empty_pairs(cands, refs)
    for start in range(0, len(todo), _BERTSCORE_CHUNK):
        chunk = todo[start:start + _BERTSCORE_CHUNK]
        distinct = list(dict.fromkeys([cands[i] for i in chunk] + [refs[i] for i in chunk]))
        vectors = dict(zip(distinct, embeddings.token_embeddings(distinct)))
        for i in chunk:
            c, r = vectors[cands[i]], vectors[refs[i]]
            if len(c) and len(r):
                out[i] = bertscore_prf(c, r)[2]
    return out


def length(cands: Sequence[str], refs: Sequence[str] | None = None) -> np.ndarray:
    """Length of each candidate in whitespace-separated words; ``refs`` is accepted and ignored
    so that it fits the BASELINES loop."""
    cands, _ = _texts(cands, None)
    return np.array([len(c.split()) for c in cands], dtype=float)


BASELINES: OrderedDict[str, Callable[[Sequence[str], Sequence[str]], np.ndarray]] = OrderedDict(
    [
        ("token_f1", token_f1),
        ("token_recall", token_recall),
        ("rouge_l", rouge_l),
        ("minilm_cosine", minilm_cosine),
        ("bertscore_minilm", bertscore_minilm),
        ("length", length),
    ]
)
