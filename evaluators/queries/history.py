"""History queries: for one golden set, each method's headline metrics over its runs in time order.

Per run the mean, 95% CI and n are the Overview's (`overview.metric_means`), so a point here is the number the
run's own Overview shows. Per step from one run of a method to its next run, the paired difference over the
questions both runs scored `ok` is `compare.comparison_table` with the two runs' sides (its pairing, its test and
its remembered results), and Holm adjusts the p-values of every step, metric and method shown together.
One golden set is one `golden_dataset_id`: a dataset's id is derived from its content hash and the hash is unique,
so two uploads of the same content are the same golden set.
"""
from __future__ import annotations

import pandas as pd

from evaluators.runs import sampling
from evaluators.metrics.registry import in_catalogue_order
from evaluators.queries import OWN, VIEWS, difference_in_view, one_of, versions
from evaluators.queries.compare import ALPHA, comparison_table
from evaluators.queries.remember import remembered
from evaluators.queries.headline import HEADLINE
from evaluators.queries.overview import in_scale, runs_metric_means
from evaluators.queries.sides import Side
from evaluators.maths.stats import holm
from evaluators.store import Store

TABLES = ("runs", "points", "steps", "not_compared")
RUN_COLUMNS = ["position", "run_id", "name", "created_at", "judge", "judge_model", "status", "sample"]
POINT_COLUMNS = ["method", "metric", "position", "run_id", "mean", "ci_low", "ci_high", "n", "n_total"]
STEP_COLUMNS = ["method", "metric", "from_position", "to_position", "from_run", "to_run", "n", "delta", "ci_low",
                "ci_high", "p", "p (Holm)", "significant", "change", "mde"]
# Steps are many (runs x methods x metrics): bootstrap intervals up to 500 pairs, t-intervals above (a bootstrap
# of 5,000 pairs costs ~0.4 s; History over 20 runs of 5,000 questions made ~230 of them).
BOOTSTRAP_MAX = 500
CHANGES = {1: "better", -1: "worse", 0: "same"}  # the later run against the earlier, in the metric's direction


def golden_runs(store: Store, run_id: str) -> pd.DataFrame:
    """The runs with scores on the golden set of `run_id`, oldest first, numbered from 1 (`position`); `sample`
    says "sample of N of M questions" for a run that judged a sample (its points are the sample's)."""
    frame = store.cursor().execute(
        """
        SELECT r.run_id, r.name, r.created_at, r.judge, r.judge_model, r.status, r.config
        FROM runs r
        WHERE r.golden_dataset_id = (SELECT golden_dataset_id FROM runs WHERE run_id = ?)
          AND r.run_id IN (SELECT DISTINCT run_id FROM scores)
        ORDER BY r.created_at, r.run_id
        """, [run_id]).df()
    frame.insert(0, "position", range(1, len(frame) + 1))
    frame["sample"] = [sampling.run_note(run) for run in frame.to_dict("records")]
    return frame[RUN_COLUMNS]


def run_cells(store: Store, run_ids: list[str]) -> pd.DataFrame:
    """Which (run, method, metric) have score cells among these runs."""
    return store.cursor().execute(
        "SELECT DISTINCT run_id, method, metric FROM scores WHERE run_id IN (SELECT unnest(?))", [run_ids]).df()


def default_metrics(metric_ids: list[str]) -> list[str]:
    """The headline metrics the runs scored, else the first metric."""
    return [m for m in HEADLINE if m in metric_ids] or metric_ids[:1]


