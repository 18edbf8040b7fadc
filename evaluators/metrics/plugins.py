"""A user's deterministic metrics from their own Python module, without editing RAGScope: `run --plugin path.py`,
`evaluate(..., plugins=["path.py"])`, or an installed package's `ragscope.metrics` entry point.

    from evaluators.metrics.plugins import NotApplicable, not_applicable, plugin_metric

    @plugin_metric("answer_has_citation", scale="binary", needs=("contexts",),
                   formula="1 when the answer cites a retrieved chunk as [n].")
    def answer_has_citation(sample):          # one records.Sample -> a number on the scale, or None
        ...

A plug-in's metric is a catalogue Metric (family "plugins" unless given; `Metric.user` kind "plugin", versioned by
the sha256 of its file: a changed file is a new version; a helper module it imports from its own folder is not
hashed). Its cells never hold a silent 0 or NaN: an exception on
a sample, a value off its scale, NaN or a non-number make that cell judge_error saying what it returned (retried
by a re-run); None, `not_applicable(why)` or `raise NotApplicable(why)` make it not_applicable. A stored run's
plug-in metric is shown from its stored definition without importing any code (`stored`)."""
from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import math
import numbers
import sys
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from evaluators.metrics.registry import INPUTS, REGISTRY, USER, Metric, register_user
from evaluators.metrics.registry import SCALES as RANGES
from evaluators.records import JUDGE_ERROR, NOT_APPLICABLE, OK, Result, Sample, not_applicable
from evaluators.records.criteria import ID

__all__ = ["NotApplicable", "PluginError", "not_applicable", "plugin_metric", "load", "load_entry_points"]

KIND = "plugin"
FAMILY = "plugins"
GROUP = "ragscope.metrics"  # the entry point group installed packages declare their metrics in
SCALES = ("binary", "ratio", "likert", "percent")  # the catalogue's but "label" (its labels are the catalogue's)
# What a plug-in may read beyond question and answer: a sample's own inputs. Deterministic only: no judge, no
# embedder (their calls, costs and caches are the engine's).
OFFERED = tuple(i for i in INPUTS if i not in ("judge", "embeddings"))
ENTRY = "entry point "  # a definition's source for an entry point's metric: "entry point NAME"


class NotApplicable(Exception):
    """Raise it (with why) from a plug-in's function: that sample's cell is not_applicable, with the reason."""


class PluginError(ValueError):
    """A plug-in that cannot be used (its file, its metadata): the message names the file and the metric."""


_declared: list[tuple[Metric, Callable]] = []  # metrics declared by `plugin_metric` since the last `_collect`
# Every metric loaded in this process, by (id, version): a stored run's metric at a loaded version is that one
# (`stored`), so registering the stored runs' metrics (metrics.user) never hides a loaded plug-in's code.
_loaded: dict[tuple[str, str], Metric] = {}


def plugin_metric(id: str, *, scale: str, higher_is_better: bool | None = True, needs: Sequence[str] = (),
                  uses: Sequence[str] = (), formula: str = "", family: str = FAMILY) -> Callable:
    """Declare `function(sample) -> number | None` a metric of id `id` on `scale` (binary: 0 or 1; ratio: 0-1;
    likert: 1-5; percent: 0-100). needs: inputs a sample must have (else its cell is not_applicable); uses:
    inputs read when present (among reference, contexts, checks). The function is returned unchanged (test it
    as it is); `load` registers the metrics its file declared. PluginError for bad metadata."""
    def declare(function: Callable) -> Callable:
        file = getattr(getattr(function, "__code__", None), "co_filename", "?")
        problem = _problem(id, scale, higher_is_better, needs, uses, formula, family, function)
        if problem:
            raise PluginError(f"plug-in {file}: metric {id!r}: {problem}")
        definition = {"id": id, "family": family, "scale": scale, "higher_is_better": higher_is_better,
                      "needs": list(needs), "uses": list(uses), "formula": formula.strip(), "source": file}
        _declared.append((_metric(definition, "", function), function))
        return function

    return declare


def _problem(id, scale, higher_is_better, needs, uses, formula, family, function) -> str | None:
    """What is wrong with a plug-in metric's metadata, or None."""
    if not isinstance(id, str) or not ID.fullmatch(id):
        return "not a metric id: lowercase letters, digits and underscores, starting with a letter, at most 64"
    if id in REGISTRY:
        return "the id of a built-in metric: give yours another id"
    if (other := USER.get(id)) is not None and other.user["kind"] != KIND:
        return f"the id of your {other.user['kind']}: give the plug-in's metric another id"
    if scale not in SCALES:
        return f"unknown scale {scale!r}: one of {', '.join(SCALES)}"
    if higher_is_better not in (True, False, None):
        return f"higher_is_better is {higher_is_better!r}: True, False or None (neither)"
    for name, given in (("needs", needs), ("uses", uses)):
        if isinstance(given, str) or not all(isinstance(i, str) for i in given):
            return f"{name} must be a list of input names, not {given!r}"
        if bad := [i for i in given if i not in OFFERED]:
            return (f"{name}: unknown input(s) {', '.join(map(repr, bad))}: a plug-in reads {', '.join(OFFERED)} "
                    "(deterministic metrics only: no judge, no embeddings)")
    if set(needs) & set(uses):
        return f"an input is either needed or used, not both: {sorted(set(needs) & set(uses))}"
    if not isinstance(formula, str) or not isinstance(family, str) or not ID.fullmatch(family):
        return "formula must be text, family a lowercase name"
    if not callable(function):
        return "the decorated object is not a function"
    return None


