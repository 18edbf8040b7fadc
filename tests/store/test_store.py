import json
import subprocess
import sys
import threading

import duckdb
import pandas as pd
import pytest

from evaluators.judges import prompts
from evaluators.records import Chunk, GoldenItem, RagOutput, Usage
from evaluators.store import MIGRATIONS, SCHEMA_VERSION, Store, close_store, open_store
from tests.helpers import ROOT


def test_a_schema_16_file_keeps_its_outputs_and_reads_no_usage(db):
    """Migration 17 adds rag_outputs' usage columns and chunk scores: an output stored before has no usage (None,
    not zeros) and chunks without scores; a new one keeps them all, a chunk's score beside its id."""
    con = _file_of_schema(db, 16)
    con.execute("INSERT INTO rag_outputs VALUES ('ds_old', 'q1', 'basic', 'Ann.', [{'chunk_id': 'c1', 'text': 'x'}])")
    con.close()
    store = open_store(db)
    assert store.schema_version() == SCHEMA_VERSION
    assert store.rag_outputs(["ds_old"]) == [RagOutput("q1", "basic", "Ann.", (Chunk("c1", "x"),))]
    traced = RagOutput("q2", "local", "Here.", (Chunk("d7", "a", 0.91), Chunk("d2", "b", None)),
                       Usage(latency_ms=812.5, input_tokens=1200, output_tokens=85, cost_usd=None, model="my-own-llm"))
    plain = RagOutput("q3", "local", "There.", (Chunk("1", "c"),))
    saved = store.save_dataset(FakeDataset("traced", outputs=[traced, plain]))  # an unlisted model: no cost
    assert store.rag_outputs([saved.dataset_id]) == [traced, plain]
    assert store.cursor().execute("SELECT latency_ms, input_tokens, cost_usd, context_scores FROM rag_outputs "
                                  "WHERE question_id = 'q2'").fetchall() == [(812.5, 1200, None, [0.91, None])]


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


def test_a_dataset_is_stored_in_slices_whole_or_not_at_all(db, monkeypatch):
    from evaluators import store as store_module

    monkeypatch.setattr(store_module, "_SLICE_ROWS", 3)
    golden = [GoldenItem(f"q{i}", f"Question {i}?", f"Answer {i}.") for i in range(7)]
    outputs = [RagOutput(f"q{i}", m, f"Answer {i}.", (Chunk(f"c{i}", f"Chunk {i}."),)) for i in range(7)
               for m in ("a", "b")]
    store = open_store(db)
    ds = store.save_dataset(FakeDataset(golden=golden, outputs=outputs)).dataset_id
    assert store.golden_items(ds) == sorted(golden, key=lambda g: g.question_id)
    assert store.rag_outputs([ds]) == sorted(outputs, key=lambda o: (o.method, o.question_id))
    broken = [*outputs[:4], RagOutput("q9", "a", None, ())]  # the second slice fails (an answer is required)
    with pytest.raises(Exception):
        store.save_dataset(FakeDataset("other", outputs=broken))
    assert store.cursor().execute("SELECT count(*) FROM datasets").fetchall() == [(1,)]
    assert store.cursor().execute("SELECT count(*) FROM rag_outputs").fetchall() == [(14,)]  # the first slice too


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


def test_a_file_held_by_another_process_gives_a_clear_message(db, monkeypatch):
    code = (
        "import sys; sys.path.insert(0, '.');"
        "from evaluators.store import Store, StoreLocked\n"
        f"try:\n    Store({str(db)!r})\nexcept StoreLocked as e:\n    print(e)"
    )
    monkeypatch.setenv("RAGSCOPE_DB_WAIT", "1")  # the other process's wait
    with open_store(db).lease():  # this process holds the file for longer
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert "in use by another process" in out.stdout and "within 1 s" in out.stdout, out.stderr


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


# -- judge calls: requests stored packed (evaluators.store.ledger), read back whole through the judge_calls view --

SHARED_CHUNK = "The tower was built by Alice in 1879, of grey granite from the quarry below the hill. " * 3
CHUNK_TEXTS = [SHARED_CHUNK, "Ünïcödé «chunk» 🌿 with a \"quote\", a back\\slash\nand PDF-like\nline breaks. " * 4,
               "Bob painted the door red in 1902, and the council never approved of the colour at all. " * 3]
LEDGER_ANSWER = "Alice built the tower in 1879. " * 8


