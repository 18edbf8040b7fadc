"""The users' metrics (an analyst's criteria, plug-ins' metrics) on the read side: registered from the runs read
(`know`), shown as the run in view stored them (`as_stored`), and compared across two runs only at equal versions
(`changed`, `not_compared`): a changed criterion text is another question to the judge, so its scores are left out
of History's steps, Compare across runs and the gate, which say so."""
from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from evaluators.metrics import criteria, user
from evaluators.metrics.registry import Metric
from evaluators.store import Store

NOT_COMPARED_COLUMNS = ["metric", "run_a", "run_b", "version_a", "version_b", "note"]


def know(store: Store, run_id: str | None = None) -> None:
    """Register the users' metrics of every run of the store (each id at its newest version), then those of
    `run_id` (the run in view: its versions win), so every screen, query and export knows their scale, direction
    and family."""
    user.remember(store)
    if run_id is not None:
        user.remember(store, run_id)


def as_stored(store: Store, run_id: str) -> dict[str, Metric]:
    """The users' metrics of run `run_id` as it stored them (its version of each: "How scores are computed"
    shows that text, whichever version another run registered)."""
    return {r["metric"]: user.stored(r) for r in store.user_metrics(run_id)}


def source(m: Metric) -> str:
    """Where a metric comes from, as "How scores are computed" says it: its seed, or the user's kind and version."""
    return f"yours ({m.user['kind']}, version {m.user['version']})" if m.user else f"seed {m.seed}"


def changed(store: Store, run_a: str, run_b: str) -> dict[str, tuple[str, str, str]]:
    """The users' metrics runs `run_a` and `run_b` both have at different versions: metric -> (kind, version in
    run_a, version in run_b). Empty for one run."""
    if run_a == run_b:
        return {}
    rows_a, rows_b = store.user_metrics(run_a), store.user_metrics(run_b)
    kinds = {r["metric"]: r["kind"] for r in rows_b}
    return {m: (kinds[m], a, b) for m, (a, b) in user.changed(rows_a, rows_b).items()}


def note(metric: str, kind: str, version_a: str, version_b: str) -> str:
    """What a screen, the JSON twins and the gate say of a metric left out for its changed version."""
    what = "criterion" if kind == criteria.KIND else "plug-in metric"
    return f"{metric}: the {what} changed between the runs (version {version_a} -> {version_b}): not compared"


def not_compared(store: Store, pairs: Iterable[tuple[str, str]]) -> pd.DataFrame:
    """For each (run_a, run_b) compared, the users' metrics left out for a changed version: metric, run_a, run_b,
    version_a, version_b and the note that says so (each pair once)."""
    rows = [{"metric": m, "run_a": a, "run_b": b, "version_a": va, "version_b": vb, "note": note(m, kind, va, vb)}
            for a, b in dict.fromkeys(pairs) for m, (kind, va, vb) in changed(store, a, b).items()]
    return pd.DataFrame(rows, columns=NOT_COMPARED_COLUMNS)
