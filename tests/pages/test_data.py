"""The Data screen (AppTest on a copy of the demo database; its table is tested in tests/queries/test_datasets.py):
the stored list shown, uploads read and previewed, problems listed with file, row and field, the column-mapping
step, storing once (content hash), human labels imported."""
import json
import re
from pathlib import Path

from evaluators.queries import datasets as qd
from evaluators.store import open_store
from tests.helpers.screens import assert_shown
from tests.helpers import ROOT

DEMO = ROOT / "data" / "demo"
MALFORMED = ROOT / "tests" / "malformed"


def _upload(at, *files):
    at.file_uploader(key="data-uploads").set_value([(name, data, "application/octet-stream") for name, data in files])
    at.run()
    assert not at.exception, at.exception
    return at


def _file(path: Path):
    return path.name, path.read_bytes()


def _stored(at):
    return at.dataframe[-1].value.set_index("name")


def _captions(at):
    return [c.value for c in at.caption]


def _problems(at) -> list:
    """The problem lists shown (st.table: each message whole and wrapped), one DataFrame each, as the loader wrote
    them: st.table reads cells as markdown, so the page escapes them; `row` back to a number (NA: none)."""
    import pandas as pd

    lists = []
    for table in at.table:
        frame = table.value
        if list(frame.columns) != ["file", "row", "field", "message"]:
            continue
        frame = frame.map(lambda v: re.sub(r"\\(.)", r"\1", str(v)))
        frame["row"] = pd.array([int(r) if r else None for r in frame["row"]], dtype="Int64")
        lists.append(frame)
    return lists


def test_the_screen_shows_the_stored_datasets_of_the_view(app_at):
    at = app_at("pages/data.py")
    assert at.title[0].value == "Data"
    assert any("Upload one or more files" in i.value for i in at.info)
    expected = qd.view(open_store(app_at.db))["datasets"]  # its numbers: tests/queries/test_datasets.py
    assert_shown(at.dataframe[-1].value, expected)
    assert any(c.value.startswith(f"{len(expected)} datasets. The same content is stored once") for c in at.caption)


def test_uploading_the_demo_files_previews_them_and_finds_them_already_stored(app_at):
    at = _upload(app_at("pages/data.py"), _file(DEMO / "novel_44557_golden.csv"),
                 _file(DEMO / "novel_44557_outputs.jsonl"))
    captions = _captions(at)
    assert any(c.startswith("Format: csv (detected)") and "read as golden set, 103 questions" in c for c in captions)
    assert any(c.startswith("Format: jsonl (detected)") and "read as RAG outputs, 206 answers" in c for c in captions)
    assert not at.error
    frames = [d.value for d in at.dataframe]
    golden = next(f for f in frames if "reference" in f.columns)
    assert len(golden) == 50 and golden.iloc[0]["question_id"] == "Novel-73586ddc"
    assert golden.iloc[0]["reference"] == "Cornish heath" and golden.iloc[0]["question_type"] == "Fact Retrieval"
    methods = next(f for f in frames if list(f.columns) == ["method", "answers"]).set_index("method")["answers"]
    assert methods.to_dict() == {"basic_search": 103, "local_search": 103}
    answers = next(f for f in frames if "answer" in f.columns)
    assert answers.iloc[0]["question_id"] == "Novel-73586ddc" and answers.iloc[0]["chunks"] > 0
    assert at.selectbox(key="data-check").value == ("upload", 0)  # the golden set uploaded with them

    save = at.button(key="data-save")
    assert save.label == "Store 2 files" and not save.disabled
    save.click()
    at.run()
    saved = next(d.value for d in at.dataframe if "result" in d.value.columns)
    assert list(saved["result"]) == ["already stored (same content): not stored again"] * 2
    assert any("0 new datasets stored, 2 already stored" in i.value for i in at.info)
    assert len(_stored(at)) == 2
    # Evaluate opens on what was just stored, even though newer datasets exist
    assert at.session_state["eval-next"] == (saved["dataset"].iloc[0], [saved["dataset"].iloc[1]])


