"""Limits with clear messages (issue 12): a text over MAX_CELL_CHARS in any format and any text field, and a
file too big for the machine's memory, refused up front; each names file, row and field, and nothing is stored."""
import csv
import json
import os
import re
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evaluators.loaders import MAX_CELL_CHARS, formats, load
from evaluators.records import LoadError
from tests.helpers.cli import cli

FORMATS = ("csv", "json", "jsonl", "parquet")
HUGE = "x" * (MAX_CELL_CHARS + 1)


def write(path: Path, records: list[dict]) -> Path:
    """The records in the format of the path's extension; a CSV holds lists as JSON text."""
    fmt = path.suffix[1:]
    if fmt == "csv":
        with path.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=list(records[0]))
            writer.writeheader()
            writer.writerows({k: json.dumps(v) if isinstance(v, list) else v for k, v in r.items()} for r in records)
    elif fmt == "json":
        path.write_text(json.dumps(records), encoding="utf-8")
    elif fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    else:
        pq.write_table(pa.Table.from_pylist(records), path)
    return path


def golden_rows(n: int = 3) -> list[dict]:
    return [{"question_id": f"q{i}", "question": f"Question {i}?", "reference": f"Reference {i}.",
             "question_type": "Fact Retrieval"} for i in range(1, n + 1)]


def output_rows(n: int = 3, chunks=("first chunk", "second chunk")) -> list[dict]:
    return [{"question_id": f"q{i}", "method": "local_search", "answer": f"Answer {i}.", "contexts": list(chunks)}
            for i in range(1, n + 1)]


def refusal(path: Path, **options) -> LoadError:
    with pytest.raises(LoadError) as info:
        load(path, **options)
    return info.value


# -- a text over MAX_CELL_CHARS ---------------------------------------------------------------------

def chunk_objects(rows: list[dict]) -> None:
    for row in rows:
        row["contexts"] = [{"doc_id": "d1", "text": "ok"}, {"doc_id": "d2", "text": "ok"}]
    rows[1]["contexts"][1]["text"] = HUGE


# (role, the field's column, how row 2 gets the huge text, the words that say which part of the cell)
CELLS = [
    ("golden", "question", lambda rows: rows[1].update(question=HUGE), []),
    ("golden", "reference", lambda rows: rows[1].update(reference=HUGE), []),
    ("golden", "question_type", lambda rows: rows[1].update(question_type=HUGE), []),
    ("outputs", "answer", lambda rows: rows[1].update(answer=HUGE), []),
    ("outputs", "method", lambda rows: rows[1].update(method=HUGE), []),
    ("outputs", "contexts", lambda rows: rows[1].update(contexts=["ok", HUGE, "ok"]), ["chunk 2"]),
    ("outputs", "contexts", chunk_objects, ["chunk 2"]),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("role, field, put, where", CELLS,
                         ids=["question", "reference", "question_type", "answer", "method", "chunk", "chunk_object"])
def test_a_text_over_the_limit_is_refused_with_file_row_and_field(tmp_path, fmt, role, field, put, where):
    rows = golden_rows() if role == "golden" else output_rows()
    put(rows)
    path = write(tmp_path / f"{role}.{fmt}", rows)
    error = refusal(path, role=role)
    assert [(p.file, p.row, p.field) for p in error.problems] == [(path.name, 2, field)]
    message = error.problems[0].message
    assert f"over the limit of {MAX_CELL_CHARS:,}" in message and "characters" in message
    if fmt == "csv":  # a CSV holds the whole list in one cell: the cell is over the limit
        assert re.search(r"this cell holds [\d,]+ characters", message)
    else:
        assert all(w in message for w in where) and f"{MAX_CELL_CHARS + 1:,} characters" in message
    assert f"{path.name}, row 2, field '{field}'" in str(error)


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_limit_counts_characters_not_utf8_bytes(tmp_path, fmt):
    """MAX_CELL_CHARS characters of a two-byte letter (2 MB in UTF-8) are read; one more is refused."""
    at_limit = output_rows()
    at_limit[1]["answer"] = "é" * MAX_CELL_CHARS
    ds = load(write(tmp_path / f"at_limit.{fmt}", at_limit), role="outputs")
    assert len(ds.outputs[1].answer) == MAX_CELL_CHARS and len(ds.outputs[1].answer.encode()) == 2 * MAX_CELL_CHARS
    over = output_rows()
    over[1]["answer"] = "é" * (MAX_CELL_CHARS + 1)
    error = refusal(write(tmp_path / f"over.{fmt}", over), role="outputs")
    assert [(p.row, p.field) for p in error.problems] == [(2, "answer")]


def test_every_row_of_a_parquet_file_is_read_batch_by_batch_with_its_row_number(tmp_path):
    """Rows are read in batches of formats._PARQUET_BATCH across several row groups: numbers run on across them."""
    rows = output_rows(5_000)
    rows[4_499]["answer"] = HUGE
    path = tmp_path / "outputs.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=1_500)
    error = refusal(path, role="outputs")
    assert [(p.row, p.field) for p in error.problems] == [(4_500, "answer")]
    rows[4_499]["answer"] = "Answer 4500."
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=1_500)
    ds = load(path, role="outputs")
    assert [o.answer for o in ds.outputs] == [r["answer"] for r in rows]
    assert ds.output_rows == tuple(range(1, 5_001))


