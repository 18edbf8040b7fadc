"""DuckDB store: schema, migrations and writes.

Analysts open the file with any DuckDB client, so table and column names are part of the interface
(DESIGN.md "Store").

Sharing the file: while one process holds a DuckDB file, no other process can open it, not even read-only.
So the app and `python -m evaluators` hold it only for a unit of work (a script run of a page, a batch's
writes, an import, a command step) and let go in between, so the other can take it. `open_store` keeps one
Store per path and process, whose connection is open while any lease is held (`with store.lease():`, or a
cursor, which holds one until it is garbage) and closed when the last one ends; the threads of a process
share it, a cursor each (a connection shared by two threads raises "busy"). A lease taken while another
process holds the file waits for it (backoff, up to `wait` seconds, then StoreLocked).

A file that cannot be opened or written (a directory, not a DuckDB file, a read-only place, a full disk) raises
StoreUnavailable with the path and what to do; a write that fails is rolled back. Opening a file never fetches or
runs code: DuckDB would download and load a scanner extension to open a SQLite file (`_CONFIG`).
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import random
import secrets
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa

from evaluators import threads
from evaluators.judges.prices import cost, list_price
from evaluators.store import ledger
from evaluators.records import ERROR_STATUSES, Chunk, GoldenItem, RagOutput, Usage
from evaluators.records.run_status import RunStatus


def _judge_calls_view(*added: str) -> str:
    """The `judge_calls` view (migration 7): every request rebuilt from its parts, with the columns of
    `judge_calls_packed` added since (`added`) at the end."""
    return """
    CREATE OR REPLACE VIEW judge_calls AS
    SELECT c.call_id, c.run_id, c.question_id, c.method, c.purpose, c.model, c.prompt_hash, r.request, c.response,
           c.input_tokens, c.output_tokens, c.latency_ms, c.cached, c.status, c.error, c.created_at""" + "".join(f", c.{name}" for name in added) + """
    FROM judge_calls_packed c LEFT JOIN (
        -- the parts in their order: list_sort of (i, text) is faster than an ordered string_agg
        SELECT p.call_id, p.run_id, p.question_id, p.method,
               array_to_string([x.text FOR x IN list_sort(list({'i': p.i, 'text': coalesce(
                   p.part.literal, t.text, error('judge_texts has no text ' || p.part.hash))}))], '') AS request
        FROM (SELECT call_id, run_id, question_id, method, unnest(request_parts) AS part,
                     generate_subscripts(request_parts, 1) AS i
              FROM judge_calls_packed) p
        LEFT JOIN judge_texts t ON t.hash = p.part.hash
        GROUP BY ALL
    ) r ON r.call_id = c.call_id AND r.run_id = c.run_id AND r.question_id = c.question_id AND r.method = c.method;
    """


# Each entry moves the schema one version up; never edit one that has shipped, append a new one (the view of 7
# is written by _judge_calls_view, unchanged, as later entries that add columns to it recreate it).
MIGRATIONS: list[str] = [
    """
    CREATE TABLE datasets (
        dataset_id   VARCHAR PRIMARY KEY,
        name         VARCHAR NOT NULL,
        format       VARCHAR NOT NULL,
        content_hash VARCHAR NOT NULL UNIQUE,
        n_golden     INTEGER NOT NULL,
        n_outputs    INTEGER NOT NULL,
        methods      VARCHAR[] NOT NULL,
        columns      JSON,
        created_at   TIMESTAMP NOT NULL
    );
    CREATE TABLE golden_items (
        dataset_id         VARCHAR NOT NULL,
        question_id        VARCHAR NOT NULL,
        question           VARCHAR NOT NULL,
        reference          VARCHAR NOT NULL,
        question_type      VARCHAR,
        evidence           VARCHAR,
        reference_contexts VARCHAR[],
        checks             JSON,
        PRIMARY KEY (dataset_id, question_id)
    );
    CREATE TABLE rag_outputs (
        dataset_id  VARCHAR NOT NULL,
        question_id VARCHAR NOT NULL,
        method      VARCHAR NOT NULL,
        answer      VARCHAR NOT NULL,
        contexts    STRUCT(chunk_id VARCHAR, text VARCHAR)[] NOT NULL,
        PRIMARY KEY (dataset_id, question_id, method)
    );
    CREATE TABLE runs (
        run_id              VARCHAR PRIMARY KEY,
        name                VARCHAR NOT NULL,
        created_at          TIMESTAMP NOT NULL,
        golden_dataset_id   VARCHAR NOT NULL,
        outputs_dataset_ids VARCHAR[] NOT NULL,
        judge               VARCHAR NOT NULL,
        judge_model         VARCHAR,
        metrics             VARCHAR[] NOT NULL,
        config              JSON,
        status              VARCHAR NOT NULL,
        n_samples           INTEGER,
        finished_at         TIMESTAMP,
        error               VARCHAR
    );
    CREATE TABLE scores (
        run_id      VARCHAR NOT NULL,
        question_id VARCHAR NOT NULL,
        method      VARCHAR NOT NULL,
        metric      VARCHAR NOT NULL,
        value       DOUBLE,
        norm        DOUBLE,
        status      VARCHAR NOT NULL,
        judge       VARCHAR NOT NULL,
        detail      VARCHAR,
        created_at  TIMESTAMP NOT NULL,
        PRIMARY KEY (run_id, question_id, method, metric)
    );
    CREATE TABLE claims (
        run_id         VARCHAR NOT NULL,
        question_id    VARCHAR NOT NULL,
        method         VARCHAR NOT NULL,
        source         VARCHAR NOT NULL,
        claim_idx      INTEGER NOT NULL,
        text           VARCHAR NOT NULL,
        verdict        VARCHAR NOT NULL,
        chunk_ids      VARCHAR[],
        matched_claims INTEGER[],
        reason         VARCHAR,
        PRIMARY KEY (run_id, question_id, method, source, claim_idx)
    );
    CREATE TABLE chunk_verdicts (
        run_id          VARCHAR NOT NULL,
        question_id     VARCHAR NOT NULL,
        method          VARCHAR NOT NULL,
        chunk_idx       INTEGER NOT NULL,
        chunk_id        VARCHAR,
        relevant        BOOLEAN,
        relevance_score DOUBLE,
        used_by_answer  BOOLEAN,
        reason          VARCHAR,
        PRIMARY KEY (run_id, question_id, method, chunk_idx)
    );
    CREATE TABLE judge_calls (
        call_id       VARCHAR PRIMARY KEY,
        run_id        VARCHAR,
        question_id   VARCHAR,
        method        VARCHAR,
        purpose       VARCHAR NOT NULL,
        model         VARCHAR,
        prompt_hash   VARCHAR,
        request       VARCHAR,
        response      VARCHAR,
        input_tokens  INTEGER,
        output_tokens INTEGER,
        latency_ms    DOUBLE,
        cached        BOOLEAN NOT NULL DEFAULT false,
        status        VARCHAR NOT NULL,
        error         VARCHAR,
        created_at    TIMESTAMP NOT NULL
    );
    CREATE TABLE annotations (
        annotation_id  VARCHAR PRIMARY KEY,
        run_id         VARCHAR NOT NULL,
        question_id    VARCHAR NOT NULL,
        method         VARCHAR NOT NULL,
        metric         VARCHAR,
        claim_source   VARCHAR,
        claim_idx      INTEGER,
        label          VARCHAR,
        override_value DOUBLE,
        tags           VARCHAR[],
        note           VARCHAR,
        author         VARCHAR NOT NULL,
        created_at     TIMESTAMP NOT NULL
    );
    """,
    # 2: the judge cache (a re-run of the same request with the same model and prompt version costs no call)
    """
    CREATE TABLE judge_cache (
        cache_key      VARCHAR PRIMARY KEY,
        model          VARCHAR,
        prompt_version VARCHAR,
        purpose        VARCHAR,
        response       VARCHAR NOT NULL,
        input_tokens   INTEGER,
        output_tokens  INTEGER,
        created_at     TIMESTAMP
    );
    """,
    # 3: the questions an LLM judge generated from each answer (seeds 002/003 answer relevance)
    """
    CREATE TABLE generated_questions (
        run_id      VARCHAR NOT NULL,
        question_id VARCHAR NOT NULL,
        method      VARCHAR NOT NULL,
        idx         INTEGER NOT NULL,
        text        VARCHAR NOT NULL,
        PRIMARY KEY (run_id, question_id, method, idx)
    );
    """,
    # 4: annotations keep what the human saw: the judge's verdict or label and value, and the claim's text
    # (a re-judged sample may renumber its claims; the judge's own rows are never touched)
    """
    ALTER TABLE annotations ADD COLUMN judge_label VARCHAR;
    ALTER TABLE annotations ADD COLUMN judge_value DOUBLE;
    ALTER TABLE annotations ADD COLUMN claim_text VARCHAR;
    """,
    # 5: each claim's verdict against the other side (TP/FP of an answer claim, covered/FN of a reference claim)
    """
    ALTER TABLE claims ADD COLUMN other_side_verdict VARCHAR;
    """,
    # 6: human ratings imported from a file (evaluators.store.ratings): the rated dimension ("faithfulness"),
    # a number in `rating` or a class in `label`, the reason in `note`, and which file they came from
    """
    ALTER TABLE annotations ADD COLUMN dimension VARCHAR;
    ALTER TABLE annotations ADD COLUMN rating DOUBLE;
    ALTER TABLE annotations ADD COLUMN source VARCHAR;
    ALTER TABLE annotations ADD COLUMN source_hash VARCHAR;
    """,
    # 7: judge-call requests packed (evaluators.store.ledger): system prompts, schemas, the samples' chunks, answers and
    # references stored once in judge_texts, by hash (left(sha256(text), 32)), the rest inline in request_parts.
    # `judge_calls` becomes a view with the same columns that gives every request back byte for byte. Requests
    # stored before stay whole (one literal part). ZSTD on the responses and texts: DuckDB's own pick for the
    # responses (FSST) takes ~4.7 KB more per sample (bench/results/ledger.md). The sample keys become NOT NULL:
    # the view joins on them, so that a filter on them reaches the packed rows (the engine always wrote them; a
    # missing one of an old row reads '').
    """
    CREATE TABLE judge_texts (
        hash VARCHAR PRIMARY KEY,
        text VARCHAR NOT NULL USING COMPRESSION zstd
    );
    CREATE TABLE judge_calls_packed (
        call_id       VARCHAR PRIMARY KEY,
        run_id        VARCHAR NOT NULL,
        question_id   VARCHAR NOT NULL,
        method        VARCHAR NOT NULL,
        purpose       VARCHAR NOT NULL,
        model         VARCHAR,
        prompt_hash   VARCHAR,
        request_parts STRUCT(literal VARCHAR, hash VARCHAR)[],
        response      VARCHAR USING COMPRESSION zstd,
        input_tokens  INTEGER,
        output_tokens INTEGER,
        latency_ms    DOUBLE,
        cached        BOOLEAN NOT NULL DEFAULT false,
        status        VARCHAR NOT NULL,
        error         VARCHAR,
        created_at    TIMESTAMP NOT NULL
    );
    INSERT INTO judge_calls_packed
    SELECT call_id, coalesce(run_id, ''), coalesce(question_id, ''), coalesce(method, ''), purpose, model,
           prompt_hash, CASE WHEN request IS NOT NULL THEN [{'literal': request, 'hash': NULL::VARCHAR}] END,
           response, input_tokens, output_tokens, latency_ms, cached, status, error, created_at
    FROM judge_calls ORDER BY rowid;
    DROP TABLE judge_calls;
    """ + _judge_calls_view(),
    # 8: the value from each reply of a judge asked several times per sample (run config `repeats`); NULL otherwise.
    """
    ALTER TABLE scores ADD COLUMN repeats DOUBLE[];
    """,
    # 9: a label metric's label as a column (it was read back from the first words of `detail`).
    """
    ALTER TABLE scores ADD COLUMN label VARCHAR;
    UPDATE scores SET label = split_part(detail, ' (', 1)
    WHERE status = 'ok' AND metric IN ('verdict', 'answer_class', 'accuracy_grade');
    """,
    # 10: counts behind a value (answer_correctness_f1's TP, FP, FN) as data (they were read back from `detail`).
    r"""
    ALTER TABLE scores ADD COLUMN counts MAP(VARCHAR, INTEGER);
    UPDATE scores SET counts = MAP {'TP': CAST(regexp_extract(detail, 'TP (\d+)', 1) AS INTEGER),
                                    'FP': CAST(regexp_extract(detail, 'FP (\d+)', 1) AS INTEGER),
                                    'FN': CAST(regexp_extract(detail, 'FN (\d+)', 1) AS INTEGER)}
    WHERE metric = 'answer_correctness_f1' AND regexp_matches(detail, 'TP \d+, FP \d+, FN \d+');
    """,
    # 11: the Batch API (`run --batch`, judges/batch_api.py): each batch a run submitted, recorded before it is
    # polled so a restarted run takes its results instead of submitting its requests again (until `consumed`);
    # and the batch each judge call went in.
    """
    CREATE TABLE judge_batches (
        batch_id      VARCHAR PRIMARY KEY,
        run_id        VARCHAR NOT NULL,
        input_file_id VARCHAR,
        custom_ids    VARCHAR[] NOT NULL,
        status        VARCHAR,
        consumed      BOOLEAN NOT NULL DEFAULT false,
        created_at    TIMESTAMP NOT NULL,
        updated_at    TIMESTAMP
    );
    ALTER TABLE judge_calls_packed ADD COLUMN batch_id VARCHAR;
    """ + _judge_calls_view("batch_id"),
    # 12: the input tokens a judge server served from its prompt cache (usage.prompt_tokens_details.cached_tokens),
    # billed at the cached-input price; NULL where the server did not say (every call stored before).
    """
    ALTER TABLE judge_calls_packed ADD COLUMN cached_input_tokens INTEGER;
    """ + _judge_calls_view("batch_id", "cached_input_tokens"),
    # 13: a reasoning model's hidden reasoning tokens (usage.completion_tokens_details.reasoning_tokens, part of
    # output_tokens and billed as output), and whether the server held the reply to the JSON schema (false: JSON mode,
    # or JSON found in prose by a server that ignores response_format); NULL where unknown (every call stored before).
    """
    ALTER TABLE judge_calls_packed ADD COLUMN reasoning_tokens INTEGER;
    ALTER TABLE judge_calls_packed ADD COLUMN schema_enforced BOOLEAN;
    """ + _judge_calls_view("batch_id", "cached_input_tokens", "reasoning_tokens", "schema_enforced"),
    # 14: `judge calibrate` (runs/calibrate.py): a judge measured against the human labels of data/calibration, and
    # its agreement per label and part beside the offline judge's and token F1's on the same items. The judge's
    # config is its settings (judge.config()): never a key.
    """
    CREATE TABLE calibrations (
        calibration_id VARCHAR PRIMARY KEY,
        created_at     TIMESTAMP NOT NULL,
        judge          VARCHAR NOT NULL,
        judge_model    VARCHAR,
        judge_config   VARCHAR,
        n_items        INTEGER NOT NULL,
        seed           BIGINT,
        cost_usd       DOUBLE,
        status         VARCHAR NOT NULL,
        note           VARCHAR
    );
    CREATE TABLE calibration_results (
        calibration_id VARCHAR NOT NULL,
        label          VARCHAR NOT NULL,
        label_text     VARCHAR,
        sets           VARCHAR,
        part           VARCHAR,
        metric         VARCHAR,
        statistic      VARCHAR,
        n              INTEGER,
        n_failed       INTEGER,
        value          DOUBLE,
        lo             DOUBLE,
        hi             DOUBLE,
        offline_value  DOUBLE,
        offline_lo     DOUBLE,
        offline_hi     DOUBLE,
        token_f1_value DOUBLE,
        token_f1_lo    DOUBLE,
        token_f1_hi    DOUBLE
    );
    """,
    # 15: the documents that answer each golden question, with their grades (> 0 relevant, as in trec_eval), for the
    # rank metrics (metrics/ranking.py); NULL for every item stored before, which names none.
    """
    ALTER TABLE golden_items ADD COLUMN relevant_ids STRUCT(id VARCHAR, grade DOUBLE)[];
    """,
    # 16: the metrics a user defined for a run (an analyst's criterion, a Python plug-in's metric), as the run used
    # them: kind, version (a criterion's text hash, a plug-in file's) and the definition (JSON), so its screens show
    # them as it was and runs compare a metric only at equal versions (metrics/user.py).
    """
    CREATE TABLE user_metrics (
        run_id     VARCHAR NOT NULL,
        metric     VARCHAR NOT NULL,
        kind       VARCHAR NOT NULL,
        version    VARCHAR NOT NULL,
        definition JSON NOT NULL,
        PRIMARY KEY (run_id, metric)
    );
    """,
    # 17: what the RAG system itself spent on each answer (issue 37: from its trace or a file's columns), and each
    # retrieved chunk's retriever score in a list parallel to `contexts` (changing the contexts STRUCT of a filled
    # column is not worth it); NULL where the source said nothing, and for every output stored before.
    """
    ALTER TABLE rag_outputs ADD COLUMN latency_ms DOUBLE;
    ALTER TABLE rag_outputs ADD COLUMN input_tokens BIGINT;
    ALTER TABLE rag_outputs ADD COLUMN output_tokens BIGINT;
    ALTER TABLE rag_outputs ADD COLUMN cost_usd DOUBLE;
    ALTER TABLE rag_outputs ADD COLUMN model VARCHAR;
    ALTER TABLE rag_outputs ADD COLUMN context_scores DOUBLE[];
    """,
]
CALIBRATION_RESULT_COLUMNS = ("label", "label_text", "sets", "part", "metric", "statistic", "n", "n_failed", "value",
                              "lo", "hi", "offline_value", "offline_lo", "offline_hi", "token_f1_value", "token_f1_lo",
                              "token_f1_hi")
SCHEMA_VERSION = len(MIGRATIONS)

SCORE_COLUMNS = ["run_id", "question_id", "method", "metric", "value", "norm", "status", "judge", "detail", "repeats",
                 "label", "counts"]
_KEY_FIELDS = [("run_id", pa.string()), ("question_id", pa.string()), ("method", pa.string())]
_CLAIMS_SCHEMA = pa.schema(_KEY_FIELDS + [
    ("source", pa.string()), ("claim_idx", pa.int32()), ("text", pa.string()), ("verdict", pa.string()),
    ("chunk_ids", pa.list_(pa.string())), ("matched_claims", pa.list_(pa.int32())), ("reason", pa.string()),
    ("other_side_verdict", pa.string()),
])
_CHUNK_VERDICTS_SCHEMA = pa.schema(_KEY_FIELDS + [
    ("chunk_idx", pa.int32()), ("chunk_id", pa.string()), ("relevant", pa.bool_()),
    ("relevance_score", pa.float64()), ("used_by_answer", pa.bool_()), ("reason", pa.string()),
])
_GENERATED_QUESTIONS_SCHEMA = pa.schema(_KEY_FIELDS + [("idx", pa.int32()), ("text", pa.string())])
_RATINGS_SCHEMA = pa.schema([
    ("annotation_id", pa.string()), ("run_id", pa.string()), ("question_id", pa.string()), ("method", pa.string()),
    ("author", pa.string()), ("dimension", pa.string()), ("rating", pa.float64()), ("label", pa.string()),
    ("note", pa.string()), ("source", pa.string()), ("source_hash", pa.string()), ("created_at", pa.timestamp("us")),
])
_CONTEXTS_TYPE = pa.list_(pa.struct([("chunk_id", pa.string()), ("text", pa.string())]))
# rag_outputs' usage columns, in Usage's field order (migration 17).
_USAGE_COLUMNS = {"latency_ms": pa.float64(), "input_tokens": pa.int64(), "output_tokens": pa.int64(),
                  "cost_usd": pa.float64(), "model": pa.string()}
_NO_USAGE = Usage()
_RELEVANT_TYPE = pa.list_(pa.struct([("id", pa.string()), ("grade", pa.float64())]))
_JUDGE_CALLS_SCHEMA = pa.schema([
    ("call_id", pa.string()), ("run_id", pa.string()), ("question_id", pa.string()), ("method", pa.string()),
    ("purpose", pa.string()), ("model", pa.string()), ("prompt_hash", pa.string()),
    ("request_parts", pa.list_(pa.struct([("literal", pa.string()), ("hash", pa.string())]))),
    ("response", pa.string()), ("input_tokens", pa.int32()), ("output_tokens", pa.int32()),
    ("latency_ms", pa.float64()), ("cached", pa.bool_()), ("status", pa.string()), ("error", pa.string()),
    ("created_at", pa.timestamp("us")), ("batch_id", pa.string()), ("cached_input_tokens", pa.int32()),
    ("reasoning_tokens", pa.int32()), ("schema_enforced", pa.bool_()),
])
_JUDGE_TEXTS_SCHEMA = pa.schema([("hash", pa.string()), ("text", pa.string())])
WRITE_ATTEMPTS = 3  # a batch of judge calls is written again when a concurrent run stored one of its texts first

# The texts of the samples in `_keys` (run_id, question_id, method) that their judge requests quote.
_SAMPLE_TEXTS = """
    SELECT k.run_id, k.question_id, k.method, [c.text FOR c IN o.contexts] || [o.answer, g.reference, g.question]
    FROM _keys k
    JOIN runs r ON r.run_id = k.run_id
    JOIN rag_outputs o ON o.question_id = k.question_id AND o.method = k.method
                      AND list_contains(r.outputs_dataset_ids, o.dataset_id)
    LEFT JOIN golden_items g ON g.dataset_id = r.golden_dataset_id AND g.question_id = k.question_id
