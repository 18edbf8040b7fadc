"""Data: upload golden sets and RAG outputs, see what was read and every problem, store valid files;
import people's ratings of a run's answers (evaluators.store.ratings).

Each file is read by `evaluators.loaders` (format detected, columns recognised under the names of
ragas, DeepEval, RAGChecker, GraphRAG-Bench and haystack, InspectorRAGet's JSON by its keys). When a
required column is not recognised, the user maps their columns to ours and the file is read again.
Nothing is stored while any file has a problem; storing the same content twice is a no-op (content
hash). Uploaded text is shown only through st.dataframe / st.text, never as markdown.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from evaluators.queries import datasets as qd
from evaluators import loaders
from evaluators.loaders.traces import DEFAULT_METHOD_ATTRIBUTE, TRACE_FORMATS
from evaluators.store import ratings
from evaluators.records import GoldenItem, LoadError, Problem
from ui.common import md_escape, store
from ui.problems import show_problems

ROLES = {"Detect": "auto", "Golden set": "golden", "RAG outputs": "outputs"}
ENCODINGS = ("utf-8", "cp1252", "latin-1", "utf-16")
AUTO, OFF = "(recognised automatically)", "(none: do not read)"
PREVIEW_ROWS = 50
NO_CHECK = ("none", None)
ENCODING_HELP = ("utf-8 unless the file was saved otherwise (Excel on Windows: cp1252); type any other codec name "
                 "a problem message advises.")


def file_columns(raw: bytes, name: str, encoding: str) -> list[str]:
    """The file's own column names, for the mapping step."""
    try:
        return loaders.column_names(raw, name=name, encoding=encoding)
    except LoadError:
        return []


def read(raw: bytes, name: str, role: str, method: str | None, context_sep: str | None, encoding: str,
         column_map: dict, method_attribute: str | None = None, question_id_attribute: str | None = None,
         golden: loaders.Dataset | None = None) -> tuple[loaders.Dataset | None, list[Problem]]:
    """Uploaded bytes -> the dataset, or every problem found. A detected file that holds only a
    golden set (or only outputs) is read as that role, so it gets the content hash the CLI gives it
    and storing it again from either is recognised. A trace file's traces join `golden`'s questions (without it, by
    ids derived from their text: `join_traces` reads it again once the golden set is chosen)."""
    options = {"name": name, "method": method, "context_sep": context_sep, "encoding": encoding,
               "column_map": column_map or None, "method_attribute": method_attribute,
               "question_id_attribute": question_id_attribute, "golden": golden}
    try:
        dataset = loaders.load(raw, role=role, **options)
    except LoadError as exc:
        return None, list(exc.problems)
    if role == "auto" and bool(dataset.golden) != bool(dataset.outputs):
        try:
            dataset = loaders.load(raw, role="golden" if dataset.golden else "outputs", **options)
        except LoadError:
            pass  # the detected reading stands
    return dataset, []


def with_qrels(dataset: loaders.Dataset, upload) -> tuple[loaders.Dataset | None, list[Problem]]:
    """The golden set with the relevant documents of an uploaded qrels file (loaders.with_qrels reads a file: the
    upload is written under its own name in a folder of its own, so problems name it as the user does)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / Path(upload.name).name
        path.write_bytes(upload.getvalue())
        try:
            return loaders.with_qrels(dataset, path), []
        except LoadError as exc:
            return None, list(exc.problems)


def trace_options(key: str) -> dict:
    """A trace file's attributes, as typed under its reading options (None: the default)."""
    return {"method_attribute": (st.session_state.get(f"{key}-mattr") or "").strip() or None,
            "question_id_attribute": (st.session_state.get(f"{key}-qattr") or "").strip() or None}


def join_traces(dataset: loaders.Dataset, upload, slot: str, golden: loaders.Dataset):
    """A trace file read again against the chosen golden set (its questions matched by text or the question-id
    attribute): (the dataset, problems)."""
    return read(upload.getvalue(), upload.name, "outputs", None, None, "utf-8", {}, golden=golden,
                **trace_options(f"data-{slot}"))


def golden_preview(items) -> pd.DataFrame:
    return pd.DataFrame({
        "question_id": [g.question_id for g in items], "question": [g.question for g in items],
        "reference": [g.reference for g in items], "question_type": [g.question_type for g in items],
        "checks": [len(g.checks) for g in items], "relevant documents": [len(g.relevant_ids) for g in items],
    })


