"""A run's life, one path for every caller (`evaluate()`, the CLI's `run`, the Evaluate screen, the demo):

    RunSpec (the settings, frozen; `problems()` lists every one that no run can use)
      -> prepare(inputs, spec) -> Prepared (its samples, drawn once; its estimate; every problem that keeps it
         from starting)
      -> start(store, prepared) -> the stored run's id -> engine.execute_run(store, run_id, samples=prepared.samples)

A stored run goes on through `resume` (a new budget, a larger sample), then `engine.execute_run`, which computes
its missing and failed cells: resuming and re-scoring the failed cells are one step, and its samples are chosen by
the same steps as when it started (runs.planning). Nothing is stored while a run has a problem.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

from evaluators import loaders
from evaluators.judges import Judge, OfflineJudge
from evaluators.judges.options import AMOUNTS, CHOICES, COUNTS, MAX_COST, check_choices, check_numbers
from evaluators.metrics import criteria as criteria_metrics
from evaluators.metrics import plugins as plugin_metrics
from evaluators.metrics import resolve, user
from evaluators.metrics.ranking import cutoff_ids, cutoff_problem
from evaluators.metrics.registry import REGISTRY, USER, Metric
from evaluators.records import GoldenItem, RagOutput, Sample
from evaluators.records.criteria import MAX_CRITERIA, Criterion, duplicates
from evaluators.runs import budget, planning, sampling
from evaluators.runs.estimate import Estimate, estimate
from evaluators.store import Store


@dataclass(frozen=True)
class Problem:
    """One reason a run cannot start. `about` names what it is about (a RunSpec field, a judge number, `inputs`,
    `model` or `api_key`), so a screen can point at its own control; `error`: what a refusal raises."""

    about: str
    message: str
    error: type[Exception] = ValueError

    def __str__(self) -> str:
        return self.message


def refuse(problems: Iterable[Problem]) -> None:
    """Raise every problem at once, as the first one's error (KeyError for an unknown metric, budget.OverBudget,
    else ValueError), one line each; nothing for none."""
    problems = list(problems)
    if problems:
        raise problems[0].error("\n".join(p.message for p in problems))


def number_problems(numbers: dict) -> list[Problem]:
    """The numbers of a judge's config (or as given) that no run can use, each on its own: every bad one is named.
    (A concurrency of 0 waited for ever.)"""
    found = []
    for name in (*COUNTS, *AMOUNTS):
        try:
            check_numbers({name: numbers.get(name)})
        except ValueError as exc:
            found.append(Problem("max_cost" if name == MAX_COST else name, str(exc)))
    for name in CHOICES:  # a reasoning effort no server takes
        try:
            check_choices({name: numbers.get(name)})
        except ValueError as exc:
            found.append(Problem(name, str(exc)))
    return found


@dataclass(frozen=True)
class RunSpec:
    """What a run is asked to do, before any input is read. The judge carries its own settings (model, repeats,
    concurrency, timeouts, prices: its `config()`; None: the offline judge); lists given for metrics and methods are
    kept as tuples."""

    judge: Judge = OfflineJudge()
    metrics: tuple[str, ...] | None = None  # metric ids; None: every metric
    methods: tuple[str, ...] | None = None  # the methods of the outputs it evaluates; None: every one
    sample: int | None = None  # judge a random sample of this many questions, stratified by type; None: all
    seed: int | None = None  # of the sample's draw; None: a random one, stored with the run
    max_cost: float | None = None  # USD its judge may cost (runs.budget); None: no budget
    name: str | None = None  # None: "N samples, M metrics"
    description: str | None = None  # what the run shows (Overview says it)
    context_sep: str | None = None  # how its files' contexts were split, recorded
    k: tuple[int, ...] | None = None  # the rank metrics' cut-offs (id_recall@k); None: metrics.ranking's default
    criteria: tuple[Criterion, ...] = ()  # the analyst's own criteria: each a metric of the run, besides `metrics`
    # loaded plug-ins' metrics (metrics/plugins.py): each a metric of the run when `metrics` is None or names it
    plugins: tuple[Metric, ...] = ()

    def __post_init__(self):
        if self.judge is None:
            object.__setattr__(self, "judge", OfflineJudge())
        for name in ("metrics", "methods", "k", "criteria", "plugins"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))

    def config(self) -> dict:
        """The run's config, one shape whoever makes the run (its sample's entry is added once drawn: `start`)."""
        return ({"methods": list(self.methods) if self.methods is not None else None, "description": self.description,
                 "context_sep": self.context_sep} | self.judge.config() | budget.to_config(self.max_cost))

    def problems(self) -> list[Problem]:
        """Every setting no run can use, all at once: an empty or unknown metric list, a judge number, the
        sample's size or seed."""
        found = self.criteria_problems() + self.plugin_problems()
        if self.metrics is not None and not self.metrics and not self.criteria:  # it would compute nothing
            found.append(Problem("metrics", "no metric chosen: name at least one metric id (see `python -m "
                                            "evaluators metrics`), or none for all"))
        else:
            try:
                self.catalogue_metrics()
            except KeyError as exc:
                found.append(Problem("metrics", exc.args[0], KeyError))
        if (bad_k := cutoff_problem(self.k)) is not None:
            found.append(Problem("k", bad_k))
        found += number_problems(self.config())
        found += [Problem(about, message) for about, message in self.judge.problems()]  # e.g. a mode it lacks
        for name, n, seed in (("sample", self.sample, None), ("seed", None, self.seed)):
            try:
                sampling.check(n, seed)
            except ValueError as exc:
                found.append(Problem(name, str(exc)))
        return found

    def criteria_problems(self) -> list[Problem]:
        """Criteria no run can take: an id given twice or a built-in metric's, more than MAX_CRITERIA."""
        found = [Problem("criteria", f"criterion {i!r} is given twice: each criterion needs its own id")
                 for i in duplicates(self.criteria)]
        found += [Problem("criteria", f"criterion {c.id!r}: {c.id!r} is the id of a built-in metric: give yours "
                                      "another id") for c in self.criteria if c.id in REGISTRY]
        if len(self.criteria) > MAX_CRITERIA:
            found.append(Problem("criteria", f"{len(self.criteria):,} criteria, over the limit of {MAX_CRITERIA} per "
                                             "run (all go in one judge call per sample)"))
        return found

    def plugin_problems(self) -> list[Problem]:
        """Plug-in metrics no run can take: an id given twice (two files declaring it) or a criterion's of this
        run, a metric that is no loaded plug-in's."""
        ids = [m.id for m in self.plugins]
        found = [Problem("plugins", f"plug-in metric {i!r} is declared twice: by "
                                    f"{' and '.join(m.user['definition']['source'] for m in self.plugins if m.id == i)}")
                 for i in sorted({i for i in ids if ids.count(i) > 1})]
        found += [Problem("plugins", f"plug-in metric {m.id!r} has the id of one of this run's criteria: give one of "
                                     "them another id") for m in self.plugins if m.id in {c.id for c in self.criteria}]
        found += [Problem("plugins", f"{m.id!r} is no loaded plug-in's metric (metrics.plugins.load)")
                  for m in self.plugins if not plugin_metrics.loaded(m)]
        return found

    def catalogue_metrics(self) -> list[Metric]:
        """The metrics of `metrics` but the criteria and the plug-ins' (every metric of the catalogue when None);
        KeyError for an unknown id, and for a plug-in's metric whose plug-in is not given."""
        own = {c.id for c in self.criteria} | {m.id for m in self.plugins}
        chosen = None if self.metrics is None else [m for m in self.metrics if m not in own]
        if absent := [m for m in chosen or () if m in USER and USER[m].user["kind"] == plugin_metrics.KIND]:
            raise KeyError(f"metric(s) {', '.join(absent)} come from a plug-in not given to this run: pass its file "
                           "(--plugin FILE, evaluate(plugins=[...]))")
        return resolve(chosen)

    def plugin_metrics(self) -> list[Metric]:
        """The plug-ins' metrics the run computes: every one when `metrics` is None, else those it names."""
        return [m for m in self.plugins if self.metrics is None or m.id in self.metrics]

    def criteria_metrics(self) -> list[Metric]:
        return [criteria_metrics.metric_of(c) for c in self.criteria]


