"""Langfuse's trace export -> spans: traces with their observations, as Langfuse's public API gives them
(GET /api/public/traces/{traceId} -> TraceWithFullDetails; OpenAPI spec https://cloud.langfuse.com/generated/api/
openapi.yml): a trace {id, timestamp, name, input, output, metadata, release, version, environment, latency (seconds),
totalCost (USD), observations: [{id, traceId, type (SPAN, GENERATION, EVENT, RETRIEVER, ...), name, startTime,
endTime, parentObservationId, input, output, model, usage {input, output, total}, usageDetails, calculatedTotalCost}]}.
The file: a list of traces, an object {"data": [...]} (the list endpoint's shape), one trace, or one trace a line
(read a line at a time; the others are one JSON document, read whole within the loaders' memory bound).

The trace is the root span (its input, output, latency and cost); a GENERATION is an LLM span, a RETRIEVER observation's
output the retrieved documents (a list, or {"documents": [...]}, each {id, content|text|page_content, score}).
Attributes for --method-attribute / --question-id-attribute: the trace's metadata keys and its own fields
(name, release, version, environment, userId, sessionId); the default service.name is read from
metadata.resourceAttributes, where Langfuse's OpenTelemetry ingestion keeps it, and else the trace's name is the method.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator

from evaluators.loaders.formats import check_fits
from evaluators.loaders.problems import Problems, kind
from evaluators.loaders.traces import spans as sa
from evaluators.loaders.traces.spans import Span
from evaluators.loaders.traces.timestamps import nanos

_TRACE_FIELDS = ("name", "release", "version", "environment", "userId", "sessionId")
_KINDS = {"GENERATION": "LLM", "RETRIEVER": "RETRIEVER", "EMBEDDING": "EMBEDDING"}
_ID_KEYS, _TEXT_KEYS = ("id", "doc_id", "chunk_id", "document_id"), ("content", "text", "page_content")


_OBSERVATIONS = re.compile(rb'(?<!\\)"observations"\s*:\s*\[')
_TRACE_KEY = re.compile(rb'(?<!\\)"(traceId|timestamp)"\s*:')
_ONE_A_LINE = ("Export the traces one a line (JSON Lines: each line one trace with its observations): such a file is "
               "read a line at a time, whatever its size")
_OVERLAP = 64  # bytes of one block kept before the next, so a key split between blocks is still found


def is_langfuse(head: bytes, more: Iterable[bytes] = ()) -> bool:
    """Keys of a trace with its observations (not the same words quoted inside a text). A trace's key in the head
    without the observations key (long input / output texts come first): the observations key looked for in `more`,
    the bytes after the head, a block at a time."""
    if not _TRACE_KEY.search(head):
        return False
    if _OBSERVATIONS.search(head):
        return True
    tail = head[-_OVERLAP:]
    for block in more:
        window = tail + block
        if _OBSERVATIONS.search(window):
            return True
        tail = window[-_OVERLAP:]
    return False


def spans(lines: Iterable[bytes], problems: Problems, keep, size: int) -> Iterator[Span]:
    """Every trace's spans. One trace a line (JSON Lines) is read a line at a time; a single JSON document (a list,
    {"data": [...]}, one pretty-printed trace) only whole, so it is first held to the loaders' memory bound
    (`formats.check_fits`, the file's `size`), with the advice to export one trace a line."""
    lines = iter(lines)
    number = 0  # traces so far: a message names the trace by its place where lines do not tell traces apart
    for line, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except ValueError as err:
            if number == 0 and not raw.rstrip().endswith((b"}", b"]")):  # a document's opening, not a broken line
                yield from _document(raw, lines, line, problems, keep, size)
                return
            problems.add(line, None, f"this line is not valid JSON ({err}); each line must hold one trace")
            continue
        found = _traces(value)
        for trace in found:
            number += 1
            yield from _checked(trace, line if len(found) == 1 else number, number, problems, keep)


def _document(first: bytes, lines: Iterator[bytes], line: int, problems: Problems, keep, size: int) -> Iterator[Span]:
    check_fits(None, size, problems, advice=_ONE_A_LINE)
    data = first + b"\n" + b"\n".join(lines)
    try:
        top = json.loads(data)
    except ValueError as err:
        problems.add(line, None, f"the file is not valid JSON ({err}); a Langfuse export holds a list of traces, "
                     "or one trace a line")
        return
    del data
    found = _traces(top)
    for number, trace in enumerate(found, 1):
        yield from _checked(trace, line if len(found) == 1 else number, number, problems, keep)


def _checked(trace, where: int, number: int, problems: Problems, keep) -> Iterator[Span]:
    if not isinstance(trace, dict) or not isinstance(trace.get("observations"), list):
        problems.add(where, "observations", f"trace {number} is {kind(trace)} without an observations list; "
                     "export the traces with their observations (GET /api/public/traces/{id})")
        return
    yield from _trace_spans(trace, where, problems, keep)


def _traces(top) -> list:
    if isinstance(top, list):
        return top
    if isinstance(top, dict) and isinstance(top.get("data"), list):
        return top["data"]
    return [top]


def _trace_spans(trace: dict, line: int, problems: Problems, keep) -> Iterator[Span]:
    trace_id = str(trace.get("id") or "")
    if not trace_id:
        problems.add(line, "id", "a trace has no id")
        return
    resource = _resource(trace, keep)
    try:
        start = nanos(trace.get("timestamp"))
        latency = trace.get("latency")
        seconds = isinstance(latency, (int, float)) and not isinstance(latency, bool)
        end = start + round(latency * 1e9) if seconds else None
        root = _io(trace)
        if trace.get("totalCost") is not None:
            root[sa.COST] = trace["totalCost"]
        yield Span(trace_id, trace_id, None, str(trace.get("name") or "trace"), start, end, line, root, resource)
        for obs in trace["observations"]:
            yield _observation(obs, trace_id, line, resource)
    except (ValueError, TypeError, AttributeError) as err:
        problems.add(line, None, f"trace {trace_id}: {err}")


def _resource(trace: dict, keep) -> dict:
    meta = trace.get("metadata") if isinstance(trace.get("metadata"), dict) else {}
    resource = {k: v for k, v in meta.items() if keep(k)}
    resource.update({k: v for k, v in (meta.get("resourceAttributes") or {}).items() if keep(k)}
                    if isinstance(meta.get("resourceAttributes"), dict) else {})
    resource.update({k: trace[k] for k in _TRACE_FIELDS if keep(k) and trace.get(k) is not None})
    if "service.name" not in resource and keep("service.name") and trace.get("name"):
        resource["service.name"] = trace["name"]
    return resource


def _io(item: dict) -> dict:
    """input / output as OpenInference's input.value / output.value (objects as JSON text)."""
    attributes = {}
    for field, key, mime in (("input", sa.INPUT, sa.INPUT_MIME), ("output", sa.OUTPUT, sa.OUTPUT_MIME)):
        value = item.get(field)
        if isinstance(value, str):
            attributes[key] = value
        elif value is not None:
            attributes[key], attributes[mime] = json.dumps(value), "application/json"
    return attributes


def _observation(obs: dict, trace_id: str, line: int, resource: dict) -> Span:
    if not isinstance(obs, dict) or not obs.get("id"):
        raise ValueError(f"an observation is {kind(obs)} without an id")
    kind_ = _KINDS.get(str(obs.get("type")).upper(), str(obs.get("type")))
    attributes = {sa.KIND: kind_}
    if kind_ == "RETRIEVER":
        attributes.update(_documents(obs.get("output"), obs["id"]))
    elif kind_ == "LLM":
        usage = obs.get("usageDetails") or obs.get("usage") or {}
        if usage.get("input") is not None:
            attributes[sa.PROMPT_TOKENS] = usage["input"]
        if usage.get("output") is not None:
            attributes[sa.COMPLETION_TOKENS] = usage["output"]
        if obs.get("model"):
            attributes[sa.MODEL] = obs["model"]
        if obs.get("calculatedTotalCost") is not None:
            attributes[sa.COST] = obs["calculatedTotalCost"]
        output = obs.get("output")
        text = output.get("content") if isinstance(output, dict) else output
        if isinstance(text, str):
            attributes[f"{sa.OUTPUT_MESSAGES}0.message.content"] = text
    end = obs.get("endTime")
    return Span(trace_id, str(obs["id"]), str(obs.get("parentObservationId") or trace_id), str(obs.get("name") or ""),
                nanos(obs.get("startTime")), None if end is None else nanos(end), line, attributes, resource)


def _documents(output, observation_id) -> dict:
    docs = output.get("documents") if isinstance(output, dict) else output
    if docs is None:
        return {}
    if not isinstance(docs, list):
        raise ValueError(f"retriever observation {observation_id}'s output is {kind(docs)}, not a list of documents")
    attributes = {}
    for index, doc in enumerate(docs):
        prefix = f"{sa.DOCUMENTS}{index}.document."
        if isinstance(doc, str):
            attributes[prefix + "content"] = doc
            continue
        if not isinstance(doc, dict):
            raise ValueError(f"retriever observation {observation_id}: document {index} is {kind(doc)}")
        text = next((doc[k] for k in _TEXT_KEYS if k in doc), None)
        attributes[prefix + "content"] = text
        if (doc_id := next((doc[k] for k in _ID_KEYS if doc.get(k) not in (None, "")), None)) is not None:
            attributes[prefix + "id"] = doc_id
        score = doc.get("score", (doc.get("metadata") or {}).get("score") if isinstance(doc.get("metadata"), dict)
                        else None)
        if score is not None:
            attributes[prefix + "score"] = score
    return attributes
