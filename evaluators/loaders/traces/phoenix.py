"""Arize Phoenix's span export -> spans: the columns of `px.Client().get_spans_dataframe()` (Phoenix docs, "Extract
Data from Spans": name, span_kind, parent_id, start_time, end_time, status_code, context.span_id, context.trace_id and
each attribute as an `attributes.` column, lists of documents and messages as lists of objects, e.g.
attributes.retrieval.documents = [{"document.id", "document.content", "document.score"}]), saved as Parquet
(`df.to_parquet`) or JSON Lines (`df.to_json(orient="records", lines=True)`). Phoenix keeps no resource attributes in
the frame: the method is an attribute column or the file's name.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence

from evaluators.loaders.problems import Problems, kind
from evaluators.loaders.traces import spans as sa
from evaluators.loaders.traces.spans import Span
from evaluators.loaders.traces.timestamps import nanos

MARKER = re.compile(rb'(?<!\\)"context\.trace_id"\s*:')  # the key (not the words quoted inside a text)
TRACE_ID, SPAN_ID, PARENT = "context.trace_id", "context.span_id", "parent_id"
_PREFIX = "attributes."
_LISTS = {sa.DOCUMENTS.rstrip("."): "document", sa.OUTPUT_MESSAGES.rstrip("."): "message"}


def is_phoenix(columns: Sequence[str]) -> bool:
    return TRACE_ID in columns and SPAN_ID in columns


def columns_needed(columns: Sequence[str], keep: Callable[[str], bool]) -> list[str]:
    """The Parquet columns a span needs (the others are never read)."""
    own = {"name", "span_kind", PARENT, "start_time", "end_time", TRACE_ID, SPAN_ID}
    return [c for c in columns if c in own or (c.startswith(_PREFIX) and _keep_column(c[len(_PREFIX):], keep))]


def _keep_column(name: str, keep) -> bool:
    return keep(name) or name in _LISTS or keep(name + ".")


def spans(lines: Iterator[bytes] | None, batches, problems: Problems, keep) -> Iterator[Span]:
    if batches is not None:
        row = 0
        for batch in batches:
            for record in batch.to_pylist():
                row += 1
                if (span := _span(record, row, problems, keep)) is not None:
                    yield span
        return
    for line, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except ValueError as err:
            problems.add(line, None, f"this line is not valid JSON ({err}); each line must hold one span")
            continue
        if not isinstance(record, dict):
            problems.add(line, None, f"this line is {kind(record)}; each line must hold one span as an object")
            continue
        if (span := _span(record, line, problems, keep)) is not None:
            yield span


def _span(record: dict, line: int, problems: Problems, keep) -> Span | None:
    trace_id, span_id = record.get(TRACE_ID), record.get(SPAN_ID)
    if not isinstance(trace_id, str) or not trace_id or not isinstance(span_id, str) or not span_id:
        problems.add(line, TRACE_ID, f"this span has no {TRACE_ID} or {SPAN_ID} text")
        return None
    try:
        start = nanos(record.get("start_time"))
        end = None if record.get("end_time") is None else nanos(record.get("end_time"))
    except ValueError as err:
        problems.add(line, "start_time", f"trace {trace_id}: span {span_id}: its time is {err}")
        return None
    attributes = {}
    for column, value in record.items():
        if not column.startswith(_PREFIX) or value is None:
            continue
        name = column[len(_PREFIX):]
        if name in _LISTS:
            if isinstance(value, str):  # a list saved as JSON text
                try:
                    value = json.loads(value)
                except ValueError:
                    pass
            if not isinstance(value, list):
                problems.add(line, column, f"trace {trace_id}: span {span_id}: {column} is {kind(value)}, not a list")
                return None
            for index, item in enumerate(value):
                for key, field in (item or {}).items() if isinstance(item, dict) else ():
                    attributes[f"{name}.{index}.{key if '.' in key else _LISTS[name] + '.' + key}"] = field
        elif keep(name):
            attributes[name] = value
    if sa.KIND not in attributes and isinstance(record.get("span_kind"), str):
        attributes[sa.KIND] = record["span_kind"]
    parent = record.get(PARENT)
    parent = parent if isinstance(parent, str) and parent else None
    return Span(trace_id, span_id, parent, str(record.get("name") or ""), start, end, line, attributes, {})
