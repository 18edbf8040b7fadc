"""One cell -> the value a record holds, or `Bad` saying why it cannot be used: text (within
MAX_CELL_CHARS, refused when a spreadsheet would run it as a formula), retrieved chunks, checks."""
from __future__ import annotations

import ast
import json
import math
import re
import unicodedata
from typing import Any

from evaluators.maths.checks import validate_check
from evaluators.loaders import jsontext
from evaluators.loaders.problems import kind, names, preview
from evaluators.records import Chunk

# Characters (code points), not UTF-8 bytes: one bound whatever the script (1-4 MB in UTF-8) or the file's encoding.
MAX_CELL_CHARS = 1_000_000

_CHUNK_ID_KEYS = ("doc_id", "id", "chunk_id", "document_id")
_CHUNK_TEXT_KEYS = ("text", "content", "page_content")
# A spreadsheet runs a cell starting with = or @, or with +/- directly followed by a function
# call ("+HYPERLINK(", "-2+3+cmd|"). "-0.133%" and "- item" are ordinary text.
_FORMULA = re.compile(r"\s*(?:[=@]|[+-](?:[\d.]+[-+*/])*[A-Za-z_][\w.]*[(|])")


class Bad(ValueError):
    """A cell that cannot be used; the message says why, in the user's words."""


def text(value: Any) -> str | None:
    """A scalar text cell, refused when a spreadsheet would run it as a formula."""
    value = _as_str(value)
    if value and _FORMULA.match(value):
        raise Bad(f"the text starts with '{value.lstrip()[0]}' ({preview(value)}), which a "
                  "spreadsheet would run as a formula; edit the cell so it does not start "
                  "with =, @, or +/- followed by a function")
    return value


def identifier(text: str, what: str) -> str:
    """An id or method name as compared and stored: trimmed, in Unicode NFC (a "café" typed and one pasted from
    a Mac are one name); Bad when it holds an invisible or control character (Unicode Cf, Cc: a zero-width
    space, a soft hyphen, a BOM), which would make two names that look the same count apart."""
    text = unicodedata.normalize("NFC", text.strip())
    if text.isprintable():  # the common case, checked in C
        return text
    for position, char in enumerate(text, 1):
        if unicodedata.category(char) in ("Cf", "Cc"):
            raise Bad(f"the {what} {preview(text)} contains an invisible character, U+{ord(char):04X} "
                      f"{unicodedata.name(char, 'CONTROL CHARACTER')}, at position {position}; names that look "
                      "the same would count as different: delete it")
    return text  # not printable only for a separator such as a no-break space: visible enough


def none_if_blank(text: str | None) -> str | None:
    return text if text and text.strip() else None