def _metric(definition: Mapping, version: str, function: Callable | None) -> Metric:
    """The metric of a plug-in's definition: computed by `function`, or (None) shown only."""
    compute = partial(_scores, function, definition) if function is not None else partial(_not_loaded, definition)
    return Metric(definition["id"], definition.get("family", FAMILY), definition["scale"],
                  definition.get("higher_is_better"), tuple(definition.get("needs", ())), "",
                  _formula(definition, version), compute, uses=tuple(definition.get("uses", ())),
                  user={"kind": KIND, "version": version, "definition": dict(definition)})


def _formula(definition: Mapping, version: str) -> str:
    """What "How scores are computed" says of it: the plug-in's own words, where it comes from, its version."""
    own = definition.get("formula") or "(the plug-in gives no formula)"
    return f"{own} Python plug-in metric from {definition.get('source')}, version {version}."


def stored(definition: Mapping, version: str) -> Metric:
    """A plug-in's metric as a run stored it: shown like any metric, no code imported; computing it needs its
    plug-in loaded (`load`, or `reload_stored` for a resumed run): the loaded metric when its version is loaded."""
    if (done := _loaded.get((definition["id"], version))) is not None:
        return done
    return _metric(definition, version, None)


def loaded(m: Metric) -> bool:
    """Whether `m` is a plug-in metric whose code is loaded in this process (not only shown from a stored run)."""
    return isinstance(m.compute, partial) and m.compute.func is _scores


def installed() -> list[Metric]:
    """The loaded metrics of installed packages (`load_entry_points`), by id: what the Evaluate screen offers."""
    return [m for _, m in sorted(USER.items()) if m.user["kind"] == KIND and loaded(m)
            and m.user["definition"].get("source", "").startswith(ENTRY)]


def _not_loaded(definition: Mapping, samples, context):
    raise RuntimeError(f"metric {definition['id']} comes from the plug-in {definition.get('source')}: load it "
                       "again (run --plugin FILE) to compute it")


# -- cells -------------------------------------------------------------------------------------------------------

def _scores(function: Callable, definition: Mapping, samples: Sequence[Sample], context: Any) -> list[Result]:
    return [_cell(function, definition, s) for s in samples]


def _cell(function: Callable, definition: Mapping, sample: Sample) -> Result:
    """One sample's cell: the function's number, checked against the scale; any failure that cell's judge_error
    (a re-run redoes it), never a number."""
    try:
        value = function(sample)
    except NotApplicable as exc:
        return not_applicable(str(exc) or f"the plug-in says {definition['id']} does not apply")
    except Exception as exc:  # the user's code: one sample's failure is that cell's, the others go on
        return Result(None, JUDGE_ERROR, f"plug-in {definition['source']}: {type(exc).__name__}: {exc}")
    if isinstance(value, Result) and value.status == NOT_APPLICABLE:
        return value
    if value is None:
        return not_applicable(f"the plug-in returned None: {definition['id']} does not apply")
    problem = off_scale(value, definition["scale"])
    if problem:
        return Result(None, JUDGE_ERROR, f"plug-in {definition['source']}: {definition['id']} returned {problem}")
    return Result(float(value), OK)


def off_scale(value: Any, scale: str) -> str | None:
    """Why `value` is no score on `scale` (what it is, and the scale), or None for a score on it."""
    bounds = RANGES[scale]
    on = f"{scale} scale ({bounds.text})"
    if isinstance(value, bool):
        value = int(value)
    if not isinstance(value, numbers.Real):
        return f"{value!r} ({type(value).__name__}), not a number on its {on}"
    if math.isnan(value) or not bounds.low <= value <= bounds.high or scale == "binary" and value not in (0, 1):
        return f"{value!r}, outside its {on}"
    return None


# -- loading ------------------------------------------------------------------------------------------------------

