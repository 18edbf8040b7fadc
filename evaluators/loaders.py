"""Input files -> validated golden items and RAG outputs.

`load` turns a CSV / JSON / JSONL / Parquet file (a path, or the bytes of an upload) into a
`Dataset`, or raises `LoadError` listing every problem found, each naming file, row and field.
Nothing partial is ever returned, so nothing half-valid reaches the store.

The pipeline: bytes -> text -> records (row number, dict) -> canonical columns -> typed records.
Structural failures (undecodable bytes, invalid JSON, missing columns) stop early, because what
follows them would be noise; problems inside records are all collected before raising.
"""
from __future__ import annotations

import ast
import codecs
import csv
import gc
import hashlib
import io
import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from evaluators import inspectorraget
from evaluators.checks import validate_check
from evaluators.schema import Chunk, GoldenItem, LoadError, Problem, RagOutput

FORMATS = ("csv", "json", "jsonl", "parquet")
MAX_CELL_CHARS = 1_000_000
ROLES = ("auto", "golden", "outputs")

# Canonical field -> accepted column names (case-insensitive), best first. The order of the
# fields matters: a column goes to the first field that claims it, so `reference` is resolved
# before `answer` and the retrieved `contexts` before DeepEval's ideal `context`.
# haystack's evaluation results name their columns in the plural (questions, true_answers,
# predicted_answers; its RAG harness: responses, ground_truth_answers); InspectorRAGet's records
# (evaluators.inspectorraget) keep that file's names: task_id, input, targets, model, output.
ALIASES: dict[str, tuple[str, ...]] = {
    "question_id": ("question_id", "id", "query_id", "qid", "sample_id", "task_id"),
    "method": ("method", "system", "rag_method", "pipeline", "model"),
    "question": ("question", "query", "user_input", "input", "questions"),
    "reference": ("reference", "gt_answer", "ground_truth", "expected_output", "expected_answer",
                  "reference_answer", "golden_answer", "true_answers", "ground_truth_answers",
                  "targets"),
    "answer": ("answer", "response", "generated_answer", "actual_output", "prediction", "output",
               "predicted_answers", "responses"),
    "contexts": ("contexts", "retrieved_contexts", "retrieval_context", "retrieved_context",
                 "context", "chunks"),
    "reference_contexts": ("reference_contexts", "context"),
    "question_type": ("question_type", "type", "category", "answerability"),
    "evidence": ("evidence",),
    "checks": ("checks",),
}
GOLDEN_FIELDS = ("question_id", "question", "reference", "question_type", "evidence",
                 "reference_contexts", "checks")
OUTPUT_FIELDS = ("question_id", "question", "method", "answer", "contexts")
_DESCRIPTIONS = {
    "question_id": "the question id",
    "question": "the question text",
    "reference": "the reference (golden) answer",
    "answer": "the RAG method's answer",
}

_EXTENSIONS = {".csv": "csv", ".tsv": "csv", ".json": "json", ".jsonl": "jsonl",
               ".ndjson": "jsonl", ".parquet": "parquet", ".pq": "parquet"}
_WRAPPER_KEYS = ("results", "data", "samples", "examples")
_CHUNK_ID_KEYS = ("doc_id", "id", "chunk_id", "document_id")
_CHUNK_TEXT_KEYS = ("text", "content", "page_content")
_CSV_DELIMITERS = (",", ";", "\t", "|")
# Fits a C long on every platform; cells over MAX_CELL_CHARS get our own message instead of
# the csv module's "field larger than field limit".
_CSV_FIELD_LIMIT = 2**31 - 1
_HEAD_BYTES = 4096
# A spreadsheet runs a cell starting with = or @, or with +/- directly followed by a function
# call ("+HYPERLINK(", "-2+3+cmd|"). "-0.133%" and "- item" are ordinary text.
_FORMULA = re.compile(r"\s*(?:[=@]|[+-](?:[\d.]+[-+*/])*[A-Za-z_][\w.]*[(|])")


@dataclass(frozen=True)
class Dataset:
    source: str  # file name shown in messages (basename)
    format: str  # one of FORMATS, as detected
    content_hash: str  # sha256 of the raw bytes + the load options that change meaning
    golden: tuple[GoldenItem, ...]  # empty when the file holds no golden fields
    outputs: tuple[RagOutput, ...]  # empty when the file holds no answers
    columns: dict[str, str]  # canonical field -> the column/key it was read from
    output_rows: tuple[int, ...] = ()  # record number of each output, for later messages


class _Bad(ValueError):
    """A cell that cannot be used; the message says why, in the user's words."""


class _Problems:
    """The problems of one file, in the order found."""

    def __init__(self, file: str):
        self.file = file
        self.items: list[Problem] = []

    def add(self, row: int | None, field: str | None, message: str) -> None:
        self.items.append(Problem(self.file, row, field, message))

    def stop(self, row: int | None, field: str | None, message: str) -> NoReturn:
        self.add(row, field, message)
        raise LoadError(self.items)

    def raise_if_any(self) -> None:
        if self.items:
            raise LoadError(self.items)