def judge_problems(judge: Judge, api_key: str | None = None) -> list[Problem]:
    """What the judge still lacks to judge (an estimate needs none of it: `Judge.lacks`): its model, an API key
    (`api_key`, lent for one run, else the judge's `key_env`; never stored), its server's settings."""
    return [Problem(about, message) for about, message in judge.lacks(api_key)]


@dataclass(frozen=True)
class Inputs:
    """A golden set and the outputs that answer it: loaded datasets (stored by content when the run starts) or the
    ids of stored ones, with their records."""

    golden: loaders.Dataset | str
    outputs: tuple[loaders.Dataset | str, ...]
    golden_items: tuple[GoldenItem, ...]
    rag_outputs: tuple[RagOutput, ...]

    @classmethod
    def loaded(cls, golden: loaders.Dataset, outputs: Sequence[loaders.Dataset]) -> Inputs:
        return cls(golden, tuple(outputs), golden.golden, tuple(o for ds in outputs for o in ds.outputs))

    @classmethod
    def stored(cls, store: Store, golden_id: str, outputs_ids: Sequence[str]) -> Inputs:
        with store.lease():
            return cls(golden_id, tuple(outputs_ids), tuple(store.golden_items(golden_id)),
                       tuple(store.rag_outputs(list(outputs_ids))))

    @cached_property
    def plan(self) -> planning.Plan:
        """Every (question, method) sample and the questions a method left out; ValueError for two answers of one
        method to one question."""
        return planning.plan(self.golden_items, self.rag_outputs)


