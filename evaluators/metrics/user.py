"""The users' metrics of stored runs, registered so that the screens, the CLI and a resumed run know them: an
analyst's criterion as it was (metrics/criteria.py), a plug-in's metric as its run stored it (metrics/plugins.py:
the loaded plug-in's, or shown only, when its code is not loaded in this process)."""
from __future__ import annotations

from collections.abc import Iterable

from evaluators.metrics import criteria
from evaluators.metrics.registry import USER, Metric, register_user
from evaluators.records.criteria import Criterion


def stored_form(metrics: Iterable[Metric]) -> list[dict]:
    """The users' metrics among `metrics` as `Store.create_run` stores them."""
    return [{"metric": m.id, "kind": m.user["kind"], "version": m.user["version"], "definition": m.user["definition"]}
            for m in metrics if m.user]


def stored(row: dict) -> Metric:
    """The metric of a `Store.user_metrics` row, as its run stored it: a criterion's, or a plug-in's (the loaded one at
    that version, else shown only: metrics.plugins.stored)."""
    if row["kind"] == criteria.KIND:
        return criteria.metric_of(Criterion.of_definition(row["definition"]))
    from evaluators.metrics import plugins  # imported only when a run has plug-in metrics

    return plugins.stored(row["definition"], row["version"])


def remember(store, run_id: str | None = None) -> None:
    """Register the users' metrics of run `run_id` (of every run when None; the newest run's version of an id last,
    so it wins) that this process does not know at that version."""
    for row in store.user_metrics(run_id):
        known = USER.get(row["metric"])
        if known is not None and known.user["version"] == row["version"]:
            continue
        try:
            register_user(stored(row))
        except (ValueError, KeyError, TypeError):
            # a definition this version no longer takes (checks since tightened, an id the catalogue took): its
            # scores still show, as a metric no longer in the catalogue does (registry.lookup); never a broken page
            continue


def changed(first: Iterable[dict], second: Iterable[dict]) -> dict[str, tuple[str, str]]:
    """The users' metrics two runs (`Store.user_metrics` rows of each) both have at different versions: metric ->
    (first's version, second's). Such a metric is not compared across them."""
    versions = {r["metric"]: r["version"] for r in first}
    return {r["metric"]: (versions[r["metric"]], r["version"]) for r in second
            if r["metric"] in versions and versions[r["metric"]] != r["version"]}
