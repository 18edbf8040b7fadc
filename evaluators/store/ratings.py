"""Human ratings and labels from a file (or from InspectorRAGet's records) -> `annotations`.

A labels file is a CSV / JSON / JSONL / Parquet table, read by `loaders.read_records`:

    question_id, method, annotator, <dimension>..., [<dimension>_reason...] | [reason]

- one column per human dimension (`faithfulness`, `correctness`, ...), each cell a rating (a
  number) or a label (a text such as "correct"); a blank or NaN cell is a skipped rating, no record, counted
  per reason with its rows in the import's summary;
- the reason of a dimension in `<dimension>_reason`, or in one `reason` column when the file has a
  single dimension;
- id columns under the loaders' names (`id`, `query_id`, `system`, `model` ...) and the annotator's
  under `annotator`, `rater`, `author` ...; text columns a labels file often carries beside the ids
  (question, answer, reference, contexts, notes, timestamps) are not dimensions.
InspectorRAGet's experiment JSON is read as it is: its human ratings (`inspectorraget.human_ratings`).

A dimension is numeric when at least half of its filled cells are numbers; a text in a numeric
dimension is then a problem (a typo such as "four"), a number in a text dimension is a label.

Every problem (unknown question or method of the run, empty annotator, a text where ratings are
numbers, two ratings of one annotator for the same item and dimension) is listed with file, row and
field, and nothing is stored while there is one. A stored import keeps its provenance in
`annotations`: `source` (file name), `source_hash` (content), `dimension`, `author` (annotator),
`rating` or `label`, `note` (the reason), `created_at`. The same content imported into the same run
again stores nothing.
"""
from __future__ import annotations

import hashlib
import json
import math
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evaluators import loaders
from evaluators.loaders import inspectorraget
from evaluators.loaders import cells, jsontext
from evaluators.loaders.columns import column_lookup
from evaluators.loaders.problems import Problems
from evaluators.records import LoadError, Problem
from evaluators.store import Store

ANNOTATOR_ALIASES = ("annotator", "annotator_id", "rater", "rater_id", "author", "labeler", "labeller",
                     "worker_id", "judge_id", "user")
ID_ALIASES = {"question_id": loaders.ALIASES["question_id"], "method": loaders.ALIASES["method"],
              "annotator": ANNOTATOR_ALIASES}
REASON = "reason"
REASON_SUFFIX = "_reason"
# Columns a labels file carries beside the ratings that are no rated dimension.
NOT_DIMENSIONS = frozenset(
    name for field in ("question", "reference", "answer", "contexts", "reference_contexts", "evidence", "checks")
    for name in loaders.ALIASES[field]
) | {"question_type", "note", "notes", "comment", "comments", "timestamp", "created_at", "date", "duration"}


@dataclass(frozen=True)
class HumanLabel:
    """One annotator's rating (a number) or label (a text) of one method's answer on one dimension.
    `inspectorraget.HumanRating` has the same fields but `row`."""

    question_id: str
    method: str
    annotator: str
    dimension: str
    value: float | str
    reason: str | None = None
    row: int | None = None  # where it was read (file row, or position in the records), for messages


@dataclass(frozen=True)
class LabelFile:
    file: str
    content_hash: str
    labels: tuple[HumanLabel, ...]
    fields: dict[str, str]  # question_id / method / annotator -> the file's column, for messages
    skipped: dict[str, tuple[int, ...]] = field(default_factory=dict)  # why -> the row of each rating left out


@dataclass(frozen=True)
class ImportResult:
    run_id: str
    source: str
    n: int  # ratings and labels in the source (stored now, or before when already_imported)
    dimensions: tuple[str, ...]
    annotators: tuple[str, ...]
    already_imported: bool
    skipped: dict[str, tuple[int, ...]] = field(default_factory=dict)  # why -> the row of each rating left out

    def summary(self) -> str:
        if self.already_imported:
            done = (f"{self.source} was imported into run {self.run_id} before (same content): nothing stored again "
                    f"({self.n:,} ratings)")
        else:
            done = (f"imported {self.n:,} ratings of {len(self.dimensions)} dimension{_s(self.dimensions)} "
                    f"({', '.join(self.dimensions)}) by {len(self.annotators)} annotator{_s(self.annotators)} "
                    f"from {self.source} into run {self.run_id}")
        return done + skipped_text(self.skipped)


