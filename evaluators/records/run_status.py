"""A run's status: the one list of them. Stored in `runs.status` as the enum's values (a `StrEnum` compares, hashes
and formats as its value), so the database and every query see the same strings as before."""
from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    QUEUED = "queued"  # created, waiting for the run before it (the demo runs of a first start)
    STARTING = "starting"  # a worker started, nothing reported yet: in memory only (the store says running)
    RUNNING = "running"
    FINISHED = "finished"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"  # stopped by Ctrl-C (KeyboardInterrupt)
    FAILED = "failed"  # stopped on an error, recorded with the run
    # Its recorded judge cost reached its budget: the cells not fully judged are still to do (resumable with a
    # higher budget), as after CANCELLED.
    BUDGET_REACHED = "budget_reached"


# Statuses a worker of this process reports while it computes the run.
LIVE = frozenset({RunStatus.STARTING, RunStatus.RUNNING})
# Stopped with cells still to do: a resume computes them. A stored RUNNING run that no worker computes stopped
# with the process that ran it.
RESUMABLE = frozenset({RunStatus.CANCELLED, RunStatus.INTERRUPTED, RunStatus.FAILED, RunStatus.RUNNING,
                       RunStatus.BUDGET_REACHED})