"""


class StoreLocked(RuntimeError):
    """Another process (often the running app) holds the database file, and kept it for longer than we waited."""


class StoreUnavailable(RuntimeError):
    """The database file cannot be opened or written: a directory, not a DuckDB file, a read-only place, a full disk."""


# No extension is installed or loaded, and SQL reads no file (data comes in through register()), whatever a file
# holds; locked, so no statement can turn that back on.
_CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False,
           "allow_community_extensions": False, "enable_external_access": False, "lock_configuration": True,
           "threads": threads.usable_cpus()}  # the CPU quota's cores, not the host's (threads.py)
_DUCKDB_MAGIC = b"DUCK"  # bytes 8-11 of every DuckDB file


def _unavailable(path: str, exc: BaseException) -> StoreUnavailable:
    """One clear message for a failure to open or write `path`: what is wrong and what to do."""
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    low, file = detail.lower(), Path(path)
    elsewhere = "point --db (or $RAGSCOPE_DB) at another file"
    if "no space" in low or "disk full" in low or "file too large" in low:
        what, todo = "the disk is full", (f"free some space or {elsewhere}, then try again (what was stored before "
                                          "is kept; a run goes on with `run --resume RUN_ID`)")
    elif file.is_dir():
        what, todo = "it is a directory", f"{elsewhere} (a new name creates a new database)"
    elif file.is_file() and not _duckdb_file(file):
        what, todo = "it is not a DuckDB database", f"{elsewhere} (a new name creates a new database)"
    elif "read-only" in low or "permission denied" in low or isinstance(exc, PermissionError):
        what, todo = "this place cannot be written", f"{elsewhere} in a folder you can write to"
    else:
        what, todo = "it cannot be opened or written", elsewhere
    return StoreUnavailable(f"cannot use the database {path}: {what} ({detail}). To go on, {todo}.")


def _duckdb_file(file: Path) -> bool:
    """`file` is empty (DuckDB makes it a database) or starts as a DuckDB file does."""
    with file.open("rb") as f:
        head = f.read(12)
    return not head or head[8:] == _DUCKDB_MAGIC


def _io_failure(exc: BaseException) -> bool:
    """A failure of the file itself (disk, permissions), not of a statement: DuckDB reports those as I/O errors, a
    failed commit, or a database it had to invalidate."""
    if isinstance(exc, (duckdb.IOException, duckdb.FatalException, OSError)):
        return True
    return isinstance(exc, duckdb.TransactionException) and "could not write" in str(exc).lower()


def _writes(method):
    """A store method whose write fails for want of disk space or permission raises StoreUnavailable (its
    transaction rolled back, so nothing is half written)."""
    @functools.wraps(method)
    def write(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            if _io_failure(exc):
                raise _unavailable(self.path, exc) from exc
            raise
    return write


# Seconds a lease waits by default for another process to let go of the file ($RAGSCOPE_DB_WAIT): that process
# holds it for a unit of work, seconds at most, so a longer hold is one that will not end soon.
BUSY_WAIT = 60.0
# Backoff between attempts to open a file another process holds: short, as that process lets go for moments
# only (between two page runs or batches), and random, so as not to keep in step with its rhythm.
_FIRST_DELAY, _MAX_DELAY = 0.02, 0.25
# Rows of a dataset inserted at a time (bench/results/load_memory.md).
_SLICE_ROWS = 20_000


def _sql_value(value):
    """NaN (a statistic that could not be computed) as NULL."""
    return None if isinstance(value, float) and math.isnan(value) else value


def _now() -> datetime:
    """UTC, stored as naive TIMESTAMP: TIMESTAMPTZ would make every .df() reader need pytz."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


