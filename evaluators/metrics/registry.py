"""The metric catalogue: every metric registered once, by id, with what it needs and means.

A metric is a function over a batch of samples returning one Result per sample, declared with
`@metric(...)`. Batches let the cheap metrics vectorise and the judged ones share calls.
"""
from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from evaluators.records import Result, Sample, not_applicable

@dataclass(frozen=True)
class Scale:
    """A metric's own scale: value = low + (high - low) x norm, with norm in [0, 1] (DESIGN.md "Store").
    The one place that maps values to norm and back, for stored scores, intervals, charts and views."""

    name: str
    text: str  # as listed in the catalogue
    low: float
    high: float
    digits: int  # decimals a value is shown with
    step: float  # the smallest change a slider or a value field offers

    @property
    def width(self) -> float:
        return self.high - self.low

    def norm(self, value):
        """value -> norm (a number, an array or a Series)."""
        return (value - self.low) / self.width

    def value(self, norm):
        """norm -> value, the inverse of `norm`."""
        return self.low + self.width * norm

    def difference(self, norm_difference):
        """A difference of norms in this scale's units (points on 1-5, percentage points)."""
        return self.width * norm_difference


SCALES = {s.name: s for s in (
    Scale("binary", "0 or 1", 0.0, 1.0, 3, 1.0),
    Scale("ratio", "0-1", 0.0, 1.0, 3, 0.01),
    Scale("likert", "1-5", 1.0, 5.0, 2, 0.25),
    Scale("percent", "0-100", 0.0, 100.0, 1, 1.0),
    Scale("label", "label, numeric value in 0-1", 0.0, 1.0, 3, 0.01),
)}

# What a metric can read beyond question + answer. A metric `needs` an input it cannot do without and
# `uses` one it reads when present (the seeds give a value without it: faithfulness is 1.0 with no context).
INPUTS = {
    "reference": "a reference answer",
    "contexts": "retrieved chunks",
    "checks": "per-question checks",
    "judge": "judge calls (LLM or offline heuristic)",
    "embeddings": "the packaged MiniLM sentence embedder",
}

# The inputs a sample can lack (the judge and the embedder are the run's), each with its test and what a
# cell of a metric that needs it says: that cell is not_applicable, never computed (`Metric.scored`).
ABSENT: dict[str, tuple[Callable[[Sample], bool], str]] = {
    "reference": (lambda s: not s.golden.reference.strip(), "the reference is empty"),
    "contexts": (lambda s: not s.output.contexts, "no retrieved context"),
    "checks": (lambda s: not s.golden.checks, "no checks for this question"),
}

Compute = Callable[[Sequence[Sample], Any], list[Result]]