def skipped_text(skipped: dict[str, tuple[int, ...]], shown: int = 5) -> str:
    """'; skipped 3 ratings with no value: 2 NaN (rows 3, 7), 1 blank (row 5)', or '' when none was skipped."""
    if not skipped:
        return ""
    n = sum(map(len, skipped.values()))
    parts = []
    for why, rows in sorted(skipped.items(), key=lambda item: -len(item[1])):
        distinct = list(dict.fromkeys(rows))
        listed = ", ".join(map(str, distinct[:shown])) + (", ..." if len(distinct) > shown else "")
        parts.append(f"{len(rows):,} {why} (row{_s(distinct)} {listed})")
    return f"; skipped {n:,} rating{'s' if n != 1 else ''} with no value: {', '.join(parts)}"


# --------------------------------------------------------------------------- public API


def import_ratings(store: Store, run_id: str, records: Iterable[Any], *, source: str,
                   source_hash: str | None = None) -> ImportResult:
    """Store human ratings in `annotations`, all or none, in one bulk insert.

    records: `HumanLabel`s, `inspectorraget.HumanRating`s, or mappings with question_id, method,
    annotator, dimension, value (a number is a rating, a text a label) and optional reason.
    source: names them in `annotations.source` (e.g. the file name); source_hash: their content's
    hash (default: a hash of the records), so importing the same content into the run again is a
    no-op. LoadError listing every bad record; ValueError for an unknown run."""
    labels = [_as_label(record, position) for position, record in enumerate(records, 1)]
    return _import(store, run_id, labels, source, source_hash or _records_hash(labels), {}, [])


def import_file(store: Store, run_id: str, source, *, name: str | None = None,
                encoding: str = "utf-8") -> ImportResult:
    """Read a labels file (a path, or bytes with `name`) and import it into the run: every problem of
    the file and against the run in one LoadError, nothing stored while there is one."""
    label_file, problems = _read(source, name, encoding)
    return _import(store, run_id, list(label_file.labels), label_file.file, label_file.content_hash,
                   label_file.fields, problems, label_file.skipped)


# --------------------------------------------------------------------------- storing


def _import(store: Store, run_id: str, labels: list[HumanLabel], source: str, source_hash: str,
            fields: dict[str, str], problems: list[Problem], skipped: dict | None = None) -> ImportResult:
    if store.run(run_id) is None:
        raise ValueError(f"no run {run_id!r} in {store.path} (see `python -m evaluators runs`)")
    problems = problems + _check(labels, source, fields, store.run_keys(run_id))
    if problems:
        raise LoadError(problems)
    if not labels:
        raise LoadError([Problem(source, None, None, "the file holds no rating: every dimension cell is blank")])
    labels = _typed(labels)
    rows = [{"question_id": x.question_id, "method": x.method, "author": x.annotator, "dimension": x.dimension,
             "rating": x.value if isinstance(x.value, float) else None,
             "label": x.value if isinstance(x.value, str) else None, "note": x.reason} for x in labels]
    created = store.add_ratings(run_id, rows, source=source, source_hash=source_hash)
    return ImportResult(run_id, source, len(labels), tuple(sorted({x.dimension for x in labels})),
                        tuple(sorted({x.annotator for x in labels})), already_imported=not created,
                        skipped=skipped or {})


def _records_hash(labels: list[HumanLabel]) -> str:
    """Content of records (not their order or row numbers), for the no-op re-import."""
    rows = sorted(json.dumps([x.question_id, x.method, x.annotator, x.dimension, x.value, x.reason])
                  for x in labels)
    return hashlib.sha256("\n".join(rows).encode("utf-8")).hexdigest()


def _as_label(record: Any, position: int) -> HumanLabel:
    """A record as a HumanLabel; a value that is no number or text becomes None (a problem)."""
    get = record.get if isinstance(record, Mapping) else lambda key, default=None: getattr(record, key, default)
    try:
        value = _number_or_text(get("value"))
    except _Bad:
        value = None
    return HumanLabel(_text(get("question_id")), _text(get("method")), _text(get("annotator")),
                      _text(get("dimension")), value, _text(get("reason")) or None, get("row") or position)


# --------------------------------------------------------------------------- validation


def _check(labels: list[HumanLabel], file: str, fields: dict[str, str],
           run: tuple[set[str], set[str]]) -> list[Problem]:
    """Every problem of the records against the run (its question ids, its methods), each once: a
    row's id problem is not repeated for each of its dimensions."""
    field = {name: fields.get(name, name) for name in ID_ALIASES}
    numeric = _numeric_dimensions(labels)
    problems, first_row = [], {}
    for x in labels:
        found = [*_id_problems(x, field, run), *_value_problems(x, numeric)]
        key = (x.question_id, x.method, x.annotator, x.dimension)
        if key in first_row:
            found.append((x.dimension, f"annotator '{x.annotator}' already rated question '{x.question_id}', method "
                                       f"'{x.method}' on '{x.dimension}' at row {first_row[key]}; keep one rating "
                                       "per annotator, item and dimension"))
        first_row.setdefault(key, x.row)
        problems += [Problem(file, x.row, where, message) for where, message in found]
    return list(dict.fromkeys(problems))