@dataclass(frozen=True)
class SavedDataset:
    dataset_id: str
    created: bool  # False when the same content was stored before
    filled: int = 0  # stored before: its answers given the usage / chunk scores they lacked (stored before migration 17)


class Store:
    def __init__(self, path: str | Path, *, on_busy: Callable[[], None] | None = None):
        """`on_busy()` is called before each wait for another process to let go of the file (the CLI says so)."""
        self.path = str(path)
        self.wait = float(os.environ.get("RAGSCOPE_DB_WAIT", BUSY_WAIT))
        self.on_busy = on_busy
        # Reentrant: a cursor's finalizer may run (garbage collection) inside this thread's own _acquire/_release.
        self._lock = threading.RLock()
        self._con: duckdb.DuckDBPyConnection | None = None
        self._holders = 0
        if self.path == ":memory:":
            self._holders = 1  # never closed: an in-memory database would be gone
        else:
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise _unavailable(self.path, exc) from exc
        with self.lease():
            self._migrate()  # once per Store, so once per process and path (open_store)

    # -- plumbing ----------------------------------------------------------------------------

    @contextmanager
    def lease(self, *, wait: float | None = None, on_busy: Callable[[], None] | None = None) -> Iterator[Store]:
        """Hold the file for one unit of work; the last lease of the process to end closes it. Leases nest and
        threads share them. While another process holds the file, `on_busy()` (else the store's) is called and
        the lease tries again with backoff for up to `wait` seconds (default: the store's; math.inf: until
        it gets the file), then raises StoreLocked."""
        self._acquire(self.wait if wait is None else wait, on_busy or self.on_busy)
        try:
            yield self
        finally:
            self._release()

    def _acquire(self, wait: float, on_busy: Callable[[], None] | None) -> None:
        deadline, delay = time.monotonic() + wait, _FIRST_DELAY
        while True:
            with self._lock:
                self._holders += 1  # first: a finalizer running in between must not close the connection
                try:
                    if self._con is None:
                        self._con = duckdb.connect(self.path, config=_CONFIG)
                    return
                except duckdb.Error as exc:
                    self._holders -= 1
                    if "could not set lock" not in str(exc).lower():
                        raise _unavailable(self.path, exc) from None
                    # Without its traceback: that holds this frame, which holds it (a cycle), and the callers'
                    # frames, so a cursor taken by the caller would hold the file until the GC ran, not until its end.
                    error = exc.with_traceback(None)
            left = deadline - time.monotonic()
            if left <= 0:
                raise StoreLocked(
                    f"{self.path} is in use by another process (a running RAGScope app or CLI job, or another "
                    f"DuckDB client) and was not let go of within {wait:.0f} s. Stop it, or point --db / "
                    "RAGSCOPE_DB at another file."
                ) from error
            if on_busy is not None:
                on_busy()
            time.sleep(min(random.uniform(0.5, 1) * delay, left))
            delay = min(2 * delay, _MAX_DELAY)

    def _release(self) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders == 0 and self._con is not None:
                con, self._con = self._con, None
                con.close()  # the file is free for another process

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A cursor for one thread or one script run (a shared connection raises 'busy'). It holds a lease
        until it is garbage, so a query works with or without one held around it."""
        self._acquire(self.wait, self.on_busy)
        try:
            cur = self._con.cursor()
        except BaseException:
            self._release()
            raise
        weakref.finalize(cur, self._release)
        return cur

    @contextmanager
    def _transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor whose statements commit together, or not at all (nothing is ever half written)."""
        cur = self.cursor()
        cur.execute("BEGIN")
        try:
            yield cur
        except BaseException:
            cur.execute("ROLLBACK")
            raise
        cur.execute("COMMIT")

    def close(self) -> None:
        """Let go of the file now (tests, teardown); a later lease opens it again."""
        with self._lock:
            if self._con is not None:
                con, self._con = self._con, None
                con.close()

    def schema_version(self) -> int:
        cur = self.cursor()
        cur.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER, applied_at TIMESTAMP)")
        return cur.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchall()[0][0]

    @_writes
    def _migrate(self) -> None:
        current = self.schema_version()
        if current > SCHEMA_VERSION:
            raise RuntimeError(
                f"{self.path} has schema version {current}, newer than this RAGScope ({SCHEMA_VERSION}); upgrade RAGScope."
            )
        for version in range(current + 1, SCHEMA_VERSION + 1):
            with self._transaction() as cur:
                cur.execute(MIGRATIONS[version - 1])
                cur.execute("INSERT INTO schema_version VALUES (?, ?)", [version, _now()])

    def _append(self, cur: duckdb.DuckDBPyConnection, table: str, data: pa.Table | pd.DataFrame) -> None:
        cur.register("_incoming", data)
        try:
            cols = ", ".join(data.column_names if isinstance(data, pa.Table) else data.columns)
            cur.execute(f"INSERT OR REPLACE INTO {table} ({cols}) SELECT {cols} FROM _incoming")
        finally:
            cur.unregister("_incoming")

    # -- datasets ----------------------------------------------------------------------------

    @_writes
    def save_dataset(self, dataset) -> SavedDataset:
        """Store a loaded `evaluators.loaders.Dataset` once; the same content again stores nothing new, except the
        usage and chunk scores its stored answers lack (a file stored before migration 17: `_fill_usage`)."""
        dataset_id = "ds_" + dataset.content_hash[:16]
        cur = self.cursor()
        if cur.execute("SELECT 1 FROM datasets WHERE content_hash = ?", [dataset.content_hash]).fetchall():
            return SavedDataset(dataset_id, created=False, filled=self._fill_usage(dataset_id, dataset.outputs))
        methods = sorted({o.method for o in dataset.outputs})
        with self._transaction() as cur:
            cur.execute(
                "INSERT INTO datasets VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [dataset_id, dataset.source, dataset.format, dataset.content_hash, len(dataset.golden),
                 len(dataset.outputs), methods, json.dumps(dataset.columns), _now()],
            )
            # In slices: one Arrow copy of a slice at a time, and DuckDB's insert works on that much at once.
            for i in range(0, len(dataset.golden), _SLICE_ROWS):
                self._append(cur, "golden_items", _golden_table(dataset_id, dataset.golden[i:i + _SLICE_ROWS]))
            for i in range(0, len(dataset.outputs), _SLICE_ROWS):
                self._append(cur, "rag_outputs", _outputs_table(dataset_id, dataset.outputs[i:i + _SLICE_ROWS]))
        return SavedDataset(dataset_id, created=True)

    def _fill_usage(self, dataset_id: str, outputs) -> int:
        """A file stored before migration 17 (its usage columns and chunk scores NULL) and loaded again: its answers
        given what the loader now reads, each column only where the stored one is NULL (never a stored value
        changed; runs and scores untouched), in one transaction; how many answers gained something."""
        if not any(o.usage is not None or any(c.score is not None for c in o.contexts) for o in outputs):
            return 0
        columns = ("context_scores", *_USAGE_COLUMNS)
        gains = " OR ".join(f"(o.{c} IS NULL AND i.{c} IS NOT NULL)" for c in columns)
        match = "o.dataset_id = i.dataset_id AND o.question_id = i.question_id AND o.method = i.method"
        filled = 0
        with self._transaction() as cur:
            for start in range(0, len(outputs), _SLICE_ROWS):
                cur.register("_incoming", _outputs_table(dataset_id, outputs[start:start + _SLICE_ROWS]))
                try:
                    filled += cur.execute(f"SELECT count(*) FROM rag_outputs o JOIN _incoming i ON {match} "
                                          f"WHERE {gains}").fetchall()[0][0]
                    cur.execute(f"UPDATE rag_outputs o SET "
                                f"{', '.join(f'{c} = coalesce(o.{c}, i.{c})' for c in columns)} "
                                f"FROM _incoming i WHERE {match} AND ({gains})")
                finally:
                    cur.unregister("_incoming")
        return filled

    def golden_items(self, dataset_id: str) -> list[GoldenItem]:
        rows = self.cursor().execute(
            "SELECT question_id, question, reference, question_type, evidence, reference_contexts, checks, relevant_ids "
            "FROM golden_items WHERE dataset_id = ? ORDER BY question_id", [dataset_id]
        ).fetchall()
        return [
            GoldenItem(qid, q, ref, qtype, ev, tuple(rc or ()), tuple(json.loads(ch)) if ch else (),
                       tuple((r["id"], r["grade"]) for r in rel or ()))
            for qid, q, ref, qtype, ev, rc, ch, rel in rows
        ]

    def rag_outputs(self, dataset_ids: list[str]) -> list[RagOutput]:
        rows = self.cursor().execute(
            f"SELECT question_id, method, answer, contexts, context_scores, {', '.join(_USAGE_COLUMNS)} "
            "FROM rag_outputs WHERE list_contains(?, dataset_id) ORDER BY method, question_id", [dataset_ids]
        ).fetchall()
        return [
            RagOutput(qid, method, answer, _chunks(contexts, scores), _usage(usage))
            for qid, method, answer, contexts, scores, *usage in rows
        ]

    # -- runs and scores -----------------------------------------------------------------------

    @_writes
    def create_run(self, *, name: str, golden_dataset_id: str, outputs_dataset_ids: list[str], judge: str,
                   judge_model: str | None, metrics: list[str], config: dict, n_samples: int,
                   user_metrics: Sequence[dict] = ()) -> str:
        """A new run, with the definitions of the users' metrics it computes (`user_metrics`: dicts of metric, kind,
        version, definition), together; its id."""
        # 4 random bytes: sessions may start runs in the same second (1 in 65,536 clashed with 2)
        run_id = f"run-{_now():%Y%m%d-%H%M%S}-{secrets.token_hex(4)}"
        with self._transaction() as cur:
            cur.execute(
                "INSERT INTO runs (run_id, name, created_at, golden_dataset_id, outputs_dataset_ids, judge, judge_model, "
                "metrics, config, status, n_samples) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [run_id, name, _now(), golden_dataset_id, outputs_dataset_ids, judge, judge_model, metrics,
                 json.dumps(config), RunStatus.RUNNING.value, n_samples],
            )
            if user_metrics:
                cur.executemany("INSERT INTO user_metrics VALUES (?, ?, ?, ?, ?)",
                                [[run_id, u["metric"], u["kind"], u["version"], json.dumps(u["definition"])]
                                 for u in user_metrics])
        return run_id

    def user_metrics(self, run_id: str | None = None) -> list[dict]:
        """The users' metrics of run `run_id` (of every run when None, oldest run first): dicts of run_id, metric,
        kind, version and definition (parsed)."""
        rows = self.cursor().execute(
            "SELECT u.run_id, u.metric, u.kind, u.version, u.definition FROM user_metrics u JOIN runs r USING (run_id) "
            "WHERE $run IS NULL OR u.run_id = $run ORDER BY r.created_at, u.run_id, u.metric", {"run": run_id}
        ).fetchall()
        return [{"run_id": r, "metric": m, "kind": k, "version": v, "definition": json.loads(d)}
                for r, m, k, v, d in rows]

    @_writes
    def save_calibration(self, *, judge: str, judge_model: str | None, judge_config: dict, n_items: int, seed: int,
                         cost_usd: float | None, status: str, note: str, rows: list[dict]) -> str:
        """A judge's calibration (runs/calibrate.py) and its rows (CALIBRATION_RESULT_COLUMNS each), together; its id."""
        calibration_id = f"cal-{_now():%Y%m%d-%H%M%S}-{secrets.token_hex(4)}"
        columns = ("calibration_id", *CALIBRATION_RESULT_COLUMNS)
        with self._transaction() as cur:
            cur.execute("INSERT INTO calibrations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [calibration_id, _now(), judge, judge_model, json.dumps(judge_config), n_items, seed,
                         cost_usd, status, note])
            if rows:
                cur.executemany(f"INSERT INTO calibration_results ({', '.join(columns)}) VALUES "
                                f"({', '.join('?' * len(columns))})",
                                [[calibration_id, *(_sql_value(r[c]) for c in CALIBRATION_RESULT_COLUMNS)]
                                 for r in rows])
        return calibration_id

    def run(self, run_id: str) -> dict | None:
        df = self.cursor().execute("SELECT * FROM runs WHERE run_id = ?", [run_id]).df()
        return None if df.empty else df.iloc[0].to_dict()

    @_writes
    def set_run_sample(self, run_id: str, config: dict, n_samples: int) -> None:
        """A sampled run's sample grown (runs.lifecycle.resume): its config and the samples it now counts."""
        self.cursor().execute("UPDATE runs SET config = ?, n_samples = ? WHERE run_id = ?",
                              [json.dumps(config), n_samples, run_id])

    @_writes
    def mark_running(self, run_id: str) -> None:
        """A resumed run (cancelled, interrupted, failed, or re-scoring its failed cells) runs again."""
        self.cursor().execute("UPDATE runs SET status = ?, finished_at = NULL, error = NULL WHERE run_id = ?",
                              [RunStatus.RUNNING.value, run_id])

    @_writes
    def set_run_config(self, run_id: str, config: dict) -> None:
        """A run's config, changed while it is resumed (its budget: evaluators.runs.budget.set_limit)."""
        self.cursor().execute("UPDATE runs SET config = ? WHERE run_id = ?", [json.dumps(config), run_id])

    @_writes
    def finish_run(self, run_id: str, status: RunStatus, error: str | None = None) -> None:
        self.cursor().execute(
            "UPDATE runs SET status = ?, finished_at = ?, error = ? WHERE run_id = ?",
            [RunStatus(status).value, _now(), error, run_id],
        )

    @_writes
    def write_scores(self, scores: pd.DataFrame) -> None:
        """Insert or replace score cells (a retried cell replaces its error row; no duplicates)."""
        if scores.empty:
            return
        # repeats, label, counts: optional
        frame = scores[[c for c in SCORE_COLUMNS if c in scores]].assign(created_at=_now())
        with self._transaction() as cur:
            self._append(cur, "scores", frame)

    @_writes
    def write_claims(self, run_id: str, keys: list[tuple[str, str]], claims: list[dict], chunks: list[dict],
                     questions: list[dict] = ()) -> None:
        """The judge's output for the (question_id, method) `keys` of a run: rows of `claims`,
        `chunk_verdicts` (see evaluators.metrics.claims.claim_rows) and `generated_questions`, replacing
        every earlier row of those keys (a re-judged answer may have fewer claims than before)."""
        tables = (("claims", claims, _CLAIMS_SCHEMA), ("chunk_verdicts", chunks, _CHUNK_VERDICTS_SCHEMA),
                  ("generated_questions", questions, _GENERATED_QUESTIONS_SCHEMA))
        replaced = pa.table({"question_id": [q for q, _ in keys], "method": [m for _, m in keys]})
        with self._transaction() as cur:
            cur.register("_replaced", replaced)
            try:
                for table, _, _ in tables:
                    cur.execute(f"DELETE FROM {table} USING _replaced r WHERE {table}.run_id = ? "
                                f"AND {table}.question_id = r.question_id AND {table}.method = r.method", [run_id])
            finally:
                cur.unregister("_replaced")
            for table, rows, schema in tables:
                if rows:
                    self._append(cur, table, pa.Table.from_pylist(list(rows), schema=schema))

    @_writes
    def write_judge_calls(self, calls: list[dict]) -> None:
        """Rows of `judge_calls`: every attempt with its raw request and response (never a key). Each request is
        stored packed (evaluators.store.ledger): the texts it shares with other requests (system prompt, schema, the
        sample's chunks, answer and reference) once in `judge_texts`; the `judge_calls` view joins them back."""
        if not calls:
            return
        quoted = self._quoted_texts(calls)
        rows, texts, now = [], {}, _now()  # one created_at per batch, as the Claims screen orders by it
        for call in calls:
            parts = None
            if call.get("request") is not None:
                packed, new = ledger.pack(call["request"], quoted.get(_sample_key(call), ()))
                parts = [{"literal": literal, "hash": hash_} for literal, hash_ in packed]
                texts |= new
            rows.append({**call, "request_parts": parts, "cached": bool(call.get("cached")), "created_at": now})
        incoming_calls = pa.Table.from_pylist(rows, schema=_JUDGE_CALLS_SCHEMA)
        incoming_texts = pa.table({"hash": list(texts), "text": list(texts.values())}, schema=_JUDGE_TEXTS_SCHEMA)
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                with self._transaction() as cur:  # texts and the calls that name them commit together
                    cur.register("_texts", incoming_texts)
                    try:
                        cur.execute("INSERT OR IGNORE INTO judge_texts SELECT hash, text FROM _texts")
                    finally:
                        cur.unregister("_texts")
                    self._append(cur, "judge_calls_packed", incoming_calls)
                return
            except duckdb.TransactionException:
                # Another run committed one of the same texts meanwhile (a key conflict at commit): its copy is
                # there now, so the next attempt skips it.
                if attempt == WRITE_ATTEMPTS:
                    raise

    def _quoted_texts(self, calls: list[dict]) -> dict[tuple[str, str, str], list[str]]:
        """The texts of each call's sample (chunks, answer, reference, question): what its requests quote."""
        keys = sorted({_sample_key(c) for c in calls if None not in _sample_key(c)})
        if not keys:
            return {}
        cur = self.cursor()
        cur.register("_keys", pa.table(list(zip(*keys)), names=["run_id", "question_id", "method"]))
        try:
            rows = cur.execute(_SAMPLE_TEXTS).fetchall()
        finally:
            cur.unregister("_keys")
        quoted: dict[tuple[str, str, str], list[str]] = {}
        for run_id, question_id, method, texts in rows:
            quoted.setdefault((run_id, question_id, method), []).extend(t for t in texts if t)
        return quoted

    # -- human annotations ---------------------------------------------------------------------

    @_writes
    def add_annotation(self, *, run_id: str, question_id: str, method: str, author: str, metric: str | None = None,
                       claim_source: str | None = None, claim_idx: int | None = None, label: str | None = None,
                       override_value: float | None = None, tags: Sequence[str] = (), note: str | None = None,
                       judge_label: str | None = None, judge_value: float | None = None,
                       claim_text: str | None = None) -> str:
        """Append one human label beside the judge's output (never replacing it): a claim verdict
        (claim_source + claim_idx + label), a score override (metric + override_value, and label for
        a label metric), tags or a note. Earlier labels stay; readers take the latest per target."""
        author = (author or "").strip()
        if not author:
            raise ValueError("an annotation needs an author")
        if (claim_source is None) != (claim_idx is None):
            raise ValueError("a claim annotation needs both claim_source and claim_idx")
        if claim_source not in (None, "answer", "reference"):
            raise ValueError(f"claim_source must be 'answer' or 'reference', not {claim_source!r}")
        tags = [t.strip() for t in tags if t and t.strip()]
        note = note.strip() if note and note.strip() else None
        if label is None and override_value is None and not tags and note is None:
            raise ValueError("an annotation needs a label, an override value, tags or a note")
        annotation_id = "ann-" + secrets.token_hex(8)
        self.cursor().execute(
            "INSERT INTO annotations (annotation_id, run_id, question_id, method, metric, claim_source, claim_idx, "
            "label, override_value, tags, note, author, created_at, judge_label, judge_value, claim_text) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [annotation_id, run_id, question_id, method, metric, claim_source, claim_idx, label, override_value,
             tags, note, author, _now(), judge_label, judge_value, claim_text],
        )
        return annotation_id

    @_writes
    def add_ratings(self, run_id: str, ratings: Sequence[dict], *, source: str, source_hash: str) -> bool:
        """Append imported human ratings (dicts with question_id, method, author, dimension, rating
        or label, note) of one source in one transaction: all or none, one bulk insert. False, and
        nothing written, when a source with this content hash was imported into the run before (a
        re-import is a no-op, not duplicates). Validation is the caller's (evaluators.store.ratings)."""
        now = _now()
        rows = [{**r, "annotation_id": "ann-" + secrets.token_hex(8), "run_id": run_id, "source": source,
                 "source_hash": source_hash, "created_at": now} for r in ratings]
        table = pa.Table.from_pylist(rows, schema=_RATINGS_SCHEMA)
        with self._transaction() as cur:
            if cur.execute("SELECT 1 FROM annotations WHERE run_id = ? AND source_hash = ? LIMIT 1",
                           [run_id, source_hash]).fetchall():
                return False
            self._append(cur, "annotations", table)
        return True

    def run_keys(self, run_id: str) -> tuple[set[str], set[str]]:
        """The question ids of a run's golden set and the methods of its outputs (what a label may name)."""
        cur = self.cursor()
        questions = cur.execute(
            "SELECT g.question_id FROM runs r JOIN golden_items g ON g.dataset_id = r.golden_dataset_id "
            "WHERE r.run_id = ?", [run_id]).fetchall()
        methods = cur.execute(
            "SELECT DISTINCT o.method FROM runs r JOIN rag_outputs o ON list_contains(r.outputs_dataset_ids, "
            "o.dataset_id) WHERE r.run_id = ?", [run_id]).fetchall()
        return {q for q, in questions}, {m for m, in methods}

    def annotations(self, run_id: str) -> pd.DataFrame:
        """Every annotation of a run, oldest first."""
        return self.cursor().execute(
            "SELECT * FROM annotations WHERE run_id = ? ORDER BY created_at, annotation_id", [run_id]).df()

    # -- judge cache ---------------------------------------------------------------------------

    def cached_reply(self, key: str) -> dict | None:
        """The cached judge reply for `key` (response, input_tokens, output_tokens), or None."""
        rows = self.cursor().execute(
            "SELECT response, input_tokens, output_tokens FROM judge_cache WHERE cache_key = ?", [key]
        ).fetchall()
        if not rows:
            return None
        response, input_tokens, output_tokens = rows[0]
        return {"response": response, "input_tokens": input_tokens, "output_tokens": output_tokens}

    @_writes
    def cache_reply(self, key: str, *, model: str | None, prompt_version: str | None, purpose: str | None,
                    response: str, input_tokens: int | None = None, output_tokens: int | None = None) -> None:
        """Keep a validated judge reply; a key stored before keeps its first reply."""
        try:
            self.cursor().execute(
                "INSERT OR IGNORE INTO judge_cache VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [key, model, prompt_version, purpose, response, input_tokens, output_tokens, _now()],
            )
        except duckdb.TransactionException:
            pass  # two runs stored the same key at once (a conflict at commit): the other's reply is kept

    # -- Batch API batches (judges/batch_api.py) ------------------------------------------------

    @_writes
    def add_batch(self, run_id: str, batch_id: str, input_file_id: str, custom_ids: Sequence[str]) -> None:
        """Record a batch the run submitted, before it is polled (a restarted run finds it)."""
        now = _now()
        self.cursor().execute("INSERT INTO judge_batches VALUES (?, ?, ?, ?, NULL, false, ?, ?)",
                              [batch_id, run_id, input_file_id, list(custom_ids), now, now])

    @_writes
    def update_batch(self, batch_id: str, status: str) -> None:
        self.cursor().execute("UPDATE judge_batches SET status = ?, updated_at = ? WHERE batch_id = ?",
                              [status, _now(), batch_id])

    @_writes
    def consume_batches(self, batch_ids: Sequence[str]) -> None:
        """Batches whose results the run has used: a restart must not take them again."""
        self.cursor().execute("UPDATE judge_batches SET consumed = true, updated_at = ? WHERE list_contains(?, "
                              "batch_id)", [_now(), list(batch_ids)])

    def open_batches(self, run_id: str) -> dict[str, str]:
        """custom_id -> batch_id of the run's batches whose results it has not used yet."""
        rows = self.cursor().execute(
            "SELECT unnest(custom_ids), batch_id FROM judge_batches WHERE run_id = ? AND NOT consumed ORDER BY "
            "created_at", [run_id]).fetchall()
        return dict(rows)

    def finished_cells(self, run_id: str) -> set[tuple[str, str, str]]:
        """(question_id, method, metric) cells that need no more work: every status but the errors."""
        rows = self.cursor().execute(
            "SELECT question_id, method, metric FROM scores WHERE run_id = ? AND NOT list_contains(?, status)",
            [run_id, list(ERROR_STATUSES)],
        ).fetchall()
        return set(rows)


