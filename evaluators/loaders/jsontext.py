"""JSON text -> values, bounded: every JSON the loaders read (a file, a line, a cell) goes through `loads`,
which refuses nesting deeper than MAX_DEPTH (before parsing, without recursion: Python's parser raises
RecursionError near 1,000 levels, or sooner in a deep call stack) and a key repeated in one object (which
json.loads would keep the last of, silently). `JsonRefused` says what and where, as a path of keys and indices.
"""
from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

# Records nest 4 levels (record > contexts > chunk > its metadata); 64 leaves room for any real file and stays
# far below the ~1,000 levels at which Python's JSON parser fails.
MAX_DEPTH = 64

_NOT_SKELETON = bytes(b for b in range(256) if b not in b'"[]{}')  # the bytes a depth scan deletes
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},:]')


class JsonRefused(ValueError):
    """Valid-looking JSON RAGScope will not read: `message` in the user's words, `path` the keys and indices
    from the top to where it is (empty: the top), `key` the repeated key (None: too deep)."""

    def __init__(self, message: str, path: list, key: str | None = None):
        super().__init__(message)
        self.message, self.path, self.key = message, path, key


class _Repeated(Exception):
    pass


def loads(text: str) -> Any:
    """json.loads, refusing nesting past MAX_DEPTH and repeated keys (JsonRefused); invalid JSON raises
    json.JSONDecodeError as json.loads does."""
    if _too_deep(text):
        raise JsonRefused(f"the JSON is nested more than {MAX_DEPTH} levels deep; RAGScope reads at most "
                          f"{MAX_DEPTH} (a record with chunks needs 4): flatten it", _deep_path(text))
    try:
        return _DECODER.decode(text)
    except _Repeated:
        path, key = _repeated_key(json.loads(text, object_pairs_hook=_marked))
        raise JsonRefused(f"key '{key}' appears twice in one object; JSON would keep only the last "
                          "value, silently: delete or rename one", path, key) from None


def place(refused: JsonRefused, *, records_listed: bool) -> tuple[int | None, str | None]:
    """(row, field) of what was refused: in a file of listed records (JSON: a list, or an object holding one)
    the first index of its path is the row; the next key (or the repeated key of the record itself) the field."""
    path = refused.path
    if records_listed and len(path) > 1 and isinstance(path[0], str) and isinstance(path[1], int):
        path = path[1:]  # {"results": [...]}
    row = None
    if records_listed and path and isinstance(path[0], int):
        row, path = path[0] + 1, path[1:]
    if path:
        return row, path[0] if isinstance(path[0], str) else None
    return row, refused.key


def _unique(pairs: list) -> dict:
    record = dict(pairs)
    if len(record) < len(pairs):
        raise _Repeated
    return record


_DECODER = json.JSONDecoder(object_pairs_hook=_unique)  # one, not one per call as json.loads(..., hook) makes


def _too_deep(text: str) -> bool:
    """Whether brackets outside strings nest past MAX_DEPTH: a few passes of C over the bytes, none in Python."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:  # the common line or cell: no scan needed
        return False
    data = text.encode("utf-8", "surrogatepass")
    if b"\\" in data:  # an escaped backslash or quote neither opens nor closes a string
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    # brackets and quotes only; a string without brackets leaves "" (removed), one with brackets its quotes
    skeleton = data.translate(None, _NOT_SKELETON).replace(b'""', b"")
    outside = b"".join(skeleton.split(b'"')[::2]) if b'"' in skeleton else skeleton
    return max(accumulate(map(_STEP.__getitem__, outside)), default=0) > MAX_DEPTH


def _deep_path(text: str) -> list:
    """The keys and indices down to the first value nested past MAX_DEPTH (only once it is known to be)."""
    path: list = []
    key = None
    for token in _TOKEN.finditer(text):
        t = token.group()
        if t in "[{":
            if len(path) == MAX_DEPTH:
                break
            path.append(0 if t == "[" else None)
        elif t in "]}":
            if path:
                path.pop()
        elif t == ",":
            if path and isinstance(path[-1], int):
                path[-1] += 1
        elif t == ":":
            if path:
                path[-1] = key
        else:
            key = _key(t)
    return path


def _key(token: str) -> str:
    try:
        return json.loads(token)
    except ValueError:
        return token[1:-1]


class _MarkedDict(dict):
    repeated: str


def _marked(pairs: list) -> dict:
    record = dict(pairs)
    if len(record) == len(pairs):
        return record
    seen: set = set()
    marked = _MarkedDict(record)
    marked.repeated = next(key for key, _ in pairs if key in seen or seen.add(key))
    return marked


def _repeated_key(top: Any) -> tuple[list, str]:
    """The path to the first object with a repeated key (depth first, in file order), and that key."""
    stack = [(top, [])]
    while stack:
        value, path = stack.pop()
        if isinstance(value, _MarkedDict):
            return path, value.repeated
        children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        stack.extend((child, path + [k]) for k, child in reversed(list(children)))
    raise AssertionError("no repeated key found")  # unreachable: json.loads just found one