@dataclass(frozen=True)
class Prepared:
    """A run ready to start: its spec and inputs, the samples it judges (of its methods, of its sample: drawn once,
    by `prepare`), the golden questions each method left out, and its sample (`drawn`; None: every question)."""

    spec: RunSpec
    inputs: Inputs
    samples: tuple[Sample, ...]
    missing: dict[str, list[str]]
    drawn: sampling.Drawn | None
    found: tuple[Problem, ...]  # the spec's and the inputs' problems (`problems` adds the budget's)

    @property
    def sample(self) -> dict | None:
        """The run config's `sample` entry; None when it judges every question."""
        return None if self.drawn is None or self.drawn.everything else self.drawn.config()

    @cached_property
    def metric_ids(self) -> list[str]:
        """The ids the run computes, in catalogue order: the spec's, and the rank metrics' cut-offs (`cutoff_ids`)."""
        chosen = [m.id for m in self.spec.catalogue_metrics()]
        catalogue = [m.id for m in resolve(cutoff_ids(chosen, self.spec.k, self.samples,
                                                      chosen=self.spec.metrics is not None))] if chosen else []
        return catalogue + [c.id for c in self.spec.criteria] + [m.id for m in self.spec.plugin_metrics()]

    @cached_property
    def estimate(self) -> Estimate:
        """An LLM judge's calls, tokens and cost for these samples (empty for a judge that makes no call)."""
        return estimate(self.samples, self.spec.judge, self.spec.catalogue_metrics() + self.spec.criteria_metrics())

    @cached_property
    def problems(self) -> tuple[Problem, ...]:
        """Every reason the run cannot start: its settings', its inputs', and an estimate above its budget (or a
        budget its judge has no price for)."""
        if self.found or self.spec.max_cost is None:
            return self.found
        try:
            budget.refuse_over(self.samples, self.spec.judge, self.spec.metrics, self.spec.max_cost, self.estimate)
        except budget.OverBudget as exc:
            return (Problem("max_cost", str(exc), budget.OverBudget),)
        return ()


def prepare(inputs: Inputs, spec: RunSpec) -> Prepared:
    """The run `spec` asks for on `inputs`: its samples, its sample of questions drawn here (the one draw: with no
    seed given, a random one, which `start` stores), and every problem found. Nothing is stored."""
    found = spec.problems()
    try:
        plan = inputs.plan
    except ValueError as exc:  # two answers of one method to one question: one would be lost
        plan = None
        found.append(Problem("methods", str(exc)))
    samples = [] if plan is None else planning.of_methods(plan.samples, spec.methods)
    if plan is not None and not samples:
        found.append(Problem("inputs", "no output answers a question of the golden set: nothing to evaluate"))
    drawn = None
    if spec.sample is not None and samples and not any(p.about in ("sample", "seed") for p in found):
        drawn = sampling.draw(samples, spec.sample, sampling.new_seed() if spec.seed is None else spec.seed)
        samples = drawn.samples
    return Prepared(spec, inputs, tuple(samples), plan.missing if plan else {}, drawn, tuple(found))


def start(store: Store, prepared: Prepared, say: Callable[[str], None] = lambda _: None) -> str:
    """Store the inputs (a loaded dataset once, by content) and the prepared run; its id. A run with problems is
    refused (`refuse`): nothing is stored. `say` is told of a dataset stored before that gained its answers'
    usage now (stored before RAGScope kept it)."""
    refuse(prepared.problems)
    spec, inputs = prepared.spec, prepared.inputs
    metrics = prepared.metric_ids
    config = spec.config() | ({"sample": prepared.sample} if prepared.sample else {})
    own = spec.criteria_metrics() + spec.plugin_metrics()
    with store.lease():  # the datasets and the new run: one unit of work
        refuse(changed_meaning(store, own))
        golden_id = _stored(store, inputs.golden, say)
        outputs_ids = list(dict.fromkeys(_stored(store, o, say) for o in inputs.outputs))
        run_id = store.create_run(
            name=spec.name or f"{len(prepared.samples)} samples, {len(metrics)} metrics",
            golden_dataset_id=golden_id, outputs_dataset_ids=outputs_ids, judge=spec.judge.name,
            judge_model=spec.judge.model, metrics=metrics, config=config, n_samples=len(prepared.samples),
            user_metrics=user.stored_form(own),
        )
        user.remember(store, run_id)
        return run_id


