"""The human-labelled items RAGScope ships (data/calibration, written by calibration/ship.py) for `judge calibrate`.

data/calibration/sets.json names each set, the human label it measures (correctness, faithfulness, relevance), its
kind (binary: True / False; graded: a number on `scale`) and what people said; <set>/items.jsonl holds its items.
They are the test parts of their sets only: nothing was ever fitted on them. An installed package carries a copy
(pyproject.toml: evaluators.calibration_data).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parents[2] / "data" / "calibration"
CALIBRATION_DIR = _CHECKOUT if _CHECKOUT.is_dir() else Path(__file__).resolve().parents[1] / "calibration_data"
KINDS = ("binary", "graded")


@dataclass(frozen=True)
class LabelledSet:
    name: str
    label: str  # the judge's dimension it measures: correctness | faithfulness | relevance
    kind: str  # binary | graded
    label_text: str  # what people said, e.g. "people: usefulness 1-5"
    scale: tuple[float, float] | None  # a graded label's range


@dataclass(frozen=True)
class LabelledItem:
    """One shipped (question, reference, answer, passages) case and its human label."""

    set: str
    item_id: str  # unique within the set
    group: str  # items of one group (the answers to one question) move together in the bootstrap
    question: str
    reference: str
    answer: str
    contexts: tuple[str, ...]
    label: bool | float
    part: str  # by the reference's length: "reference ≤ 5 words", "reference > 5 words" or "no reference"

    @property
    def key(self) -> str:
        """Unique across the sets: the question id of the item in a calibration run."""
        return f"{self.set}:{self.item_id}"


def _problem(path: Path, line: int | None, message: str) -> ValueError:
    where = f"{path}:{line}" if line else str(path)
    return ValueError(f"{where}: {message} (rebuild data/calibration with `python -m calibration.ship`)")


@lru_cache(maxsize=4)
def labelled_sets(folder: Path = CALIBRATION_DIR) -> tuple[LabelledSet, ...]:
    path = folder / "sets.json"
    if not path.is_file():
        raise _problem(path, None, "the labelled items are missing")
    out = []
    for name, entry in json.loads(path.read_text(encoding="utf-8")).items():
        if entry.get("kind") not in KINDS:
            raise _problem(path, None, f"set {name!r} has kind {entry.get('kind')!r}, not one of {KINDS}")
        scale = entry.get("scale")
        out.append(LabelledSet(name, entry["label"], entry["kind"], entry["label_text"],
                               tuple(scale) if scale else None))
    return tuple(out)


@lru_cache(maxsize=4)
def labelled_items(folder: Path = CALIBRATION_DIR) -> tuple[LabelledItem, ...]:
    """Every shipped item, set by set in sets.json's order, each set in its file's order."""
    items = []
    for s in labelled_sets(folder):
        path = folder / s.name / "items.jsonl"
        if not path.is_file():
            raise _problem(path, None, "the set's items are missing")
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            row = json.loads(line)
            label = row.get("label")
            if s.kind == "binary" and not isinstance(label, bool):
                raise _problem(path, n, f"label {label!r} is not true or false")
            if s.kind == "graded" and (isinstance(label, bool) or not isinstance(label, (int, float))):
                raise _problem(path, n, f"label {label!r} is not a number")
            items.append(LabelledItem(s.name, str(row["item_id"]), str(row["group"]), row["question"],
                                      row["reference"], row["answer"], tuple(row["contexts"]),
                                      label if s.kind == "binary" else float(label), row["part"]))
    keys = [i.key for i in items]
    if len(set(keys)) != len(keys):
        raise _problem(folder, None, "item ids repeat within a set")
    return tuple(items)
