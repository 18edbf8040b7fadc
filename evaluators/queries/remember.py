"""Statistics computed once per database file, run, scores version and arguments: `remembered`, which every screen's
costly computation wears (Compare's tests, History's steps, Correlations' Kendall, Diagnosis's attribution)."""
from __future__ import annotations

import functools
import threading
from collections import OrderedDict

from evaluators.queries.sides import Side
from evaluators.store import Store

REMEMBERED = 32  # results kept per remembered function


def scores_version(store: Store, run_id: str) -> tuple:
    """Changes whenever the run's cells change (a resumed or retried run): a cache key for the pages."""
    return tuple(store.cursor().execute(
        "SELECT count(*), max(created_at) FROM scores WHERE run_id = ?", [run_id]).fetchall()[0])


def remembered(compute):
    """`compute(store, run_id, ...)` remembered per database file, run, the scores version of every run it reads
    (the run in view and the runs of the Side arguments) and arguments (the latest REMEMBERED results): a screen's
    statistics are computed once however often clicks rerun it, and again once a run's cells change (a resumed
    run). Callers get a copy, free to change."""
    results: OrderedDict = OrderedDict()
    lock = threading.Lock()

    @functools.wraps(compute)
    def remember(store: Store, run_id: str, *args, **kwargs):
        read = sorted({run_id, *_side_runs(args), *_side_runs(kwargs.values())})
        versions = tuple(scores_version(store, r) for r in read)
        key = (store.path, run_id, versions, _hashable(args), _hashable(sorted(kwargs.items())))
        with lock:
            found = results.get(key)
            if found is not None:
                results.move_to_end(key)
        if found is None:
            found = compute(store, run_id, *args, **kwargs)
            with lock:
                results[key] = found
                while len(results) > REMEMBERED:
                    results.popitem(last=False)
        return tuple(f.copy() for f in found) if isinstance(found, tuple) else found.copy()

    return remember


def _hashable(values) -> tuple:
    """Arguments as a key: lists (of metrics, of methods) as tuples."""
    return tuple(_hashable(v) if isinstance(v, (list, tuple)) else v for v in values)


def _side_runs(values) -> set[str]:
    """The runs of the sides among arguments (in lists and tuples too, nested)."""
    runs = set()
    for v in values:
        if isinstance(v, Side):
            runs.add(v.run_id)
        elif isinstance(v, (list, tuple)):
            runs |= _side_runs(v)
    return runs
