"""OTLP JSON export requests built by hand, as opentelemetry-exporter-otlp-json-file writes them (one
ExportTraceServiceRequest per line), for tests of the trace readers' rules and bad input; the real pipeline's traces
are tests/fixtures/traces/haystack_otlp.jsonl."""
from __future__ import annotations

import json
from pathlib import Path

T0 = 1_790_000_000_000_000_000  # a start time (Unix ns)


def value(v) -> dict:
    """A Python value as an OTLP AnyValue."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [value(x) for x in v]}}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": value(x)} for k, x in v.items()]}}
    return {"stringValue": v}


def span(trace_id: str, span_id: str, parent: str | None, name: str, attributes: dict, start: int = T0,
         ms: float = 100.0, raw: dict | None = None) -> dict:
    """One span; `raw` attributes are AnyValues given as they are (wrong types on purpose)."""
    items = [{"key": k, "value": value(v)} for k, v in attributes.items()]
    items += [{"key": k, "value": v} for k, v in (raw or {}).items()]
    out = {"traceId": trace_id, "spanId": span_id, "name": name, "kind": 1, "startTimeUnixNano": str(start),
           "endTimeUnixNano": str(start + int(ms * 1e6)), "attributes": items}
    if parent:
        out["parentSpanId"] = parent
    return out


def rag_trace(trace_id: str, question: str, answer: str | None, docs=(("d1", "Chunk one.", 0.9),), *,
              start: int = T0, ms: float = 250.0, tokens=(100, 20), model="gpt-x", extra: dict | None = None,
              retriever: bool = True) -> list[dict]:
    """A root CHAIN span, a RETRIEVER span with `docs` (id, content, score) and an LLM span: a RAG answer."""
    root_attrs = {"openinference.span.kind": "CHAIN", "input.value": question, **(extra or {})}
    if answer is not None:
        root_attrs["output.value"] = answer
    spans = [span(trace_id, f"{trace_id}-root", None, "rag", root_attrs, start, ms)]
    if retriever:
        doc_attrs = {"openinference.span.kind": "RETRIEVER", "input.value": question}
        for i, (doc_id, content, score) in enumerate(docs):
            doc_attrs.update({f"retrieval.documents.{i}.document.id": doc_id,
                              f"retrieval.documents.{i}.document.content": content,
                              f"retrieval.documents.{i}.document.score": score})
        spans.append(span(trace_id, f"{trace_id}-ret", f"{trace_id}-root", "retrieve", doc_attrs, start + 1000, 20))
    spans.append(span(trace_id, f"{trace_id}-llm", f"{trace_id}-root", "llm", {
        "openinference.span.kind": "LLM", "llm.model_name": model, "llm.token_count.prompt": tokens[0],
        "llm.token_count.completion": tokens[1]}, start + 2000, 200))
    return spans


def request(service: str, spans: list[dict]) -> dict:
    return {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": value(service)}]},
                               "scopeSpans": [{"scope": {"name": "test"}, "spans": spans}]}]}


def write(path: Path, requests: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in requests), encoding="utf-8")
    return path