def _id_problems(x: HumanLabel, field: dict[str, str], run: tuple[set[str], set[str]]):
    """(field, message) for blank ids, annotator or dimension, and ids the run does not have."""
    for name, value in (("question_id", x.question_id), ("method", x.method), ("annotator", x.annotator)):
        if not value:
            yield field[name], f"the {name.replace('_', ' ')} is empty; every rating needs {_NEEDS[name]}"
    if not x.dimension:
        yield "dimension", "the dimension is empty; name what was rated"
    if x.question_id and x.question_id not in run[0]:
        yield field["question_id"], (f"question id '{x.question_id}' is not a question of this run's golden set; "
                                     "fix the id or pick the run it belongs to")
    if x.method and x.method not in run[1]:
        yield field["method"], (f"method '{x.method}' is not a method of this run (its methods: "
                                f"{', '.join(sorted(run[1])) or 'none'}); rename it as the run names it")


def _value_problems(x: HumanLabel, numeric: set[str]):
    """(field, message) for a missing value, a text among numeric ratings, an infinite number."""
    if x.value is None:
        yield x.dimension or "value", "no rating: the value must be a number (a rating) or a text (a label)"
    elif x.dimension in numeric and isinstance(x.value, str):
        yield x.dimension, (f"rating {x.value!r} is not a number, but '{x.dimension}' holds numeric ratings; "
                            "write it as a number")
    elif isinstance(x.value, float) and not math.isfinite(x.value):
        yield x.dimension, f"rating {x.value} is not a finite number"


_NEEDS = {"question_id": "the id of the question it rates", "method": "the method whose answer it rates",
          "annotator": "the id or name of the person who gave it"}


def _numeric_dimensions(labels: list[HumanLabel]) -> set[str]:
    """Dimensions whose values are mostly numbers (at least half): ratings, not labels."""
    numbers, texts = Counter(), Counter()
    for x in labels:
        (numbers if isinstance(x.value, float) else texts)[x.dimension] += 1
    return {d for d in numbers if numbers[d] >= texts[d]}


def _typed(labels: list[HumanLabel]) -> list[HumanLabel]:
    """A number in a label dimension is a label too ("1" among "yes"/"no"): one type per dimension."""
    numeric = _numeric_dimensions(labels)
    return [x if x.dimension in numeric or isinstance(x.value, str) else replace(x, value=_number_text(x.value))
            for x in labels]


# --------------------------------------------------------------------------- reading a file


def _read(source, name: str | None, encoding: str) -> tuple[LabelFile, list[Problem]]:
    """The file's labels and the problems found reading it (structural ones raise LoadError)."""
    raw, file = _raw(source, name)
    if raw is None:  # unreadable: the loaders say why, in their words
        loaders.read_records(source, name=name, encoding=encoding)
    document = _inspectorraget_document(raw)
    if document is not None:
        labels = [_as_label(r, position) for position, r in
                  enumerate(inspectorraget.human_ratings(document, file=file), 1)]
        return LabelFile(file, hashlib.sha256(raw).hexdigest(), tuple(labels), {}), []
    records = loaders.read_records(raw, name=file, encoding=encoding)
    problems = list(records.problems)
    fields, dimensions, reasons = _columns(records, problems)
    skipped: dict[str, list[int]] = {}
    labels = [label for row, record in records.rows
              for label in _row_labels(row, record, fields, dimensions, reasons, records.file, problems, skipped)]
    return LabelFile(records.file, records.content_hash, tuple(labels), fields,
                     {why: tuple(rows) for why, rows in skipped.items()}), problems


def _raw(source, name: str | None) -> tuple[bytes | None, str]:
    """(the file's bytes, its name for messages); None bytes when the path cannot be read."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        if not name:
            raise ValueError("reading labels from bytes needs name=, the uploaded file's name")
        return bytes(source), Path(name).name
    try:
        return Path(source).read_bytes(), Path(name or source).name
    except OSError:
        return None, Path(name or source).name


def _inspectorraget_document(raw: bytes) -> dict | None:
    """The parsed JSON when the file is InspectorRAGet's experiment JSON, else None."""
    if not raw.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        return None
    try:
        top = jsontext.loads(raw.decode("utf-8-sig"))
    except ValueError:  # not JSON (or JSON Lines), or refused: the generic reader says what is wrong
        return None
    return top if inspectorraget.is_inspectorraget(top) else None


