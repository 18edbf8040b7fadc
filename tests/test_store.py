import subprocess
import sys
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from evaluators.schema import Chunk, GoldenItem, RagOutput
from evaluators.store import SCHEMA_VERSION, Store, close_store, open_store

ROOT = Path(__file__).resolve().parent.parent


class FakeDataset:
    """The fields of loaders.Dataset the store reads; built by hand so the store is tested alone."""

    def __init__(self, content_hash="abc123", golden=(), outputs=()):
        self.source, self.format, self.columns = "mini.jsonl", "jsonl", {"question": "question"}
        self.content_hash, self.golden, self.outputs = content_hash, tuple(golden), tuple(outputs)


GOLDEN = [
    GoldenItem("q1", "Who?", "Alice", "Fact Retrieval", checks=({"type": "contains", "value": "Alice"},)),
    GoldenItem("q2", "When?", "1879"),
]
OUTPUTS = [
    RagOutput("q1", "basic", "Alice did.", (Chunk("c1", "Alice did it."), Chunk("c2", "noise"))),
    RagOutput("q2", "basic", "", ()),
]


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "t.duckdb"
    yield path
    close_store(path)


def test_migrations_run_once_and_record_the_version(db):
    store = open_store(db)
    assert store.schema_version() == SCHEMA_VERSION
    close_store(db)
    again = open_store(db)  # re-opening an up-to-date file applies nothing
    rows = again.cursor().execute("SELECT version FROM schema_version").fetchall()
    assert rows == [(v,) for v in range(1, SCHEMA_VERSION + 1)]


def test_a_newer_schema_is_refused(db):
    open_store(db).cursor().execute("INSERT INTO schema_version VALUES (99, now())")
    close_store(db)
    with pytest.raises(RuntimeError, match="schema version 99"):
        Store(db)


def test_datasets_are_deduplicated_by_content_hash(db):
    store = open_store(db)
    first = store.save_dataset(FakeDataset(golden=GOLDEN, outputs=OUTPUTS))
    second = store.save_dataset(FakeDataset(golden=GOLDEN, outputs=OUTPUTS))
    assert first.created and not second.created and first.dataset_id == second.dataset_id
    counts = store.cursor().execute(
        "SELECT (SELECT count(*) FROM datasets), (SELECT count(*) FROM golden_items), (SELECT count(*) FROM rag_outputs)"
    ).fetchall()[0]
    assert counts == (1, 2, 2)


def test_records_round_trip_through_the_store(db):
    store = open_store(db)
    ds = store.save_dataset(FakeDataset(golden=GOLDEN, outputs=OUTPUTS)).dataset_id
    assert store.golden_items(ds) == GOLDEN
    assert store.rag_outputs([ds]) == OUTPUTS


def test_tables_are_readable_by_any_duckdb_client_by_name(db):
    store = open_store(db)
    store.save_dataset(FakeDataset(golden=GOLDEN, outputs=OUTPUTS))
    close_store(db)
    con = duckdb.connect(str(db), read_only=True)
    chunks = con.execute(
        "SELECT c.chunk_id, c.text FROM (SELECT unnest(contexts) AS c FROM rag_outputs WHERE question_id = 'q1')"
    ).fetchall()
    con.close()
    assert chunks == [("c1", "Alice did it."), ("c2", "noise")]


def _scores(status="ok", value=0.5):
    return pd.DataFrame({
        "run_id": ["r"], "question_id": ["q1"], "method": ["basic"], "metric": ["m"],
        "value": pd.array([value], dtype="Float64"), "norm": pd.array([value], dtype="Float64"),
        "status": [status], "judge": ["deterministic"], "detail": [None],
    })


def test_a_rewritten_cell_replaces_the_old_row(db):
    store = open_store(db)
    store.write_scores(_scores(status="judge_error", value=None))
    assert store.finished_cells("r") == set()  # an error cell is still to do
    store.write_scores(_scores(status="ok", value=0.75))
    rows = store.cursor().execute("SELECT value, status FROM scores").fetchall()
    assert rows == [(0.75, "ok")]
    assert store.finished_cells("r") == {("q1", "basic", "m")}


def test_a_missing_value_is_null_not_nan(db):
    store = open_store(db)
    store.write_scores(_scores(status="not_applicable", value=None))
    assert store.cursor().execute("SELECT value IS NULL, norm IS NULL FROM scores").fetchall() == [(True, True)]


def test_a_file_held_by_another_process_gives_a_clear_message(db):
    open_store(db)  # this process holds the file read-write
    code = (
        "import sys; sys.path.insert(0, '.');"
        "from evaluators.store import Store, StoreLocked\n"
        f"try:\n    Store({str(db)!r})\nexcept StoreLocked as e:\n    print(e)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert "in use by another process" in out.stdout, out.stderr


def test_claims_and_chunk_verdicts_are_written_and_replaced(db):
    store = open_store(db)
    claim = {"run_id": "r", "question_id": "q1", "method": "basic", "source": "answer", "claim_idx": 0,
             "text": "Alice did it.", "verdict": "supported", "chunk_ids": ["c1"], "matched_claims": [0],
             "reason": "1 chunk supported"}
    chunk = {"run_id": "r", "question_id": "q1", "method": "basic", "chunk_idx": 0, "chunk_id": "c1",
             "relevant": True, "relevance_score": 91.0, "used_by_answer": True, "reason": "cosine 0.8"}
    other = dict(claim, question_id="q2")
    question = {"run_id": "r", "question_id": "q1", "method": "basic", "idx": 0, "text": "Who did it?"}
    store.write_claims("r", [("q1", "basic"), ("q2", "basic")], [claim, dict(claim, claim_idx=1), other], [chunk],
                       [question])
    # q1 re-judged with one claim: its second claim goes, q2 (not re-judged) stays.
    store.write_claims("r", [("q1", "basic")], [dict(claim, verdict="not_found", chunk_ids=[])], [chunk], [question])
    cur = store.cursor()
    assert cur.execute("SELECT question_id, claim_idx, verdict, chunk_ids, matched_claims FROM claims "
                       "ORDER BY ALL").fetchall() == [("q1", 0, "not_found", [], [0]), ("q2", 0, "supported", ["c1"], [0])]
    assert cur.execute("SELECT chunk_id, relevant, relevance_score FROM chunk_verdicts").fetchall() == [("c1", True, 91.0)]
    assert cur.execute("SELECT idx, text FROM generated_questions").fetchall() == [(0, "Who did it?")]


def test_a_failed_write_leaves_nothing_half_written(db):
    store = open_store(db)
    claim = {"run_id": "r", "question_id": "q1", "method": "basic", "source": "answer", "claim_idx": 0,
             "text": "Alice did it.", "verdict": "supported", "chunk_ids": [], "matched_claims": [], "reason": None}
    bad_chunk = {"run_id": "r", "question_id": "q1", "method": "basic", "chunk_idx": "not a number"}
    with pytest.raises(Exception):
        store.write_claims("r", [("q1", "basic")], [claim], [bad_chunk])
    assert store.cursor().execute("SELECT count(*) FROM claims").fetchall() == [(0,)]
