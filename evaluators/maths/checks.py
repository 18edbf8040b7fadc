"""Per-question checks: the `checks` column of a golden set (DESIGN.md, "Inputs").

Seed 004's EF_1/EF_2/EF_3 fact checks, generalised so any dataset can carry its own: each check is
an object with a `type` among `CHECK_TYPES` and that type's keys, plus an optional `name`. The
loader refuses a malformed check with `validate_check`'s message; `run_checks` runs them on an
answer.

contains / not_contains / list_items are substring tests that ignore case, whitespace runs and
apostrophe style; regex runs on the raw answer, for at most REGEX_SECONDS (`regex`'s timeout: a pattern such
as "(a|aa)+$" backtracks for ever on some answers, and patterns come from uploaded files); number looks for the
value among the answer's numbers (`evaluators.maths.text.numbers`), with a relative tolerance.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from functools import lru_cache
from numbers import Real
from typing import Any

import regex

from evaluators.maths.text import fold, number_values

__all__ = ["CHECK_TYPES", "validate_check", "check_name", "run_check", "run_checks"]

CHECK_TYPES = ("contains", "not_contains", "regex", "number", "list_items")
_CHECK_KEYS = {
    "contains": {"value"},
    "not_contains": {"value"},
    "regex": {"pattern"},
    "number": {"value"},
    "list_items": {"items", "min_share"},
}
NUMBER_REL_TOL = 1e-9
REGEX_SECONDS = 1.0  # per answer and pattern; a plain pattern takes microseconds


class CheckTimeout(ValueError):
    """A regex check that did not finish on an answer within REGEX_SECONDS."""


@lru_cache(maxsize=4096)
def _compile(pattern: str) -> regex.Pattern:
    return regex.compile(pattern, regex.IGNORECASE)


def _is_number(x: Any) -> bool:
    """A finite real that is not a bool (numpy scalars from a Parquet loader included)."""
    return isinstance(x, Real) and not isinstance(x, bool) and math.isfinite(float(x))


def validate_check(check: Any) -> str | None:
    """Why `check` is malformed (one message), or None when it is a valid check."""
    if not isinstance(check, Mapping):
        return f"a check must be an object with a 'type', got {type(check).__name__}"
    kind = check.get("type")
    if kind is None:
        return "the check has no 'type'"
    if kind not in CHECK_TYPES:
        return f"unknown check type {kind!r}; expected one of {', '.join(CHECK_TYPES)}"
    unknown = set(check) - _CHECK_KEYS[kind] - {"type", "name"}
    if unknown:
        return f"unknown key(s) {', '.join(map(repr, sorted(map(str, unknown))))} in a {kind} check"
    if "name" in check and not isinstance(check["name"], str):
        return f"'name' must be a string, got {type(check['name']).__name__}"
    required = "pattern" if kind == "regex" else "items" if kind == "list_items" else "value"
    if required not in check:
        return f"a {kind} check needs '{required}'"
    value = check[required]
    if kind in ("contains", "not_contains", "regex"):
        if not isinstance(value, str):
            return f"'{required}' of a {kind} check must be a string, got {type(value).__name__}"
        if not value.strip():
            return f"'{required}' of a {kind} check is empty"
        if kind == "regex":
            try:
                _compile(value)
            except regex.error as exc:
                return f"'pattern' {value!r} is not a valid regular expression: {exc}"
    elif kind == "number":
        if not _is_number(value):
            return (f"'value' of a number check must be a finite number, got {type(value).__name__} "
                    f"{value!r}" + (" (write it without $, % or quotes)" if isinstance(value, str) else ""))
    else:  # list_items
        if not isinstance(value, (list, tuple)) or not value:
            return "'items' of a list_items check must be a non-empty list of strings"
        bad = [i for i, item in enumerate(value) if not isinstance(item, str) or not item.strip()]
        if bad:
            return f"'items' of a list_items check must be non-empty strings; item {bad[0] + 1} is {value[bad[0]]!r}"
        share = check.get("min_share", 1.0)
        if not _is_number(share) or not 0.0 <= share <= 1.0:
            return f"'min_share' of a list_items check must be a number in [0, 1], got {share!r}"
    return None


def check_name(check: Mapping) -> str:
    """The check's `name`, or one made of its type and value; `check` must be valid."""
    if check.get("name"):
        return check["name"]
    kind = check["type"]
    if kind == "regex":
        return f"regex /{check['pattern']}/"
    if kind == "number":
        return f"number {check['value']:.15g}"
    if kind == "list_items":
        return f"list_items ({len(check['items'])} items, min_share {check.get('min_share', 1.0):g})"
    return f"{kind} {check['value']!r}"


def run_check(check: Mapping, answer: str) -> bool:
    """Whether `answer` passes `check`; `check` must be valid (`validate_check`)."""
    kind = check["type"]
    if kind == "contains":
        return fold(check["value"]) in fold(answer)
    if kind == "not_contains":
        return fold(check["value"]) not in fold(answer)
    if kind == "regex":
        try:
            return _compile(check["pattern"]).search(answer, timeout=REGEX_SECONDS) is not None
        except TimeoutError:
            raise CheckTimeout(f"the regex check /{check['pattern']}/ did not finish within {REGEX_SECONDS:g} s on "
                               "this answer (it backtracks without end): simplify the pattern") from None
    if kind == "number":
        target = float(check["value"])
        found = number_values(answer)
        return target in found or any(math.isclose(target, x, rel_tol=NUMBER_REL_TOL) for x in found)
    items = check["items"]
    haystack = fold(answer)
    hits = sum(1 for item in items if fold(item) in haystack)
    return hits / len(items) >= check.get("min_share", 1.0) - 1e-12


def run_checks(answer: str, checks: Iterable[Mapping]) -> list[tuple[str, bool]]:
    """(name, passed) for every check, in order; ValueError naming the first malformed check.

    contains / not_contains / list_items compare case-, whitespace- and apostrophe-insensitively;
    regex is `regex.search` with IGNORECASE (CheckTimeout past REGEX_SECONDS); number looks for the value among
    `numbers(answer)`.
    """
    out = []
    for i, check in enumerate(checks, 1):
        problem = validate_check(check)
        if problem:
            raise ValueError(f"check {i}: {problem}")
        out.append((check_name(check), run_check(check, answer)))
    return out
