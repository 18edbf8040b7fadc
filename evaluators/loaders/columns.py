"""A file's columns -> RAGScope's fields: the names each field is recognised under (ALIASES),
the user's column mapping, which roles a file can be read as, and what to say when a column
that role needs is missing."""
from __future__ import annotations

from evaluators.loaders.problems import Problems, names

# Canonical field -> accepted column names (case-insensitive), best first. The order of the
# fields matters: a column goes to the first field that claims it, so `reference` is resolved
# before `answer` and the retrieved `contexts` before DeepEval's ideal `context`.
# haystack's evaluation results name their columns in the plural (questions, true_answers,
# predicted_answers; its RAG harness: responses, ground_truth_answers); InspectorRAGet's records
# (evaluators.loaders.inspectorraget) keep that file's names: task_id, input, targets, model, output.
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
    # The documents that answer a question (ragas: reference_context_ids), a list of ids or {id: grade}.
    # RAGChecker carries ids only on the retrieved chunks (retrieved_context[].doc_id, read as chunk ids).
    "relevant_ids": ("relevant_ids", "reference_context_ids", "relevant_doc_ids", "gold_doc_ids"),
    # The retrieved chunks' ids in a column of their own, one per chunk in order (ragas: retrieved_context_ids).
    "context_ids": ("retrieved_context_ids", "context_ids", "retrieved_ids"),
    # What the RAG system spent on the answer (loaders.usage), after `method`, which takes a lone `model` column
    # (InspectorRAGet names the method so). A bare `latency` is left alone: ms or seconds would be a guess.
    "latency_ms": ("latency_ms", "duration_ms", "response_time_ms"),
    "latency_s": ("latency_s", "latency_seconds", "duration_s"),
    "input_tokens": ("input_tokens", "prompt_tokens", "tokens_in"),
    "output_tokens": ("output_tokens", "completion_tokens", "tokens_out"),
    "cost_usd": ("cost_usd", "cost", "total_cost"),
    "model": ("model", "model_name", "llm_model"),
}
USAGE_FIELDS = ("latency_ms", "latency_s", "input_tokens", "output_tokens", "cost_usd", "model")
GOLDEN_FIELDS = ("question_id", "question", "reference", "question_type", "evidence",
                 "reference_contexts", "checks", "relevant_ids")
OUTPUT_FIELDS = ("question_id", "question", "method", "answer", "contexts", "context_ids", *USAGE_FIELDS)
_DESCRIPTIONS = {
    "question_id": "the question id",
    "question": "the question text",
    "reference": "the reference (golden) answer",
    "answer": "the RAG method's answer",
}


def column_lookup(keys: list, problems: Problems) -> dict:
    """Each column by its name trimmed and case-folded (how aliases match); two columns whose names are equal so
    (`question` and `Question `) are a problem: which one is read would be a silent guess."""
    lookup: dict[str, str] = {}
    for key in keys:
        name = str(key).strip().casefold()
        first = lookup.setdefault(name, key)
        if first != key and name:  # the same name twice exactly: the parser says so (CSV header)
            problems.add(None, str(key), f"columns '{first}' and '{key}' have the same name once case and spaces "
                         "are ignored, so which one to read is unclear; rename or delete one")
    return lookup


def resolve_columns(keys: list, role: str, column_map: dict, problems: Problems) -> dict:
    """canonical field -> column: the user's mapping first, then the first free alias."""
    lookup = column_lookup(keys, problems)
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


def _mapped_columns(column_map: dict, keys: list, lookup: dict, problems: Problems) -> dict:
    columns = {}
    key_set = set(keys)
    for field, column in column_map.items():
        if field not in ALIASES:
            problems.add(None, None, f"the column mapping names unknown field '{field}'; "
                         f"fields are: {', '.join(ALIASES)}")
        elif column is not None:
            found = column if column in key_set else lookup.get(str(column).strip().casefold())
            if found is None:
                problems.add(None, field, f"the column mapping reads {field} from column "
                             f"'{column}', but the file has no such column; columns found: "
                             f"{names(keys)}")
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


def plan_roles(columns: dict, role: str, keys: list, problems: Problems) -> tuple[bool, bool]:
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
    return (f"no column for {_DESCRIPTIONS[field]}. Columns found: {names(keys)}. Accepted "
            f"names: {aliases}. If it is there under another name, map it to '{field}'.")


def id_field(columns: dict) -> str:
    """The column a problem about a whole question names: its id, else its text."""
    return columns.get("question_id") or columns.get("question") or "question_id"
