"""Relevant documents: a qrels file read into the golden set (`with_qrels`), and the retrieved lists checked against
the golden set's relevant ids (`retrieval_problems`): a list naming a document twice, and ids that never match.

A qrels file is BEIR's TSV (a header `query-id corpus-id score`, tab-separated) or TREC's (`qid 0 docid rel`, on
whitespace, no header); a grade > 0 is relevant, as in trec_eval. Its query ids must be the golden set's.
"""
from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from pathlib import Path

from evaluators.loaders.problems import Problems, preview
from evaluators.records import Problem

_BEIR_HEADER = ("query-id", "corpus-id", "score")
MAX_SHOWN = 3  # example ids a message names


def read_qrels(path: str | Path) -> dict[str, tuple[tuple[str, float], ...]]:
    """query id -> its judged documents with their grades, in file order; LoadError naming every bad row."""
    path = Path(path)
    problems = Problems(path.name)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        problems.stop(None, None, f"cannot read the qrels file: {exc.strerror or exc}")
    except UnicodeDecodeError as exc:
        problems.stop(None, None, f"the qrels file is not UTF-8 text (byte {exc.start}); save it as UTF-8")
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        problems.stop(None, None, "the qrels file is empty; give one line per judged document: "
                                  "query-id, corpus-id, score (BEIR) or qid 0 docid rel (TREC)")
    beir = tuple(lines[0][1].strip().lower().split("\t")) == _BEIR_HEADER
    fields = ("query-id", "corpus-id", "score") if beir else ("qid", "iteration", "docid", "rel")
    qrels: dict[str, dict[str, float]] = {}
    for n, line in lines[1:] if beir else lines:
        parts = line.rstrip("\r\n").split("\t") if beir else line.split()
        if len(parts) != len(fields):
            problems.add(n, None, f"{len(parts)} fields where {len(fields)} were expected ({' '.join(fields)}); "
                                  + ("BEIR's qrels are tab-separated" if beir else "a BEIR file starts with the "
                                     "header 'query-id<TAB>corpus-id<TAB>score'"))
            continue
        query, doc, grade = parts[0].strip(), parts[-2].strip(), parts[-1].strip()
        try:
            value = float(grade)
        except ValueError:
            problems.add(n, fields[-1], f"the grade {preview(grade)} is not a number")
            continue
        if not query or not doc:
            problems.add(n, fields[0] if not query else fields[-2], "the id is empty")
        elif doc in qrels.setdefault(query, {}):
            problems.add(n, fields[-2], f"document '{doc}' is judged twice for query '{query}'")
        else:
            qrels[query][doc] = value
    problems.raise_if_any()
    return {query: tuple(docs.items()) for query, docs in qrels.items()}


def with_qrels(golden, path: str | Path):
    """The golden set `golden` (a loaders.Dataset) with its relevant ids from the qrels file at `path`, which
    replace any the golden file names; its content hash covers both files (another qrels file: another dataset).
    LoadError when the file names a query the golden set does not hold."""
    path = Path(path)
    qrels = read_qrels(path)
    known = {item.question_id for item in golden.golden}
    unknown = [query for query in qrels if query not in known]
    if unknown:
        Problems(path.name).stop(None, "query-id", (
            f"{len(unknown)} query id(s) are not in the golden set {golden.source}: "
            f"{', '.join(map(repr, unknown[:MAX_SHOWN]))}{' ...' if len(unknown) > MAX_SHOWN else ''}; the qrels' "
            f"query ids must be the golden set's question ids (for example {next(iter(known), 'none')!r})"))
    items = tuple(dataclasses.replace(item, relevant_ids=qrels.get(item.question_id, ())) for item in golden.golden)
    digest = hashlib.sha256((golden.content_hash + "\0qrels\0").encode() + path.read_bytes()).hexdigest()
    return dataclasses.replace(golden, golden=items, content_hash=digest,
                               columns=golden.columns | {"relevant_ids": f"{path.name} (qrels)"})


def retrieval_problems(outputs: Sequence, golden) -> list[Problem]:
    """For the questions whose golden item names relevant documents: a retrieved list that names one document twice
    (a rank metric counts each document once), and an outputs file none of whose chunk ids is ever a relevant id of
    its question (the ids are probably in another format, or the chunks carry none)."""
    grades = {item.question_id: item.grades for item in golden.golden if item.relevant_ids}
    if not grades:
        return []
    problems = []
    for ds in outputs:
        rows = ds.output_rows or tuple(range(1, len(ds.outputs) + 1))
        field = ds.columns.get("context_ids") or ds.columns.get("contexts") or "contexts"
        judged, matched, seen_ids = 0, False, []
        for row, out in zip(rows, ds.outputs):
            relevant = grades.get(out.question_id)
            if relevant is None:
                continue
            ids = [c.chunk_id for c in out.contexts]
            twice = sorted({doc for doc in ids if ids.count(doc) > 1})
            if twice:
                problems.append(Problem(ds.source, row, field, (
                    f"the retrieved list names document(s) {', '.join(map(repr, twice[:MAX_SHOWN]))} more than once; "
                    "the golden set names relevant documents for this question, and a rank metric counts each "
                    "retrieved document once: keep its first chunk, or give each chunk its own id")))
            judged += bool(ids)
            matched = matched or any(relevant.get(doc, 0) > 0 for doc in ids)
            seen_ids += ids[:MAX_SHOWN - len(seen_ids)]
        if judged and not matched:
            example = next(doc for g in grades.values() for doc in g)
            rank_ids = all(c.chunk_id == str(r) for o in ds.outputs for r, c in enumerate(o.contexts, 1))
            hint = (" Its chunks carry no ids (each chunk's id is its rank): give them ids "
                    "({\"id\": ..., \"text\": ...} or a retrieved_context_ids column)" if rank_ids else
                    f" Its chunk ids look like {', '.join(map(repr, seen_ids))}; the golden set's like {example!r}")
            problems.append(Problem(ds.source, None, field, (
                f"none of the retrieved chunk ids of its {judged} answer(s) to questions with relevant documents is "
                f"ever a relevant id of its question: probably a format mismatch.{hint}.")))
    return problems