_stores: dict[str, Store] = {}
_stores_lock = threading.Lock()


def open_store(path: str | Path, *, on_busy: Callable[[], None] | None = None) -> Store:
    """The process's one Store for `path` (created, and its migrations run, on first use; `on_busy` is the new
    Store's). It holds the file only while a lease or cursor is alive."""
    key = str(path) if str(path) == ":memory:" else str(Path(path).resolve())
    with _stores_lock:
        if key not in _stores:
            _stores[key] = Store(path, on_busy=on_busy)
        return _stores[key]


def close_store(path: str | Path) -> None:
    key = str(path) if str(path) == ":memory:" else str(Path(path).resolve())
    with _stores_lock:
        store = _stores.pop(key, None)
    if store:
        store.close()


def _sample_key(call: dict) -> tuple[str, str, str]:
    return call.get("run_id"), call.get("question_id"), call.get("method")


def _golden_table(dataset_id: str, items) -> pa.Table:
    return pa.table({
        "dataset_id": [dataset_id] * len(items),
        "question_id": [g.question_id for g in items],
        "question": [g.question for g in items],
        "reference": [g.reference for g in items],
        "question_type": [g.question_type for g in items],
        "evidence": [g.evidence for g in items],
        "reference_contexts": pa.array([list(g.reference_contexts) for g in items], pa.list_(pa.string())),
        "checks": [json.dumps(list(g.checks)) if g.checks else None for g in items],
        "relevant_ids": pa.array([[{"id": d, "grade": v} for d, v in g.relevant_ids] or None for g in items],
                                 _RELEVANT_TYPE),
    })