def _as_str(value: Any) -> str | None:
    """A text cell as str; numbers become text, None/NaN mean missing, other types are bad."""
    if value is None:
        return None
    if isinstance(value, str):
        return _within_limit(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return None
        return str(int(value)) if value.is_integer() else str(value)
    raise Bad(f"mixed types: found {kind(value)} where text was expected; store this field "
              "as text")


def _within_limit(text: str) -> str:
    if len(text) > MAX_CELL_CHARS:
        raise Bad(f"this cell holds {len(text):,} characters, over the limit of "
                  f"{MAX_CELL_CHARS:,}; shorten it (a cell this long is usually a whole "
                  "document pasted in)")
    return text


# --------------------------------------------------------------------------- retrieved chunks


def contexts(value: Any, sep: str | None) -> tuple[Chunk, ...]:
    """Retrieved chunks from a list (of texts or chunk objects), a JSON-list string, or a
    string joined by the user-named separator. Missing or empty: no context."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ()
    if isinstance(value, str):
        value = _split_contexts(value, sep)
    if not isinstance(value, (list, tuple)):
        raise Bad(f"contexts must be a list of retrieved chunks, found {kind(value)}; store "
                  "them as a JSON list of texts like [\"chunk 1\", \"chunk 2\"]")
    return tuple(_chunk(item, rank) for rank, item in enumerate(value, 1))


def _split_contexts(text: str, sep: str | None) -> Any:
    """A string contexts cell as a list (or, from JSON, whatever it holds)."""
    stripped = _within_limit(text).strip()
    if not stripped:
        return []
    if stripped[0] in "[{":
        try:
            return jsontext.loads(stripped)
        except jsontext.JsonRefused as refused:
            raise Bad(f"contexts: {refused.message}") from None
        except json.JSONDecodeError as err:
            chunks = _python_list(stripped) if stripped[0] == "[" else None
            if chunks is not None:
                return chunks
            if sep is None:
                raise Bad(f"contexts looks like a JSON list but is not valid JSON ({err.msg} at "
                          f"character {err.pos}), nor a Python list of texts; fix the list, or "
                          "name the separator if the chunks are joined text") from None
    if sep is None:
        raise Bad("contexts is a single text, not a list of chunks; name the separator that "
                  "joins the chunks (context separator, for example '\\n\\n' or '|||'), or "
                  "store a JSON list of texts")
    return [part.strip() for part in text.split(sep) if part.strip()]


# What ast.literal_eval raises on text that is no Python literal (or nests too deep for it).
_NOT_A_LITERAL = (ValueError, TypeError, SyntaxError, MemoryError, RecursionError)


def _python_list(text: str) -> list[str] | None:
    """A Python list literal of texts, as haystack's evaluation CSVs store contexts (str() of a
    list: ['chunk one', "chunk's two"]), read by ast.literal_eval, which runs no code. None when
    the text is no Python literal; Bad when it is one but not a list of texts."""
    try:
        value = ast.literal_eval(text)
    except _NOT_A_LITERAL:
        return None
    if not isinstance(value, list):
        raise Bad(f"contexts is a Python literal but {kind(value)}, not a list of chunk texts "
                  "like ['chunk 1', 'chunk 2']")
    for rank, item in enumerate(value, 1):
        if not isinstance(item, str):
            raise Bad(f"contexts is a Python list, but chunk {rank} is {kind(item)}, not a "
                      "text; every chunk must be a quoted text like ['chunk 1', 'chunk 2']")
    return value


def _chunk(item: Any, rank: int) -> Chunk:
    if type(item) is str and len(item) <= MAX_CELL_CHARS:  # the common case, kept cheap
        return Chunk(str(rank), item)
    try:
        if isinstance(item, dict):
            return _chunk_from_dict(item, rank)
        text = _as_str(item)
    except Bad as bad:
        raise Bad(f"chunk {rank}: {bad}") from None
    if text is None:
        raise Bad(f"chunk {rank} is empty (null); remove it or give its text")
    return Chunk(str(rank), text)


def _chunk_from_dict(item: dict, rank: int) -> Chunk:
    """{doc_id|id|chunk_id, text|content|page_content, score?}; the id defaults to the rank."""
    text_key = next((key for key in _CHUNK_TEXT_KEYS if key in item), None)
    if text_key is None:
        raise Bad(f"has no text: a chunk object needs one of {', '.join(_CHUNK_TEXT_KEYS)} "
                  f"(keys found: {names(item)})")
    text = _as_str(item[text_key])
    if text is None:
        raise Bad(f"its {text_key} is empty (null)")
    chunk_id = next((item[k] for k in _CHUNK_ID_KEYS if item.get(k) not in (None, "")), rank)
    if isinstance(chunk_id, bool) or not isinstance(chunk_id, (str, int)):
        raise Bad(f"its id is {kind(chunk_id)}; an id must be text or a whole number")
    return Chunk(str(chunk_id), text, _chunk_score(item.get("score")))


def _chunk_score(score: Any) -> float | None:
    """A chunk object's `score` (the retriever's, any scale: BM25, cosine, a reranker's), None when not given."""
    if score is None:
        return None
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        raise Bad(f"its score is {kind(score)}; a retriever's score must be a finite number (or left out)")
    return float(score)


# --------------------------------------------------------------------------- checks