def outputs_preview(outputs) -> pd.DataFrame:
    return pd.DataFrame({
        "question_id": [o.question_id for o in outputs], "method": [o.method for o in outputs],
        "answer": [o.answer for o in outputs], "chunks": [len(o.contexts) for o in outputs],
        "first chunk": [o.contexts[0].text[:300] if o.contexts else "" for o in outputs],
    })


def slots(files) -> list[str]:
    """A stable widget key per uploaded file: its name (numbered if two share one)."""
    seen: dict[str, int] = {}
    out = []
    for f in files:
        seen[f.name] = seen.get(f.name, 0) + 1
        out.append(f.name if seen[f.name] == 1 else f"{f.name}#{seen[f.name]}")
    return out


def cached_read(slot: str, upload, raw: bytes, **options):
    """`read`, once per uploaded file and options in this session (every click reruns the page)."""
    cache = st.session_state.setdefault("_data_reads", {})
    signature = (upload.file_id, upload.name, tuple(sorted((k, repr(v)) for k, v in options.items())))
    if slot not in cache or cache[slot][0] != signature:
        cache[slot] = (signature, read(raw, upload.name, **options))
    return cache[slot][1]


def file_panel(slot: str, upload) -> tuple[loaders.Dataset | None, list[Problem]]:
    """One uploaded file: how it is read, its options and column mapping, its preview or problems."""
    raw = upload.getvalue()
    key = f"data-{slot}"
    with st.container(border=True):
        st.markdown(f"**{md_escape(upload.name)}**")
        try:
            fmt = loaders.detect_format(upload.name, raw[:4096])
        except LoadError:
            fmt = "unknown"
        role = ROLES[st.radio("This file holds", list(ROLES), horizontal=True, key=f"{key}-role",
                              help="Detect: a golden set, RAG outputs or both, from the columns found.")]
        encoding = st.session_state.get(f"{key}-encoding", ENCODINGS[0])
        # typed as \n or \t (a text box cannot hold a line break)
        context_sep = (st.session_state.get(f"{key}-sep") or "").replace("\\n", "\n").replace("\\t", "\t") or None
        column_map = {field: (None if col == OFF else col) for field in loaders.ALIASES
                      if (col := st.session_state.get(f"{key}-map-{field}", AUTO)) != AUTO}
        method = st.session_state.get(f"{key}-method")
        dataset, problems = cached_read(slot, upload, raw, role=role, method=method, context_sep=context_sep,
                                        encoding=encoding, column_map=column_map, **trace_options(key))
        traced = dataset is not None and dataset.format in TRACE_FORMATS

        if dataset is not None and dataset.golden:
            qrels = st.file_uploader(
                "Relevant documents: a qrels file (optional)", type=["tsv", "txt", "qrels", "csv"], key=f"{key}-qrels",
                help="Each question's relevant documents, by the ids its retrieved chunks carry: a BEIR qrels TSV "
                     "(query-id, corpus-id, score, with that header) or a TREC qrels file (qid 0 docid relevance). "
                     "They replace the golden file's relevant_ids; the rank metrics (id_recall, id_ndcg, ...) read "
                     "them.")
            if qrels is not None:
                dataset, problems = with_qrels(dataset, qrels)

        holds = []
        if dataset is not None:
            holds = ([f"golden set, {len(dataset.golden):,} questions"] if dataset.golden else []) + (
                [f"RAG outputs, {len(dataset.outputs):,} answers"] if dataset.outputs else [])
        st.caption(f"Format: {dataset.format if dataset else fmt} (detected) · {len(raw) / 1024:,.1f} KB"
                   + (" · read as " + " and ".join(holds) if holds else ""))

        if traced:
            st.caption("A trace file: one answer per trace, its method from the attribute named under **Reading "
                       "options** (default service.name), matched to the golden set chosen under **Store** by the "
                       "question's text (or a question-id attribute); traces that match no question are listed, not "
                       "stored.")
            with st.expander("Reading options: trace attributes"):
                left, right = st.columns(2)
                left.text_input("Method attribute", key=f"{key}-mattr", placeholder=DEFAULT_METHOD_ATTRIBUTE,
                                help="The resource or span attribute whose value names the method.")
                right.text_input("Question-id attribute", key=f"{key}-qattr", placeholder="(match by question text)",
                                 help="A span or resource attribute holding the golden question's id.")
        wants_method = not traced and ((dataset is not None and dataset.outputs and "method" not in dataset.columns)
                                       or any(p.field == "method" and p.row is None for p in problems))
        if wants_method:
            st.text_input("Method name (the file has no method column)", value=Path(upload.name).stem,
                          key=f"{key}-method", help="Names the RAG method that produced these answers, e.g. "
                                                    "local_search. Or map a column of the file to 'method' below.")
        elif dataset is not None and dataset.outputs:
            counts = pd.Series([o.method for o in dataset.outputs]).value_counts().rename_axis("method")
            st.caption(f"Methods from column '{md_escape(dataset.columns['method'])}':" if "method" in dataset.columns
                       else "Methods:")
            st.dataframe(counts.rename("answers").reset_index(), hide_index=True)

        missing = [p.field for p in problems
                   if p.row is None and p.field in loaders.ALIASES and p.message.startswith("no column for")]
        if missing:
            st.warning("Some required columns were not recognised. Map the file's columns to RAGScope's fields "
                       "under **Reading options and column mapping**; the file is read again at once.")
        if not traced:  # a trace file has no columns to map
            with st.expander("Reading options and column mapping", expanded=bool(missing) or bool(column_map)):
                left, right = st.columns(2)
                left.selectbox("Encoding", ENCODINGS, key=f"{key}-encoding", accept_new_options=True,
                               help=ENCODING_HELP)
                right.text_input("Context separator", key=f"{key}-sep", placeholder="e.g. ||| or \\n\\n",
                                 help="Only when each row's retrieved chunks are one text joined by a separator; "
                                      "type a line break as \\n, a tab as \\t.")
                columns = st.session_state.setdefault("_data_columns", {})
                if columns.get(slot, (None,))[0] != (upload.file_id, encoding):
                    columns[slot] = ((upload.file_id, encoding), file_columns(raw, upload.name, encoding))
                options = [AUTO, OFF, *columns[slot][1]]
                # The columns recognised: those read, or, when the file could not be read (a required column missing),
                # those the loader finds all the same; only the missing ones are "not found".
                read_from = dataset.columns if dataset else qd.recognised_columns(columns[slot][1], role, column_map)
                fields = sorted(loaders.ALIASES, key=lambda f: (f not in missing, list(loaders.ALIASES).index(f)))
                cols = st.columns(2)
                for i, field in enumerate(fields):
                    cols[i % 2].selectbox(
                        f"{field}" + (" (required, not found)" if field in missing else ""), options,
                        key=f"{key}-map-{field}",
                        format_func=lambda o, f=field: (f"{AUTO}: {read_from[f]}" if o == AUTO and f in read_from
                                                        else "(recognised automatically): not found" if o == AUTO
                                                        else o))

        if problems:
            st.error(f"{len(problems)} problem{'s' if len(problems) != 1 else ''} in this file: nothing is stored "
                     "until every file is valid. Fix the file and upload it again, or change the options above.")
            show_problems(problems, f"{key}-problems")
        else:
            if dataset.golden:
                st.caption(f"Golden items: first {min(PREVIEW_ROWS, len(dataset.golden))} of {len(dataset.golden):,}")
                st.dataframe(golden_preview(dataset.golden[:PREVIEW_ROWS]), hide_index=True, width="stretch")
            if dataset.outputs:
                st.caption(f"Answers: first {min(PREVIEW_ROWS, len(dataset.outputs))} of {len(dataset.outputs):,}")
                st.dataframe(outputs_preview(dataset.outputs[:PREVIEW_ROWS]), hide_index=True, width="stretch")
    return dataset, problems