def _ledger_run(store: Store) -> str:
    """A run whose two samples (q1, q2) share SHARED_CHUNK, as write_judge_calls finds them in the store."""
    golden = [GoldenItem("q1", "Who built the tower?", "Alice, in 1879."), GoldenItem("q2", "Who painted it?", "Bob.")]
    outputs = [RagOutput("q1", "basic", LEDGER_ANSWER, (Chunk("c1", CHUNK_TEXTS[0]), Chunk("c2", CHUNK_TEXTS[1]))),
               RagOutput("q2", "basic", "Bob.", (Chunk("c3", CHUNK_TEXTS[2]), Chunk("c1", CHUNK_TEXTS[0])))]
    g = store.save_dataset(FakeDataset("g1", golden=golden)).dataset_id
    o = store.save_dataset(FakeDataset("o1", outputs=outputs)).dataset_id
    return store.create_run(name="r", golden_dataset_id=g, outputs_dataset_ids=[o], judge="openai", judge_model="m",
                            metrics=[], config={}, n_samples=2)


def _request(messages) -> str:
    """A request body as the OpenAI judge serialises it."""
    body = {"model": "m", "messages": messages, "temperature": 0, "seed": 0,
            "response_format": {"type": "json_schema", "json_schema": prompts.SCHEMA}}
    return json.dumps(body, ensure_ascii=False)


def _call(run_id: str, question_id: str, purpose: str, request: str | None, n: int = 0) -> dict:
    return {"call_id": f"{question_id}-{purpose}-{n}", "run_id": run_id, "question_id": question_id,
            "method": "basic", "purpose": purpose, "model": "m", "prompt_hash": "h", "request": request,
            "response": '{"choices": []}', "input_tokens": 10, "output_tokens": 2, "latency_ms": 1.5, "cached": False,
            "status": "ok", "error": None}


def _sample_calls(run_id: str, n: int = 0) -> list[dict]:
    q1 = prompts.holistic_messages(prompts.sample_text("Who built the tower?", "Alice, in 1879.", LEDGER_ANSWER,
                                                       CHUNK_TEXTS[:2]))
    q2 = prompts.verification_messages(prompts.sample_text("Who painted it?", "Bob.", "Bob.",
                                                           [CHUNK_TEXTS[2], CHUNK_TEXTS[0]]),
                                       ["Bob painted it."], ["Bob."], range(2), True)
    return [_call(run_id, "q1", "holistic", _request(q1), n), _call(run_id, "q2", "verification", _request(q2), n),
            _call(run_id, "q2", "verification_repair", "", n), _call(run_id, "q2", "holistic", None, n),
            _call(run_id, "q1", "extraction", "not JSON: " + SHARED_CHUNK, n)]


def _requests(store: Store) -> dict[str, str | None]:
    return dict(store.cursor().execute("SELECT call_id, request FROM judge_calls").fetchall())


def test_judge_call_requests_read_back_exactly_with_each_shared_text_stored_once(db):
    store = open_store(db)
    run_id = _ledger_run(store)
    calls = _sample_calls(run_id)
    store.write_judge_calls(calls)
    assert _requests(store) == {c["call_id"]: c["request"] for c in calls}
    cur = store.cursor()
    stored = [t for t, in cur.execute("SELECT text FROM judge_texts").fetchall()]
    shared = json.dumps(SHARED_CHUNK)[1:-1]
    assert stored.count(shared) == 1  # in both samples' requests, stored once
    assert stored.count(prompts.SYSTEM.replace("\n", "\\n").replace('"', '\\"')) == 1
    literals = cur.execute("SELECT string_agg(p.literal, '') FROM (SELECT unnest(request_parts) AS p "
                           "FROM judge_calls_packed)").fetchall()[0][0]
    assert shared not in literals.replace("not JSON: " + SHARED_CHUNK, "")  # a non-JSON request stays whole
    assert cur.execute("SELECT count(*) FROM judge_texts WHERE left(sha256(text), 32) <> hash").fetchall() == [(0,)]
    n_texts = len(stored)
    store.write_judge_calls(_sample_calls(run_id, n=1))  # the same texts again: no new row
    assert cur.execute("SELECT count(*) FROM judge_texts").fetchall() == [(n_texts,)]
    assert len(_requests(store)) == 2 * len(calls)


def test_a_missing_text_fails_the_read_rather_than_shortening_the_request(db):
    store = open_store(db)
    store.write_judge_calls(_sample_calls(_ledger_run(store)))
    store.cursor().execute("DELETE FROM judge_texts WHERE text = ?", [json.dumps(SHARED_CHUNK)[1:-1]])
    with pytest.raises(duckdb.InvalidInputException, match="judge_texts has no text"):
        _requests(store)