@dataclass(frozen=True)
class Metric:
    id: str
    family: str
    scale: str
    higher_is_better: bool | None  # None: neither (e.g. the share of "don't know" answers)
    needs: tuple[str, ...]
    seed: str  # the seed document that defines it, e.g. "004"
    formula: str
    compute: Compute
    # A label metric's labels in display order, each with its numeric value (e.g. pass 1, partial 0.5,
    # fail 0); the label is stored in its own column (scores.label). Empty for every other metric.
    labels: Mapping[str, float] = field(default_factory=dict)
    uses: tuple[str, ...] = ()
    why_absent: Mapping[str, str] = field(default_factory=dict)  # a needed input -> its own word for lacking it
    # Whether it has cut-offs, `id@k` (the rank metrics: id_recall@5): `compute` then takes `k` (None: the whole
    # list), and `find` makes the metric of each k from it (`at`).
    cutoffs: bool = False
    k: int | None = None  # the cut-off of a metric made by `at`
    # A user's metric (USER): its kind ("criterion" or "plugin") and definition as stored with its runs, and its
    # version (equal versions are the same metric: runs compare it only then); None for the catalogue's.
    user: Mapping | None = None

    @property
    def reads(self) -> tuple[str, ...]:
        """Every input it reads: those it needs, then those it uses when present."""
        return self.needs + self.uses

    def inapplicable(self, sample: Sample) -> str | None:
        """Why it does not apply to `sample`: the sample lacks an input it needs (`ABSENT`); else None."""
        for name in self.needs:
            if name in ABSENT and ABSENT[name][0](sample):
                return self.why_absent.get(name) or ABSENT[name][1]
        return None

    def scored(self, samples: Sequence[Sample], context: Any = None) -> list[Result]:
        """One Result per sample: not_applicable, with why, where the sample lacks an input the metric needs,
        `compute` over the others. The one way a metric is scored (the engine's, the tests')."""
        if not ABSENT.keys() & set(self.needs):
            return self.compute(samples, context)
        out = [not_applicable(why) if (why := self.inapplicable(s)) else None for s in samples]
        todo = [s for s, r in zip(samples, out) if r is None]
        computed = list(self.compute(todo, context)) if todo else []
        if len(computed) != len(todo):
            raise RuntimeError(f"metric {self.id} returned {len(computed)} results for {len(todo)} samples")
        computed.reverse()
        return [computed.pop() if r is None else r for r in out]

    @property
    def judged(self) -> bool:
        """Whether it reads the judge's or the embedder's view of a sample (bounded: `judges.too_big`)."""
        return "judge" in self.needs or "embeddings" in self.needs

    @property
    def range(self) -> Scale:
        return SCALES[self.scale]

    @property
    def direction(self) -> int:
        """+1 when higher is better, -1 when lower is better, 0 when neither."""
        return 0 if self.higher_is_better is None else (1 if self.higher_is_better else -1)

    @property
    def aggregation(self) -> str:
        """How a method's cells of this metric are summarised: the shares of its labels, or the mean."""
        return "label shares" if self.labels else "mean"

    def at(self, k: int) -> Metric:
        """This metric cut at rank k: id `id@k`, its compute given k."""
        if not self.cutoffs or k < 1:
            raise ValueError(f"{self.id} has no cut-off {k}")
        return dataclasses.replace(self, id=f"{self.id}@{k}", compute=partial(self.compute, k=k), cutoffs=False, k=k,
                                   formula=f"{self.formula} @{k}: only the first {k} retrieved documents count.")

    def norm(self, value: float | None) -> float | None:
        """The value projected onto [0, 1] for comparisons and correlations."""
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None
        return float(self.range.norm(value))


REGISTRY: dict[str, Metric] = {}  # the catalogue: RAGScope's own metrics
# Metrics a user defined: criteria (metrics/criteria.py) and plug-ins (metrics/plugins.py), by id. Shown like the
# catalogue's wherever a metric is; a run names them (its `metrics`), none is in the default catalogue. A run
# registers its own as it starts; a store registers those of its runs as they are read (metrics/user.py), so
# the screens know a stored run's. The latest registration of an id wins (runs.lifecycle keeps an id's scale and
# direction).
USER: dict[str, Metric] = {}


def register_user(m: Metric) -> Metric:
    """Register a user's metric under its id (replacing an earlier definition of that id, a criterion's previous
    version); ValueError when the id is the catalogue's."""
    if m.id in REGISTRY or _CUT.fullmatch(m.id):
        raise ValueError(f"{m.id!r} is the id of a built-in metric: give yours another id")
    USER[m.id] = m
    return m