def changed_meaning(store: Store, metrics: Sequence[Metric]) -> list[Problem]:
    """The users' metrics whose id the store's runs used with another scale or direction: their scores could not be
    told apart from the earlier ones' (a changed text is a new version of the same metric; a changed scale is a
    new metric, with an id of its own)."""
    stored = {r["metric"]: r for r in store.user_metrics()}  # the newest run's definition of each id
    found = []
    for m in metrics:
        if (old := stored.get(m.id)) is None:
            continue
        was = old["definition"]
        if old["kind"] != m.user["kind"]:
            found.append(Problem("plugins", f"{m.id!r} was a {old['kind']} metric in run {old['run_id']}; now a "
                                            f"{m.user['kind']} metric: give it a new id"))
            continue
        scale = (was.get("scale"), was.get("higher_is_better", True))
        now = (m.user["definition"].get("scale"), m.user["definition"].get("higher_is_better", True))
        if scale != now:
            found.append(Problem("criteria", f"{m.id!r} was stored by run {old['run_id']} on scale {scale[0]} "
                                             f"(higher is better: {scale[1]}); now {now[0]} ({now[1]}). A changed "
                                             "scale or direction is a new metric: give it a new id"))
    return found


def start_stored(store: Store, golden_id: str, outputs_ids: Sequence[str], spec: RunSpec) -> str:
    """A run of datasets stored already (the demo's, the calibration sets'), prepared and started; its id."""
    return start(store, prepare(Inputs.stored(store, golden_id, outputs_ids), spec))


def _stored(store: Store, dataset: loaders.Dataset | str, say: Callable[[str], None]) -> str:
    if isinstance(dataset, str):
        return dataset
    saved = store.save_dataset(dataset)
    if saved.filled:
        say(f"{dataset.source}: stored before; latency, tokens and cost filled in for {saved.filled} answer"
            f"{'s' if saved.filled != 1 else ''} (stored before RAGScope kept them)")
    return saved.dataset_id


def resume(store: Store, run_id: str, *, max_cost: float | None = None, sample: int | None = None) -> dict | None:
    """Ready stored run `run_id` to go on (`engine.execute_run` then computes its cells missing or failed), with a
    new budget (`max_cost`, USD) and its sample grown to `sample` questions (the same seed: the old sample is part of
    the new one, so only the new questions are judged); its `sample` config entry then (None: every question).
    Checked before anything is written: KeyError for no such run, ValueError (budget.OverBudget) for a budget or
    sample it cannot take, plugins.PluginError for a plug-in that changed since (`reload_plugins`)."""
    with store.lease():
        run = store.run(run_id)
        if run is None:
            raise KeyError(f"no run {run_id!r} in {store.path}")
        reload_plugins(store, run_id)
        config = json.loads(run["config"] or "{}")
        grown = config.get("sample") if sample is None else _grown(run_id, config.get("sample"), sample)
        if max_cost is not None:
            budget.set_limit(store, run_id, max_cost)
            config = json.loads(store.run(run_id)["config"] or "{}")
        if sample is not None:
            config |= {"sample": grown}
            store.set_run_sample(run_id, config, len(planning.of_stored_run(store, run, config)))
    return grown


def reload_plugins(store: Store, run_id: str) -> list[str]:
    """Load again the plug-ins whose metrics run `run_id` computes, from their stored sources, where their files
    are unchanged (what was loaded, one line each); PluginError for one gone or changed since the run."""
    return plugin_metrics.reload_stored(store.user_metrics(run_id))


def _grown(run_id: str, sample: dict | None, n: int) -> dict:
    """A run's `sample` entry grown to `n` questions (at most every one); ValueError when it cannot grow so."""
    sampling.check(n, None)
    if not sample:
        raise ValueError(f"run {run_id} judged every question: a sample can only be extended in a sampled run")
    if n < sample["n"]:
        raise ValueError(f"run {run_id} already judges a sample of {sample['n']} questions: a sample only grows "
                         "(start a new run for a smaller one)")
    return sample | {"n": min(n, sample["of"])}