def test_concurrent_runs_storing_the_same_new_texts_both_keep_their_calls(db):
    store = open_store(db)
    run_id = _ledger_run(store)
    expected = {}
    for round_ in range(6):  # fresh texts each round, so the two writers race to store them
        chunk = f"Round {round_}: a chunk both runs retrieved, long enough to be stored once. " * 4
        barrier = threading.Barrier(2)
        batches = [[_call(run_id, "q1", "holistic", _request(prompts.holistic_messages(prompts.sample_text("Q?", "R.", "A.", [chunk]))),
                          n=10 * round_ + writer)] for writer in range(2)]
        errors = []

        def write(batch):
            barrier.wait()
            try:
                store.write_judge_calls(batch)
            except Exception as exc:  # noqa: BLE001 - reported by the assertion below
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(b,)) for b in batches]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        expected |= {c["call_id"]: c["request"] for b in batches for c in b}
    assert _requests(store) == expected


def _file_of_schema(db, version: int) -> duckdb.DuckDBPyConnection:
    """A database file as a release of schema `version` left it, open for rows of that time."""
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE schema_version (version INTEGER, applied_at TIMESTAMP)")
    for number, migration in enumerate(MIGRATIONS[:version], start=1):
        con.execute(migration)
        con.execute("INSERT INTO schema_version VALUES (?, now())", [number])
    return con


def test_a_schema_6_file_with_whole_requests_reads_the_same_after_the_migration(db):
    con = _file_of_schema(db, 6)
    old_request = _request(prompts.extraction_messages(prompts.sample_text("Qui a bâti la tour ? 🏰", "Alice.",
                                                                           LEDGER_ANSWER, [])))
    for call in (_call("r", "q1", "extraction", old_request), _call("r", "q1", "holistic", None),
                 _call("r", "q2", "holistic", "")):
        con.execute("INSERT INTO judge_calls SELECT *, TIMESTAMP '2026-11-01' FROM (SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                    "?, ?, ?, ?, ?, ?)", list(call.values()))
    before = con.execute("SELECT * FROM judge_calls ORDER BY call_id").fetchall()
    con.close()
    store = open_store(db)
    assert store.schema_version() == SCHEMA_VERSION
    # (columns added since, batch_id, cached_input_tokens, reasoning_tokens and schema_enforced, are NULL on the old
    # rows)
    added = ("batch_id", "cached_input_tokens", "reasoning_tokens", "schema_enforced")
    after = store.cursor().execute(f"SELECT * EXCLUDE ({', '.join(added)}) FROM judge_calls ORDER BY call_id")
    assert after.fetchall() == before
    assert store.cursor().execute(f"SELECT {' + '.join(f'count({c})' for c in added)} FROM judge_calls"
                                  ).fetchall() == [(0,)]
    store.write_judge_calls(_sample_calls(_ledger_run(store), n=1))  # new calls go in packed beside them
    assert len(_requests(store)) == len(before) + 5


def test_a_schema_12_file_keeps_its_judge_calls_and_gains_reasoning_tokens_and_schema_enforced(db):
    """Migration 13 adds two columns: the calls stored before keep every value, the new ones are NULL (unknown)."""
    con = _file_of_schema(db, 12)
    con.execute("""INSERT INTO judge_calls_packed VALUES ('c1', 'r', 'q1', 'm', 'extraction', 'gpt-4o-mini', 'h',
                   [{'literal': '{"model": "gpt-4o-mini"}', 'hash': NULL}], '{"choices": []}', 120, 30, 5.5, false,
                   'ok', NULL, TIMESTAMP '2026-11-01', NULL, 64)""")
    before = con.execute("SELECT * FROM judge_calls").fetchall()
    con.close()
    store = open_store(db)
    assert store.schema_version() == SCHEMA_VERSION
    after = store.cursor().execute("SELECT * EXCLUDE (reasoning_tokens, schema_enforced) FROM judge_calls")
    assert after.fetchall() == before and before[0][-1] == 64
    assert store.cursor().execute("SELECT reasoning_tokens, schema_enforced FROM judge_calls").fetchall() == [
        (None, None)]


def test_a_schema_9_file_gets_the_counts_its_answer_correctness_detail_held(db):
    con = _file_of_schema(db, 9)
    cells = [("q1", "answer_correctness_f1", 0.8, "ok", "TP 2, FP 1, FN 0"),
             ("q2", "answer_correctness_f1", None, "not_applicable", "no claims in the answer nor in the reference"),
             ("q1", "rouge_l", 0.5, "ok", "TP 9, FP 9, FN 9")]  # another metric's words are not counts
    for qid, metric, value, status, detail in cells:
        con.execute("INSERT INTO scores (run_id, question_id, method, metric, value, norm, status, judge, detail, "
                    "created_at) VALUES ('r', ?, 'm', ?, ?, ?, ?, 'offline', ?, now())",
                    [qid, metric, value, value, status, detail])
    con.close()
    store = open_store(db)
    assert store.schema_version() == SCHEMA_VERSION
    counts = store.cursor().execute("SELECT question_id, metric, counts FROM scores ORDER BY ALL").fetchall()
    assert counts == [("q1", "answer_correctness_f1", {"TP": 2, "FP": 1, "FN": 0}),
                      ("q1", "rouge_l", None), ("q2", "answer_correctness_f1", None)]


