"""Trace files -> RAG outputs: what an instrumented RAG app logged, read as its answers.

One trace is one output: the question (the root span's input), the answer (its output), the retrieved chunks in
retrieval order with their ids and scores, and the system's own usage (latency of the root span, tokens summed over
its LLM spans, the model, the cost where the trace states it). The method is a resource or span attribute's value
(service.name unless another is named); traces join the golden set by a question-id attribute when one is named, else
by the question's text. One module a step:

- spans.py     one span, with only the attributes an output needs (OpenInference and GenAI names, cited there)
- otlp.py      OTLP JSON (the Collector's file exporter, opentelemetry-exporter-otlp-json-file) -> spans, by line
- phoenix.py   Arize Phoenix's span export (get_spans_dataframe() columns, Parquet or JSON Lines) -> spans
- langfuse.py  Langfuse's trace export (traces with their observations, JSON) -> spans
- assemble.py  one trace's spans -> its question, answer, chunks and usage, or the problem with it
- parts.py     a big OTLP file read in parts, a process a part, as if read by line
- join.py      traces -> outputs of the golden set's questions; what was left out, as notes

Spans are grouped per trace as they are read, each keeping only what its trace needs, so a big file takes the memory
of its outputs, not of its spans (bench/traces.py).
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from evaluators.loaders.formats import Source, traces_input
from evaluators.loaders.problems import Problems
from evaluators.loaders.traces import langfuse, otlp, parts, phoenix
from evaluators.loaders.traces.assemble import Trace, assemble
from evaluators.loaders.traces.join import join
from evaluators.loaders.traces.spans import Span, wanted
from evaluators.records import GoldenItem, Problem, RagOutput

TRACE_FORMATS = ("otlp", "phoenix", "langfuse")
DEFAULT_METHOD_ATTRIBUTE = "service.name"
HEAD = 64 * 1024  # what detection reads: a trace's first span may carry long texts before its keys
# How much further detection reads, a block at a time, when the head shows a Langfuse trace's keys but not its
# observations (a first trace whose input and output texts fill the head): a bound, so a plain JSON file with a
# timestamp key costs one bounded scan, never a whole read.
FURTHER = 64 * 2**20


def detect(head: bytes, parquet_columns: Sequence[str] = (), more: Iterable[bytes] = ()) -> str | None:
    """The trace format of a file by its content (its first bytes; a Parquet file's columns), or None. `more`: the
    bytes after the head, in blocks, read only where the head leaves the format open (`langfuse.is_langfuse`)."""
    if parquet_columns:
        return "phoenix" if phoenix.is_phoenix(parquet_columns) else None
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text.startswith((b"{", b"[")):
        return None
    if otlp.MARKER.search(head):
        return "otlp"
    if phoenix.MARKER.search(head):
        return "phoenix"
    if langfuse.is_langfuse(head, more):
        return "langfuse"
    return None


@dataclass(frozen=True)
class TraceOutputs:
    outputs: tuple[RagOutput, ...]
    lines: tuple[int, ...]  # each output's line (its root span's) in the file
    notes: tuple[str, ...]  # what was read but not scored: unmatched traces, earlier duplicates, a method defaulted
    sha256: Any  # the file's bytes, hashed (a hashlib object)


def read(fmt: str, src: Source, problems: Problems, *, golden: Sequence[GoldenItem] | None, method: str | None,
         default_method: str, method_attribute: str | None = None,
         question_id_attribute: str | None = None) -> TraceOutputs:
    """A trace file's outputs. Problems are added to `problems`; the caller raises them. A big OTLP file on disk is
    read in parts, a process a part (parts.py); the others a line (Parquet: a batch) at a time."""
    method_attribute = method_attribute or DEFAULT_METHOD_ATTRIBUTE
    extra = frozenset(a for a in (method_attribute, question_id_attribute) if a)
    digest, keep = hashlib.sha256(), wanted(extra)
    lines, batches = traces_input(src, fmt, digest, problems, keep)
    if fmt == "otlp" and (at := parts.cuts(src)):
        found = parts.traces(src, at, digest, problems, extra, method_attribute, question_id_attribute)
    else:
        if fmt == "otlp":
            spans = otlp.spans(lines, problems, keep, src.size)
        elif fmt == "phoenix":
            spans = phoenix.spans(lines, batches, problems, keep)
        else:
            spans = langfuse.spans(lines, problems, keep, src.size)
        found = _traces(spans, problems.file, method_attribute, question_id_attribute)
    traces = _kept(found, problems)
    outputs, rows, notes = join(traces, golden, problems, method=method, default_method=default_method,
                                method_attribute=method_attribute, question_id_attribute=question_id_attribute)
    return TraceOutputs(outputs, rows, notes, src.sha256() if batches is not None else digest)


def _traces(spans: Iterator[Span], file: str, method_attribute: str,
            question_id_attribute: str | None) -> Iterator[Trace | Problem]:
    """Each trace's spans assembled, in the order of its first span; a trace is assembled once the file is read
    (its spans may be anywhere in it)."""
    by_trace: dict[str, list[Span]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    for trace_id in list(by_trace):
        yield assemble(file, trace_id, by_trace.pop(trace_id), method_attribute, question_id_attribute)


def _kept(found: Iterable[Trace | Problem], problems: Problems) -> list[Trace]:
    """The traces assembled; the problems of those that are not answers go to `problems`."""
    traces = []
    for result in found:
        if isinstance(result, Problem):
            problems.items.append(result)
        else:
            traces.append(result)
    if not traces and not problems.items:
        problems.add(None, None, "the file holds no spans; export the traces again")
    return traces


def describe(fmt: str) -> str:
    return {"otlp": "OTLP JSON traces", "phoenix": "Phoenix span export",
            "langfuse": "Langfuse trace export"}[fmt]


