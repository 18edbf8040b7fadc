"""The judge kinds, registered by name, as metrics are (metrics/registry.py): a run stores its judge's name, model and
settings, and `of_run` rebuilds the judge from them; the CLI's --judge and the Evaluate screen offer every kind here.

    @register
    @dataclass(frozen=True)
    class MyJudge(Judge):
        name = "mine"
        ...
"""
from __future__ import annotations

import json
from collections.abc import Mapping

from evaluators.judges.protocol import Judge

JUDGES: dict[str, type[Judge]] = {}  # name -> kind, in the order registered (the offline judge, the default, first)


def register(kind: type[Judge]) -> type[Judge]:
    """Class decorator: runs may use `kind` under `kind.name` (one kind per name)."""
    if JUDGES.get(kind.name, kind) is not kind:
        raise ValueError(f"a judge named {kind.name!r} is registered already ({JUDGES[kind.name].__qualname__})")
    JUDGES[kind.name] = kind
    return kind


def named(name: str) -> type[Judge]:
    """The judge kind called `name` (a run's `judge` column, a CLI choice)."""
    if name not in JUDGES:
        raise ValueError(f"unknown judge {name!r}; available: {', '.join(JUDGES)}")
    return JUDGES[name]


def of_run(run: Mapping) -> Judge:
    """The judge of a stored run (a row of `runs`: its `judge`, `judge_model` and `config` columns)."""
    return named(run["judge"]).of_config(run["judge_model"], json.loads(run["config"] or "{}"))
