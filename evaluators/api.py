"""`evaluate()`: the one way a run is made, from a notebook, the CLI (`run`), the Evaluate screen and the demo.

    from evaluators import evaluate
    result = evaluate("golden.csv", {"local_search": local_df, "basic_search": "basic.jsonl"})
    result.summary()          # the Overview's table: every metric per method, mean with CI and n

The steps, each usable on its own (runs.lifecycle; the CLI prints the plan and the estimate between them, the
Evaluate screen prepares a run of datasets already stored and executes it in the background):

    read_inputs -> Inputs -> prepare(inputs, RunSpec(...)) -> start -> engine.execute_run

Inputs may be paths, DataFrames, lists of dicts or loaded `loaders.Dataset`s, in any format and column names the
loaders know; in-memory tables go through the same loaders as files (as JSON lines), so they are checked alike
and score alike.
"""
from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from evaluators import loaders, queries
from evaluators.loaders.traces import TRACE_FORMATS
from evaluators.runs import engine
from evaluators.presentation.gate import ALPHA, GateResult, gate
from evaluators.judges import Judge, OfflineJudge
from evaluators.metrics import plugins as plugin_metrics
from evaluators.queries import compare, overview
from evaluators.queries.sides import SEPARATOR
from evaluators.metrics import REGISTRY
from evaluators.runs.lifecycle import Inputs, RunSpec, prepare, refuse, start
from evaluators.records import LoadError, Problem
from evaluators.records.criteria import Criterion
from evaluators.store import Store, open_store

Source = Any  # a path, a DataFrame, a list of dicts (records) or a loaders.Dataset
Criteria = str | Path | Criterion | Sequence  # a criteria file, a Criterion, or a list of either


def read_criteria(source: str | Path | bytes, name: str | None = None) -> tuple[Criterion, ...]:
    """The criteria of a criteria file (JSON, TOML or YAML; a path, or an upload's bytes named `name`): LoadError
    naming the file, criterion and field of every problem, an id of the catalogue's among them."""
    return loaders.read_criteria(source, name, builtin=REGISTRY)


def criteria_of(given: Criteria) -> tuple[Criterion, ...]:
    """Criteria given as files and `Criterion`s, in order; LoadError with every file's problems at once."""
    items = [given] if isinstance(given, (str, Path, Criterion)) else list(given or ())
    found, problems, where = [], [], {}  # where: id -> (file, row) of its first definition
    for item in items:
        if isinstance(item, Criterion):
            found.append(item)
            continue
        if not isinstance(item, (str, Path)):
            raise TypeError(f"a criterion is a Criterion(...) or a criteria file's path, not {type(item).__name__}")
        try:
            read = read_criteria(item)
        except LoadError as exc:
            problems += exc.problems
            continue
        file = Path(item).name
        for row, c in enumerate(read, 1):
            if c.id in where:  # within a file read_criteria says it; across files, here
                problems.append(Problem(file, row, "id", f"criterion {c.id!r} is given twice: also in "
                                                         f"{where[c.id][0]} (criterion {where[c.id][1]})"))
            where.setdefault(c.id, (file, row))
        found += read
    if problems:
        raise LoadError(problems)
    return tuple(found)


def read_inputs(golden: Source, outputs: Source | Sequence | Mapping | None = None, *, context_sep: str | None = None,
                encoding: str = "utf-8", qrels: str | Path | None = None, method_attribute: str | None = None,
                question_id_attribute: str | None = None) -> Inputs:
    """Read and cross-check every input, gathering all problems (LoadError) before anything is written.

    outputs: None when the golden file holds the answers too; one source; a list of sources (each may be a
    (method, source) pair, naming the method of a source without a method column); or {method: source}.
    qrels: a qrels file (BEIR TSV or TREC) whose relevant documents replace the golden set's relevant_ids.
    A trace file among the outputs (OTLP JSON, Phoenix's or Langfuse's export) is joined to the golden set's questions:
    method_attribute names the resource or span attribute that holds the method (default service.name),
    question_id_attribute the one that holds the golden question's id (default: the question's text joins them).
    What a trace file held but was not loaded (unmatched traces, earlier duplicates) is in each Dataset's `notes`.
    """
    problems, gold, answers = [], None, []
    try:
        gold = _read(golden, "golden" if outputs is not None else "auto", None, context_sep, encoding)
        if qrels is not None:
            gold = loaders.with_qrels(gold, qrels)
        if outputs is None and not gold.outputs:
            raise ValueError(f"{gold.source} holds no answers: give the outputs too (the CLI's --outputs PATH)")
    except LoadError as exc:
        problems += exc.problems
    traces = dict(golden=gold, method_attribute=method_attribute, question_id_attribute=question_id_attribute)
    for method, source in _named_sources(outputs):
        try:
            answers.append(_read(source, "outputs", method, context_sep, encoding, **traces))
        except LoadError as exc:
            problems += exc.problems
    if (method_attribute or question_id_attribute) and answers and not any(a.format in TRACE_FORMATS for a in answers):
        raise ValueError("the method and question-id attributes apply to trace files (OTLP JSON, Phoenix or Langfuse "
                         "exports), and no outputs file is one")
    if gold is not None:
        problems += loaders.check_against_golden(answers or [gold], gold)
    if problems:
        raise LoadError(problems)
    return Inputs.loaded(gold, answers or [gold])