# --------------------------------------------------------------------------- public API


def load(source, *, name=None, role="auto", method=None, context_sep=None, fmt=None,
         encoding="utf-8", column_map=None) -> Dataset:
    """Read one file into a Dataset, or raise LoadError listing every problem found.

    source: a path, or raw bytes (then `name`, the uploaded file's name, is required).
    role: "golden", "outputs" or "auto" (whatever the file holds, at least one of them).
    method: method name for outputs when the file has no method column (default: file stem).
    context_sep: separator that joins the chunks when contexts are stored as one string.
    column_map: {canonical_field: column} overrides; a None column turns a guessed field off.
    """
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, not {role!r}")
    raw, file = _read_source(source, name)
    with _gc_paused():
        return _load(raw, file, role, method, context_sep, fmt, encoding, column_map or {})


def _load(raw: bytes, file: str, role: str, method, context_sep, fmt, encoding,
          column_map: dict) -> Dataset:
    problems = _Problems(file)
    codec = _check_options(problems, method, context_sep, fmt, encoding)
    _check_not_empty(raw, problems)
    fmt = fmt or _detect(file, raw[:_HEAD_BYTES], problems)
    fmt, keys, records = _parse(raw, fmt, codec, problems)
    found_in_records = len(problems.items)  # bad lines/rows: reported, the good records still read
    columns = _resolve_columns(keys, role, column_map, problems)
    want_golden, want_outputs = _plan(columns, role, keys, problems)
    if len(problems.items) > found_in_records:
        raise LoadError(problems.items)  # without the right columns the rows are noise

    default_method = None
    if want_outputs and "method" not in columns:
        default_method = method.strip() if method is not None else Path(file).stem
    reader = _RecordReader(columns, problems, want_golden, want_outputs, default_method,
                           context_sep)
    golden, outputs, output_rows = reader.read_all(records)
    for row, field, message in _duplicate_outputs(outputs, output_rows, columns):
        problems.add(row, field, message)
    problems.raise_if_any()

    options = {"format": fmt, "role": role, "method": default_method,
               "context_sep": context_sep, "column_map": column_map, "encoding": codec}
    used = (GOLDEN_FIELDS if want_golden else ()) + (OUTPUT_FIELDS if want_outputs else ())
    return Dataset(
        source=file,
        format=fmt,
        content_hash=_content_hash(raw, options),
        golden=golden,
        outputs=outputs,
        columns={f: c for f, c in columns.items() if f in used},
        output_rows=output_rows,
    )


@dataclass(frozen=True)
class Records:
    """A file parsed into records, before any column is given a meaning (for readers of other
    tables than golden sets and outputs, such as human labels: `evaluators.labels`)."""

    file: str  # file name shown in messages (basename)
    format: str  # one of FORMATS, as detected
    content_hash: str  # sha256 of the raw bytes
    keys: list[str]  # every column / key seen, in first-seen order
    rows: list[tuple[int, dict]]  # (row number as messages give it, record)
    problems: list[Problem]  # records that could not be read (a broken line, a short row); not in rows


def read_records(source, *, name=None, encoding="utf-8") -> Records:
    """Any CSV / JSON / JSONL / Parquet file (a path, or bytes with `name`) as records, with the
    same format detection, parsing and messages as `load`; LoadError when no record can be read
    (unreadable, empty, undecodable, invalid JSON). InspectorRAGet's experiment JSON comes back as
    its loader records (one per model result)."""
    raw, file = _read_source(source, name)
    problems = _Problems(file)
    codec = _check_options(problems, None, None, None, encoding)
    _check_not_empty(raw, problems)
    fmt = _detect(file, raw[:_HEAD_BYTES], problems)
    with _gc_paused():
        fmt, keys, records = _parse(raw, fmt, codec, problems)
    return Records(file, fmt, hashlib.sha256(raw).hexdigest(), [str(k) for k in keys], records,
                   list(problems.items))


def check_against_golden(outputs: Dataset | Sequence[Dataset], golden: Dataset) -> list[Problem]:
    """Outputs whose question is not in the golden set, and (question_id, method) pairs answered
    twice, also across files (their scores would overwrite each other)."""
    if not golden.golden:
        return [Problem(golden.source, None, None,
                        "holds no golden items; choose the golden set file as the golden set")]
    known = {item.question_id for item in golden.golden}
    by_text = {derive_question_id(item.question): item.question_id for item in golden.golden}
    problems, first_seen = [], {}
    for ds in [outputs] if isinstance(outputs, Dataset) else outputs:
        rows = ds.output_rows or tuple(range(1, len(ds.outputs) + 1))
        field = _id_field(ds.columns)
        for row, out in zip(rows, ds.outputs):
            key = (out.question_id, out.method)
            if out.question_id not in known:
                problems.append(Problem(ds.source, row, field, _unknown_question_message(out, golden.source, by_text)))
            elif key in first_seen:
                problems.append(Problem(ds.source, row, field, (
                    f"question '{out.question_id}' already has an answer from method '{out.method}' in "
                    f"{first_seen[key][0]} (row {first_seen[key][1]}); give each file its own method name")))
            first_seen.setdefault(key, (ds.source, row))
    return problems