def test_a_new_outputs_file_takes_its_method_from_its_name_and_is_stored_once(app_at):
    rows = [{"question_id": "Novel-73586ddc", "answer": "Cornish heath.", "contexts": ["Erica vagans, Cornish heath."]},
            {"question_id": "Novel-74440a6a", "answer": "Baron Von Pawel-Rammingen.", "contexts": []}]
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    at = _upload(app_at("pages/data.py"), ("my_rag.jsonl", data))
    method = at.text_input(key="data-my_rag.jsonl-method")
    assert method.value == "my_rag"
    method.input("graph_rag")
    at.run()
    answers = next(d.value for d in at.dataframe if "answer" in d.value.columns)
    assert list(answers["method"]) == ["graph_rag", "graph_rag"] and list(answers["chunks"]) == [1, 0]
    check = at.selectbox(key="data-check")  # checked against the stored golden set that holds its questions
    assert check.value[0] == "stored" and "holds 2 of these questions" in check.format_func(check.value)
    assert not at.error

    at.button(key="data-save").click()
    at.run()
    assert any("1 new dataset stored" in s.value for s in at.success)
    stored = _stored(at).loc["my_rag.jsonl"]
    assert (stored["answers"], stored["methods"], stored["format"], stored["runs"]) == (2, "graph_rag", "jsonl", 0)
    at.button(key="data-save").click()
    at.run()
    assert any("0 new datasets stored, 1 already stored" in i.value for i in at.info)
    assert list(_stored(at).index).count("my_rag.jsonl") == 1


def test_a_malformed_file_lists_every_problem_with_file_row_and_field_and_nothing_is_stored(app_at):
    at = _upload(app_at("pages/data.py"), _file(MALFORMED / "empty_question.csv"),
                 _file(MALFORMED / "duplicate_ids.csv"))
    assert len(at.error) == 2 and "nothing is stored" in at.error[0].value
    problems = _problems(at)
    assert len(problems) == 2
    empty, duplicate = (p.iloc[0] for p in problems)
    assert (empty["file"], empty["row"], empty["field"]) == ("empty_question.csv", 2, "question")
    assert "question is empty" in empty["message"]
    assert (duplicate["file"], duplicate["row"], duplicate["field"]) == ("duplicate_ids.csv", 3, "id")
    assert "'q1' repeats row 1" in duplicate["message"]
    assert at.button(key="data-save").disabled
    assert any("Nothing is stored while there are problems (2" in i.value for i in at.info)
    assert len(_stored(at)) == 2


def test_deeply_nested_json_is_listed_as_a_problem_not_a_traceback(app_at):
    at = _upload(app_at("pages/data.py"), _file(MALFORMED / "deep_brackets.json"), _file(MALFORMED / "deep_nesting.jsonl"),
                 _file(MALFORMED / "deep_contexts.csv"))
    assert len(at.error) == 3 and all("nothing is stored" in e.value for e in at.error)
    problems = [p.iloc[0] for p in _problems(at)]
    assert [(p["file"], p["row"], p["field"]) for p in problems] == [
        ("deep_brackets.json", 1, ""), ("deep_nesting.jsonl", 2, "contexts"), ("deep_contexts.csv", 1, "contexts")]
    assert all("nested more than 64 levels deep" in p["message"] for p in problems)
    assert at.button(key="data-save").disabled


def test_files_in_other_encodings_are_read_with_the_encoding_their_problem_advises(app_at):
    import re

    at = _upload(app_at("pages/data.py"), _file(MALFORMED / "cp1252.csv"), _file(MALFORMED / "utf16.csv"))
    messages = [p.iloc[0]["message"] for p in _problems(at)]
    advised = [re.search(r"Data screen: set Encoding to (\S+?)\)", m).group(1) for m in messages]
    assert advised == ["cp1252", "utf-16"]
    for name, encoding in zip(("cp1252.csv", "utf16.csv"), advised):
        at.selectbox(key=f"data-{name}-encoding").set_value(encoding)
    at.run()
    assert not at.exception and not at.error
    golden = [d.value for d in at.dataframe if "reference" in d.value.columns]
    assert golden[0].iloc[0]["question"] == "Where is the café?" and golden[1].iloc[0]["reference"] == "In Cornwall"


