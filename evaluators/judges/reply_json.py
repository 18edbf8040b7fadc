"""A judge reply's JSON, where the server did not hold the model to the schema (pure; no I/O).

A server that ignores `response_format` (Anthropic's OpenAI-compatible endpoint documents it as ignored; many local
models) answers prose, often with the JSON in a fenced ```json block. The JSON is taken from there: a reply that is
JSON as a whole as it is; else the outermost JSON object of its first fenced block that holds one; else the outermost
JSON object in the prose. Nothing else is read from prose: a reply with no JSON object has none (the caller repairs
it once, then records a failure), so no verdict is ever made up from words.
"""
from __future__ import annotations

import json
import re

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n(.*?)```", re.DOTALL)
# Opening braces tried as the start of the object: each try may scan to the end of a reply of up to 262,144
# characters, so a reply of braces that never close is not a quadratic search.
MAX_STARTS = 64


def found(content: str) -> tuple[str, bool] | None:
    """(the JSON text, whether the reply was that JSON alone), or None when it holds no JSON object."""
    text = content.strip()
    try:
        json.loads(text)
        return text, True
    except ValueError:
        pass
    for block in _FENCE.findall(content):
        if (obj := outermost_object(block)) is not None:
            return obj, False
    obj = outermost_object(content)
    return None if obj is None else (obj, False)


def outermost_object(text: str) -> str | None:
    """The first balanced {...} in `text` that parses as JSON (a brace inside a JSON string does not count), or
    None."""
    start = text.find("{")
    for _ in range(MAX_STARTS):
        if start == -1:
            break
        end = _closing(text, start)
        if end is not None:
            candidate = text[start:end + 1]
            try:
                json.loads(candidate)
                return candidate
            except ValueError:
                pass
        start = text.find("{", start + 1)
    return None


def _closing(text: str, start: int) -> int | None:
    """The index of the brace that closes the one at `start`, skipping JSON strings; None if it never closes."""
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(text)):
        c = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i
    return None
