"""Parsed records -> GoldenItems and RagOutputs, every bad cell a Problem naming row and column;
a question's id, repeated questions and answers within one file."""
from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Callable, Iterable
from typing import Any

from evaluators.loaders import cells
from evaluators.loaders.usage import CONVERTERS as USAGE_CONVERTERS, usage_of
from evaluators.loaders.columns import id_field
from evaluators.loaders.problems import Problems
from evaluators.records import Chunk, GoldenItem, RagOutput, Usage


def derive_question_id(question: str) -> str:
    """The id of a question that has none: stable across files that hold the same text (NFC: however typed)."""
    normalised = unicodedata.normalize("NFC", " ".join(question.split()))
    return "q-" + hashlib.sha1(normalised.encode("utf-8")).hexdigest()[:10]


class RecordReader:
    """Turns records into GoldenItems and RagOutputs; every bad cell becomes a Problem."""

    def __init__(self, columns: dict, problems: Problems, want_golden: bool,
                 want_outputs: bool, default_method: str | None, context_sep: str | None):
        self.columns = columns
        self.problems = problems
        self.want_golden = want_golden
        self.want_outputs = want_outputs
        self.default_method = default_method
        self.context_sep = context_sep
        self.usage_fields = [(f, convert) for f, convert in USAGE_CONVERTERS.items() if f in columns]

    def read_all(self, records: list[tuple[int, dict]]):
        golden: dict[str, tuple[int, GoldenItem]] = {}
        outputs: list[RagOutput] = []
        output_rows: list[int] = []
        for row, record in records:
            item, output = self.read(row, record)
            if item is not None:
                self.keep_golden(golden, row, item)
            if output is not None:
                outputs.append(output)
                output_rows.append(row)
        return tuple(item for _, item in golden.values()), tuple(outputs), tuple(output_rows)

    def read(self, row: int, record: dict) -> tuple[GoldenItem | None, RagOutput | None]:
        """This record's golden item and output (None where not wanted); both None if bad."""
        before = len(self.problems.items)
        question = None  # outputs matched by id need no question text
        if self.want_golden or "question_id" not in self.columns:
            question = self.required(row, record, "question", "the question is empty; fill it "
                                     "in or delete the row")
        question_id = self.question_id(row, record, question)
        item = self.golden_item(row, record, question_id, question) if self.want_golden else None
        output = self.output(row, record, question_id) if self.want_outputs else None
        if len(self.problems.items) > before:
            return None, None
        return item, output

    def cell(self, row: int, record: dict, field: str, convert: Callable = None):
        """The converted value of `field` in this record; None when absent, empty or bad."""
        column = self.columns.get(field)
        if column is None:
            return None
        try:
            return (convert or cells.text)(record.get(column))
        except cells.Bad as bad:
            self.problems.add(row, column, str(bad))
            return None

    def required(self, row: int, record: dict, field: str, message: str) -> str | None:
        """A text field that must not be blank; reported once, whether blank or bad."""
        before = len(self.problems.items)
        text = self.cell(row, record, field)
        if text is not None and text.strip():
            return text
        if len(self.problems.items) == before:
            self.problems.add(row, self.columns[field], message)
        return None

    def question_id(self, row: int, record: dict, question: str | None) -> str | None:
        if "question_id" not in self.columns:
            return derive_question_id(question) if question else None
        question_id = self.required(row, record, "question_id", "the question id is empty; "
                                    "give every row an id, or drop the id column so ids are "
                                    "derived from the question text")
        return self.identifier(row, "question_id", question_id, "question id")

    def golden_item(self, row: int, record: dict, question_id: str | None,
                    question: str | None) -> GoldenItem:
        reference = self.required(row, record, "reference", "the reference answer is empty; "
                                  "fill it in or delete the row")
        reference_contexts = self.cell(row, record, "reference_contexts", self.contexts) or ()
        return GoldenItem(
            question_id=question_id,
            question=question,
            reference=reference,
            question_type=cells.none_if_blank(self.cell(row, record, "question_type")),
            evidence=cells.none_if_blank(self.cell(row, record, "evidence")),
            reference_contexts=tuple(chunk.text for chunk in reference_contexts),
            checks=self.cell(row, record, "checks", cells.checks) or (),
            relevant_ids=self.cell(row, record, "relevant_ids", cells.relevant_ids) or (),
        )

    def output(self, row: int, record: dict, question_id: str | None) -> RagOutput:
        contexts = self.cell(row, record, "contexts", self.contexts) or ()
        ids = self.cell(row, record, "context_ids", cells.context_ids) or ()
        if ids and len(ids) != len(contexts):
            self.problems.add(row, self.columns["context_ids"], f"{len(ids)} ids for {len(contexts)} retrieved "
                              "chunks; give one id per chunk, in the order of the chunks")
        elif ids:
            contexts = tuple(Chunk(doc, chunk.text, chunk.score) for doc, chunk in zip(ids, contexts))
        return RagOutput(
            question_id=question_id,
            method=self.method(row, record),
            answer=self.cell(row, record, "answer") or "",  # an empty answer is a real failure
            contexts=contexts,
            usage=self.usage(row, record),
        )

    def usage(self, row: int, record: dict) -> Usage | None:
        """What the system spent on this answer, from the file's usage columns; None when it has none."""
        if not self.usage_fields:
            return None
        return usage_of({field: self.cell(row, record, field, convert) for field, convert in self.usage_fields})

    def method(self, row: int, record: dict) -> str | None:
        if "method" not in self.columns:
            return self.default_method
        method = self.required(row, record, "method", "the method name is empty; name the RAG "
                               "method that produced this answer")
        return self.identifier(row, "method", method, "method name")

    def identifier(self, row: int, field: str, text: str | None, what: str) -> str | None:
        """An id or method name in NFC, None (a problem) when it holds an invisible character."""
        if text is None:
            return None
        try:
            return cells.identifier(text, what)
        except cells.Bad as bad:
            self.problems.add(row, self.columns[field], str(bad))
            return None

    def contexts(self, value: Any) -> tuple[Chunk, ...]:
        return cells.contexts(value, self.context_sep)

    def keep_golden(self, golden: dict, row: int, item: GoldenItem) -> None:
        """Keeps the first item of each id. A file that also holds answers repeats a question
        once per method, which is fine while the repeats agree."""
        seen = golden.get(item.question_id)
        if seen is None:
            golden[item.question_id] = (row, item)
            return
        first_row, first = seen
        holds_answers = self.want_outputs or "method" in self.columns
        if holds_answers and first == item:
            return
        field = id_field(self.columns)
        if holds_answers:
            message = (f"question '{item.question_id}' also appears at row {first_row} with a "
                       "different question or reference; rows of one question must agree")
        elif "question_id" in self.columns:
            message = (f"question id '{item.question_id}' repeats row {first_row}; ids in a "
                       "golden set must be unique: fix one of the two ids or delete the duplicate")
        else:
            message = (f"the same question text appears at row {first_row} (with no id column, "
                       "ids come from the question text); delete the duplicate or add ids")
        self.problems.add(row, field, message)


def duplicate_outputs(outputs: Iterable[RagOutput], rows: Iterable[int], columns: dict):
    """(row, field, message) for each repeat of a (question_id, method) pair."""
    first_rows: dict[tuple[str, str], int] = {}
    field = id_field(columns)
    for row, output in zip(rows, outputs):
        key = (output.question_id, output.method)
        if key in first_rows:
            yield (row, field, f"question '{output.question_id}' already has an answer from "
                   f"method '{output.method}' at row {first_rows[key]}; keep one answer per "
                   "question and method")
        else:
            first_rows[key] = row