def test_unrecognised_columns_are_mapped_and_the_file_is_read_again(app_at):
    at = _upload(app_at("pages/data.py"), _file(MALFORMED / "german_headers.csv"))
    assert any("Map the file's columns" in w.value for w in at.warning)
    problems = _problems(at)[0]
    assert set(problems["field"]) == {"reference", "answer"} and problems["row"].isna().all()
    assert "Columns found: Frage, Antwort_Text" in problems.iloc[0]["message"]
    reference = at.selectbox(key="data-german_headers.csv-map-reference")
    assert "required, not found" in reference.label
    assert {"Frage", "Antwort_Text"} <= set(reference.options)
    assert at.button(key="data-save").disabled

    at.selectbox(key="data-german_headers.csv-map-question").set_value("Frage")
    reference.set_value("Antwort_Text")
    at.run()
    assert not at.error and not at.warning
    golden = next(d.value for d in at.dataframe if "reference" in d.value.columns)
    assert golden.iloc[0]["question"] == "Was ist die Hauptstadt von Cornwall?"
    assert golden.iloc[0]["reference"] == "Truro"
    assert any("read as golden set, 1 questions" in c for c in _captions(at))
    at.button(key="data-save").click()
    at.run()
    assert _stored(at).loc["german_headers.csv", "golden questions"] == 1


def test_answers_to_questions_the_golden_set_lacks_block_storing_until_unchecked(app_at):
    rows = [{"question_id": "Novel-73586ddc", "method": "m", "answer": "Cornish heath.", "contexts": []},
            {"question_id": "not-a-demo-question", "method": "m", "answer": "Truro.", "contexts": []}]
    at = _upload(app_at("pages/data.py"), ("answers.jsonl", "".join(json.dumps(r) + "\n" for r in rows).encode()))
    problems = _problems(at)[0]
    assert len(problems) == 1
    problem = problems.iloc[0]
    assert (problem["file"], problem["row"], problem["field"]) == ("answers.jsonl", 2, "question_id")
    assert "'not-a-demo-question'" in problem["message"] and "not in the golden set" in problem["message"]
    assert at.button(key="data-save").disabled

    at.selectbox(key="data-check").set_value(("none", None))
    at.run()
    assert not at.error and not at.button(key="data-save").disabled


FOREIGN = ROOT / "tests" / "fixtures"  # excerpts of haystack's and InspectorRAGet's files, with LICENSE and SOURCE.md
HAYSTACK = FOREIGN / "aragog_haystack" / "detailed_all-MiniLM-L6-v2__top_k1__chunk_size64.csv"
CLAPNQ = FOREIGN / "inspectorraget_clapnq" / "clapnq_excerpt.json"


def test_files_of_haystack_and_inspectorraget_are_read_as_they_are_and_stored(app_at):
    at = _upload(app_at("pages/data.py"), _file(HAYSTACK), _file(CLAPNQ))
    assert not at.error
    captions = _captions(at)
    assert any(c.startswith("Format: csv (detected)") and "golden set, 5 questions and RAG outputs, 5 answers" in c
               for c in captions)
    assert any(c.startswith("Format: json (detected)") and "golden set, 3 questions and RAG outputs, 9 answers" in c
               for c in captions)
    assert at.text_input(key=f"data-{HAYSTACK.name}-method").value == HAYSTACK.stem  # no method column: the name
    methods = next(d.value for d in at.dataframe if list(d.value.columns) == ["method", "answers"])
    assert methods.set_index("method")["answers"].to_dict() == {"GPT-3.5 (Turbo)": 3, "Llama (13b-chat)": 3,
                                                                 "Mistral": 3}
    answers = [d.value for d in at.dataframe if "first chunk" in d.value.columns]
    assert list(answers[0]["chunks"]) == [1] * 5 and answers[0].iloc[0]["first chunk"].startswith("steps in our")

    at.text_input(key=f"data-{HAYSTACK.name}-method").input("minilm_top1_chunk64")
    at.run()
    at.button(key="data-save").click()
    at.run()
    assert any("2 new datasets stored" in s.value for s in at.success)
    stored = _stored(at)
    assert stored.loc[HAYSTACK.name, "methods"] == "minilm_top1_chunk64"
    assert stored.loc[CLAPNQ.name, "methods"] == "GPT-3.5 (Turbo), Llama (13b-chat), Mistral"
    assert stored.loc[CLAPNQ.name, "golden questions"] == 3


def test_a_bad_python_list_of_contexts_is_listed_with_its_row(app_at):
    text = HAYSTACK.read_text(encoding="utf-8").replace("['steps in our", "['steps in our', 42, '", 1)
    at = _upload(app_at("pages/data.py"), ("detailed_bad.csv", text.encode("utf-8")))
    problems = _problems(at)[0]
    assert len(problems) == 1
    problem = problems.iloc[0]
    assert (problem["file"], problem["row"], problem["field"]) == ("detailed_bad.csv", 1, "contexts")
    assert "chunk 2 is a number (42)" in problem["message"]
    assert at.button(key="data-save").disabled


