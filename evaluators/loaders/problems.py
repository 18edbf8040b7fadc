"""The problems of one file, collected in the order found, and the words messages use for the
values they are about."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NoReturn

from evaluators.records import LoadError, Problem


class Problems:
    """The problems of one file, in the order found."""

    def __init__(self, file: str):
        self.file = file
        self.items: list[Problem] = []

    def add(self, row: int | None, field: str | None, message: str) -> None:
        self.items.append(Problem(self.file, row, field, message))

    def stop(self, row: int | None, field: str | None, message: str) -> NoReturn:
        self.add(row, field, message)
        raise LoadError(self.items)

    def raise_if_any(self) -> None:
        if self.items:
            raise LoadError(self.items)


def kind(value: Any) -> str:
    """What a value is, in plain words, for messages."""
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a text ({preview(value)})"
    if isinstance(value, dict):
        return "an object (dict)"
    if isinstance(value, (list, tuple)):
        return "a list"
    if value is None:
        return "null"
    return f"a {type(value).__name__}"


def preview(text: str, limit: int = 40) -> str:
    text = " ".join(text[: limit * 2].split())
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def names(keys: Iterable) -> str:
    return ", ".join(map(str, keys)) or "none"