def test_a_parquet_file_with_no_rows_is_refused(tmp_path):
    path = tmp_path / "empty.parquet"
    pq.write_table(pa.Table.from_pylist(output_rows()).slice(0, 0), path)
    error = refusal(path)
    assert [(p.file, p.row, p.field) for p in error.problems] == [("empty.parquet", None, None)]
    assert "holds no records" in error.problems[0].message


# -- a file too big for the machine's memory, refused before its rows are read -------------------------

def big_outputs(n: int) -> list[dict]:
    return output_rows(n, chunks=("c" * 400, "d" * 400, "e" * 400))


def parquet_need(path: Path) -> int:
    """The memory a run takes for the file by formats.ROW_MEMORY and TEXT_MEMORY, its data counted as read."""
    meta = pq.ParquetFile(path).metadata
    return meta.num_rows * formats.ROW_MEMORY + pq.read_table(path).nbytes * formats.TEXT_MEMORY


def set_budget(monkeypatch, budget: float) -> None:
    monkeypatch.setenv(formats.MEMORY_ENV, str(budget / 2**20))


def test_a_parquet_file_over_the_memory_bound_is_refused_before_its_rows_are_read(tmp_path, monkeypatch):
    rows = big_outputs(3_000)
    rows[4]["answer"] = "=1+1"  # a bad cell: reported only if the rows were read
    path = write(tmp_path / "outputs.parquet", rows)
    need = parquet_need(path)
    set_budget(monkeypatch, need * 0.9)
    error = refusal(path)
    assert [(p.file, p.row, p.field) for p in error.problems] == [("outputs.parquet", None, None)]
    message = error.problems[0].message
    for words in ("too big for this machine", "its 3,000 rows", "of data when read", formats._size(need),
                  f"over the bound of {formats._size(int(need * 0.9))}", formats.MEMORY_ENV, "Split it by question",
                  "evaluate each as its own run"):
        assert words in message, words
    set_budget(monkeypatch, need * 1.1)
    assert [(p.row, p.field) for p in refusal(path).problems] == [(5, "answer")]  # now the rows are read


def test_texts_parquet_stores_once_count_once_per_row(tmp_path, monkeypatch):
    """Parquet stores a text repeated down a column once (dictionary encoding), Python holds it once per row."""
    path = write(tmp_path / "outputs.parquet", big_outputs(3_000))
    meta = pq.ParquetFile(path).metadata
    stored = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    assert pq.read_table(path).nbytes > 10 * stored  # the premise: the chunks repeat in every row
    set_budget(monkeypatch, 3_000 * formats.ROW_MEMORY + 2 * stored * formats.TEXT_MEMORY)
    assert "too big for this machine" in refusal(path).problems[0].message