def _version(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def load(path: str | Path) -> list[Metric]:
    """Import the plug-in file `path` and register the metrics it declares (registry.USER); PluginError naming the
    file for a missing file, one that cannot be imported (its error), one with no metric or a bad declaration."""
    file = Path(path).expanduser().resolve()
    if not file.is_file():
        raise PluginError(f"plug-in {path}: no such file")
    name = f"ragscope_plugin_{hashlib.sha256(str(file).encode()).hexdigest()[:12]}"  # unique per file
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise PluginError(f"plug-in {file}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as an import would (dataclasses and pickling look the module up)

    def run() -> None:
        if str(file.parent) not in sys.path:  # its own helper modules import, as when the file runs as a script;
            sys.path.append(str(file.parent))  # after everything else, so a helper never shadows a library
        spec.loader.exec_module(module)

    try:
        return _collect(run, str(file), partial(_version, file), lambda m, f: True)
    except BaseException:
        sys.modules.pop(name, None)
        raise


def _collect(run: Callable[[], Any], source: str, version: Callable[[], str],
             keep: Callable[[Metric, Callable], bool]) -> list[Metric]:
    """Run an import (`run`) and register the metrics it declared (those `keep` keeps), as from `source`, at
    `version()` (its file's hash)."""
    start = len(_declared)
    try:
        run()
    except PluginError:
        raise
    except SyntaxError as exc:
        raise PluginError(f"plug-in {source}: cannot import it: SyntaxError: {exc.msg} (line {exc.lineno})") from exc
    except (Exception, SystemExit) as exc:  # a file that calls sys.exit() must not end the CLI or the app
        raise PluginError(f"plug-in {source}: importing it raised {type(exc).__name__}: {exc}") from exc
    finally:
        found = _declared[start:]
        del _declared[start:]
    found = [(m, f) for m, f in found if keep(m, f)]
    if not found:
        raise PluginError(f"plug-in {source}: declares no metric (decorate a function with "
                          "@plugin_metric(...), from evaluators.metrics.plugins)")
    ids = [m.id for m, _ in found]
    if twice := sorted({i for i in ids if ids.count(i) > 1}):
        raise PluginError(f"plug-in {source}: metric {twice[0]!r} is declared twice")
    at = version()
    metrics = [_metric({**m.user["definition"], "source": source}, at, f) for m, f in found]
    _loaded.update(((m.id, at), m) for m in metrics)
    return [register_user(m) for m in metrics]


def entry_points() -> list[importlib.metadata.EntryPoint]:
    return list(importlib.metadata.entry_points(group=GROUP))


def load_entry_point(ep: importlib.metadata.EntryPoint) -> list[Metric]:
    """The metrics of one `ragscope.metrics` entry point: `module` (every metric it declares) or `module:function`
    (that one); versioned by the module file's hash. PluginError naming the entry point when it cannot be used."""
    got: list = []

    def run() -> None:
        if ep.module in sys.modules:  # imported already: again, so its declarations are collected
            importlib.reload(sys.modules[ep.module])
        got.append(ep.load())

    def version() -> str:
        return _version(Path(sys.modules[ep.module].__file__))

    return _collect(run, f"{ENTRY}{ep.name}", version, lambda m, f: not ep.attr or f is got[0])


def load_entry_points() -> tuple[list[Metric], list[str]]:
    """Every `ragscope.metrics` entry point's metrics, and a message for each that could not be loaded (it is
    left out: the app and the CLI go on, and a run that names its metrics is refused as naming unknown ones)."""
    metrics, failures = [], []
    for ep in entry_points():
        try:
            metrics += load_entry_point(ep)
        except Exception as exc:  # a broken package must not keep the app from starting
            failures.append(f"{ep.name} ({GROUP} entry point {ep.value}): {exc}")
    return metrics, failures


def reload_stored(rows: Sequence[Mapping]) -> list[str]:
    """Load again the plug-ins of a stored run (its `Store.user_metrics` rows) whose metrics this process has not
    loaded at the run's version: from the stored source when its file still has the run's hash; what was loaded,
    one line each. PluginError when a file is gone or changed (a new version belongs in a new run)."""
    said = []
    for row in rows:
        if row["kind"] != KIND or ((m := USER.get(row["metric"])) is not None and loaded(m)
                                   and m.user["version"] == row["version"]):
            continue
        source = row["definition"].get("source", "")
        if source.startswith(ENTRY):
            name = source[len(ENTRY):]
            found = [ep for ep in entry_points() if ep.name == name]
            if not found:
                raise PluginError(f"metric {row['metric']!r} of this run comes from the {GROUP} entry point {name}, "
                                  "which is no longer installed")
            again = load_entry_point(found[0])
        else:
            file = Path(source)
            if not file.is_file():
                raise PluginError(f"plug-in file gone since the run: {source} (metric {row['metric']!r}); pass "
                                  "--plugin to use another file in a new run")
            if _version(file) != row["version"]:
                raise PluginError(f"plug-in file changed since the run: {source} (metric {row['metric']!r}, version "
                                  f"{row['version']} then, {_version(file)} now); pass --plugin to use the new "
                                  "version in a new run")
            again = load(file)
        now = {m.id: m.user["version"] for m in again}
        if now.get(row["metric"]) != row["version"]:
            raise PluginError(f"plug-in changed since the run: {source} (metric {row['metric']!r}, version "
                              f"{row['version']} then, {now.get(row['metric'], 'absent')} now); pass --plugin to use "
                              "the new version in a new run")
        said.append(f"plug-in {source} loaded again, unchanged since the run (version {row['version']}): "
                    f"{', '.join(m.id for m in again)}")
    return said