def _named_sources(outputs) -> list[tuple[str | None, Source]]:
    if outputs is None:
        return []
    if isinstance(outputs, Mapping):
        return list(outputs.items())
    if isinstance(outputs, (list, tuple)) and outputs and not all(isinstance(o, Mapping) for o in outputs):
        return [o if isinstance(o, tuple) else (None, o) for o in outputs]  # several sources, not one's records
    return [(None, outputs)]


def _read(source: Source, role: str, method: str | None, context_sep: str | None, encoding: str,
          **traces) -> loaders.Dataset:
    """traces: the golden set and the attributes a trace file's outputs are read with (loaders.load)."""
    if isinstance(source, loaders.Dataset):
        return source
    if isinstance(source, (str, Path)):
        return loaders.load(source, role=role, method=method, context_sep=context_sep, encoding=encoding, **traces)
    # A table in memory: as JSON lines through the same loaders as a file (named for the method, if any)
    if isinstance(source, pd.DataFrame):
        text = source.to_json(orient="records", lines=True, force_ascii=False, date_format="iso")
    elif isinstance(source, (list, tuple)) and all(isinstance(r, Mapping) for r in source):
        text = "\n".join(json.dumps(dict(r), ensure_ascii=False, default=_plain) for r in source)
    else:
        raise TypeError(f"cannot read {type(source).__name__} as {role}: give a path, a DataFrame or a list of dicts")
    name = f"{method or role}.jsonl"
    return loaders.load(text.encode("utf-8"), name=name, role=role, method=method, context_sep=context_sep, fmt="jsonl")


