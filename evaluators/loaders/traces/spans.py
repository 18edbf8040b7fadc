"""One span as every trace format gives it, keeping only the attributes a RAG output needs (the rest of a span is
dropped as it is read, so a file's memory is what its outputs hold, not its spans).

Attribute names, OpenInference semantic conventions (github.com/Arize-ai/openinference, spec/semantic_conventions.md;
openinference-semantic-conventions' SpanAttributes): openinference.span.kind (CHAIN, RETRIEVER, RERANKER, LLM, ...),
input.value, input.mime_type, output.value, output.mime_type, retrieval.documents.N.document.{id,content,score},
llm.input_messages.N.message.{role,content}, llm.output_messages.N.message.{role,content},
llm.token_count.{prompt,completion,total}, llm.model_name, llm.cost.total. Where those are absent, the OpenTelemetry
GenAI conventions (opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans): gen_ai.operation.name,
gen_ai.usage.input_tokens, gen_ai.usage.output_tokens, gen_ai.request.model, gen_ai.response.model,
gen_ai.output.messages.

GenAI retrieval (open-telemetry/semantic-conventions-genai, docs/gen-ai/gen-ai-spans.md "Retrievals", the span
gen_ai.retrieval.client; registry attributes gen_ai.retrieval.*): a span with gen_ai.operation.name "retrieval" is a
retriever; gen_ai.retrieval.query.text is its query (the question where the root span has none);
gen_ai.retrieval.documents (type any: structured, or a JSON string where structured values are not supported) is the
list of documents in retrieval order, each object SHOULD carry `id` (string) and `score` (double), per the schema
docs/gen-ai/gen-ai-retrieval-documents.json, whose objects allow further properties. What the spec lacks: any
property for a document's text. The chunks' ids and scores are read as the spec gives them; their text only from a
`content` (or `text`) property where the instrumentation adds one, and a document without one is a problem (the
context metrics judge the text), not an empty chunk.
"""
from __future__ import annotations

from dataclasses import dataclass

KIND = "openinference.span.kind"
INPUT, INPUT_MIME = "input.value", "input.mime_type"
OUTPUT, OUTPUT_MIME = "output.value", "output.mime_type"
DOCUMENTS = "retrieval.documents."  # .N.document.id / .content / .score
OUTPUT_MESSAGES = "llm.output_messages."  # .N.message.role / .content
PROMPT_TOKENS, COMPLETION_TOKENS = "llm.token_count.prompt", "llm.token_count.completion"
MODEL, COST = "llm.model_name", "llm.cost.total"
GENAI_OPERATION = "gen_ai.operation.name"
GENAI_INPUT_TOKENS, GENAI_OUTPUT_TOKENS = "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"
GENAI_MODELS = ("gen_ai.response.model", "gen_ai.request.model")
GENAI_OUTPUT_MESSAGES = "gen_ai.output.messages"
GENAI_LLM_OPERATIONS = ("chat", "text_completion", "generate_content")
GENAI_RETRIEVAL_OPERATION = "retrieval"
GENAI_DOCUMENTS, GENAI_QUERY = "gen_ai.retrieval.documents", "gen_ai.retrieval.query.text"

_WANTED = {KIND, INPUT, INPUT_MIME, OUTPUT, OUTPUT_MIME, PROMPT_TOKENS, COMPLETION_TOKENS, MODEL, COST,
           GENAI_OPERATION, GENAI_INPUT_TOKENS, GENAI_OUTPUT_TOKENS, *GENAI_MODELS, GENAI_OUTPUT_MESSAGES,
           GENAI_DOCUMENTS, GENAI_QUERY}
_WANTED_PREFIXES = (DOCUMENTS, OUTPUT_MESSAGES)


def wanted(extra: frozenset[str]) -> "Memo":
    """Whether an attribute is kept (`keep(key)`): the conventions' names above, and the user's method / question-id
    attribute; each name decided once (a file repeats its attribute names span after span)."""
    names = _WANTED | extra
    return Memo(lambda key: key in names or key.startswith(_WANTED_PREFIXES))


class Memo(dict):
    """fn(key), computed once a key and then looked up in C, as `memo[key]` or `memo(key)`. At most `bound` keys are
    kept: a file of ever new names costs a call a name, never unbounded memory."""

    def __init__(self, fn, bound: int = 1 << 16):
        super().__init__()
        self.fn, self.bound = fn, bound

    def __missing__(self, key):
        if len(self) >= self.bound:
            self.clear()
        value = self[key] = self.fn(key)
        return value

    __call__ = dict.__getitem__


@dataclass(slots=True)
class Span:
    trace_id: str
    span_id: str
    parent_id: str | None  # None: a root span
    name: str
    start_ns: int  # Unix nanoseconds
    end_ns: int | None
    line: int  # where the span is in the file (a line; a Parquet or JSON record number)
    attributes: dict  # the wanted attributes only, as Python values
    resource: dict  # the wanted resource attributes (OTLP: service.name, ...); {} where the format has none

    @property
    def kind(self) -> str | None:
        """RETRIEVER, LLM, ... (OpenInference), or LLM / RETRIEVER for a GenAI span that calls a model / retrieves."""
        kind = self.attributes.get(KIND)
        if kind is None:
            operation = self.attributes.get(GENAI_OPERATION)
            if operation in GENAI_LLM_OPERATIONS:
                return "LLM"
            if operation == GENAI_RETRIEVAL_OPERATION:
                return "RETRIEVER"
        return kind.upper() if isinstance(kind, str) else kind