def checks(value: Any) -> tuple[dict, ...]:
    """Per-question checks: a list of objects (JSON text in CSV), each validated."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return ()
    if isinstance(value, str):
        try:
            value = jsontext.loads(_within_limit(value))
        except jsontext.JsonRefused as refused:
            raise Bad(f"checks: {refused.message}") from None
        except json.JSONDecodeError as err:
            raise Bad(f"checks is not valid JSON ({err.msg} at character {err.pos}); write a "
                      "JSON list like [{\"type\": \"contains\", ...}]") from None
    if not isinstance(value, (list, tuple)):
        raise Bad(f"checks must be a list of check objects, found {kind(value)}")
    errors = []
    for number, check in enumerate(value, 1):
        if not isinstance(check, dict):
            errors.append(f"check {number} is {kind(check)}, expected an object like "
                          "{\"type\": \"contains\", ...}")
        elif error := validate_check(check):
            errors.append(f"check {number}: {error}")
    if errors:
        raise Bad("; ".join(errors))
    return tuple(value)


# --------------------------------------------------------------------------- relevant documents

_RELEVANT_HINT = 'a list of ids like ["doc1", "doc2"] or an object of grades like {"doc1": 2, "doc2": 1}'


def relevant_ids(value: Any) -> tuple[tuple[str, float], ...]:
    """The documents that answer a question: a list of ids (grade 1 each) or {id: grade} (graded relevance, a
    number; > 0 is relevant, as in trec_eval), JSON text in a CSV cell. Missing or empty: none named."""
    value = _json_cell(value, "relevant_ids")
    if value is None:
        return ()
    if isinstance(value, dict):
        pairs = [(_document_id(key, f"id {preview(str(key))}"), _grade(key, grade)) for key, grade in value.items()]
    elif isinstance(value, (list, tuple)):
        pairs = [(_document_id(item, f"item {n}"), 1.0) for n, item in enumerate(value, 1)]
    else:
        raise Bad(f"relevant_ids must be {_RELEVANT_HINT}, found {kind(value)}")
    seen: set[str] = set()
    for doc, _ in pairs:
        if doc in seen:
            raise Bad(f"relevant_ids names document '{doc}' twice; name each relevant document once")
        seen.add(doc)
    return tuple(pairs)


def context_ids(value: Any) -> tuple[str, ...]:
    """The retrieved chunks' ids in a column of their own (ragas: retrieved_context_ids), in rank order."""
    value = _json_cell(value, "retrieved_context_ids")
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise Bad(f"retrieved_context_ids must be a list of ids, one per retrieved chunk, found {kind(value)}")
    return tuple(_document_id(item, f"item {n}") for n, item in enumerate(value, 1))


def _json_cell(value: Any, field: str) -> Any:
    """A list or object cell as a value (JSON text in CSV); None when missing or blank."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, str):
        stripped = _within_limit(value).strip()
        if not stripped:
            return None
        if stripped[0] not in "[{":
            raise Bad(f"{field} is a single text ({preview(stripped)}); write {_RELEVANT_HINT}" if
                      field == "relevant_ids" else f"{field} is a single text ({preview(stripped)}); write a "
                      'JSON list of ids like ["doc1", "doc2"], one per retrieved chunk')
        try:
            return jsontext.loads(stripped)
        except jsontext.JsonRefused as refused:
            raise Bad(f"{field}: {refused.message}") from None
        except json.JSONDecodeError as err:
            raise Bad(f"{field} is not valid JSON ({err.msg} at character {err.pos})") from None
    return value


def _document_id(value: Any, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise Bad(f"document {what} is {kind(value)}; a document id is a text or a whole number")
    doc = str(value)
    if not doc.strip():
        raise Bad(f"document {what} is an empty id")
    return doc


def _grade(doc: Any, grade: Any) -> float:
    if isinstance(grade, bool) or not isinstance(grade, (int, float)) or not math.isfinite(grade):
        raise Bad(f"the grade of document '{doc}' is {kind(grade)}, not a number; give each relevant document a "
                  "number (1 relevant, 2 or more highly relevant, 0 judged not relevant)")
    return float(grade)
