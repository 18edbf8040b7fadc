"""The spans of one trace -> one RAG answer (`Trace`): question, answer, retrieved chunks, usage, method, question id;
or the problems that keep it from being one, each naming the trace and the line of the span at fault.

The root span (the one without a parent) gives the question (input.value), the answer (output.value) and the latency;
JSON inputs and outputs (input.mime_type application/json, as haystack's and LangChain's pipelines log their inputs)
give the text under a query / question key, else the retriever's query and the last LLM's output message. RETRIEVER
spans (GenAI: gen_ai.operation.name "retrieval", whose query text stands in for a missing question) give the chunks,
in the order retrieved (spans by start time, documents by index); LLM spans the tokens (summed),
the model and the cost. A trace with no retriever span has no chunks (the context metrics are then not applicable).
"""
from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass

from evaluators.loaders.problems import kind as kind_of
from evaluators.loaders.traces import spans as sa
from evaluators.loaders.traces.spans import Span
from evaluators.records import Chunk, Problem, Usage

_QUESTION_KEYS = ("question", "query", "query_str", "input", "user_input", "text")
_ANSWER_KEYS = ("answer", "output", "response", "result", "content", "text")


@dataclass(slots=True)
class Trace:
    trace_id: str
    line: int  # the root span's (a part read apart counts from its own start: parts.py makes it the file's)
    question: str
    answer: str
    contexts: tuple[Chunk, ...]
    usage: Usage
    method: str | None  # the method attribute's value, None when the trace does not carry it
    question_id: str | None  # the question-id attribute's value, when one is named and carried
    start_ns: int
    question_key: str  # the question as the golden set's are matched to it (`normalise`)


class Bad(Exception):
    """Why one trace is not an answer (a Problem's field and message; the line of the span at fault)."""

    def __init__(self, line: int, field: str | None, message: str):
        super().__init__(message)
        self.line, self.field, self.message = line, field, message


def assemble(file: str, trace_id: str, spans: list[Span], method_attribute: str,
             question_id_attribute: str | None) -> Trace | Problem:
    try:
        return _assemble(trace_id, spans, method_attribute, question_id_attribute)
    except Bad as bad:
        return Problem(file, bad.line, bad.field, f"trace {trace_id}: {bad.message}")


def _assemble(trace_id, spans, method_attribute, question_id_attribute) -> Trace:
    root = _root(spans)
    kinds = [(s.kind, s) for s in sorted(spans, key=lambda s: s.start_ns)]
    retrievers = [s for kind, s in kinds if kind == "RETRIEVER"]
    llms = [s for kind, s in kinds if kind == "LLM"]
    question = _text(root, sa.INPUT, sa.INPUT_MIME, _QUESTION_KEYS)
    if question is None:
        question = next((q for s in retrievers if (q := _text(s, sa.INPUT, sa.INPUT_MIME, _QUESTION_KEYS)
                                                    or _string(s, sa.GENAI_QUERY))), None)
    if not question or not question.strip():
        raise Bad(root.line, sa.INPUT, "no question: the root span has no input.value (nor a retriever span a query)")
    answer = _text(root, sa.OUTPUT, sa.OUTPUT_MIME, _ANSWER_KEYS)
    if answer is None:
        answer = next((a for s in reversed(llms) if (a := _llm_output(s))), None)
    if answer is None:
        raise Bad(root.line, sa.OUTPUT, "no answer: the root span has no output.value and no LLM span an output "
                  "message; export the trace once the pipeline has answered")
    contexts = _dedup([chunk for s in retrievers for chunk in _documents(s)])
    return Trace(trace_id, root.line, question.strip(), answer, contexts, _usage(root, llms),
                 _attribute(root, spans, method_attribute), _attribute(root, spans, question_id_attribute),
                 root.start_ns, normalise(question))


