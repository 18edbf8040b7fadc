"""G-Eval's probability-weighted score (Liu et al. 2023, "G-Eval: NLG Evaluation using GPT-4 with Better Human
Alignment"): where the server gives each output token's most likely alternatives with their log-probabilities, a 1-5
score written as one digit is replaced by sum(k * p_k) / sum(p_k) over the digits 1-5 among its token's alternatives,
a finer score than the one digit the model wrote. Pure functions over a chat completion's raw JSON (no I/O), so a
reply read back from the judge cache gives the same score as when it came.

    weighted_scores(response, 0, {"plain": ("criteria", 0, "score")})   # {"plain": 4.2}: where it can be said
    weighted_score(tokens, offset)   # tokens: choices[k].logprobs.content; offset: the digit's byte offset
    value_offsets(json_text)         # {("criteria", 0, "score"): 123, ...}: where each scalar value starts
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence

from evaluators.judges import reply_json

LEVELS = ("1", "2", "3", "4", "5")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")
_DECODER = json.JSONDecoder()
Path = tuple  # the keys and list positions leading to a value: ("criteria", 0, "score")


def weighted_scores(response: str | None, choice: int, paths: Mapping[str, Path]) -> dict[str, float]:
    """G-Eval's score of each key's digit, at `paths[key]` in the JSON of choice `choice` of the raw chat completion
    `response`, for the keys where the response's log-probabilities say it (none where it has none)."""
    got = choice_tokens(response, choice)
    found = reply_json.found(got[0]) if got else None
    if found is None:
        return {}
    (content, tokens), text = got, found[0]
    base, offsets = content.find(text), value_offsets(text)
    out = {}
    for key, path in paths.items():
        if (at := offsets.get(path)) is not None:
            if (score := weighted_score(tokens, len(content[:base + at].encode()))) is not None:
                out[key] = score
    return out


def weighted_score(tokens: Sequence[Mapping], offset: int) -> float | None:
    """G-Eval's score of the digit at byte `offset` of the text that `tokens` (OpenAI's
    `choices[k].logprobs.content`: each {"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob"}]}) spell;
    None when the token there is not one digit 1-5 (with or without its leading space) or its alternatives hold none."""
    start = 0
    for token in tokens:
        end = start + _length(token)
        if start <= offset < end:
            if token.get("token", "").strip() not in LEVELS:
                return None
            return _mean(token.get("top_logprobs") or ())
        start = end
    return None


def _length(token: Mapping) -> int:
    """A token's length in bytes: its `bytes` where the server gives them (a token may hold part of a character)."""
    raw = token.get("bytes")
    return len(raw) if isinstance(raw, list) else len(str(token.get("token", "")).encode())


def _mean(alternatives: Sequence[Mapping]) -> float | None:
    weights: dict[str, float] = {}
    for alt in alternatives:
        level, logprob = str(alt.get("token", "")).strip(), alt.get("logprob")
        if level in LEVELS and isinstance(logprob, (int, float)) and level not in weights:
            weights[level] = math.exp(logprob)
    total = sum(weights.values())
    if not total:
        return None
    return sum(int(level) * p for level, p in weights.items()) / total


def choice_tokens(response: str | None, choice: int = 0) -> tuple[str, list[Mapping]] | None:
    """(the content, its tokens' log-probabilities) of choice `choice` of a raw chat completion; None when it has
    no log-probabilities (a server that gives none, or was not asked)."""
    try:
        picked = json.loads(response or "")["choices"][choice]
        content, tokens = picked["message"]["content"], (picked.get("logprobs") or {}).get("content")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None
    return (content, tokens) if isinstance(content, str) and isinstance(tokens, list) and tokens else None


def value_offsets(text: str) -> dict[Path, int]:
    """The character offset where each number, boolean or null of the JSON `text` starts, by its path; {} when `text`
    is not JSON. (Python's json module keeps no positions; strings are skipped with its scanner.)"""
    found: dict[Path, int] = {}
    try:
        _scan(text, _skip(text, 0), (), found)
    except (ValueError, IndexError):
        return {}
    return found


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _scan(text: str, i: int, path: Path, found: dict[Path, int]) -> int:
    """Scan the JSON value at `i`, recording scalars' offsets; returns where it ends."""
    c = text[i]
    if c == '"':
        return _DECODER.raw_decode(text, i)[1]
    if c in "{[":
        close, k = ("}" if c == "{" else "]"), 0
        i = _skip(text, i + 1)
        while text[i] != close:
            if c == "{":
                key, i = _DECODER.raw_decode(text, i)
                i = _skip(text, i)
                if text[i] != ":":
                    raise ValueError("':' expected")
                i = _scan(text, _skip(text, i + 1), (*path, key), found)
            else:
                i = _scan(text, i, (*path, k), found)
                k += 1
            i = _skip(text, i)
            if text[i] == ",":
                i = _skip(text, i + 1)
            elif text[i] != close:
                raise ValueError(f"',' or {close!r} expected")
        return i + 1
    match = _NUMBER.match(text, i)
    if not match:
        raise ValueError("a JSON value expected")
    found[path] = i
    return match.end()