def check_target(uploaded_golden: list[loaders.Dataset], answers: list[loaders.Dataset]):
    """The golden set the uploaded answers are checked against: one uploaded now, or the stored set
    holding most of their questions, or none (the user's choice)."""
    stored = qd.golden_overlap(store(), sorted({o.question_id for ds in answers for o in ds.outputs}))
    choices = [("upload", i) for i in range(len(uploaded_golden))] + [("stored", d) for d in stored["dataset_id"]]
    labels = {("upload", i): f"{ds.source} (uploaded now, {len(ds.golden):,} questions)"
              for i, ds in enumerate(uploaded_golden)}
    labels |= {("stored", r.dataset_id): f"{r.name} (stored {r.dataset_id}, holds {r.n_matched:,} of these questions)"
               for r in stored.itertuples()}
    labels[NO_CHECK] = "do not check"
    best = 0 if uploaded_golden or (not stored.empty and stored["n_matched"].iloc[0] > 0) else len(choices)
    target = st.selectbox("Check the answers against the golden set", [*choices, NO_CHECK], index=best,
                          format_func=labels.get, key="data-check",
                          help="Answers to questions the golden set does not hold are listed as problems.")
    if target == NO_CHECK and best == len(choices):
        st.warning("No stored golden set holds any question these answers are for, so they are not checked. Upload "
                   "their golden set with them to check them (a run scores only answers to its golden set's "
                   "questions).")
    return target