def normalise(question: str) -> str:
    """A question's text as traces join the golden set by it: Unicode NFC, case folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFC", question).casefold().split())


def _root(spans: list[Span]) -> Span:
    """The one span without a parent; a missing parent or a loop is refused (the tree would be a guess)."""
    ids = {s.span_id: s for s in spans}
    for span in spans:
        if span.parent_id is not None and span.parent_id not in ids:
            raise Bad(span.line, "parentSpanId", f"span {span.span_id} ({span.name}) names parent {span.parent_id}, "
                      "which is not in the file; export the whole trace")
    roots = [s for s in spans if s.parent_id is None]
    if not roots:
        raise Bad(spans[0].line, "parentSpanId", f"the spans form a loop ({_loop(ids)}): no span is the root")
    if len(roots) > 1:
        names = ", ".join(f"{s.span_id} ({s.name}, line {s.line})" for s in roots[:3])
        raise Bad(roots[1].line, "parentSpanId", f"{len(roots)} root spans ({names}); a trace has one")
    for span in spans:  # a loop beside the root: a span whose ancestors never reach it
        seen, at = set(), span
        while at.parent_id is not None:
            if at.span_id in seen:
                raise Bad(span.line, "parentSpanId", f"the spans form a loop ({_loop(ids, span)})")
            seen.add(at.span_id)
            at = ids[at.parent_id]
    return roots[0]


def _loop(ids: dict, start: Span | None = None) -> str:
    at, path = start or next(iter(ids.values())), []
    while at is not None and at.span_id not in path:
        path.append(at.span_id)
        at = ids.get(at.parent_id)
    return " -> ".join(path + ([at.span_id] if at is not None else []))


def _string(span: Span, key: str) -> str | None:
    value = span.attributes.get(key)
    if value is None or isinstance(value, str):
        return value
    raise Bad(span.line, key, f"span {span.span_id} ({span.name}): {key} is {kind_of(value)}, not a text")


def _text(span: Span, key: str, mime_key: str, keys: tuple[str, ...]) -> str | None:
    """The attribute's text; a JSON value's text under one of `keys` (None when it holds none)."""
    value = _string(span, key)
    if value is None or span.attributes.get(mime_key) != "application/json":
        return value
    try:
        return _find(json.loads(value), keys)
    except ValueError:
        return value  # said to be JSON, but text: the text it is


def _find(value, keys: tuple[str, ...], depth: int = 0) -> str | None:
    """The first text under one of `keys`, depth first (a pipeline's input nests it under its components)."""
    if isinstance(value, str):
        return value if depth else None  # a bare JSON string at the top is no answer to find: it is the value
    if isinstance(value, dict) and depth < 8:
        for key in keys:
            if isinstance(value.get(key), str):
                return value[key]
        for item in value.values():
            if (found := _find(item, keys, depth + 1)) is not None:
                return found
    return None


def _llm_output(span: Span) -> str | None:
    """The last assistant message of an LLM span (OpenInference's output messages, else GenAI's)."""
    contents = {}
    for key, value in span.attributes.items():
        if key.startswith(sa.OUTPUT_MESSAGES) and key.endswith(".message.content"):
            contents[_index(span, key, sa.OUTPUT_MESSAGES)] = value
    if contents:
        last = contents[max(contents)]
        if not isinstance(last, str):
            raise Bad(span.line, sa.OUTPUT_MESSAGES, f"span {span.span_id}: an output message is {kind_of(last)}")
        return last
    raw = _string(span, sa.GENAI_OUTPUT_MESSAGES)
    if raw is None:
        return None
    try:  # [{"role": "assistant", "parts": [{"type": "text", "content": ...}]}]
        parts = json.loads(raw)[-1]["parts"]
        return "".join(p.get("content", "") for p in parts if p.get("type") == "text") or None
    except (ValueError, LookupError, TypeError, AttributeError):
        raise Bad(span.line, sa.GENAI_OUTPUT_MESSAGES, f"span {span.span_id}: gen_ai.output.messages is not a JSON "
                  "list of messages with text parts") from None


def _index(span: Span, key: str, prefix: str) -> int:
    head = key[len(prefix):].split(".", 1)[0]
    if not head.isdigit():
        raise Bad(span.line, key, f"span {span.span_id}: attribute {key} has no list index after {prefix}")
    return int(head)


def _documents(span: Span) -> list[Chunk]:
    """The retriever span's documents in index order: id (else the rank), content, score (OpenInference's, else the
    GenAI conventions')."""
    docs: dict[int, dict] = {}
    for key, value in span.attributes.items():
        parsed = _DOCUMENT_KEYS[key]
        if parsed:
            index, field = parsed
            if index is None:
                raise Bad(span.line, key, f"span {span.span_id}: attribute {key} has no list index after "
                          f"{sa.DOCUMENTS}")
            if (doc := docs.get(index)) is None:
                docs[index] = {field: (key, value)}
            else:
                doc[field] = (key, value)
    if not docs and sa.GENAI_DOCUMENTS in span.attributes:
        docs = _genai_documents(span)
    chunks = []
    for rank, index in enumerate(sorted(docs), 1):
        fields = docs[index]
        key, content = fields.get("content") or (f"{sa.DOCUMENTS}{index}.document.content", None)
        if not isinstance(content, str):
            raise Bad(span.line, key, f"span {span.span_id}: document {index}'s content is {kind_of(content)}, "
                      "not a text")
        key, doc_id = fields.get("id") or (None, rank)
        if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
            raise Bad(span.line, key, f"span {span.span_id}: document {index}'s id is {kind_of(doc_id)}, not a "
                      "text or a whole number")
        key, score = fields.get("score") or (None, None)
        if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
            raise Bad(span.line, key, f"span {span.span_id}: document {index}'s score is {kind_of(score)}, not a "
                      "number")
        chunks.append(Chunk(str(doc_id), content, None if score is None else float(score)))
    return chunks


def _document_key(key: str) -> tuple:
    """retrieval.documents.N.document.FIELD -> (N, FIELD), N None when it is no index; () for any other name."""
    if not key.startswith(sa.DOCUMENTS):
        return ()
    index, _, field = key[len(sa.DOCUMENTS):].partition(".document.")
    return (int(index) if index.isdigit() else None), field


_DOCUMENT_KEYS = sa.Memo(_document_key)  # every retriever span repeats the same names: each parsed once


def _genai_documents(span: Span) -> dict[int, dict]:
    """gen_ai.retrieval.documents (a list of {id, score, ...}, structured or as JSON text) in _documents' shape. The
    conventions give a document no text property: `content` (or `text`) where the instrumentation adds one."""
    key = sa.GENAI_DOCUMENTS
    value = span.attributes[key]
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            value = None
    if not isinstance(value, list) or not all(isinstance(doc, dict) for doc in value):
        raise Bad(span.line, key, f"span {span.span_id}: {key} is not a list of documents ({{id, score, content}})")
    docs = {}
    for index, doc in enumerate(value):
        where = f"{key}[{index}]"
        if not any(k in doc for k in ("content", "text")):
            raise Bad(span.line, where, f"span {span.span_id}: document {index} has no text: the GenAI conventions "
                      "define only its id and score; have the instrumentation add each document's text as a "
                      "'content' property (or record OpenInference's retrieval.documents.N.document.content)")
        docs[index] = {"content": (where + ".content", doc.get("content", doc.get("text")))}
        docs[index].update({field: (f"{where}.{field}", doc[field]) for field in ("id", "score")
                            if doc.get(field) is not None})
    return docs


def _dedup(chunks: list[Chunk]) -> tuple[Chunk, ...]:
    """Chunks in order, a chunk retrieved again by a later retriever span kept once (its first place)."""
    kept = dict.fromkeys((chunk.chunk_id, chunk.text) for chunk in chunks)
    if len(kept) == len(chunks):  # the common case: nothing retrieved twice
        return tuple(chunks)
    seen, kept = set(), []
    for chunk in chunks:
        if (chunk.chunk_id, chunk.text) not in seen:
            seen.add((chunk.chunk_id, chunk.text))
            kept.append(chunk)
    return tuple(kept)


def _usage(root: Span, llms: list[Span]) -> Usage:
    latency = None if root.end_ns is None else (root.end_ns - root.start_ns) / 1e6
    tokens_in = _sum(llms, sa.PROMPT_TOKENS, sa.GENAI_INPUT_TOKENS)
    tokens_out = _sum(llms, sa.COMPLETION_TOKENS, sa.GENAI_OUTPUT_TOKENS)
    costs = [c for s in llms if (c := _number(s, sa.COST)) is not None]
    root_cost = _number(root, sa.COST)  # a format that states the trace's cost on its root (Langfuse)
    models = []
    for span in llms:
        model = _string(span, sa.MODEL) or next((m for k in sa.GENAI_MODELS if (m := _string(span, k))), None)
        if model and model not in models:
            models.append(model)
    return Usage(latency_ms=latency, input_tokens=tokens_in, output_tokens=tokens_out,
                 cost_usd=root_cost if root_cost is not None else (sum(costs) if costs else None),
                 model=", ".join(models) or None)


def _sum(spans: list[Span], key: str, genai_key: str) -> int | None:
    counts = [n for s in spans if (n := _whole(s, key if key in s.attributes else genai_key)) is not None]
    return sum(counts) if counts else None


def _whole(span: Span, key: str) -> int | None:
    value = span.attributes.get(key)
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    if isinstance(value, float) and value.is_integer():  # a table's column of counts with gaps is a float column
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise Bad(span.line, key, f"span {span.span_id}: {key} is {kind_of(value)}, not a whole number of tokens")
    return value


def _number(span: Span, key: str) -> float | None:
    value = span.attributes.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise Bad(span.line, key, f"span {span.span_id}: {key} is {kind_of(value)}, not an amount in USD")
    return float(value)


def _attribute(root: Span, spans: list[Span], name: str | None) -> str | None:
    """A span attribute (the root's first) or a resource attribute, as text."""
    if name is None:
        return None
    for span in (root, *spans):
        for where in (span.attributes, span.resource):
            value = where.get(name)
            if value is not None and value != "":
                if isinstance(value, (dict, list)):
                    raise Bad(span.line, name, f"span {span.span_id}: {name} is {kind_of(value)}, not a text")
                return str(value)
    return None