def priced(usage: Usage | None) -> Usage | None:
    """`usage` with its cost when it has none but gives both token counts and a model with a list price
    (judges.prices, the one table of prices); else as it is: an unknown cost stays None, never 0."""
    price = None if usage is None or usage.cost_usd is not None else list_price(usage.model)
    if price is None or usage.input_tokens is None or usage.output_tokens is None:
        return usage
    return dataclasses.replace(usage, cost_usd=cost(usage.input_tokens, usage.output_tokens, price))


def _outputs_table(dataset_id: str, outputs) -> pa.Table:
    usages = [priced(o.usage) or _NO_USAGE for o in outputs]
    return pa.table({
        "dataset_id": [dataset_id] * len(outputs),
        "question_id": [o.question_id for o in outputs],
        "method": [o.method for o in outputs],
        "answer": [o.answer for o in outputs],
        "contexts": pa.array(
            [[{"chunk_id": c.chunk_id, "text": c.text} for c in o.contexts] for o in outputs], _CONTEXTS_TYPE
        ),
        # NULL unless some chunk has a score: most sources give none, and a list of NULLs says nothing more
        "context_scores": pa.array([[c.score for c in o.contexts] if any(c.score is not None for c in o.contexts)
                                    else None for o in outputs], pa.list_(pa.float64())),
        **{column: pa.array([getattr(u, column) for u in usages], kind) for column, kind in _USAGE_COLUMNS.items()},
    })


def _chunks(contexts: list[dict], scores: list | None) -> tuple[Chunk, ...]:
    scores = scores or [None] * len(contexts)
    return tuple(Chunk(c["chunk_id"], c["text"], s) for c, s in zip(contexts, scores))


def _usage(values: list) -> Usage | None:
    """A stored output's usage; None when every column is NULL (the source said nothing, or it predates them)."""
    return None if all(v is None for v in values) else Usage(*values)