def detect_format(name: str, head: bytes) -> str:
    """The format by file extension, else by sniffing the first bytes; LoadError if unknown."""
    problems = _Problems(Path(name).name)
    return _detect(name, head, problems)


def derive_question_id(question: str) -> str:
    """The id of a question that has none: stable across files that hold the same text."""
    normalised = " ".join(question.split())
    return "q-" + hashlib.sha1(normalised.encode("utf-8")).hexdigest()[:10]


# --------------------------------------------------------------------------- source and options


@contextmanager
def _gc_paused():
    """Building a million small records triggers repeated full collections that walk all of
    them (more than half the load time); none of them is cyclic, so the collector can wait."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _read_source(source, name) -> tuple[bytes, str]:
    if isinstance(source, (bytes, bytearray, memoryview)):
        if not name:
            raise ValueError("load(bytes) needs name=, the uploaded file's name")
        return bytes(source), Path(name).name
    path = Path(source)
    file = Path(name).name if name else path.name
    try:
        return path.read_bytes(), file
    except OSError as err:
        raise LoadError([Problem(file, None, None, f"cannot read the file: {err.strerror or err}")])


def _check_options(problems: _Problems, method, context_sep, fmt, encoding) -> str:
    """Problems with the load options themselves; returns the normalised codec name."""
    if method is not None and not str(method).strip():
        problems.add(None, "method", "the method name is empty; give the method a name "
                     "(or leave it out to use the file name)")
    if context_sep is not None and not context_sep:
        problems.add(None, "contexts", "the context separator is empty; name the text that "
                     "separates chunks, for example '\\n\\n' or '|||'")
    if fmt is not None and fmt not in FORMATS:
        problems.stop(None, None, f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    try:
        return codecs.lookup(encoding).name
    except LookupError:
        problems.stop(None, None, f"unknown encoding {encoding!r}; use a Python codec name "
                      "such as 'utf-8', 'cp1252' or 'latin-1'")


def _check_not_empty(raw: bytes, problems: _Problems) -> None:
    if not raw.strip(b" \t\r\n\x0b\x0c\xef\xbb\xbf"):
        problems.stop(None, None, "the file is empty; export the data again and upload that file")


def _content_hash(raw: bytes, options: dict) -> str:
    digest = hashlib.sha256(raw)
    digest.update(b"\0" + json.dumps(options, sort_keys=True).encode("utf-8"))
    return digest.hexdigest()


# --------------------------------------------------------------------------- format detection


def _detect(name: str, head: bytes, problems: _Problems) -> str:
    suffix = Path(name).suffix.lower()
    fmt = _EXTENSIONS.get(suffix) or _sniff_format(head)
    if fmt is None:
        problems.stop(None, None, _unknown_format_message(suffix, head))
    return fmt


def _sniff_format(head: bytes) -> str | None:
    if head.startswith(b"PAR1"):
        return "parquet"
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"["):
        return "json"
    if text.startswith(b"{"):
        first, _, rest = text.partition(b"\n")
        return "jsonl" if rest.lstrip().startswith(b"{") and _is_json(first) else "json"
    first_line = text.split(b"\n", 1)[0]
    if b"\0" not in first_line and any(d.encode() in first_line for d in _CSV_DELIMITERS):
        return "csv"
    return None


def _is_json(data: bytes | str) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


def _unknown_format_message(suffix: str, head: bytes) -> str:
    if suffix in (".xlsx", ".xls") or head.startswith(b"PK\x03\x04"):
        return ("this looks like an Excel workbook, which RAGScope does not read; "
                "save it as 'CSV UTF-8' and upload the CSV")
    what = f"unknown file format {suffix!r}" if suffix else "unknown file format"
    return (f"{what}: RAGScope reads .csv, .json, .jsonl and .parquet files; give the file "
            "its real extension or choose the format explicitly")


# --------------------------------------------------------------------------- parsing


def _parse(raw: bytes, fmt: str, codec: str, problems: _Problems):
    """(format, column names, [(row number, record dict)]) for any format."""
    if fmt == "parquet":
        keys, records = _parse_parquet(raw, problems)
    else:
        text = _decode(raw, codec, fmt, problems)
        _reject_nul(text, fmt, problems)
        if fmt == "csv":
            keys, records = _parse_csv(text, problems)
        elif fmt == "jsonl":
            keys, records = _parse_jsonl(text, problems)
        else:
            fmt, keys, records = _parse_json(text, problems)
    if not records:
        problems.raise_if_any()  # every record was broken: those problems say it all
        problems.stop(None, None, _no_records_message(fmt))
    return fmt, keys, records


def _no_records_message(fmt: str) -> str:
    if fmt == "csv":
        return "the file has a header row but no data rows; add at least one row under the header"
    return "the file holds no records; it needs at least one question"


def _decode(raw: bytes, codec: str, fmt: str, problems: _Problems) -> str:
    try:
        text = raw.decode("utf-8-sig" if codec == "utf-8" else codec)
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        problems.stop(line if fmt == "jsonl" else None, None,
                      _encoding_message(raw, err.start, line, codec))
    return text.removeprefix("\ufeff")


def _encoding_message(raw: bytes, position: int, line: int, codec: str) -> str:
    guess = _guess_encoding(raw, position)
    label = "UTF-8" if codec == "utf-8" else codec
    message = (f"the file is not valid {label} text: byte 0x{raw[position]:02x} on line {line} "
               "cannot be read.")
    if guess and guess != codec:
        return (f"{message} It looks like {guess}; re-save the file as UTF-8 "
                f"(in Excel: Save As > CSV UTF-8), or load it with encoding='{guess}'.")
    return (f"{message} Re-save the file as UTF-8, or load it with the encoding it was "
            "saved in (encoding=..., for example 'cp1252').")


def _guess_encoding(raw: bytes, position: int) -> str | None:
    from charset_normalizer import from_bytes  # only needed when decoding failed

    # The start of the file plus the bytes around the failure: enough to judge, cheap on 50 MB.
    if position < 96 * 1024:
        sample = raw[: position + 32 * 1024]
    else:
        sample = raw[: 64 * 1024] + raw[position - 32 * 1024: position + 32 * 1024]
    matches = list(from_bytes(sample))
    if not matches:
        return None
    # Short samples fit several code pages about equally; among those, name cp1252 (what
    # Western-locale Excel saves) rather than an exotic neighbour such as cp1257.
    close = [m for m in matches if m.chaos <= matches[0].chaos + 0.1]
    if any("cp1252" in m.could_be_from_charset for m in close):
        return "cp1252"
    return matches[0].encoding


def _reject_nul(text: str, fmt: str, problems: _Problems) -> None:
    position = text.find("\x00")
    if position >= 0:
        line = text.count("\n", 0, position) + 1
        problems.stop(line if fmt == "jsonl" else None, None,
                      f"line {line} contains a NUL byte (\\x00), so this is not plain text: the "
                      "file may be binary or saved as UTF-16; re-save it as UTF-8 text")


def _parse_csv(text: str, problems: _Problems):
    csv.field_size_limit(max(csv.field_size_limit(), _CSV_FIELD_LIMIT))
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=_csv_delimiter(text),
                        strict=True)
    records: list[tuple[int, dict]] = []
    row = 0
    try:
        header = next((cells for cells in reader if any(c.strip() for c in cells)), [])
        header = [cell.strip() for cell in header]
        _check_header(header, problems)
        for row, cells in enumerate(reader, 1):
            if len(cells) == len(header) and any(cells):
                records.append((row, dict(zip(header, cells))))
            elif any(cell.strip() for cell in cells):  # blank lines and ",,," rows are skipped
                problems.add(row, None, f"this row has {len(cells)} fields but the header has "
                             f"{len(header)}; a value containing the separator must be quoted")
    except csv.Error as err:
        problems.stop(row + 1, None, f"the CSV is malformed near line {reader.line_num} ({err}); "
                      "check for an unclosed or stray double quote")
    return header, records


def _csv_delimiter(text: str) -> str:
    """Comma unless the header line has none and another separator (Excel's ';', tab) instead."""
    header_line = text.lstrip("\r\n").split("\n", 1)[0]
    counts = {d: header_line.count(d) for d in _CSV_DELIMITERS}
    if counts[","]:
        return ","
    best = max(counts, key=counts.get)
    return best if counts[best] else ","


def _check_header(header: list[str], problems: _Problems) -> None:
    seen: dict[str, int] = {}
    for position, column in enumerate(header, 1):
        if column in seen and column:  # unnamed columns (a trailing comma) are never read
            problems.add(None, column, f"column '{column}' appears twice in the header "
                         f"(columns {seen[column]} and {position}); rename or delete one")
        seen.setdefault(column, position)


def _parse_json(text: str, problems: _Problems):
    try:
        top = json.loads(text)
    except json.JSONDecodeError as err:
        if err.msg == "Extra data" and _is_json(text.lstrip().split("\n", 1)[0]):
            return ("jsonl", *_parse_jsonl(text, problems))  # JSON Lines saved as .json
        problems.stop(None, None, f"the file is not valid JSON: {err.msg} at line {err.lineno}, "
                      f"column {err.colno}; fix it there (or export the file again)")
    if inspectorraget.is_inspectorraget(top):  # known by its keys, whatever the file's name
        return ("json", *inspectorraget.records(top, problems))
    items = _unwrap(top, problems)
    return ("json", *_records(enumerate(items, 1), problems))


def _unwrap(top: Any, problems: _Problems) -> list:
    """The list of records: the top level itself, or the list a wrapper object holds."""
    if isinstance(top, list):
        return top
    if not isinstance(top, dict):
        problems.stop(None, None, f"the top level of the JSON is {_kind(top)}; expected a list "
                      "of records, or an object holding one (like {\"results\": [...]})")
    for key in _WRAPPER_KEYS:
        if isinstance(top.get(key), list):
            return top[key]
    if len(top) == 1 and isinstance(next(iter(top.values())), list):
        return next(iter(top.values()))
    problems.stop(None, None, "the top-level JSON object holds no list of records (under "
                  f"{', '.join(_WRAPPER_KEYS)} or a single key); keys found: "
                  f"{', '.join(map(str, top)) or 'none'}. Put the records in a list")


def _parse_jsonl(text: str, problems: _Problems):
    items = []
    # split on "\n" only: splitlines() would also break on U+2028 inside JSON strings
    for line_number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            items.append((line_number, json.loads(line)))
        except json.JSONDecodeError as err:
            problems.add(line_number, None, f"this line is not valid JSON: {err.msg} at column "
                         f"{err.colno}; each line must hold one complete JSON object")
    return _records(items, problems)


def _records(items: Iterable[tuple[int, Any]], problems: _Problems):
    """Object records with their row numbers, and every key seen, in first-seen order."""
    records = []
    for row, item in items:
        if isinstance(item, dict):
            records.append((row, item))
        else:
            problems.add(row, None, f"this record is {_kind(item)}; each record must be an "
                         "object like {\"question\": ..., \"answer\": ...}")
    keys = list(dict.fromkeys(key for _, record in records for key in record))
    return keys, records


def _parse_parquet(raw: bytes, problems: _Problems):
    import pyarrow as pa  # imported here: only Parquet files pay for it
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(pa.BufferReader(raw))
    except (pa.ArrowException, OSError, ValueError) as err:
        problems.stop(None, None, f"this is not a readable Parquet file ({err}); export it "
                      "again as Parquet, or give the file its real extension")
    return table.column_names, list(enumerate(table.to_pylist(), 1))


# --------------------------------------------------------------------------- columns


def _resolve_columns(keys: list, role: str, column_map: dict, problems: _Problems) -> dict:
    """canonical field -> column: the user's mapping first, then the first free alias."""
    lookup: dict[str, str] = {}
    for key in keys:
        lookup.setdefault(str(key).strip().lower(), key)
    columns = _mapped_columns(column_map, keys, lookup, problems)
    taken = set(columns.values())
    for field, aliases in ALIASES.items():
        if field in column_map:
            continue
        column = next((lookup[a] for a in aliases if a in lookup and lookup[a] not in taken), None)
        if column is not None:
            columns[field] = column
            taken.add(column)
    if _answer_is_reference(columns, lookup, role, column_map):
        columns["reference"] = columns.pop("answer")
    return columns


def _mapped_columns(column_map: dict, keys: list, lookup: dict, problems: _Problems) -> dict:
    columns = {}
    key_set = set(keys)
    for field, column in column_map.items():
        if field not in ALIASES:
            problems.add(None, None, f"the column mapping names unknown field '{field}'; "
                         f"fields are: {', '.join(ALIASES)}")
        elif column is not None:
            found = column if column in key_set else lookup.get(str(column).strip().lower())
            if found is None:
                problems.add(None, field, f"the column mapping reads {field} from column "
                             f"'{column}', but the file has no such column; columns found: "
                             f"{_names(keys)}")
            else:
                columns[field] = found
    return columns


def _answer_is_reference(columns: dict, lookup: dict, role: str, column_map: dict) -> bool:
    """A plain `answer` column is the reference in a golden file (GraphRAG-Bench: id, question,
    answer, ...): when nothing else is the reference and no other column is an answer, and the
    file is loaded as the golden set, or has the question text and no outputs-only column
    (method, contexts)."""
    answer = columns.get("answer")
    if (role == "outputs" or "reference" in columns or answer is None or "answer" in column_map
            or str(answer).strip().lower() != "answer"
            or any(alias in lookup for alias in ALIASES["answer"][1:])):
        return False
    return role == "golden" or ("question" in columns
                                 and not ({"method", "contexts"} & columns.keys()))


def _plan(columns: dict, role: str, keys: list, problems: _Problems) -> tuple[bool, bool]:
    """Whether to read golden items and outputs; reports the columns that are missing."""
    has_answers = "answer" in columns
    # In an outputs file a reference column without question text is just extra information.
    golden = role == "golden" or (role == "auto" and "reference" in columns
                                  and ("question" in columns or not has_answers))
    outputs = role == "outputs" or (role == "auto" and has_answers)
    if not golden and not outputs:
        problems.add(None, "reference", _missing_message("reference", keys))
        problems.add(None, "answer", _missing_message("answer", keys))
    if golden:
        for field in ("question", "reference"):
            if field not in columns:
                hint = " This looks like RAG outputs: load it as outputs." if (
                    field == "reference" and "answer" in columns) else ""
                problems.add(None, field, _missing_message(field, keys) + hint)
    if outputs:
        if "answer" not in columns:
            hint = " This looks like a golden set: load it as the golden set." if (
                "reference" in columns) else ""
            problems.add(None, "answer", _missing_message("answer", keys) + hint)
        if "question_id" not in columns and "question" not in columns:
            problems.add(None, "question_id", _missing_message("question_id", keys) +
                         " (Or give the question text, which matches answers to the golden set.)")
    return golden, outputs


def _missing_message(field: str, keys: list) -> str:
    aliases = ", ".join(ALIASES[field])
    if field == "reference":
        aliases += ", answer (in a file with no other answer column)"
    return (f"no column for {_DESCRIPTIONS[field]}. Columns found: {_names(keys)}. Accepted "
            f"names: {aliases}. If it is there under another name, map it to '{field}'.")


def _names(keys: Iterable) -> str:
    return ", ".join(map(str, keys)) or "none"


# --------------------------------------------------------------------------- records


class _RecordReader:
    """Turns records into GoldenItems and RagOutputs; every bad cell becomes a Problem."""

    def __init__(self, columns: dict, problems: _Problems, want_golden: bool,
                 want_outputs: bool, default_method: str | None, context_sep: str | None):
        self.columns = columns
        self.problems = problems
        self.want_golden = want_golden
        self.want_outputs = want_outputs
        self.default_method = default_method
        self.context_sep = context_sep

    def read_all(self, records: list[tuple[int, dict]]):
        golden: dict[str, tuple[int, GoldenItem]] = {}
        outputs: list[RagOutput] = []
        output_rows: list[int] = []
        for row, record in records:
            item, output = self.read(row, record)
            if item is not None:
                self.keep_golden(golden, row, item)
            if output is not None:
                outputs.append(output)
                output_rows.append(row)
        return tuple(item for _, item in golden.values()), tuple(outputs), tuple(output_rows)

    def read(self, row: int, record: dict) -> tuple[GoldenItem | None, RagOutput | None]:
        """This record's golden item and output (None where not wanted); both None if bad."""
        before = len(self.problems.items)
        question = None  # outputs matched by id need no question text
        if self.want_golden or "question_id" not in self.columns:
            question = self.required(row, record, "question", "the question is empty; fill it "
                                     "in or delete the row")
        question_id = self.question_id(row, record, question)
        item = self.golden_item(row, record, question_id, question) if self.want_golden else None
        output = self.output(row, record, question_id) if self.want_outputs else None
        if len(self.problems.items) > before:
            return None, None
        return item, output

    def cell(self, row: int, record: dict, field: str, convert: Callable = None):
        """The converted value of `field` in this record; None when absent, empty or bad."""
        column = self.columns.get(field)
        if column is None:
            return None
        try:
            return (convert or _text)(record.get(column))
        except _Bad as bad:
            self.problems.add(row, column, str(bad))
            return None

    def required(self, row: int, record: dict, field: str, message: str) -> str | None:
        """A text field that must not be blank; reported once, whether blank or bad."""
        before = len(self.problems.items)
        text = self.cell(row, record, field)
        if text is not None and text.strip():
            return text
        if len(self.problems.items) == before:
            self.problems.add(row, self.columns[field], message)
        return None

    def question_id(self, row: int, record: dict, question: str | None) -> str | None:
        if "question_id" not in self.columns:
            return derive_question_id(question) if question else None
        question_id = self.required(row, record, "question_id", "the question id is empty; "
                                    "give every row an id, or drop the id column so ids are "
                                    "derived from the question text")
        return question_id.strip() if question_id else None

    def golden_item(self, row: int, record: dict, question_id: str | None,
                    question: str | None) -> GoldenItem:
        reference = self.required(row, record, "reference", "the reference answer is empty; "
                                  "fill it in or delete the row")
        reference_contexts = self.cell(row, record, "reference_contexts", self.contexts) or ()
        return GoldenItem(
            question_id=question_id,
            question=question,
            reference=reference,
            question_type=_none_if_blank(self.cell(row, record, "question_type")),
            evidence=_none_if_blank(self.cell(row, record, "evidence")),
            reference_contexts=tuple(chunk.text for chunk in reference_contexts),
            checks=self.cell(row, record, "checks", _checks) or (),
        )

    def output(self, row: int, record: dict, question_id: str | None) -> RagOutput:
        return RagOutput(
            question_id=question_id,
            method=self.method(row, record),
            answer=self.cell(row, record, "answer") or "",  # an empty answer is a real failure
            contexts=self.cell(row, record, "contexts", self.contexts) or (),
        )

    def method(self, row: int, record: dict) -> str | None:
        if "method" not in self.columns:
            return self.default_method
        method = self.required(row, record, "method", "the method name is empty; name the RAG "
                               "method that produced this answer")
        return method.strip() if method else None

    def contexts(self, value: Any) -> tuple[Chunk, ...]:
        return _contexts(value, self.context_sep)

    def keep_golden(self, golden: dict, row: int, item: GoldenItem) -> None:
        """Keeps the first item of each id. A file that also holds answers repeats a question
        once per method, which is fine while the repeats agree."""
        seen = golden.get(item.question_id)
        if seen is None:
            golden[item.question_id] = (row, item)
            return
        first_row, first = seen
        holds_answers = self.want_outputs or "method" in self.columns
        if holds_answers and first == item:
            return
        field = _id_field(self.columns)
        if holds_answers:
            message = (f"question '{item.question_id}' also appears at row {first_row} with a "
                       "different question or reference; rows of one question must agree")
        elif "question_id" in self.columns:
            message = (f"question id '{item.question_id}' repeats row {first_row}; ids in a "
                       "golden set must be unique: fix one of the two ids or delete the duplicate")
        else:
            message = (f"the same question text appears at row {first_row} (with no id column, "
                       "ids come from the question text); delete the duplicate or add ids")
        self.problems.add(row, field, message)


def _duplicate_outputs(outputs: Iterable[RagOutput], rows: Iterable[int], columns: dict):
    """(row, field, message) for each repeat of a (question_id, method) pair."""
    first_rows: dict[tuple[str, str], int] = {}
    field = _id_field(columns)
    for row, output in zip(rows, outputs):
        key = (output.question_id, output.method)
        if key in first_rows:
            yield (row, field, f"question '{output.question_id}' already has an answer from "
                   f"method '{output.method}' at row {first_rows[key]}; keep one answer per "
                   "question and method")
        else:
            first_rows[key] = row


def _id_field(columns: dict) -> str:
    return columns.get("question_id") or columns.get("question") or "question_id"


def _unknown_question_message(output: RagOutput, golden_source: str, by_text: dict) -> str:
    if output.question_id in by_text:
        return (f"this answer's question text matches golden question "
                f"'{by_text[output.question_id]}', but this file has no question id column "
                "and the golden set has ids: add a question_id column")
    return (f"question id '{output.question_id}' (method '{output.method}') is not in the golden "
            f"set {golden_source}; fix the id or add the question to the golden set")


# --------------------------------------------------------------------------- cell values


def _as_str(value: Any) -> str | None:
    """A text cell as str; numbers become text, None/NaN mean missing, other types are bad."""
    if value is None:
        return None
    if isinstance(value, str):
        return _within_limit(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return None
        return str(int(value)) if value.is_integer() else str(value)
    raise _Bad(f"mixed types: found {_kind(value)} where text was expected; store this field "
               "as text")


def _within_limit(text: str) -> str:
    if len(text) > MAX_CELL_CHARS:
        raise _Bad(f"this cell holds {len(text):,} characters, over the limit of "
                   f"{MAX_CELL_CHARS:,}; shorten it (a cell this long is usually a whole "
                   "document pasted in)")
    return text


def _text(value: Any) -> str | None:
    """A scalar text cell, refused when a spreadsheet would run it as a formula."""
    text = _as_str(value)
    if text and _FORMULA.match(text):
        raise _Bad(f"the text starts with '{text.lstrip()[0]}' ({_preview(text)}), which a "
                   "spreadsheet would run as a formula; edit the cell so it does not start "
                   "with =, @, or +/- followed by a function")
    return text


def _none_if_blank(text: str | None) -> str | None:
    return text if text and text.strip() else None


def _contexts(value: Any, sep: str | None) -> tuple[Chunk, ...]:
    """Retrieved chunks from a list (of texts or chunk objects), a JSON-list string, or a
    string joined by the user-named separator. Missing or empty: no context."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ()
    if isinstance(value, str):
        value = _split_contexts(value, sep)
    if not isinstance(value, (list, tuple)):
        raise _Bad(f"contexts must be a list of retrieved chunks, found {_kind(value)}; store "
                   "them as a JSON list of texts like [\"chunk 1\", \"chunk 2\"]")
    return tuple(_chunk(item, rank) for rank, item in enumerate(value, 1))


def _split_contexts(text: str, sep: str | None) -> Any:
    """A string contexts cell as a list (or, from JSON, whatever it holds)."""
    stripped = _within_limit(text).strip()
    if not stripped:
        return []
    if stripped[0] in "[{":
        try:
            return json.loads(stripped)
        except json.JSONDecodeError as err:
            chunks = _python_list(stripped) if stripped[0] == "[" else None
            if chunks is not None:
                return chunks
            if sep is None:
                raise _Bad(f"contexts looks like a JSON list but is not valid JSON ({err.msg} at "
                           f"character {err.pos}), nor a Python list of texts; fix the list, or "
                           "name the separator if the chunks are joined text") from None
    if sep is None:
        raise _Bad("contexts is a single text, not a list of chunks; name the separator that "
                   "joins the chunks (context separator, for example '\\n\\n' or '|||'), or "
                   "store a JSON list of texts")
    return [part.strip() for part in text.split(sep) if part.strip()]


# What ast.literal_eval raises on text that is no Python literal (or nests too deep for it).
_NOT_A_LITERAL = (ValueError, TypeError, SyntaxError, MemoryError, RecursionError)


def _python_list(text: str) -> list[str] | None:
    """A Python list literal of texts, as haystack's evaluation CSVs store contexts (str() of a
    list: ['chunk one', "chunk's two"]), read by ast.literal_eval, which runs no code. None when
    the text is no Python literal; _Bad when it is one but not a list of texts."""
    try:
        value = ast.literal_eval(text)
    except _NOT_A_LITERAL:
        return None
    if not isinstance(value, list):
        raise _Bad(f"contexts is a Python literal but {_kind(value)}, not a list of chunk texts "
                   "like ['chunk 1', 'chunk 2']")
    for rank, item in enumerate(value, 1):
        if not isinstance(item, str):
            raise _Bad(f"contexts is a Python list, but chunk {rank} is {_kind(item)}, not a "
                       "text; every chunk must be a quoted text like ['chunk 1', 'chunk 2']")
    return value


def _chunk(item: Any, rank: int) -> Chunk:
    if type(item) is str and len(item) <= MAX_CELL_CHARS:  # the common case, kept cheap
        return Chunk(str(rank), item)
    try:
        if isinstance(item, dict):
            return _chunk_from_dict(item, rank)
        text = _as_str(item)
    except _Bad as bad:
        raise _Bad(f"chunk {rank}: {bad}") from None
    if text is None:
        raise _Bad(f"chunk {rank} is empty (null); remove it or give its text")
    return Chunk(str(rank), text)


def _chunk_from_dict(item: dict, rank: int) -> Chunk:
    """{doc_id|id|chunk_id, text|content|page_content}; the id defaults to the rank."""
    text_key = next((key for key in _CHUNK_TEXT_KEYS if key in item), None)
    if text_key is None:
        raise _Bad(f"has no text: a chunk object needs one of {', '.join(_CHUNK_TEXT_KEYS)} "
                   f"(keys found: {_names(item)})")
    text = _as_str(item[text_key])
    if text is None:
        raise _Bad(f"its {text_key} is empty (null)")
    chunk_id = next((item[k] for k in _CHUNK_ID_KEYS if item.get(k) not in (None, "")), rank)
    if isinstance(chunk_id, bool) or not isinstance(chunk_id, (str, int)):
        raise _Bad(f"its id is {_kind(chunk_id)}; an id must be text or a whole number")
    return Chunk(str(chunk_id), text)


def _checks(value: Any) -> tuple[dict, ...]:
    """Per-question checks: a list of objects (JSON text in CSV), each validated."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return ()
    if isinstance(value, str):
        try:
            value = json.loads(_within_limit(value))
        except json.JSONDecodeError as err:
            raise _Bad(f"checks is not valid JSON ({err.msg} at character {err.pos}); write a "
                       "JSON list like [{\"type\": \"contains\", ...}]") from None
    if not isinstance(value, (list, tuple)):
        raise _Bad(f"checks must be a list of check objects, found {_kind(value)}")
    errors = []
    for number, check in enumerate(value, 1):
        if not isinstance(check, dict):
            errors.append(f"check {number} is {_kind(check)}, expected an object like "
                          "{\"type\": \"contains\", ...}")
        elif error := validate_check(check):
            errors.append(f"check {number}: {error}")
    if errors:
        raise _Bad("; ".join(errors))
    return tuple(value)


def _kind(value: Any) -> str:
    """What a value is, in plain words, for messages."""
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a text ({_preview(value)})"
    if isinstance(value, dict):
        return "an object (dict)"
    if isinstance(value, (list, tuple)):
        return "a list"
    if value is None:
        return "null"
    return f"a {type(value).__name__}"


def _preview(text: str, limit: int = 40) -> str:
    text = " ".join(text[: limit * 2].split())
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")