def test_the_parts_the_message_advises_fit_the_bound(tmp_path, monkeypatch):
    rows = big_outputs(3_000)
    path = write(tmp_path / "outputs.parquet", rows)
    set_budget(monkeypatch, parquet_need(path) / 2.5)
    message = refusal(path).problems[0].message
    part = int(re.search(r"files of at most ([\d,]+) rows", message).group(1).replace(",", ""))
    assert 1_000 <= part <= 1_200
    first = write(tmp_path / "part1.parquet", rows[:part])
    assert len(load(first).outputs) == part


@pytest.mark.parametrize("fmt", ["csv", "json", "jsonl"])
def test_a_text_file_over_the_memory_bound_is_refused_by_its_size(tmp_path, monkeypatch, fmt):
    rows = big_outputs(2_000)
    rows[4]["answer"] = "=1+1"
    path = write(tmp_path / f"outputs.{fmt}", rows)
    size = path.stat().st_size
    set_budget(monkeypatch, size * formats.TEXT_MEMORY * 0.9)
    error = refusal(path)
    assert [(p.file, p.row, p.field) for p in error.problems] == [(path.name, None, None)]
    message = error.problems[0].message
    assert f"its {formats._size(size)} would take about {formats._size(size * formats.TEXT_MEMORY)}" in message
    assert "Split it by question into files of at most" in message
    set_budget(monkeypatch, size * formats.TEXT_MEMORY * 1.1)
    assert [(p.row, p.field) for p in refusal(path).problems] == [(5, "answer")]


def test_an_upload_meets_the_same_bound(tmp_path, monkeypatch):
    path = write(tmp_path / "outputs.parquet", big_outputs(1_000))
    set_budget(monkeypatch, parquet_need(path) * 0.5)
    with pytest.raises(LoadError) as info:
        load(path.read_bytes(), name="upload.parquet")
    assert "upload.parquet: the file is too big for this machine" in str(info.value)


def test_the_bound_defaults_to_half_the_memory_and_a_bad_setting_is_named(monkeypatch):
    monkeypatch.delenv(formats.MEMORY_ENV, raising=False)
    assert formats.memory_budget() <= os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    monkeypatch.setenv(formats.MEMORY_ENV, "lots")
    with pytest.raises(ValueError, match="RAGSCOPE_INPUT_MEMORY_MB must be a number of MB, not 'lots'"):
        formats.memory_budget()


# -- through the command line: exit code 2, nothing stored ---------------------------------------------

def counts(db: Path) -> dict:
    with duckdb.connect(str(db), read_only=True) as con:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in ("datasets", "golden_items", "rag_outputs", "runs")}


def test_the_cli_refuses_with_exit_code_2_and_stores_nothing(tmp_path):
    db = tmp_path / "ragscope.duckdb"
    golden = write(tmp_path / "golden.csv", golden_rows())
    good = write(tmp_path / "good.jsonl", output_rows())
    done = cli("run", "--golden", str(golden), "--outputs", str(good), "--metrics", "exact_match", "--db", str(db))
    assert done.returncode == 0, done.stderr
    before = counts(db)
    assert before["datasets"] == 2 and before["rag_outputs"] == 3

    rows = output_rows()
    rows[1]["contexts"] = ["ok", HUGE]
    huge_chunk = write(tmp_path / "huge_chunk.parquet", rows)
    done = cli("run", "--golden", str(golden), "--outputs", str(huge_chunk), "--db", str(db))
    assert done.returncode == 2
    assert "huge_chunk.parquet, row 2, field 'contexts': chunk 2: this cell holds" in done.stderr
    assert counts(db) == before

    big = write(tmp_path / "big.parquet", big_outputs(3))
    done = cli("run", "--golden", str(golden), "--outputs", str(big), "--db", str(db),
               env={formats.MEMORY_ENV: str(parquet_need(big) / 2 / 2**20)})
    assert done.returncode == 2
    assert "big.parquet: the file is too big for this machine: its 3 rows" in done.stderr
    assert counts(db) == before
