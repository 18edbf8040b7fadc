"""`load`: one file -> a `Dataset` of golden items and RAG outputs, or LoadError listing every
problem; `check_against_golden`: the outputs of several files against the golden set.

The pipeline: bytes -> records (formats) -> canonical columns (columns) -> typed records
(records). Structural failures and missing columns stop early, because what follows them would
be noise; problems inside records are all collected before raising.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evaluators.loaders import cells, traces
from evaluators.loaders.columns import GOLDEN_FIELDS, OUTPUT_FIELDS, id_field, plan_roles, resolve_columns
from evaluators.loaders.formats import Source, gc_paused, parquet_columns, parse
from evaluators.loaders.problems import Problems
from evaluators.loaders.relevant import retrieval_problems
from evaluators.loaders.records import RecordReader, derive_question_id, duplicate_outputs
from evaluators.records import GoldenItem, LoadError, Problem, RagOutput

ROLES = ("auto", "golden", "outputs")


@dataclass(frozen=True)
class Dataset:
    source: str  # file name shown in messages (basename)
    format: str  # one of FORMATS, as detected
    content_hash: str  # sha256 of the raw bytes + the load options that change meaning
    golden: tuple[GoldenItem, ...]  # empty when the file holds no golden fields
    outputs: tuple[RagOutput, ...]  # empty when the file holds no answers
    columns: dict[str, str]  # canonical field -> the column/key it was read from
    output_rows: tuple[int, ...] = ()  # record number of each output, for later messages
    notes: tuple[str, ...] = ()  # what was read but not loaded, said to the user (a trace file's unmatched traces)


def load(source, *, name=None, role="auto", method=None, context_sep=None, fmt=None,
         encoding="utf-8", column_map=None, golden: Dataset | None = None, method_attribute: str | None = None,
         question_id_attribute: str | None = None) -> Dataset:
    """Read one file into a Dataset, or raise LoadError listing every problem found.

    source: a path, or raw bytes (then `name`, the uploaded file's name, is required).
    role: "golden", "outputs" or "auto" (whatever the file holds, at least one of them).
    method: method name for outputs when the file has no method column (default: file stem).
    context_sep: separator that joins the chunks when contexts are stored as one string.
    column_map: {canonical_field: column} overrides; a None column turns a guessed field off.
    A trace file (OTLP JSON, Phoenix's or Langfuse's export: `traces`), known by its content, gives outputs joined to
    `golden`'s questions (else its question ids are the question-id attribute's, or derived from the text); the method
    is `method_attribute`'s value (default service.name) unless `method` names one.
    """
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, not {role!r}")
    src = Source(source, name)
    with gc_paused():
        trace_format = _trace_format(src, fmt)
        if trace_format is not None:
            return _load_traces(src, trace_format, role, method, golden, method_attribute, question_id_attribute)
        return _load(src, role, method, context_sep, fmt, encoding, column_map or {})


def _load(src: Source, role: str, method, context_sep, fmt, encoding, column_map: dict) -> Dataset:
    file = src.file
    problems = Problems(file)
    _check_options(problems, method, context_sep)
    fmt, codec, keys, records = parse(src, fmt, encoding, problems)
    found_in_records = len(problems.items)  # bad lines/rows: reported, the good records still read
    columns = resolve_columns(keys, role, column_map, problems)
    want_golden, want_outputs = plan_roles(columns, role, keys, problems)
    if len(problems.items) > found_in_records:
        raise LoadError(problems.items)  # without the right columns the rows are noise

    default_method = None
    if want_outputs and "method" not in columns:
        try:
            default_method = cells.identifier(method if method is not None else Path(file).stem, "method name")
        except cells.Bad as bad:
            problems.stop(None, "method", str(bad))
    reader = RecordReader(columns, problems, want_golden, want_outputs, default_method,
                          context_sep)
    golden, outputs, output_rows = reader.read_all(records)
    for row, field, message in duplicate_outputs(outputs, output_rows, columns):
        problems.add(row, field, message)
    problems.raise_if_any()

    options = {"format": fmt, "role": role, "method": default_method,
               "context_sep": context_sep, "column_map": column_map, "encoding": codec}
    used = (GOLDEN_FIELDS if want_golden else ()) + (OUTPUT_FIELDS if want_outputs else ())
    return Dataset(
        source=file,
        format=fmt,
        content_hash=_content_hash(src, options),
        golden=golden,
        outputs=outputs,
        columns={f: c for f, c in columns.items() if f in used},
        output_rows=output_rows,
    )


def _trace_format(src: Source, fmt: str | None) -> str | None:
    """The trace format named, else the one the file's content shows (`traces.detect`), else None."""
    if fmt is not None:
        return fmt if fmt in traces.TRACE_FORMATS else None
    head = src.head_bytes(traces.HEAD)
    if head.startswith(b"PAR1"):
        return traces.detect(head, parquet_columns(src))
    return traces.detect(head, more=src.blocks(len(head), traces.FURTHER))  # read only if the head leaves it open


