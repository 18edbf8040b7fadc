"""An analyst's own criterion: a rubric the LLM judge scores, stored with the run as a metric of its own.

    Criterion("names_the_source", "The answer says which passage its main claim comes from.",
              scale="pass/fail", inputs=("question", "answer", "contexts"))

A criterion is data (`check` lists what is wrong with one, as (field, message)); its `version` is the hash of what
the judge is shown and how the score reads, so a changed text is a new version and runs compare a criterion only
at equal versions. Its metric (metrics/criteria.py) is registered under its id beside the catalogue's.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

# The scales an analyst names, each with the lowest and highest score a judge may give (metrics/criteria.py stores
# them on the catalogue's scales: 1-5, 0 or 1, 0-1).
SCALES = {"1-5": (1, 5), "pass/fail": (0, 1), "0-1": (0, 1)}
# What a criterion may show the judge; every criterion reads the answer.
INPUTS = ("question", "answer", "reference", "contexts")
DEFAULT_INPUTS = ("question", "answer")
ID = re.compile(r"[a-z][a-z0-9_]{0,63}")  # a metric id: lowercase, digits, underscores; no "@" (cut-offs)
MAX_TEXT = 4_000  # characters of a criterion's text, of a level's, of an example's field
MAX_EXAMPLES = 5
MAX_CRITERIA = 25  # per run: all of them go in one judge call per sample


@dataclass(frozen=True)
class Example:
    """A few-shot example: the inputs shown (a subset of the criterion's), the score it deserves and why."""

    inputs: Mapping[str, str]
    score: float
    reason: str = ""


@dataclass(frozen=True)
class Criterion:
    id: str
    criterion: str
    scale: str = "1-5"
    inputs: tuple[str, ...] = DEFAULT_INPUTS
    name: str | None = None
    levels: Mapping[int, str] = field(default_factory=dict)  # 1-5 only: what each level means
    higher_is_better: bool = True
    examples: tuple[Example, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "examples", tuple(self.examples))
        object.__setattr__(self, "levels", dict(self.levels))
        if found := check(self.definition()):
            raise ValueError(f"criterion {self.id!r}: " + "; ".join(f"{f}: {m}" for f, m in found))

    @property
    def bounds(self) -> tuple[int, int]:
        """The lowest and highest score a reply may give."""
        return SCALES[self.scale]

    def definition(self) -> dict:
        """Everything that defines it, as JSON-ready data (stored with the run; `of_definition` reads it back)."""
        return {"id": self.id, "name": self.name, "criterion": self.criterion, "scale": self.scale,
                "inputs": list(self.inputs), "levels": {str(k): v for k, v in sorted(self.levels.items())},
                "higher_is_better": self.higher_is_better,
                "examples": [{"inputs": dict(e.inputs), "score": e.score, "reason": e.reason} for e in self.examples]}

    @property
    def version(self) -> str:
        """12 hex digits of the sha256 of its definition but its display name: what the judge is asked and how the
        score reads. Equal versions are the same criterion."""
        judged = {k: v for k, v in self.definition().items() if k != "name"}
        return hashlib.sha256(json.dumps(judged, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:12]

    @classmethod
    def of_definition(cls, data: Mapping) -> Criterion:
        """A criterion of checked data (`check`): a file's object, or what `definition` stored."""
        return cls(id=data["id"], criterion=data["criterion"], scale=data["scale"],
                   inputs=tuple(data.get("inputs") or DEFAULT_INPUTS),
                   name=data.get("name"), levels={int(k): v for k, v in (data.get("levels") or {}).items()},
                   higher_is_better=data.get("higher_is_better", True),
                   examples=tuple(Example(e["inputs"], e["score"], e.get("reason", ""))
                                  for e in data.get("examples") or ()))


FIELDS = ("id", "name", "criterion", "scale", "inputs", "levels", "higher_is_better", "examples")


def check(data: Mapping) -> list[tuple[str, str]]:
    """What is wrong with a criterion given as data (a file's object, or `Criterion.definition()`), as (field,
    message); empty when it can be judged. (A collision with a built-in metric's id is the catalogue's to say:
    metrics.criteria.)"""
    found = [(k, f"unknown field: the fields are {', '.join(FIELDS)}") for k in data if k not in FIELDS]
    cid, text, scale = data.get("id"), data.get("criterion"), data.get("scale")
    if not isinstance(cid, str) or not ID.fullmatch(cid):
        shown = repr(cid) if len(repr(cid)) <= 80 else repr(cid)[:77] + "..."
        found.append(("id", f"{shown} is not a metric id: lowercase letters, digits and underscores, starting with a "
                            "letter, at most 64 characters"))
    if text is not None and not isinstance(text, str):
        found.append(("criterion", f"the criterion is a {type(text).__name__}, not a text (quote it)"))
    elif not isinstance(text, str) or not text.strip():
        found.append(("criterion", "the criterion's text is empty: say what a good answer does"))
    elif len(text) > MAX_TEXT:
        found.append(("criterion", f"{len(text):,} characters, over the limit of {MAX_TEXT:,}: a criterion is "
                                   "a rule a judge can apply, not a document"))
    if scale is None:
        found.append(("scale", f"no scale: one of {', '.join(SCALES)}"))
    elif scale not in SCALES:
        found.append(("scale", f"unknown scale {scale!r}: one of {', '.join(SCALES)}"))
    inputs = data.get("inputs", DEFAULT_INPUTS)
    if isinstance(inputs, str) or not isinstance(inputs, Sequence):
        found.append(("inputs", f"a list of input names, each one of {', '.join(INPUTS)}"))
    elif bad := [i for i in inputs if i not in INPUTS]:
        found.append(("inputs", f"unknown input(s) {', '.join(map(repr, bad))}: each one of {', '.join(INPUTS)}"))
    elif "answer" not in inputs:
        found.append(("inputs", "a criterion judges the answer: 'answer' must be one of its inputs"))
    elif len(set(inputs)) < len(inputs):
        found.append(("inputs", "an input is named twice"))
    name = data.get("name")
    if name is not None and (not isinstance(name, str) or len(name) > 200):
        found.append(("name", "a name is a short text (at most 200 characters)"))
    if not isinstance(data.get("higher_is_better", True), bool):
        found.append(("higher_is_better", "true or false"))
    found += _level_problems(data.get("levels") or {}, scale)
    examples = data.get("examples") or ()
    if isinstance(examples, (str, Mapping)) or not isinstance(examples, Sequence):
        found.append(("examples", "a list of examples, each {\"inputs\": {...}, \"score\": ..., \"reason\": ...}"))
    elif len(examples) > MAX_EXAMPLES:
        found.append(("examples", f"{len(examples)} examples, over the limit of {MAX_EXAMPLES}"))
    else:
        for i, e in enumerate(examples, 1):
            found += [(f"examples[{i}].{f}", m) for f, m in _example_problems(e, inputs, scale)]
    return found


def _level_problems(levels, scale) -> list[tuple[str, str]]:
    if not levels:
        return []
    if not isinstance(levels, Mapping):
        return [("levels", "an object of level -> text, e.g. {\"1\": \"...\", \"5\": \"...\"}")]
    if scale != "1-5":
        return [("levels", "levels describe the 1-5 scale only")]
    keys = {str(k) for k in levels}
    if keys - {"1", "2", "3", "4", "5"}:
        return [("levels", f"levels are 1 to 5, not {', '.join(sorted(keys - {'1', '2', '3', '4', '5'}))}")]
    if any(not isinstance(t, str) or not t.strip() or len(t) > MAX_TEXT for t in levels.values()):
        return [("levels", f"each level is a non-empty text of at most {MAX_TEXT:,} characters")]
    return []


def _example_problems(e, inputs, scale) -> list[tuple[str, str]]:
    if not isinstance(e, Mapping):
        return [("", "an example is an object {\"inputs\": {...}, \"score\": ..., \"reason\": ...}")]
    found = []
    shown, score, reason = e.get("inputs"), e.get("score"), e.get("reason", "")
    if not isinstance(shown, Mapping) or not shown:
        found.append(("inputs", "the inputs it shows, e.g. {\"answer\": \"...\"}"))
    else:
        if isinstance(inputs, Sequence) and (extra := set(shown) - set(inputs)):
            found.append(("inputs", f"{', '.join(sorted(map(str, extra)))} not among the criterion's inputs"))
        if any(not isinstance(v, str) or len(v) > MAX_TEXT for v in shown.values()):
            found.append(("inputs", f"each input is a text of at most {MAX_TEXT:,} characters"))
    low, high = SCALES.get(scale, (0, 5))
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not low <= score <= high:
        found.append(("score", f"{score!r} is not a score on the {scale} scale ({low:g} to {high:g})"))
    elif scale in ("1-5", "pass/fail") and score != int(score):
        found.append(("score", f"{score!r}: the {scale} scale has whole scores"))
    if not isinstance(reason, str) or len(reason) > MAX_TEXT:
        found.append(("reason", f"a text of at most {MAX_TEXT:,} characters"))
    return found


def duplicates(criteria: Sequence[Criterion]) -> list[str]:
    """The ids given more than once."""
    seen, twice = set(), []
    for c in criteria:
        if c.id in seen and c.id not in twice:
            twice.append(c.id)
        seen.add(c.id)
    return twice