def view(store: Store, run_id: str, *, methods: list[str] | None = None, metrics: list[str] | None = None,
         scale: str = OWN) -> dict[str, pd.DataFrame]:
    """The History screen's tables, as shown: `runs` (the runs on the golden set of RUN_ID, oldest first, numbered
    by `position`), `points` (per method, metric and run: mean, 95% CI and n of the cells scored `ok`, as the
    run's Overview gives them, in the chosen scale) and `steps` (per method and metric, from each run of the
    method to its next: the paired difference later - earlier over the questions both scored `ok`, its 95% CI,
    p and Holm's p over every step shown, `significant` (Holm p < 0.05) and `change`: better, worse or same in
    the metric's direction, empty for a metric without one) and `not_compared` (a user's metric, a criterion or a
    plug-in's, whose version changed from one run to the next: no step there, each with both versions and a note).

    methods: the methods followed (default: every method of the runs)
    metrics: the metrics followed (default: the headline metrics the runs scored)
    scale: how scores are shown: "own scale", "1-5 (white paper)" or "percent"
    """
    one_of(scale, VIEWS, "scale")
    versions.know(store, run_id)
    runs = golden_runs(store, run_id)
    cells = run_cells(store, runs["run_id"].tolist())
    known_methods = sorted(cells["method"].unique())
    known_metrics = in_catalogue_order(cells["metric"].unique())
    methods = known_methods if methods is None else [one_of(m, known_methods, "method") for m in methods]
    metrics = default_metrics(known_metrics) if metrics is None else [
        one_of(m, known_metrics, "metric") for m in metrics]
    if runs.empty:
        return {"runs": runs, "points": pd.DataFrame(columns=POINT_COLUMNS),
                "steps": pd.DataFrame(columns=STEP_COLUMNS),
                "not_compared": pd.DataFrame(columns=versions.NOT_COMPARED_COLUMNS)}
    # Each method's runs as sides: what the tables read, so they are remembered until one of those runs changes.
    chains = tuple(tuple(Side(r, m) for r in runs["run_id"] if r in set(cells.loc[cells["method"] == m, "run_id"]))
                   for m in methods)
    points, steps = _series(store, run_id, chains, tuple(zip(runs["run_id"], runs["position"])), metrics, scale)
    steps_taken = [(earlier.run_id, later.run_id) for chain in chains for earlier, later in zip(chain, chain[1:])]
    left_out = versions.not_compared(store, steps_taken)
    return {"runs": runs, "points": points, "steps": steps,
            "not_compared": left_out[left_out["metric"].isin(metrics)].reset_index(drop=True)}


@remembered
def _series(store: Store, run_id: str, chains: tuple[tuple[Side, ...], ...], positions: tuple[tuple[str, int], ...],
            metrics: list[str], scale: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(points, steps), remembered as a whole: a History screen makes one comparison per step, more than
    remembered keeps, and reads every run's means."""
    position = dict(positions)
    methods = [chain[0].method for chain in chains if chain]
    return _points(store, position, methods, metrics, scale), _steps(store, run_id, chains, position, metrics, scale)


def _points(store: Store, position: dict[str, int], methods: list[str], metrics: list[str],
            scale: str) -> pd.DataFrame:
    means = runs_metric_means(store, list(position), metrics=metrics)  # every run in one scan
    means = means[means["method"].isin(methods)]
    frame = in_scale(means, scale).assign(position=means["run_id"].map(position)).rename(columns={"n_scored": "n"})
    order = {m: i for i, m in enumerate(metrics)}
    frame = frame.sort_values(["method", "metric", "position"], key=lambda c: c.map(order) if c.name == "metric"
                              else c, kind="stable")
    return frame[POINT_COLUMNS].reset_index(drop=True)


def _steps(store: Store, run_id: str, chains: tuple[tuple[Side, ...], ...], position: dict[str, int],
           metrics: list[str], scale: str) -> pd.DataFrame:
    """Each method's consecutive runs compared (comparison_table: the later run's side against the earlier's)."""
    rows = []
    for chain in chains:
        for earlier, later in zip(chain, chain[1:]):
            table = comparison_table(store, run_id, earlier, [later], metrics=metrics, max_bootstrap_n=BOOTSTRAP_MAX)
            rows.append(table.assign(method=later.method, from_run=earlier.run_id, to_run=later.run_id,
                                     from_position=position[earlier.run_id], to_position=position[later.run_id],
                                     later=later.label(run_id)))
    if not rows:
        return pd.DataFrame(columns=STEP_COLUMNS)
    steps = pd.concat(rows, ignore_index=True)
    steps["p (Holm)"] = holm(steps["p_value"].tolist())
    steps["significant"] = steps["p (Holm)"].lt(ALPHA)
    direction = [1 if b == later else -1 if b == base else 0 if b == "tie" else None
                 for b, later, base in zip(steps["better"], steps["later"], steps["baseline"])]
    order = {m: i for i, m in enumerate(metrics)}
    steps = steps.assign(
        delta=difference_in_view(steps["delta_norm"], steps["delta"], scale),
        ci_low=difference_in_view(steps["ci_low_norm"], steps["ci_low"], scale),
        ci_high=difference_in_view(steps["ci_high_norm"], steps["ci_high"], scale),
        p=steps["p_value"], change=[CHANGES.get(d) for d in direction],
        mde=difference_in_view(steps["mde_norm"], steps["mde"], scale))
    steps = steps.sort_values(["method", "metric", "from_position"], key=lambda c: c.map(order)
                              if c.name == "metric" else c, kind="stable")
    return steps[STEP_COLUMNS].reset_index(drop=True)