def test_importing_human_labels_lists_problems_then_stores_once(tmp_path, app_on):
    from evaluators.store import close_store
    from tests.helpers.tiny_run import HEADER, tiny_run
    from tests.helpers.screens import assert_page_is_inert

    db = tmp_path / "labels.duckdb"
    run_id = tiny_run(db, tmp_path)
    close_store(db)
    at = app_on(db, "pages/data.py")
    assert "Import human labels" in [s.value for s in at.subheader]
    assert at.selectbox(key="labels-run").value == run_id
    assert at.button(key="labels-import").disabled  # nothing uploaded yet

    evil = "<b>bold</b> [x](javascript:alert(1))"
    bad = (HEADER + f"q1,local,ann,4,{evil},correct\nq9,local,ann,3,,wrong\n").encode()
    at.file_uploader(key="labels-upload").set_value(("ratings.csv", bad, "text/csv")).run()
    at.button(key="labels-import").click().run()
    assert not at.exception, at.exception
    assert at.error and at.error[0].value.startswith("1 problem in this file: nothing was stored")
    problems = _problems(at)[0]
    assert list(zip(problems["file"], problems["row"], problems["field"])) == [("ratings.csv", 2, "question_id")]
    count = lambda: open_store(db).cursor().execute("SELECT count(*) FROM annotations").fetchall()[0][0]  # noqa: E731
    assert count() == 0

    good = (HEADER.replace("correctness", evil) + f"q1,local,ann,4,{evil},correct\nq2,basic,bob,2,,wrong\n").encode()
    at.file_uploader(key="labels-upload").set_value(("ratings.csv", good, "text/csv")).run()
    at.button(key="labels-import").click().run()
    assert at.success and "imported 4 ratings of 2 dimensions" in at.success[0].value
    assert_page_is_inert(at)  # the dimension named like markup is escaped in the summary
    assert count() == 4
    at.button(key="labels-import").click().run()
    assert at.info and "same content" in at.info[-1].value and "nothing stored again" in at.info[-1].value
    assert count() == 4


def test_labels_in_another_encoding_are_imported_as_advised_and_skipped_ratings_are_counted(tmp_path, app_on):
    import re

    from evaluators.store import close_store
    from tests.helpers.tiny_run import GOOD_ROWS, HEADER, tiny_run
    from ui.common import md_escape

    db = tmp_path / "labels.duckdb"
    run_id = tiny_run(db, tmp_path)
    close_store(db)
    at = app_on(db, "pages/data.py")
    data = (HEADER + "\n".join(GOOD_ROWS) + "\nq3,local,ann,nan,déjà vu,\n").encode("cp1252")
    at.file_uploader(key="labels-upload").set_value(("ratings.csv", data, "text/csv")).run()
    at.button(key="labels-import").click().run()
    assert not at.exception and at.error
    message = _problems(at)[0].iloc[0]["message"]
    advised = re.search(r"Data screen: set Encoding to (\S+?)\)", message).group(1)
    at.selectbox(key="labels-encoding").set_value(advised)
    at.button(key="labels-import").click().run()
    assert not at.exception and not at.error
    assert at.success and at.success[0].value == md_escape(  # shown as written, never as markup
        "imported 6 ratings of 2 dimensions (correctness, faithfulness) by 2 annotators from ratings.csv into run "
        f"{run_id}; skipped 2 ratings with no value: 1 NaN (row 4), 1 blank (row 4)")


def test_the_mapping_reports_missing_only_the_columns_that_are_missing(app_at):
    """A golden set whose question column has another name: question_id and reference are recognised (and said so),
    only the question is "required, not found"."""
    text = "question_id,Frage,reference\nq1,Was ist die Hauptstadt von Cornwall?,Truro\n"
    at = _upload(app_at("pages/data.py"), ("golden_frage.csv", text.encode()))
    (problems,) = _problems(at)
    assert list(problems["field"]) == ["question"]
    field = lambda name: at.selectbox(key=f"data-golden_frage.csv-map-{name}")  # noqa: E731
    assert "required, not found" in field("question").label
    assert field("question").options[0] == "(recognised automatically): not found"
    for name in ("question_id", "reference"):
        assert "not found" not in field(name).label
        assert field(name).options[0] == f"(recognised automatically): {name}"  # the file's column it is read from
    field("question").set_value("Frage")
    at.run()
    assert not at.error and not _problems(at)
    assert any("read as golden set, 1 questions" in c for c in _captions(at))