def test_a_schema_14_file_keeps_its_golden_items_and_reads_no_relevant_ids(db):
    """Migration 15 adds golden_items.relevant_ids: an item stored before names none, and a new one keeps its ids
    with their grades, in order."""
    con = _file_of_schema(db, 14)
    con.execute("INSERT INTO golden_items VALUES ('ds_old', 'q1', 'Who?', 'Ann.', NULL, NULL, ['ctx'], NULL)")
    con.close()
    store = open_store(db)
    assert store.schema_version() == SCHEMA_VERSION
    assert store.golden_items("ds_old") == [GoldenItem("q1", "Who?", "Ann.", reference_contexts=("ctx",))]
    graded = GoldenItem("q2", "Where?", "Here.", relevant_ids=(("doc-9", 2.0), ("doc-1", 1.0), ("doc-4", 0.0)))
    saved = store.save_dataset(FakeDataset("graded", golden=[graded]))
    assert store.golden_items(saved.dataset_id) == [graded]


def test_a_file_stored_before_migration_17_gains_its_usage_when_stored_again(db, tmp_path):
    """The same file stored again is not stored twice, but the usage and chunk scores its stored answers lack (NULL:
    stored before migration 17) are filled in from what the loader now reads; a stored value is never changed."""
    from evaluators import loaders

    path = tmp_path / "answers.jsonl"
    rows = [{"question_id": "q1", "method": "basic", "answer": "Alice did.", "contexts": ["Alice did it."],
             "latency_ms": 812.5, "input_tokens": 1200, "output_tokens": 85, "cost_usd": 0.002},
            {"question_id": "q2", "method": "basic", "answer": "In 1879.", "contexts": ["It was 1879."],
             "latency_ms": 430, "input_tokens": 900, "output_tokens": 40}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    store = open_store(db)
    saved = store.save_dataset(loaders.load(path, role="outputs"))
    run = store.create_run(name="r", golden_dataset_id="g", outputs_dataset_ids=[saved.dataset_id], judge="offline",
                           judge_model=None, metrics=["m"], config={}, n_samples=2)
    usage = ("latency_ms", "input_tokens", "output_tokens", "cost_usd", "model", "context_scores")
    store.cursor().execute(f"UPDATE rag_outputs SET {', '.join(f'{c} = NULL' for c in usage)}")  # as a pre-17 file
    store.cursor().execute("UPDATE rag_outputs SET output_tokens = 7 WHERE question_id = 'q2'")  # stored: kept
    before = store.cursor().execute("SELECT * FROM runs").fetchall()

    again = store.save_dataset(loaders.load(path, role="outputs"))
    assert (again.dataset_id, again.created, again.filled) == (saved.dataset_id, False, 2)
    rows = store.cursor().execute(f"SELECT question_id, {', '.join(usage[:4])} FROM rag_outputs "
                                  "ORDER BY question_id").fetchall()
    assert rows == [("q1", 812.5, 1200, 85, 0.002), ("q2", 430.0, 900, 7, None)]
    assert store.cursor().execute("SELECT * FROM runs").fetchall() == before and run
    assert store.save_dataset(loaders.load(path, role="outputs")).filled == 0  # nothing left to fill


def test_a_trace_file_stored_before_migration_17_gains_its_chunk_scores_too(db):
    from evaluators import loaders
    from tests.helpers import FIXTURES

    path = FIXTURES / "traces" / "langfuse_traces.json"
    store = open_store(db)
    saved = store.save_dataset(loaders.load(path, role="outputs"))
    stored = store.rag_outputs([saved.dataset_id])
    store.cursor().execute("UPDATE rag_outputs SET context_scores = NULL, latency_ms = NULL, input_tokens = NULL, "
                           "output_tokens = NULL, cost_usd = NULL, model = NULL")  # as a pre-17 file
    assert all(o.usage is None and all(c.score is None for c in o.contexts)
               for o in store.rag_outputs([saved.dataset_id]))
    again = store.save_dataset(loaders.load(path, role="outputs"))
    assert again.filled == len(stored) and store.rag_outputs([saved.dataset_id]) == stored
    assert any(c.score is not None for o in stored for c in o.contexts)
