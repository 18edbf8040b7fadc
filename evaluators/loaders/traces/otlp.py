"""OTLP JSON -> spans, a line at a time: as the OpenTelemetry Collector's file exporter and
opentelemetry-exporter-otlp-json-file write it, one ExportTraceServiceRequest per line (JSON Lines), or one such object
(pretty-printed) for the whole file.

The shape (opentelemetry-proto, opentelemetry/proto/collector/trace/v1/trace_service.proto, in its JSON mapping:
github.com/open-telemetry/opentelemetry-proto, docs/specification.md "JSON Protobuf Encoding"): resourceSpans[] ->
{resource: {attributes}, scopeSpans[] -> {spans[] -> {traceId, spanId, parentSpanId, name, startTimeUnixNano,
endTimeUnixNano, attributes: [{key, value: {stringValue | intValue | doubleValue | boolValue | arrayValue |
kvlistValue | bytesValue}}]}}]}; ids are hex, 64-bit integers may be JSON strings.

A line is decoded by msgspec into typed records of that shape (`_Request`): about three times as fast as json.loads
into dicts, and unneeded fields are skipped in C. A line that does not fit the shape, or holds a value that does not
convert, is read again by the general path (json.loads, `_request`), which says what is wrong or reads what it can:
the fast path decides nothing on its own.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator

import msgspec

from evaluators.loaders.formats import check_fits
from evaluators.loaders.problems import Problems, kind
from evaluators.loaders.traces.spans import Span

# What tells an OTLP JSON file by its content: the key, not the same words quoted inside a text (\"resourceSpans\")
MARKER = re.compile(rb'(?<!\\)"resourceSpans"\s*:')

ONE_A_LINE = ("Export the traces one request a line (JSON Lines, as the Collector's file exporter and "
              "opentelemetry-exporter-otlp-json-file write them): such a file is read a line at a time, whatever "
              "its size")


class _BadValue(ValueError):
    pass


def spans(lines: Iterable[bytes], problems: Problems, keep: Callable[[str], bool], size: int = 0,
          first: bool = True) -> Iterator[Span]:
    """Every span of the file, in file order; a line that is not OTLP JSON is a problem, the others are still read.
    A pretty-printed file is one object, read whole: first held to the loaders' memory bound (its `size`). first:
    whether the lines start the file (a part of it after the first is never one object: traces/parts.py)."""
    lines = iter(lines)
    for line_number, raw in enumerate(lines, 1):
        try:
            fast = _fast_spans(_DECODER.decode(raw), line_number, keep)
        except (msgspec.MsgspecError, _BadValue):
            pass
        else:
            first = False
            yield from fast
            continue
        if not raw.strip():
            continue
        try:
            request = json.loads(raw)
        except ValueError as err:
            if first and raw.strip() in (b"{", b"["):  # pretty-printed: the file is one object
                check_fits(None, size, problems, advice=ONE_A_LINE)
                yield from _whole_object(raw + b"\n" + b"\n".join(lines), line_number, problems, keep)
                return
            problems.add(line_number, None, f"this line is not valid JSON ({err}); each line must hold one complete "
                         "OTLP JSON export request")
            continue
        first = False
        yield from _request(request, line_number, problems, keep)


def _whole_object(data: bytes, line: int, problems: Problems, keep) -> Iterator[Span]:
    try:
        request = json.loads(data)
    except ValueError as err:
        problems.add(line, None, f"the file is not valid JSON ({err}); an OTLP JSON file holds one export request "
                     "per line, or one for the whole file")
        return
    for item in request if isinstance(request, list) else [request]:
        yield from _request(item, line, problems, keep)


def _request(request, line: int, problems: Problems, keep) -> Iterator[Span]:
    if not isinstance(request, dict) or not isinstance(request.get("resourceSpans"), list):
        problems.add(line, "resourceSpans", f"this line is {kind(request)} without a resourceSpans list; an OTLP "
                     "JSON trace export holds {\"resourceSpans\": [...]} on each line")
        return
    for resource_spans in request["resourceSpans"]:
        try:
            resource = _attributes(((resource_spans or {}).get("resource") or {}).get("attributes"), keep)
            scopes = resource_spans.get("scopeSpans") or resource_spans.get("instrumentationLibrarySpans") or []
            for scope in scopes:
                for raw in scope.get("spans") or []:
                    span = _span(raw, line, resource, problems, keep)
                    if span is not None:
                        yield span
        except (_BadValue, AttributeError, TypeError) as err:
            problems.add(line, "resourceSpans", f"this export request is not shaped as OTLP JSON ({err})")


def _span(raw: dict, line: int, resource: dict, problems: Problems, keep) -> Span | None:
    trace_id = raw.get("traceId")
    span_id = raw.get("spanId")
    if not isinstance(trace_id, str) or not trace_id or not isinstance(span_id, str) or not span_id:
        problems.add(line, "traceId", f"a span ({raw.get('name', 'unnamed')}) has no traceId or spanId text")
        return None
    try:
        attributes = _attributes(raw.get("attributes"), keep)
        start = _nanos(raw.get("startTimeUnixNano"), "startTimeUnixNano")
        end = raw.get("endTimeUnixNano")
        end = None if end in (None, "", 0, "0") else _nanos(end, "endTimeUnixNano")
    except _BadValue as bad:
        problems.add(line, None, f"trace {trace_id}: span {span_id}: {bad}")
        return None
    return Span(trace_id, span_id, raw.get("parentSpanId") or None, str(raw.get("name") or ""), start, end, line,
                attributes, resource)


def _nanos(value, field: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise _BadValue(f"{field} is {kind(value)}, not a whole number of nanoseconds") from None


def _attributes(items, keep) -> dict:
    if items is None:
        return {}
    if not isinstance(items, list):
        raise _BadValue(f"attributes is {kind(items)}, not a list of {{key, value}}")
    out = {}
    for item in items:
        try:
            key = item["key"]
            wanted = keep(key)
        except (TypeError, KeyError, AttributeError):
            raise _BadValue(f"an attribute is {kind(item)}, not {{key: text, value}}") from None
        if wanted:
            value = item.get("value")
            text = value.get("stringValue") if type(value) is dict else None  # the common case, kept cheap
            out[key] = text if text is not None else _value(value, key)
    return out


def _whole(value, key: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise _BadValue(f"attribute {key}: intValue is {kind(value)}, not a whole number") from None


def _value(value, key: str):
    """An OTLP AnyValue as the Python value it holds."""
    if not isinstance(value, dict) or not value:
        return None
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return _whole(value["intValue"], key)
    if "doubleValue" in value:
        number = value["doubleValue"]
        if isinstance(number, str) and number in ("NaN", "Infinity", "-Infinity"):
            return float(number)
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            raise _BadValue(f"attribute {key}: doubleValue is {kind(number)}, not a number")
        return float(number)
    if "boolValue" in value:
        return value["boolValue"]
    if "arrayValue" in value:
        return [_value(v, key) for v in (value["arrayValue"] or {}).get("values") or []]
    if "kvlistValue" in value:
        return {kv.get("key"): _value(kv.get("value"), key) for kv in (value["kvlistValue"] or {}).get("values") or []}
    if "bytesValue" in value:
        return value["bytesValue"]
    raise _BadValue(f"attribute {key}: unknown value type {', '.join(map(str, value))}")


# -- the fast path: the common shape as typed records (msgspec); anything else goes to the general path above. A
# line's records form a tree, never a cycle: untracked by the garbage collector (gc=False), they cost less to make and
# free (a tenth off a 1 GB read).

class _AnyValue(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    stringValue: str | None = None
    intValue: int | str | None = None
    doubleValue: float | str | None = None
    boolValue: bool | None = None
    bytesValue: str | None = None
    arrayValue: dict | None = None
    kvlistValue: dict | None = None


class _KeyValue(msgspec.Struct, gc=False):
    key: str
    value: _AnyValue | None = None


class _Span(msgspec.Struct, gc=False):
    traceId: str
    spanId: str
    startTimeUnixNano: int | str
    parentSpanId: str | None = None
    name: str | None = None
    endTimeUnixNano: int | str | None = None
    attributes: list[_KeyValue] | None = None


class _Scope(msgspec.Struct, gc=False):
    spans: list[_Span] | None = None


class _Resource(msgspec.Struct, gc=False):
    attributes: list[_KeyValue] | None = None


class _ResourceSpans(msgspec.Struct, gc=False):
    resource: _Resource | None = None
    scopeSpans: list[_Scope] | None = None
    instrumentationLibrarySpans: list[_Scope] | None = None


class _Request(msgspec.Struct, gc=False):
    resourceSpans: list[_ResourceSpans]


_DECODER = msgspec.json.Decoder(_Request)


def _fast_spans(request: _Request, line: int, keep) -> list[Span]:
    """A decoded line's spans; _BadValue (the line goes to the general path) when one is not as a span must be."""
    out = []
    for resource_spans in request.resourceSpans:
        resource = _fast_attributes(resource_spans.resource.attributes if resource_spans.resource else None, keep)
        for scope in resource_spans.scopeSpans or resource_spans.instrumentationLibrarySpans or ():
            for raw in scope.spans or ():
                end = raw.endTimeUnixNano
                if not raw.traceId or not raw.spanId:
                    raise _BadValue("no id")
                out.append(Span(raw.traceId, raw.spanId, raw.parentSpanId or None, raw.name or "",
                                _nanos(raw.startTimeUnixNano, "startTimeUnixNano"),
                                None if end in (None, "", 0, "0") else _nanos(end, "endTimeUnixNano"), line,
                                _fast_attributes(raw.attributes, keep), resource))
    return out


def _fast_attributes(items: list[_KeyValue] | None, keep) -> dict:
    out = {}
    for item in items or ():
        key = item.key
        if keep(key):
            value = item.value
            if value is None:
                out[key] = None
            elif value.stringValue is not None:
                out[key] = value.stringValue
            elif type(value.doubleValue) is float:
                out[key] = value.doubleValue
            elif value.intValue is not None:
                out[key] = _whole(value.intValue, key)
            else:  # the rare kinds: as the general path reads them, from the same dict shape
                out[key] = _value({field: v for field in value.__struct_fields__
                                   if (v := getattr(value, field)) is not None}, key)
    return out