def test_problem_messages_are_shown_whole_and_uploaded_text_in_them_stays_text(app_at):
    """Each message in full (the loader's words, as the CLI prints them), in a table whose cells are markdown: the
    file's text quoted in a message (a link, emphasis) is escaped, shown as written."""
    from ui.common import md_escape

    qid = "[x](javascript:alert(1))_**bold**_" + "long-" * 40
    rows = [{"question_id": "Novel-73586ddc", "method": "m", "answer": "Cornish heath.", "contexts": []},
            {"question_id": qid, "method": "m", "answer": "Truro.", "contexts": []}]
    at = _upload(app_at("pages/data.py"), ("answers.jsonl", "".join(json.dumps(r) + "\n" for r in rows).encode()))
    (table,) = [t.value for t in at.table]
    raw = table.iloc[0]["message"]
    assert f"'{md_escape(qid)}'" in raw and "[x](" not in raw and "**bold**" not in raw  # escaped markdown
    (problems,) = _problems(at)
    message = problems.iloc[0]["message"]
    assert f"'{qid}'" in message and len(message) > 250  # the whole message, the id quoted in full


def test_a_qrels_file_gives_a_golden_set_its_relevant_documents_and_a_bad_one_is_listed(app_at):
    rows = [{"question_id": "g1", "question": "Who wrote Hamlet?", "reference": "Shakespeare."},
            {"question_id": "g2", "question": "What is the capital of France?", "reference": "Paris."}]
    golden = ("qrels_golden.jsonl", "".join(json.dumps(r) + "\n" for r in rows).encode())
    at = _upload(app_at("pages/data.py"), golden)
    qrels = at.file_uploader(key="data-qrels_golden.jsonl-qrels")
    qrels.set_value([("my.qrels.tsv", b"query-id\tcorpus-id\tscore\ng1\tdoc-7\t2\ng1\tdoc-9\t1\n",
                      "text/tab-separated-values")])
    at.run()
    assert not at.exception and not at.error
    preview = next(d.value for d in at.dataframe if "reference" in d.value.columns).set_index("question_id")
    assert preview["relevant documents"].to_dict() == {"g1": 2, "g2": 0}
    at.button(key="data-save").click()
    at.run()
    assert any("1 new dataset stored" in s.value for s in at.success)
    store = open_store(app_at.db)
    dataset = store.cursor().execute("SELECT dataset_id FROM datasets WHERE name = 'qrels_golden.jsonl'").fetchone()[0]
    items = {g.question_id: dict(g.relevant_ids) for g in store.golden_items(dataset)}
    assert items == {"g1": {"doc-7": 2.0, "doc-9": 1.0}, "g2": {}}

    # a query id the golden set does not hold: listed with the qrels file and its field, nothing stored
    at.file_uploader(key="data-qrels_golden.jsonl-qrels").set_value(
        [("bad.tsv", b"query-id\tcorpus-id\tscore\ng3\tdoc-1\t1\n", "text/tab-separated-values")])
    at.run()
    problems = _problems(at)[0]
    assert problems["file"].tolist() == ["bad.tsv"] and problems["field"].tolist() == ["query-id"]
    assert "'g3'" in problems["message"].iloc[0] and at.button(key="data-save").disabled


def test_a_file_stored_before_the_usage_columns_gains_its_usage_when_stored_again(app_at):
    rows = [{"question_id": "Novel-73586ddc", "answer": "Cornish heath.", "contexts": ["Erica vagans, Cornish heath."],
             "latency_ms": 512, "input_tokens": 80, "output_tokens": 5}]
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    at = _upload(app_at("pages/data.py"), ("timed_rag.jsonl", data))
    at.button(key="data-save").click()
    at.run()
    store = open_store(app_at.db)
    store.cursor().execute("UPDATE rag_outputs SET latency_ms = NULL, input_tokens = NULL, output_tokens = NULL "
                           "WHERE method = 'timed_rag'")  # as a file stored before migration 17
    at.button(key="data-save").click()
    at.run()
    saved = next(d.value for d in at.dataframe if "result" in d.value.columns)
    assert list(saved["result"]) == ["already stored (same content): not stored again; latency, tokens and cost "
                                     "filled in for 1 answer stored before they were kept"]
    assert store.cursor().execute("SELECT latency_ms, input_tokens FROM rag_outputs WHERE method = 'timed_rag'"
                                  ).fetchall() == [(512.0, 80)]
