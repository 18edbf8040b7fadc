"""loaders.column_names: a file's own column names (what the Data screen's mapping offers), read from real files of
each format, and the same problems as `load` for a file that cannot be read."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evaluators import loaders
from evaluators.records import LoadError

ROWS = [{"Query_ID": "q1", "Frage": "Who?", "Antwort": "Craik", "extra": 1},
        {"Query_ID": "q2", "Frage": "Where?", "Antwort": "Cornwall", "notes": "late key"}]
COLUMNS = ["Query_ID", "Frage", "Antwort", "extra", "notes"]  # as written, in first-seen order


def write(path, rows=ROWS):
    if path.suffix == ".csv":
        lines = [",".join(COLUMNS)] + [",".join(str(row.get(c, "")) for c in COLUMNS) for row in rows]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    elif path.suffix == ".json":
        path.write_text(json.dumps({"data": rows}), encoding="utf-8")
    elif path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    else:
        pq.write_table(pa.Table.from_pylist([{c: row.get(c) for c in COLUMNS} for row in rows]), path)
    return path


@pytest.mark.parametrize("suffix", [".csv", ".json", ".jsonl", ".parquet"])
def test_the_files_own_column_names_in_each_format(tmp_path, suffix):
    path = write(tmp_path / f"golden{suffix}")
    assert loaders.column_names(path) == COLUMNS
    assert loaders.column_names(path.read_bytes(), name=f"upload{suffix}") == COLUMNS
    assert loaders.column_names(path.read_bytes(), name="upload") == COLUMNS  # the format sniffed


def test_a_broken_row_does_not_hide_the_columns(tmp_path):
    path = tmp_path / "outputs.csv"
    path.write_text("question_id,answer,contexts\nq1,Craik,[]\nq2,too,many,fields\n", encoding="utf-8")
    assert loaders.column_names(path) == ["question_id", "answer", "contexts"]


def test_the_columns_of_another_encoding(tmp_path):
    path = tmp_path / "export.csv"
    path.write_bytes("Frage;Antwort\nWer schrieb es?;Dinah Craik – 1856\n".encode("cp1252"))
    assert loaders.column_names(path, encoding="cp1252") == ["Frage", "Antwort"]


@pytest.mark.parametrize("name, content", [
    ("empty.csv", b"\n\n"),
    ("header_only.csv", b"question,answer\n"),
    ("cp1252.csv", "question,answer\nWho?,Dinah Craik – 1856\n".encode("cp1252")),
    ("broken.json", b'[{"question": "Who?",]'),
    ("workbook.xlsx", b"PK\x03\x04 not a table"),
    ("missing.csv", None),
])
def test_an_unreadable_file_gives_the_problem_load_gives(tmp_path, name, content):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(LoadError) as from_load:
        loaders.load(path)
    with pytest.raises(LoadError) as from_columns:
        loaders.column_names(path)
    assert from_columns.value.problems == from_load.value.problems
    assert [p.file for p in from_columns.value.problems] == [name]
