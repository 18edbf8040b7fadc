"""Judge-call requests stored once per distinct text: `pack` cuts a request's JSON text into parts,
`unpack` joins them back, byte for byte.

Every request to the LLM judge repeats text that other requests hold too: the system prompt and the JSON
schema of its purpose (in every call), and the sample's chunks, answer and reference (in two of its three
calls; the chunks also in every sample that retrieved them). `pack` cuts these out as fragments of the
request's JSON text, each named by a hash, so a store keeps each fragment once (`judge_texts`); the rest
stays inline. Nothing here reads the prompts' wording or delimiters: cuts follow the JSON structure and
the texts that the caller says the request may quote (`quoted`), wherever and however the prompt wraps them.

A part is `(literal, None)`, JSON text as it stands, or `(None, hash)`, a stored fragment. Joining the
parts gives the request exactly, since the cuts only ever split the original text. A request that is not
JSON as `json.dumps(..., ensure_ascii=False)` writes it (the judge's way) is one fragment: still exact.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable

# Shorter text stays inline: a reference (and a judge_texts row) would cost more than it saves.
MIN_SHARED = 200
# A fragment's name: the first 128 bits of its sha256, in hex (half the bytes of the whole digest, in every
# reference; a collision among even 10^9 fragments has odds below 10^-20).
HASH_CHARS = 32

Part = tuple[str | None, str | None]  # (literal JSON text, None) or (None, hash of a stored fragment)

# Token kinds of a request's JSON text.
STRUCTURE = "structure"  # JSON syntax and short values: runs on up to the next text, then stored by hash
TEXT = "text"  # a text without quoted text (a system prompt), or one quoted text: by hash
GLUE = "glue"  # what surrounds quoted texts in a string (delimiters, the question, claims): sample-specific, inline


def text_hash(fragment: str) -> str:
    """The name of a stored fragment; in DuckDB `left(sha256(text), 32)`, so anyone can check it."""
    return hashlib.sha256(fragment.encode()).hexdigest()[:HASH_CHARS]


def pack(request: str, quoted: Iterable[str] = ()) -> tuple[list[Part], dict[str, str]]:
    """`request` as parts, and the fragments they name ({hash: text}). `quoted`: texts the request's string
    values may hold (a sample's chunks, answer, reference): each is cut out wherever it occurs, so it is
    stored once however the prompt wraps it."""
    parts: list[Part] = []
    texts: dict[str, str] = {}
    for fragment, shared in _fragments(request, _escaped(quoted)):
        if shared and len(fragment) >= MIN_SHARED:
            name = text_hash(fragment)
            texts[name] = fragment
            parts.append((None, name))
        elif parts and parts[-1][1] is None:  # neighbouring literals are one part
            parts[-1] = (parts[-1][0] + fragment, None)
        else:
            parts.append((fragment, None))
    return parts, texts  # at least one part: "" is [("", None)]


def unpack(parts: Iterable[Part], text: Callable[[str], str]) -> str:
    """The request of `parts`; `text(hash)` gives a stored fragment (e.g. a dict's __getitem__)."""
    return "".join(literal if hash_ is None else text(hash_) for literal, hash_ in parts)


def _escaped(quoted: Iterable[str]) -> list[str]:
    """The quoted texts as they appear inside a JSON string (escaping is per character, so a text's
    escaped form is a substring of the escaped string that holds it), longest first, so a text that
    holds a shorter quoted one is cut whole."""
    escaped = {json.dumps(t, ensure_ascii=False)[1:-1] for t in quoted if t}
    return sorted((e for e in escaped if len(e) >= MIN_SHARED), key=len, reverse=True)


def _fragments(request: str, quoted: list[str]) -> list[tuple[str, bool]]:
    """`request` cut into (fragment, may be stored by hash), in order."""
    try:
        tokens = _tokens(json.loads(request), quoted)
    except (ValueError, RecursionError):
        return [(request, True)]
    if "".join(t for t, _ in tokens) != request:  # not the text json.dumps writes: keep it whole
        return [(request, True)]
    fragments: list[tuple[str, bool]] = []
    for i, (token, kind) in enumerate(tokens):
        if kind == STRUCTURE and i and tokens[i - 1][1] == STRUCTURE:
            fragments[-1] = (fragments[-1][0] + token, True)
        else:
            fragments.append((token, kind != GLUE))
    return fragments


_MARK = "\x00text\x00"  # stands in for each text while the rest is serialised in one go
_MARK_JSON = json.dumps(_MARK)


def _tokens(body, quoted: list[str]) -> list[tuple[str, str]]:
    """`json.dumps(body, ensure_ascii=False)` as (text, kind) tokens: the JSON around texts (`_marked`) is
    STRUCTURE, each text's content is cut by `_cut`. (A body that holds the mark itself gives a text that
    differs from the request, so the caller keeps the request whole.)"""
    text_values: list[str] = []
    pieces = json.dumps(_marked(body, text_values), ensure_ascii=False).split(_MARK_JSON)
    tokens = [(pieces[0], STRUCTURE)]
    for text, after in zip(text_values, pieces[1:]):
        tokens += [('"', STRUCTURE), *_cut(json.dumps(text, ensure_ascii=False)[1:-1], quoted), ('"', STRUCTURE),
                   (after, STRUCTURE)]
    return tokens


def _marked(value, text_values: list[str]):
    """`value` with each text replaced by _MARK (kept in `text_values`). A text is a string value of MIN_SHARED
    characters or more, or one with a line break (a message's content, however short, so that the JSON
    after it, the schema, stays the same from request to request); names, enum values and one-line
    descriptions stay part of the JSON around them."""
    if isinstance(value, dict):
        return {key: _marked(item, text_values) for key, item in value.items()}
    if isinstance(value, list):
        return [_marked(item, text_values) for item in value]
    if isinstance(value, str) and (len(value) >= MIN_SHARED or "\n" in value):
        text_values.append(value)
        return _MARK
    return value


def _cut(content: str, quoted: list[str]) -> list[tuple[str, str]]:
    """A text's content as TEXT tokens (each quoted text where it occurs, never two overlapping) and the
    GLUE between them; a text that quotes nothing is one TEXT token."""
    spans: list[tuple[int, int]] = []
    for text in quoted:
        start = content.find(text)
        while start != -1:
            end = start + len(text)
            if any(s < end and start < e for s, e in spans):
                start = content.find(text, start + 1)
            else:
                spans.append((start, end))
                start = content.find(text, end)
    if not spans:
        return [(content, TEXT)]
    tokens, position = [], 0
    for start, end in sorted(spans):
        if start > position:
            tokens.append((content[position:start], GLUE))
        tokens.append((content[start:end], TEXT))
        position = end
    if position < len(content):
        tokens.append((content[position:], GLUE))
    return tokens