def as_golden(target) -> loaders.Dataset | None:
    kind, ref = target
    if kind == "none":
        return None
    if kind == "upload":
        return ref
    items: list[GoldenItem] = store().golden_items(ref)
    return loaders.Dataset(source=ref, format="", content_hash="", golden=tuple(items), outputs=(), columns={})


def upload_limit(command: str) -> str:
    """Streamlit refuses a bigger upload itself ("File must be ... or smaller"); this says what to do instead."""
    return (f"Up to {st.get_option('server.maxUploadSize')} MB per file. A bigger file goes through the command line, "
            f"which has no such limit: `{command}`.")


st.title("Data")
st.caption("Upload golden sets and the outputs of your RAG methods: CSV, JSON, JSONL or Parquet, with the column "
           "names of RAGScope, ragas, DeepEval, RAGChecker, GraphRAG-Bench or haystack's evaluation results, or an "
           "InspectorRAGet experiment file as it is. Every file is checked before anything is stored.")

uploads = st.file_uploader("Golden sets and RAG outputs", type=["csv", "tsv", "json", "jsonl", "ndjson", "parquet",
                                                                 "pq"],
                           accept_multiple_files=True, key="data-uploads",
                           help="A golden set: question_id, question, reference (+ question_type, checks). RAG "
                                "outputs: question_id, answer, contexts (+ method). One file may hold both.")
st.caption(upload_limit("python -m evaluators run --golden GOLDEN --outputs OUTPUTS"))

if uploads:
    for cache in ("_data_reads", "_data_columns"):  # forget files no longer uploaded
        kept = set(slots(uploads))
        st.session_state[cache] = {k: v for k, v in st.session_state.get(cache, {}).items() if k in kept}
    results = [(slot, *file_panel(slot, upload)) for slot, upload in zip(slots(uploads), uploads)]
    valid = [ds for _, ds, _ in results if ds is not None]
    problems = [p for _, _, ps in results for p in ps]
    golden_now = [ds for ds in valid if ds.golden]
    answers_only = [ds for ds in valid if ds.outputs and not ds.golden]

    st.subheader("Store")
    cross: list[Problem] = []
    if answers_only:
        target = check_target(golden_now, answers_only)
        if target[0] == "upload":
            target = ("upload", golden_now[target[1]])
        golden = as_golden(target)
        if golden is not None:
            joined = {}  # a trace file read again against the chosen golden set
            for (slot, ds, _), upload in zip(results, uploads):
                if ds is not None and ds in answers_only and ds.format in TRACE_FORMATS:
                    again, found = join_traces(ds, upload, slot, golden)
                    problems += found
                    joined[id(ds)] = again
                    for note in again.notes if again is not None else ():
                        st.info(md_escape(f"{again.source}: {note}"))
            valid = [joined.get(id(ds), ds) for ds in valid if joined.get(id(ds), ds) is not None]
            answers_only = [ds for ds in valid if ds.outputs and not ds.golden]
            cross = loaders.check_against_golden(answers_only, golden)
        if cross:
            st.error(f"{len(cross)} answer{'s' if len(cross) != 1 else ''} do not fit the golden set: fix them, "
                     "check against another golden set, or choose 'do not check'.")
            show_problems(cross, "data-cross-problems")
    blocked = len(problems) + len(cross)
    if blocked:
        st.info(f"Nothing is stored while there are problems ({blocked} listed above).")
    order = golden_now + [ds for ds in valid if ds not in golden_now]  # golden sets first
    if st.button(f"Store {len(order)} file{'s' if len(order) != 1 else ''}" if order else "Store", type="primary",
                 disabled=bool(blocked) or not order, key="data-save"):
        saved, golden_ids, output_ids = [], [], []
        for ds in order:
            result = store().save_dataset(ds)
            for ids, holds in ((golden_ids, ds.golden), (output_ids, ds.outputs)):  # a file may hold both
                if holds:
                    ids.append(result.dataset_id)
            saved.append({"file": ds.source, "dataset": result.dataset_id,
                          "result": "stored" if result.created else "already stored (same content): not stored again"
                          + (f"; latency, tokens and cost filled in for {result.filled} answer"
                             f"{'s' if result.filled != 1 else ''} stored before they were kept" if result.filled
                             else "")})
        st.session_state["data-saved"] = saved
        if golden_ids:  # Evaluate opens on what was just stored (stored before or not), not on the newest datasets
            st.session_state["eval-next"] = (golden_ids[0], output_ids)  # a plain key: widget keys of other pages are dropped
    if saved := st.session_state.get("data-saved"):
        new = sum(s["result"] == "stored" for s in saved)
        (st.success if new else st.info)(
            f"{new} new dataset{'s' if new != 1 else ''} stored, {len(saved) - new} already stored before. "
            "Evaluate them on the Evaluate screen.")
        st.dataframe(pd.DataFrame(saved), hide_index=True, width="stretch")
        st.page_link("pages/evaluate.py", label="Go to Evaluate", icon=":material/play_circle:")