def _load_traces(src: Source, fmt: str, role: str, method, golden: Dataset | None, method_attribute,
                 question_id_attribute) -> Dataset:
    problems = Problems(src.file)
    if role == "golden":
        problems.stop(None, None, f"this is a trace file ({traces.describe(fmt)}): it holds RAG outputs, not a "
                      "golden set; give it as the outputs")
    _check_options(problems, method, None)
    for option, value in (("method attribute", method_attribute), ("question-id attribute", question_id_attribute)):
        if value is not None and not str(value).strip():
            problems.add(None, None, f"the {option} is empty; name an attribute of the spans or their resource")
    problems.raise_if_any()
    read = traces.read(fmt, src, problems, golden=golden.golden if golden is not None else None,
                       method=method, default_method=_file_method(src.file),
                       method_attribute=method_attribute, question_id_attribute=question_id_attribute)
    problems.raise_if_any()
    digest = read.sha256
    options = {"format": fmt, "method": method, "method_attribute": method_attribute,
               "question_id_attribute": question_id_attribute,
               "golden": golden.content_hash if golden is not None else None}
    digest.update(b"\0" + json.dumps(options, sort_keys=True).encode("utf-8"))
    return Dataset(source=src.file, format=fmt, content_hash=digest.hexdigest(), golden=(), outputs=read.outputs,
                   columns={}, output_rows=read.lines, notes=read.notes)


def _file_method(file: str) -> str:
    """The method of traces that name none: the file's name, as for a file without a method column."""
    try:
        return cells.identifier(Path(file).stem, "method name")
    except cells.Bad:
        return "traces"


def _check_options(problems: Problems, method, context_sep) -> None:
    """Problems with the options that shape the records (the format's own: `formats.parse`)."""
    if method is not None and not str(method).strip():
        problems.add(None, "method", "the method name is empty; give the method a name "
                     "(or leave it out to use the file name)")
    if context_sep is not None and not context_sep:
        problems.add(None, "contexts", "the context separator is empty; name the text that "
                     "separates chunks, for example '\\n\\n' or '|||'")


def _content_hash(src: Source, options: dict) -> str:
    digest = src.sha256()
    digest.update(b"\0" + json.dumps(options, sort_keys=True).encode("utf-8"))
    return digest.hexdigest()


def check_against_golden(outputs: Dataset | Sequence[Dataset], golden: Dataset) -> list[Problem]:
    """Outputs whose question is not in the golden set, (question_id, method) pairs answered
    twice, also across files (their scores would overwrite each other), and retrieved lists the
    golden set's relevant ids cannot rank (`relevant.retrieval_problems`)."""
    if not golden.golden:
        return [Problem(golden.source, None, None,
                        "holds no golden items; choose the golden set file as the golden set")]
    known = {item.question_id for item in golden.golden}
    by_text = {derive_question_id(item.question): item.question_id for item in golden.golden}
    problems, first_seen = [], {}
    outputs = [outputs] if isinstance(outputs, Dataset) else list(outputs)
    for ds in outputs:
        rows = ds.output_rows or tuple(range(1, len(ds.outputs) + 1))
        field = id_field(ds.columns)
        for row, out in zip(rows, ds.outputs):
            key = (out.question_id, out.method)
            if out.question_id not in known:
                problems.append(Problem(ds.source, row, field, _unknown_question_message(out, golden.source, by_text)))
            elif key in first_seen:
                problems.append(Problem(ds.source, row, field, (
                    f"question '{out.question_id}' already has an answer from method '{out.method}' in "
                    f"{first_seen[key][0]} (row {first_seen[key][1]}); give each file its own method name")))
            first_seen.setdefault(key, (ds.source, row))
    return problems + retrieval_problems(outputs, golden)


def _unknown_question_message(output: RagOutput, golden_source: str, by_text: dict) -> str:
    if output.question_id in by_text:
        return (f"this answer's question text matches golden question "
                f"'{by_text[output.question_id]}', but this file has no question id column "
                "and the golden set has ids: add a question_id column")
    return (f"question id '{output.question_id}' (method '{output.method}') is not in the golden "
            f"set {golden_source}; fix the id or add the question to the golden set")
