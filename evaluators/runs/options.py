"""A run's options, checked before anything is stored: `engine.create_run` (which the CLI, the app and the
demo call) asks `check`, the openai judge `check_numbers`, so no caller can start a run that cannot work
(a concurrency of 0 waited for ever; an empty metric list "finished" having computed nothing)."""
from __future__ import annotations

from collections.abc import Sequence

from evaluators.judges.options import check_numbers
from evaluators.metrics import resolve

def check(metrics: Sequence[str] | None, config: dict) -> list[str]:
    """The metric ids of a run with these options, in catalogue order (all for None); ValueError for an
    empty list or a number no run can use, KeyError for an unknown metric id."""
    if metrics is not None and not list(metrics):
        raise ValueError("no metric chosen: name at least one metric id (see `python -m evaluators metrics`), "
                         "or none for all")
    check_numbers(config)
    return [m.id for m in resolve(metrics)]