else:
    st.session_state.pop("data-saved", None)
    st.info("Upload one or more files above: a golden set and the answers of each RAG method (one file may hold "
            "several methods, in a method column).")

st.subheader("Stored datasets")
stored = qd.view(store())["datasets"]
if stored.empty:
    st.info("No dataset stored yet: upload a golden set and RAG outputs above.")
else:
    st.dataframe(stored, hide_index=True, width="stretch",
                 column_config={"added": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm")})
    st.caption(f"{len(stored)} dataset{'s' if len(stored) != 1 else ''}" +
               (f" (the newest {qd.MAX_ROWS})" if len(stored) >= qd.MAX_ROWS else "") +
               ". The same content is stored once: uploading it again finds the stored copy.")


def labels_import() -> None:
    """Import a file of human ratings into a run: every problem listed, or a one-line summary."""
    st.subheader("Import human labels")
    st.caption("People's ratings (numbers) or labels (texts) of a run's answers: a CSV, JSON, JSONL or Parquet file "
               "with question_id, method, annotator and one column per rated dimension (e.g. faithfulness, "
               "correctness), optionally <dimension>_reason; or an InspectorRAGet experiment file as it is. They "
               "are stored beside the judge's scores, never replacing them, and compared with the matching metrics "
               "on **Error analysis**.")
    runs = qd.recent_runs(store())
    if runs.empty:
        st.info("No run yet: evaluate the rated answers first (store them above, then run them on **Evaluate**).")
        return
    names = dict(zip(runs["run_id"], runs["name"]))
    options = list(names)
    picked = st.session_state.get("run_id")  # the run in view in the sidebar
    run_id = st.selectbox("Run whose answers were rated", options, key="labels-run",
                          index=options.index(picked) if picked in names else 0,
                          format_func=lambda r: f"{names[r]} ({r})")
    upload = st.file_uploader("Labels file", type=["csv", "tsv", "json", "jsonl", "ndjson", "parquet", "pq"],
                              key="labels-upload")
    st.caption(upload_limit("python -m evaluators labels import FILE --run RUN_ID"))
    encoding = st.selectbox("Encoding", ENCODINGS, key="labels-encoding", accept_new_options=True, help=ENCODING_HELP)
    if not st.button("Import labels", type="primary", disabled=upload is None, key="labels-import"):
        return
    try:
        result = ratings.import_file(store(), run_id, upload.getvalue(), name=upload.name, encoding=encoding)
    except LoadError as exc:
        st.error(f"{len(exc.problems)} problem{'s' if len(exc.problems) != 1 else ''} in this file: nothing was "
                 "stored. Fix the file and upload it again.")
        show_problems(exc.problems, "labels-problems")
    except ValueError as exc:  # the run is gone
        st.error(md_escape(str(exc)))
    else:
        (st.info if result.already_imported else st.success)(md_escape(result.summary()))


labels_import()