def metric(
    id: str,
    *,
    family: str,
    scale: str,
    higher_is_better: bool | None,
    seed: str,
    formula: str,
    needs: tuple[str, ...] = (),
    uses: tuple[str, ...] = (),
    why_absent: Mapping[str, str] | None = None,
    labels: Mapping[str, float] | None = None,
    cutoffs: bool = False,
) -> Callable[[Compute], Compute]:
    """Register `compute(samples, context) -> list[Result]` under `id`. `compute` is given only the samples
    that have every input in `needs` (`Metric.scored` marks the others not_applicable). cutoffs: it also has a metric
    per cut-off k, id `id@k` (`find`), and `compute` takes `k=`."""
    if scale not in SCALES:
        raise ValueError(f"{id}: unknown scale {scale!r}")
    if (scale == "label") != bool(labels):
        raise ValueError(f"{id}: a metric has labels exactly when its scale is 'label'")
    unknown = (set(needs) | set(uses)) - set(INPUTS)
    if unknown:
        raise ValueError(f"{id}: unknown inputs {sorted(unknown)}")
    if set(needs) & set(uses):
        raise ValueError(f"{id}: an input is either needed or used, not both: {sorted(set(needs) & set(uses))}")
    if set(why_absent or ()) - (set(needs) & set(ABSENT)):
        raise ValueError(f"{id}: why_absent is for needed inputs a sample can lack")

    def register(compute: Compute) -> Compute:
        if id in REGISTRY:
            raise ValueError(f"metric {id!r} registered twice")
        REGISTRY[id] = Metric(id, family, scale, higher_is_better, tuple(needs), seed, formula, compute,
                              dict(labels or {}), tuple(uses), dict(why_absent or {}), cutoffs)
        return compute

    return register


_CUT = re.compile(r"(?P<base>.+)@(?P<k>[1-9][0-9]{0,3})")


def find(metric_id: str) -> Metric | None:
    """The metric of this id: a registered one, or `base@k` of a registered metric with cut-offs (id_recall@5,
    made when asked: any k from 1 to 9999); None for an id that names neither."""
    found = REGISTRY.get(metric_id)
    if found is None and (cut := _CUT.fullmatch(metric_id)):
        base = REGISTRY.get(cut["base"])
        found = base.at(int(cut["k"])) if base is not None and base.cutoffs else None
    return found or USER.get(metric_id)


def lookup(metric_id: str) -> Metric:
    """The registered metric, or for an id no longer in the catalogue (a run stored by an older version)
    a plain 0-1 metric with no direction, so that its stored scores still show."""
    return find(metric_id) or Metric(metric_id, "other", "ratio", None, (), "", "", _not_registered)


def _catalogue_key(metric_id: str, order: dict[str, int]) -> tuple:
    """Where an id sits: a metric's cut-offs right after it by k; ids in no catalogue last (alphabetically)."""
    m = find(metric_id)
    if m is None:
        return (len(order), 0, metric_id)
    return (order[m.id.rsplit("@", 1)[0] if m.k else m.id], m.k or 0, "")


def in_catalogue_order(metric_ids) -> list[str]:
    """The ids in catalogue order (cut-offs after their metric, by k), then the users' metrics (alphabetically), ids
    no longer in the catalogue last (alphabetically)."""
    order = {m: i for i, m in enumerate([*REGISTRY, *sorted(USER)])}
    return sorted(set(metric_ids), key=lambda i: _catalogue_key(i, order))


def label_metrics() -> dict[str, tuple[str, ...]]:
    """The label metrics and their labels in display order (verdict, answer_class, accuracy_grade)."""
    return {m.id: tuple(m.labels) for m in REGISTRY.values() if m.labels}


def _not_registered(samples, context):
    raise KeyError("this metric is no longer in the catalogue")


def resolve(ids: Sequence[str] | None = None) -> list[Metric]:
    """The metrics named by `ids` (all when None), in catalogue order; unknown ids are an error."""
    if ids is None:
        return list(REGISTRY.values())
    unknown = [i for i in ids if find(i) is None]
    if unknown:
        cut = ", ".join(m.id for m in REGISTRY.values() if m.cutoffs)
        raise KeyError(
            f"unknown metric id(s): {', '.join(unknown)}. Known: {', '.join(REGISTRY)}"
            + (f"; and at a cut-off k, id@k: {cut}" if cut else "")
        )
    return [find(i) for i in in_catalogue_order(ids)]
