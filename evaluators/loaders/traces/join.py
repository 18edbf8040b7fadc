"""Traces -> RAG outputs of the golden set's questions: each trace's method, its golden question (by the question-id
attribute when one is named, else by the question's text: Unicode NFC, case folded, whitespace collapsed), the latest
trace where one method answered a question more than once; what was left out is said in notes, not scored."""
from __future__ import annotations

from collections.abc import Sequence

from evaluators.loaders.problems import Problems, preview
from evaluators.loaders.records import derive_question_id
from evaluators.loaders.traces.assemble import Trace, normalise
from evaluators.records import GoldenItem, RagOutput

SHOWN = 3  # unmatched questions named in the note


def join(traces: Sequence[Trace], golden: Sequence[GoldenItem] | None, problems: Problems, *, method: str | None,
         default_method: str, method_attribute: str, question_id_attribute: str | None):
    """(outputs, their lines, notes). golden None: no golden set to join to (the question id is the question-id
    attribute, else derived from the text, as for a file without ids)."""
    notes: list[str] = []
    lookup = _lookup(golden, question_id_attribute)
    chosen: dict[tuple[str, str], Trace] = {}
    unmatched, no_method, considered = [], 0, 0
    for trace in traces:
        if question_id_attribute is not None and trace.question_id is None:
            problems.add(trace.line, question_id_attribute, f"trace {trace.trace_id} carries no attribute "
                         f"'{question_id_attribute}' (the question-id attribute) on any span or its resource")
            continue
        if lookup is None:
            question_id = trace.question_id or derive_question_id(trace.question)
        else:
            question_id = lookup.get(trace.question_id if question_id_attribute else trace.question_key)
            if question_id is None:
                unmatched.append(trace)
                continue
        name = method or trace.method
        if name is None:
            no_method += 1
            name = default_method
        key = (question_id, name)
        considered += 1
        if key not in chosen or trace.start_ns > chosen[key].start_ns:
            chosen[key] = trace
    dropped = considered - len(chosen)
    if unmatched:
        questions = dict.fromkeys(t.question_id if question_id_attribute else t.question for t in unmatched)
        shown = "; ".join(preview(q, 60) for q in list(questions)[:SHOWN])
        notes.append(f"{len(unmatched)} trace{'s' if len(unmatched) != 1 else ''} match no golden question and "
                     f"are not scored ({len(questions)} question{'s' if len(questions) != 1 else ''}; first: {shown})")
    if dropped > 0:
        notes.append(f"{dropped} earlier trace{'s' if dropped != 1 else ''} of a question a method answered again "
                     "left out: the latest trace of each (question, method) is scored")
    if no_method:
        notes.append(f"{no_method} trace{'s' if no_method != 1 else ''} carry no '{method_attribute}': method "
                     f"'{default_method}' (the file's name); name another with --method-attribute")
    if traces and not chosen and not problems.items:
        problems.add(None, None, f"none of the {len(traces)} traces matches a golden question "
                     f"({'by ' + question_id_attribute if question_id_attribute else 'by question text'}); "
                     "check that the traces answer this golden set")
    ordered = sorted(chosen.items(), key=lambda item: item[1].line)
    outputs = tuple(RagOutput(qid, name, t.answer, t.contexts, t.usage) for (qid, name), t in ordered)
    return outputs, tuple(t.line for _, t in ordered), tuple(notes)


def _lookup(golden, question_id_attribute) -> dict[str, str] | None:
    if golden is None:
        return None
    if question_id_attribute is not None:
        return {item.question_id: item.question_id for item in golden}
    return {normalise(item.question): item.question_id for item in golden}
