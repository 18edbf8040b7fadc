"""The numbers a run gives its judge (concurrency, repeats, attempts, output tokens, timeout, budget) and its choices (a
reasoning effort), checked before anything is stored: a concurrency of 0 waited for ever. `runs.lifecycle` checks a
whole run's specification with them."""
from __future__ import annotations

import math

# name in the run's config -> what it counts (for the message); each a whole number >= 1
COUNTS = {"concurrency": "judge calls in flight at once", "repeats": "holistic replies per sample",
          "max_attempts": "attempts per judge call", "max_output_tokens": "tokens a judge reply may be asked for"}
MAX_COST = "max_cost_usd"  # a run's budget (evaluators.runs.budget)
# name -> what it measures (a duration, a sum of money); each a number > 0
AMOUNTS = {"timeout": "seconds a judge reply may take as a whole", MAX_COST: "USD the judge may cost the run"}
# OpenAI's reasoning effort (gpt-5 family, o-series): how much hidden reasoning a reply may spend
EFFORTS = ("minimal", "low", "medium", "high")
# name -> the values it may take (None: the server's default)
CHOICES = {"reasoning_effort": EFFORTS}


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


def check_choices(options: dict) -> None:
    """ValueError naming the first option of CHOICES in `options` with a value it cannot take; None is the default."""
    for name, allowed in CHOICES.items():
        value = options.get(name)
        if value is not None and value not in allowed:
            raise ValueError(f"{name} must be one of {', '.join(allowed)} (or none: the server's default), "
                             f"not {value!r}")