def _plain(value):
    """numpy values in records (a DataFrame's rows as dicts) as JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def temporary_db() -> Path:
    """A DuckDB file in a new temporary folder: a notebook needs no database of its own."""
    return Path(tempfile.mkdtemp(prefix="ragscope-")) / "ragscope.duckdb"


def evaluate(golden: Source, outputs: Source | Sequence | Mapping | None = None, *,
             metrics: Sequence[str] | None = None, judge: Judge | None = None, db: str | Path | None = None,
             name: str | None = None, on_progress: engine.MetricProgress | None = None,
             context_sep: str | None = None, encoding: str = "utf-8", max_cost: float | None = None,
             sample: int | None = None, seed: int | None = None, k: Sequence[int] | None = None,
             qrels: str | Path | None = None, criteria: Criteria | None = (),
             plugins: Sequence[str | Path] = (), method_attribute: str | None = None,
             question_id_attribute: str | None = None) -> Evaluation:
    """Score every (question, method) pair of `outputs` against `golden` and store the run in `db`.

    golden, outputs: see `read_inputs`. metrics: ids (default all; `python -m evaluators metrics`). judge:
    `OfflineJudge()` (default) or `OpenAIJudge(model=...)`. db: a DuckDB file (default: one in a new temporary
    folder). on_progress(metric_id, metric_done, metric_total, done, total): as the engine scores.
    max_cost: a budget in USD for an LLM judge: a run estimated above it is not started (`budget.OverBudget`,
    nothing stored), and one whose judge calls reach it stops with status `RunStatus.BUDGET_REACHED` (`.run`),
    its cells not judged yet left to do (resume: `lifecycle.resume(store, run_id, max_cost=...)`, then
    `engine.execute_run`). sample: judge a random sample of that many questions, stratified by question type, drawn
    with `seed` (default: a random one; the run's config records both: `result.run["config"]`); every method is
    judged on the same questions. k: the rank metrics' cut-offs (id_recall@k, ...; default those of 1, 3, 5, 10
    shorter than the longest retrieved list, where the golden set names relevant documents). qrels: a qrels file
    (BEIR TSV or TREC) naming each question's relevant documents (read_inputs). criteria: the analyst's own
    criteria (`Criterion(...)`s, or the path of a criteria file: `read_criteria`), each a metric of the run besides
    `metrics`, scored by an LLM judge (not applicable with the offline judge). plugins: Python files declaring metrics
    of your own (`@plugin_metric`, README "Python metrics (plug-ins)"): every metric they declare is computed too (or
    those `metrics` names). method_attribute, question_id_attribute: how trace files among the outputs name their
    method and question (read_inputs).
    Bad input raises LoadError listing every problem (nothing is stored); bad options ValueError or KeyError, listing
    every problem too.
    """
    loaded = [m for path in plugins for m in plugin_metrics.load(path)]  # PluginError naming a bad file
    spec = RunSpec(judge or OfflineJudge(), metrics=metrics, name=name, context_sep=context_sep, max_cost=max_cost,
                   sample=sample, seed=seed, k=k, criteria=criteria_of(criteria), plugins=tuple(loaded))
    refuse(spec.problems())  # before any file is read
    inputs = read_inputs(golden, outputs, context_sep=context_sep, encoding=encoding, qrels=qrels,
                         method_attribute=method_attribute, question_id_attribute=question_id_attribute)
    prepared = prepare(inputs, spec)
    refuse(prepared.problems)  # before a database is opened
    store = open_store(db if db is not None else temporary_db())
    run_id = start(store, prepared)
    engine.execute_run(store, run_id, on_metric=on_progress, samples=prepared.samples)
    return Evaluation(store, run_id)


@dataclass(frozen=True)
class Evaluation:
    """A stored run and its results, read from the store when asked for."""

    store: Store
    run_id: str

    @property
    def run(self) -> dict:
        """The run's row of `runs`: name, judge, status, config, ..."""
        with self.store.lease():
            return self.store.run(self.run_id)

    @property
    def scores(self) -> pd.DataFrame:
        """Every score cell, long format: question_id, question_type, method, metric, value, norm, status, judge,
        detail, question."""
        with self.store.lease():
            return queries.run_scores(self.store, self.run_id)

    def wide(self) -> pd.DataFrame:
        """One row per (question, method), one column per metric (values in the metric's own scale)."""
        return queries.wide(self.scores)

    def summary(self, **options) -> pd.DataFrame:
        """The Overview screen's table: every metric per method, mean with its 95% CI and n (options: the
        screen's, as `python -m evaluators view overview --help` lists them)."""
        with self.store.lease():
            return overview.view(self.store, self.run_id, **options)["metrics"]

    def compare(self, methods: Sequence[str] | None = None, baseline: str | None = None,
                **options) -> dict[str, pd.DataFrame]:
        """The Compare screen's tables: `methods` (methods of this run, or RUN_ID:METHOD of another run in the
        same database) against `baseline` (one more; default: the screen's choice). Options: the screen's."""
        if methods is not None and baseline is not None and baseline not in methods:
            methods = [*methods, baseline]
        with self.store.lease():
            return compare.view(self.store, self.run_id, methods=None if methods is None else list(methods),
                                baseline=baseline, **options)

    def gate(self, baseline: Evaluation | str, *, method: str | None = None, metrics: Sequence[str] | None = None,
             tolerances: Mapping[str, float] | None = None, alpha: float = ALPHA,
             margins: Mapping[str, float] | None = None, require_mde: Mapping[str, float] | None = None
             ) -> GateResult:
        """This run (or its `method`) against `baseline`, an Evaluation or RUN_ID[:METHOD] in the same database:
        the regression gate's verdict per metric (`python -m evaluators gate`; `.passed`, `.regressions`,
        `.mde_failures`; margins: non-inferiority per metric; require_mde: the changes the golden set must see)."""
        candidate = self.run_id if method is None else f"{self.run_id}{SEPARATOR}{method}"
        base = baseline.run_id if isinstance(baseline, Evaluation) else baseline
        return gate(self.store, candidate, base, metrics=metrics, tolerances=tolerances, alpha=alpha,
                    margins=margins, require_mde=require_mde)

    def __repr__(self) -> str:
        return f"Evaluation(run_id={self.run_id!r}, db={self.store.path!r})"

