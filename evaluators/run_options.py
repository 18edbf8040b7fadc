"""A run's options, checked before anything is stored: `engine.create_run` (which the CLI, the app and the
demo call) asks `check`, the openai judge `check_numbers`, so no caller can start a run that cannot work
(a concurrency of 0 waited for ever; an empty metric list "finished" having computed nothing)."""
from __future__ import annotations

import math
from collections.abc import Sequence

from evaluators.metrics import resolve

# name in the run's config -> what it counts (for the message); each a whole number >= 1
COUNTS = {"concurrency": "judge calls in flight at once", "repeats": "holistic replies per sample",
          "max_attempts": "attempts per judge call", "max_output_tokens": "tokens a judge reply may be asked for"}
MAX_COST = "max_cost_usd"  # a run's budget (evaluators.budget)
# name -> what it measures (a duration, a sum of money); each a number > 0
AMOUNTS = {"timeout": "seconds a judge reply may take as a whole", MAX_COST: "USD the judge may cost the run"}


def check_numbers(options: dict) -> None:
    """ValueError naming the first option of COUNTS or AMOUNTS in `options` that no run can use; None
    values are left to the defaults."""
    for name, what in COUNTS.items():
        value = options.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"{name} must be a whole number of 1 or more ({what}), not {value!r}")
    for name, what in AMOUNTS.items():
        value = options.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value) or value <= 0):
            raise ValueError(f"{name} must be a number above 0 ({what}), not {value!r}")


def check(metrics: Sequence[str] | None, config: dict) -> list[str]:
    """The metric ids of a run with these options, in catalogue order (all for None); ValueError for an
    empty list or a number no run can use, KeyError for an unknown metric id."""
    if metrics is not None and not list(metrics):
        raise ValueError("no metric chosen: name at least one metric id (see `python -m evaluators metrics`), "
                         "or none for all")
    check_numbers(config)
    return [m.id for m in resolve(metrics)]
