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
- join.py      traces -> outputs of the golden set's questions; what was left out, as notes

Spans are grouped per trace as they are read, each keeping only what its trace needs, so a big file takes the memory
of its outputs, not of its spans (bench/traces.py).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from evaluators.loaders.problems import Problems
from evaluators.loaders.traces import langfuse, otlp, phoenix
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


def read(fmt: str, lines: Iterator[bytes] | None, batches, problems: Problems, *, golden: Sequence[GoldenItem] | None,
         method: str | None, default_method: str, method_attribute: str | None = None,
         question_id_attribute: str | None = None, size: int = 0) -> TraceOutputs:
    """A trace file's outputs. lines: the file's lines (OTLP, JSON Lines, Langfuse JSON); batches: a Parquet file's
    record batches (Phoenix); size: the file's, in bytes (what a format read whole is held to). Problems are added
    to `problems`; the caller raises them."""
    method_attribute = method_attribute or DEFAULT_METHOD_ATTRIBUTE
    keep = wanted(frozenset(a for a in (method_attribute, question_id_attribute) if a))
    if fmt == "otlp":
        spans = otlp.spans(lines, problems, keep, size)
    elif fmt == "phoenix":
        spans = phoenix.spans(lines, batches, problems, keep)
    else:
        spans = langfuse.spans(lines, problems, keep, size)
    traces = _traces(spans, problems, method_attribute, question_id_attribute)
    outputs, rows, notes = join(traces, golden, problems, method=method, default_method=default_method,
                                method_attribute=method_attribute, question_id_attribute=question_id_attribute)
    return TraceOutputs(outputs, rows, notes)


def _traces(spans: Iterator[Span], problems: Problems, method_attribute: str,
            question_id_attribute: str | None) -> list[Trace]:
    by_trace: dict[str, list[Span]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    traces = []
    for trace_id in list(by_trace):
        result = assemble(problems.file, trace_id, by_trace.pop(trace_id), method_attribute, question_id_attribute)
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