def _columns(records: loaders.Records, problems: list[Problem]) -> tuple[dict, list[str], dict]:
    """(id field -> column, dimension columns, dimension -> reason column); LoadError when an id
    column is missing, since no row can be read without it."""
    found = Problems(records.file)
    lookup = column_lookup(records.keys, found)
    problems += found.items
    fields = {f: next((lookup[a] for a in aliases if a in lookup), None) for f, aliases in ID_ALIASES.items()}
    for field, column in fields.items():
        if column is None:
            problems.append(Problem(records.file, None, field, (
                f"no column for the {field.replace('_', ' ')} (accepted names: {', '.join(ID_ALIASES[field][:5])}); "
                f"columns found: {', '.join(records.keys)}")))
    if found.items or any(column is None for column in fields.values()):
        raise LoadError(problems)
    taken = set(fields.values())
    rest = [k for k in records.keys if k not in taken and k.strip().lower() not in NOT_DIMENSIONS]
    reason_columns = [k for k in rest if k.strip().lower() == REASON or k.lower().endswith(REASON_SUFFIX)]
    dimensions = [k for k in rest if k not in reason_columns]
    if not dimensions:
        problems.append(Problem(records.file, None, None, "no rating column: add one column per rated dimension "
                                "(e.g. faithfulness) beside question_id, method and annotator"))
        raise LoadError(problems)
    return fields, dimensions, _reasons(reason_columns, dimensions, records.file, problems)


def _reasons(columns: list[str], dimensions: list[str], file: str, problems: list[Problem]) -> dict[str, str]:
    """dimension -> its reason column: `<dimension>_reason`, or `reason` beside a single dimension."""
    reasons = {}
    for column in columns:
        if column.strip().lower() == REASON:
            if len(dimensions) == 1:
                reasons[dimensions[0]] = column
            else:
                problems.append(Problem(file, None, column, (
                    f"one '{column}' column beside {len(dimensions)} dimensions ({', '.join(dimensions)}) does not say "
                    f"which rating it explains; name it <dimension>_reason, e.g. {dimensions[0]}_reason")))
            continue
        dimension = column[: -len(REASON_SUFFIX)]
        if dimension in dimensions:
            reasons.setdefault(dimension, column)
        else:
            problems.append(Problem(file, None, column, f"'{column}' is a reason column, but the file has no "
                                    f"column '{dimension}' it would explain; name it after its dimension"))
    return reasons


def _row_labels(row: int, record: dict, fields: dict, dimensions: list[str], reasons: dict, file: str,
                problems: list[Problem], skipped: dict[str, list[int]]) -> list[HumanLabel]:
    """The filled dimensions of one row; cells that are neither text nor number are problems, empty ones are
    added to `skipped` (why -> rows)."""
    ids = []
    for name in ("question_id", "method", "annotator"):
        try:
            text = _text(record.get(fields[name]))
            ids.append(cells.identifier(text, name.replace("_", " ")) if text else text)
        except (_Bad, cells.Bad) as bad:
            problems.append(Problem(file, row, fields[name], str(bad)))
            return []
    out = []
    for dimension in dimensions:
        try:
            value = _number_or_text(record.get(dimension))
            reason = _text(record.get(reasons[dimension])) if dimension in reasons else ""
        except _Bad as bad:
            problems.append(Problem(file, row, dimension, str(bad)))
            continue
        if value is not None:
            out.append(HumanLabel(*ids, dimension, value, reason or None, row))
        else:  # blank, or NaN (a float, or "nan" as some tools write a blank)
            cell = record.get(dimension)
            skipped.setdefault("NaN" if _is_nan(cell) or _text(cell) else "blank", []).append(row)
    return out


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


# --------------------------------------------------------------------------- cells


class _Bad(ValueError):
    """A cell that is neither a text nor a number (a list, an object)."""


def _text(value: Any) -> str:
    """An id or reason cell as stripped text in NFC, as the loaders store ids ("" when blank); numbers as they
    read (7, not 7.0)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (str, int, float)):
        return unicodedata.normalize("NFC", str(value).strip())
    raise _Bad(f"found {type(value).__name__} where a text or a number was expected")


def _number_or_text(value: Any) -> float | str | None:
    """A rating cell: a number (also one written as text, "4"), a label (other text, a boolean), or
    None when blank."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return None if isinstance(value, float) and math.isnan(value) else float(value)
    text = _text(value)
    if not text:
        return None
    try:
        number = float(text)
    except ValueError:
        return text
    return None if math.isnan(number) else number  # "NaN": how some tools write a blank


def _number_text(value: float) -> str:
    return str(int(value)) if value.is_integer() else str(value)


def _s(items) -> str:
    return "" if len(items) == 1 else "s"
