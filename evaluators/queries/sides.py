"""A side of a comparison: one method of one run, written `RUN_ID:METHOD` (or a bare METHOD of the run in view).

Run ids hold no colon (`run-20261127-124501-1a2b3c4d`), so the text splits at its first colon; a method name
may hold colons of its own. When the caller knows the runs (`runs`), a prefix that is not one of them leaves
the whole text as a method of the run in view, so a method called `gpt-4:turbo` stays one method.
"""
from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

SEPARATOR = ":"
# Default pair of the GraphRAG demo: the method under study first, the baseline second.
PREFERRED = ("local_search", "basic_search")


@dataclass(frozen=True)
class Side:
    run_id: str
    method: str

    def __str__(self) -> str:
        return f"{self.run_id}{SEPARATOR}{self.method}"

    def label(self, run_in_view: str | None) -> str:
        """How the side is named on screen: the bare method in the run in view, else `RUN_ID:METHOD`."""
        return self.method if self.run_id == run_in_view else str(self)


def side(text: str | Side, run_id: str | None, runs: Collection[str] | None = None) -> Side:
    """`text` as a Side: `RUN_ID:METHOD`, or a bare method of `run_id` (the run in view)."""
    if isinstance(text, Side):
        return text
    run, separator, method = str(text).partition(SEPARATOR)
    if separator and run and method and (runs is None or run in runs):
        return Side(run, method)
    if run_id is None:
        raise ValueError(f"{text!r} names no run: write RUN_ID{SEPARATOR}METHOD")
    return Side(run_id, str(text))


def default_methods(methods: list[str]) -> tuple[list[str], str | None]:
    """(methods to compare, baseline): local_search vs basic_search when present, else the first
    two; the baseline is basic_search when chosen, else the last chosen method."""
    chosen = [m for m in PREFERRED if m in methods]
    chosen += [m for m in methods if m not in chosen][: max(0, 2 - len(chosen))]
    if len(chosen) < 2:
        return chosen, None
    return chosen, chosen[-1]
