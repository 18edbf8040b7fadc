"""Judge-call ledger: bytes per sample of the `judge_calls` rows with whole requests (before) and packed
(after: evaluators.store.ledger, each shared text once in `judge_texts`), with write and read times.

    .venv/bin/python bench/bench_ledger.py [--samples 10000 100000] [--out bench/results/ledger.md]

Each sample is judged as the OpenAI judge does it, 3 calls: extraction, verification (12 chunks: one
call) and holistic. Requests are built with `evaluators.judges.prompts`' message builders and schemas
and serialised as `openai_judge` does; response bodies are shaped like api.openai.com's. Corpus
assumption: every sample's 12 chunks of ~1,000 characters come from one corpus of 10,000 distinct
chunks. The same rows go into three files (before, before with zstd responses, after through the real
Store); the report (bench/results/ledger.md) says how each figure is taken.
"""
from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import random
import statistics
import string
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402
import pyarrow as pa  # noqa: E402

from evaluators.judges import prompts  # noqa: E402
from evaluators.queries import claims as claims_queries  # noqa: E402
from evaluators.records import Chunk, GoldenItem, RagOutput  # noqa: E402
from evaluators.store import Store  # noqa: E402

CORPUS_CHUNKS = 10_000
CHUNKS_PER_SAMPLE = 12
CHUNK_CHARS = 1_000
LINE_BROKEN_SHARE = 0.3  # chunks with a line break every ~60 characters, as text extracted from PDFs has
METHODS = ("local_search", "basic_search")
BATCH_SAMPLES = 1_000  # the engine's BATCH_SIZE: one write_judge_calls per batch
MODEL = "gpt-4o-mini"
READ_QUESTIONS = 30

# schema 6's judge_calls (store.MIGRATIONS[0]): every request whole
BEFORE_TABLE = """
    CREATE TABLE judge_calls (
        call_id VARCHAR PRIMARY KEY, run_id VARCHAR, question_id VARCHAR, method VARCHAR, purpose VARCHAR NOT NULL,
        model VARCHAR, prompt_hash VARCHAR, request VARCHAR, response VARCHAR, input_tokens INTEGER,
        output_tokens INTEGER, latency_ms DOUBLE, cached BOOLEAN NOT NULL DEFAULT false, status VARCHAR NOT NULL,
        error VARCHAR, created_at TIMESTAMP NOT NULL)
"""
# the Claims screen's query before this change
BEFORE_QUERY = """
    SELECT method, purpose, status, model, input_tokens, output_tokens, latency_ms, cached, error,
           created_at, request, response, call_id
    FROM judge_calls WHERE run_id = ? AND question_id = ?
    ORDER BY method, created_at,
             CASE split_part(purpose, '_', 1) WHEN 'extraction' THEN 0 WHEN 'verification' THEN 1
                                              WHEN 'holistic' THEN 2 ELSE 3 END,
             purpose, rowid
"""


# -- texts ------------------------------------------------------------------------------------------

def vocabulary() -> list[str]:
    """Every word of the demo's chunk texts, repeats kept, so random draws follow real word frequencies."""
    path = ROOT / "data" / "demo" / "novel_44557_outputs.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts = {c if isinstance(c, str) else c["text"] for r in rows for c in r["contexts"]}
    return [w for t in sorted(texts) for w in t.split()]


class Texts:
    def __init__(self, words: list[str]):
        self.words = words

    def sentence(self, rng: random.Random, low: int = 8, high: int = 20, end: str = ".") -> str:
        text = " ".join(rng.choices(self.words, k=rng.randint(low, high))).strip(".,;:!?\"'")
        return text[:1].upper() + text[1:] + end

    def paragraph(self, rng: random.Random, chars: int) -> str:
        sentences = []
        while sum(len(s) + 1 for s in sentences) < chars:
            sentences.append(self.sentence(rng))
        return " ".join(sentences)

    def chunk(self, rng: random.Random) -> str:
        text = self.paragraph(rng, rng.randint(CHUNK_CHARS - 150, CHUNK_CHARS + 150))
        return "\n".join(textwrap.wrap(text, 60)) if rng.random() < LINE_BROKEN_SHARE else text


def corpus(texts: Texts) -> list[str]:
    rng = random.Random(7)
    return [texts.chunk(rng) for _ in range(CORPUS_CHUNKS)]


def sample(i: int, texts: Texts, chunks: list[str]) -> dict:
    """Sample i: question i // 2 answered by method i % 2 (the question and its reference are shared)."""
    q = random.Random(f"question {i // len(METHODS)}")
    rng = random.Random(f"sample {i}")
    question = texts.sentence(q, 7, 14, "?")
    reference_claims = [texts.sentence(q, 8, 16) for _ in range(q.randint(2, 5))]
    answer_claims = [texts.sentence(rng, 8, 16) for _ in range(rng.randint(3, 6))]
    return {
        "question_id": f"q{i // len(METHODS):06d}", "method": METHODS[i % len(METHODS)], "question": question,
        "reference": " ".join(reference_claims), "reference_claims": reference_claims,
        "answer": " ".join(answer_claims), "answer_claims": answer_claims,
        "chunks": [chunks[j] for j in rng.sample(range(len(chunks)), CHUNKS_PER_SAMPLE)], "rng": rng,
    }


# -- judge calls ------------------------------------------------------------------------------------

def calls(s: dict, texts: Texts, run_id: str) -> list[dict]:
    """The sample's 3 judge calls as the engine hands them to Store.write_judge_calls."""
    rng = s["rng"]
    verdicts = ("supported", "not_found", "not_found", "contradicted")
    chunk_ids = [prompts.chunk_id(j) for j in range(len(s["chunks"]))]

    def cells() -> list[dict]:
        return [{"chunk_id": c, "verdict": rng.choice(verdicts)} for c in chunk_ids]

    extraction = {"answer_claims": s["answer_claims"], "reference_claims": s["reference_claims"],
                  "generated_questions": [texts.sentence(rng, 6, 12, "?") for _ in range(3)]}
    verification = {
        "answer_claims": [{"claim_id": prompts.answer_claim_id(i), "chunk_verdicts": cells(),
                           "reference_verdict": rng.choice(verdicts), "matched_reference_claims": ["R1"]}
                          for i in range(len(s["answer_claims"]))],
        "reference_claims": [{"claim_id": prompts.reference_claim_id(i), "chunk_verdicts": cells(),
                              "answer_verdict": rng.choice(verdicts)} for i in range(len(s["reference_claims"]))],
        "chunks": [{"chunk_id": c, "relevant": rng.random() < 0.5, "relevance_score": rng.randrange(0, 101, 5),
                    "reason": texts.sentence(rng, 6, 12)} for c in chunk_ids]}
    holistic = {
        **{d: rng.randint(2, 5) for d in ("correctness", "completeness", "faithfulness", "relevance", "clarity",
                                         "overall_score")},
        "verdict": "pass", "explanation": " ".join(texts.sentence(rng) for _ in range(3)),
        **{part: {"reasoning": texts.sentence(rng, 12, 24), "score": rng.randint(1, 5)}
           for part in ("alignment", "question_relevance")},
        **{part: {"reasoning": texts.sentence(rng, 12, 24), "score": rng.randrange(0, 101, 5)}
           for part in ("step1_correctness", "step2_completeness", "step3_consistency")},
        "classification": "CORRECT"}
    steps = [
        ("extraction", prompts.extraction_messages(s["question"], s["answer"], s["reference"]),
         prompts.EXTRACTION_SCHEMA, extraction),
        ("verification", prompts.verification_messages(s["question"], s["answer_claims"], s["reference_claims"],
                                                       list(enumerate(s["chunks"])), True),
         prompts.verification_schema(True), verification),
        ("holistic", prompts.holistic_messages(s["question"], s["reference"], s["chunks"], s["answer"]),
         prompts.HOLISTIC_SCHEMA, holistic),
    ]
    rows = []
    for purpose, messages, schema, reply in steps:
        body = {"model": MODEL, "messages": messages, "temperature": 0, "seed": 0,
                "response_format": {"type": "json_schema", "json_schema": schema}}
        request = json.dumps(body, ensure_ascii=False)
        content = json.dumps(reply, ensure_ascii=False, separators=(",", ":"))
        input_tokens, output_tokens = len(request) // 4, len(content) // 4
        rows.append({
            "call_id": uuid.UUID(int=rng.getrandbits(128)).hex, "run_id": run_id, "question_id": s["question_id"],
            "method": s["method"], "purpose": purpose, "model": MODEL,
            "prompt_hash": hashlib.sha256(prompts.prompt_json(messages).encode()).hexdigest(),
            "request": request, "response": completion(rng, content, input_tokens, output_tokens),
            "input_tokens": input_tokens, "output_tokens": output_tokens,
            "latency_ms": round(rng.uniform(800, 9000), 1), "cached": False, "status": "ok", "error": None})
    return rows


def completion(rng: random.Random, content: str, input_tokens: int, output_tokens: int) -> str:
    """A chat completion body as api.openai.com sends it (indented JSON)."""
    return json.dumps({
        "id": "chatcmpl-" + "".join(rng.choices(string.ascii_letters + string.digits, k=29)),
        "object": "chat.completion", "created": 1_764_000_000 + rng.randrange(10_000_000),
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": None,
                                             "annotations": []},
                     "logprobs": None, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": input_tokens, "completion_tokens": output_tokens,
                  "total_tokens": input_tokens + output_tokens,
                  "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                  "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                                "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}},
        "service_tier": "default", "system_fingerprint": "fp_" + rng.randbytes(5).hex(),
    }, indent=2, ensure_ascii=False)


# -- the two files ----------------------------------------------------------------------------------

class Dataset:
    """The fields of loaders.Dataset that Store.save_dataset reads."""

    def __init__(self, name: str, golden=(), outputs=()):
        self.source, self.format, self.columns = name, "jsonl", {}
        self.golden, self.outputs = tuple(golden), tuple(outputs)
        self.content_hash = hashlib.sha256(f"{name} {len(self.golden)} {len(self.outputs)}".encode()).hexdigest()


def size(path: Path) -> int:
    wal = path.with_name(path.name + ".wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def footprint(con, path: Path) -> tuple[int, int]:
    """(file bytes, bytes in free blocks) after a CHECKPOINT: DuckDB reuses free blocks for later writes."""
    con.execute("CHECKPOINT")
    block_size, free_blocks = con.execute("SELECT block_size, free_blocks FROM pragma_database_size() "
                                          "WHERE database_name = current_database()").fetchall()[0]
    return size(path), block_size * free_blocks


class Before:
    """A file with schema 6's judge_calls table (optionally with zstd forced on `response`)."""

    def __init__(self, path: Path, zstd_responses: bool = False):
        ddl = BEFORE_TABLE.replace("response VARCHAR", "response VARCHAR USING COMPRESSION zstd") \
            if zstd_responses else BEFORE_TABLE
        path.unlink(missing_ok=True)
        self.path, self.con, self.write = path, duckdb.connect(str(path)), 0.0
        self.con.execute(ddl)
        self.start = footprint(self.con, path)[0]

    def insert(self, table: pa.Table) -> None:
        t = time.perf_counter()
        self.con.register("_incoming", table)
        self.con.execute("INSERT INTO judge_calls SELECT * FROM _incoming")
        self.con.unregister("_incoming")
        self.write += time.perf_counter() - t

    def growth(self) -> tuple[int, int]:
        total, free = footprint(self.con, self.path)
        return total - self.start, free


def run_size(n: int, texts: Texts, chunks: list[str], workdir: Path) -> dict:
    after_path = workdir / f"after_{n}.duckdb"
    after_path.unlink(missing_ok=True)
    samples = [sample(i, texts, chunks) for i in range(n)]
    golden = {s["question_id"]: GoldenItem(s["question_id"], s["question"], s["reference"]) for s in samples}
    outputs = [RagOutput(s["question_id"], s["method"], s["answer"],
                         tuple(Chunk(f"c{k}", t) for k, t in enumerate(s["chunks"]))) for s in samples]

    store = Store(after_path)
    golden_id = store.save_dataset(Dataset("golden", golden=golden.values())).dataset_id
    outputs_id = store.save_dataset(Dataset("outputs", outputs=outputs)).dataset_id
    run_id = store.create_run(name="ledger bench", golden_dataset_id=golden_id, outputs_dataset_ids=[outputs_id],
                              judge="openai", judge_model=MODEL, metrics=[], config={}, n_samples=n)
    del golden, outputs
    before, before_zstd = Before(workdir / f"before_{n}.duckdb"), Before(workdir / f"zstd_{n}.duckdb", True)
    start_after = footprint(store.cursor(), after_path)[0]

    write_after = 0.0
    n_calls = request_chars = response_chars = 0
    for start in range(0, n, BATCH_SAMPLES):
        batch = [c for s in samples[start:start + BATCH_SAMPLES] for c in calls(s, texts, run_id)]
        n_calls += len(batch)
        request_chars += sum(len(c["request"]) for c in batch)
        response_chars += sum(len(c["response"]) for c in batch)
        table = pa.Table.from_pylist([{**c, "created_at": dt.datetime(2026, 11, 24)} for c in batch])
        before.insert(table)
        before_zstd.insert(table)
        t = time.perf_counter()
        store.write_judge_calls(batch)
        write_after += time.perf_counter() - t
        print(f"  {min(start + BATCH_SAMPLES, n):,} / {n:,} samples", end="\r", flush=True, file=sys.stderr)
    print(file=sys.stderr)
    del samples

    cur = store.cursor()
    total, free = footprint(cur, after_path)
    growth = {"before": before.growth(), "before_zstd": before_zstd.growth(), "after": (total - start_after, free)}
    n_texts, text_chars = cur.execute("SELECT count(*), sum(length(text)) FROM judge_texts").fetchall()[0]
    parts = cur.execute("SELECT avg(len(request_parts)), avg(len(list_filter(request_parts, lambda p: "
                        "p.hash IS NOT NULL))) FROM judge_calls_packed").fetchall()[0]
    reads = read_times(before.con, store, run_id, n)
    exact = compare_requests(before.con, cur)
    columns = column_sizes(cur, workdir, n)
    for b in (before, before_zstd):
        b.con.close()
        b.path.unlink()
    store.close()
    after_path.unlink()
    return {"n": n, "calls": n_calls, "request_chars": request_chars, "response_chars": response_chars,
            "growth": growth, "write_before": before.write, "write_after": write_after, "texts": n_texts,
            "text_chars": text_chars, "parts": parts, "reads": reads, "exact": exact, "columns": columns}


def read_times(before, store: Store, run_id: str, n: int) -> dict:
    """Median time of the Claims screen's judge-call query for one question, and of reading every request."""
    rng = random.Random(3)
    questions = [f"q{rng.randrange(n // len(METHODS)):06d}" for _ in range(READ_QUESTIONS)]
    times = {"question_before": [], "question_after": []}
    for qid in questions:
        t = time.perf_counter()
        old = before.execute(BEFORE_QUERY, [run_id, qid]).df()
        times["question_before"].append(time.perf_counter() - t)
        t = time.perf_counter()
        new = claims_queries.judge_calls(store, run_id, qid)
        times["question_after"].append(time.perf_counter() - t)
        assert list(old["request"]) == list(new["request"]) and list(old["call_id"]) == list(new["call_id"]), qid
    medians = {k: statistics.median(v) for k, v in times.items()}
    for name, con in (("all_before", before), ("all_after", store.cursor())):
        t = time.perf_counter()
        con.execute("SELECT sum(length(request)) FROM judge_calls WHERE run_id = ?", [run_id]).fetchall()
        medians[name] = time.perf_counter() - t
    return medians


def compare_requests(before, after) -> dict:
    """Every request of the packed file against the whole one: same calls, same md5 of the request text."""
    old = dict(before.execute("SELECT call_id, md5(request) FROM judge_calls").fetchall())
    new = dict(after.execute("SELECT call_id, md5(request) FROM judge_calls").fetchall())
    return {"calls": len(old), "identical": sum(new.get(k) == v for k, v in old.items()),
            "same_ids": old.keys() == new.keys()}


def column_sizes(cur, workdir: Path, n: int) -> dict:
    """Bytes per sample of each part of the packed ledger, each copied alone, with its column definition,
    into a file of its own."""
    parts = {
        "responses": ("response VARCHAR USING COMPRESSION zstd", "SELECT response FROM judge_calls_packed"),
        "request parts": ("request_parts STRUCT(literal VARCHAR, hash VARCHAR)[]",
                          "SELECT request_parts FROM judge_calls_packed"),
        "judge_texts": ("hash VARCHAR PRIMARY KEY, text VARCHAR USING COMPRESSION zstd", "SELECT * FROM judge_texts"),
        "other columns": (None, "SELECT * EXCLUDE (request_parts, response) FROM judge_calls_packed"),
    }
    sizes = {}
    for name, (columns, query) in parts.items():
        path = workdir / "part.duckdb"
        path.unlink(missing_ok=True)
        cur.execute(f"ATTACH '{path}' AS part")
        cur.execute("CHECKPOINT part")
        empty = size(path)
        if columns is None:  # the other columns as the store defines them, primary key included
            cur.execute(f"CREATE TABLE part.t AS {query} LIMIT 0")
            cur.execute("ALTER TABLE part.t ADD PRIMARY KEY (call_id)")
        else:
            cur.execute(f"CREATE TABLE part.t ({columns})")
        cur.execute(f"INSERT INTO part.t {query}")
        cur.execute("CHECKPOINT part")
        cur.execute("DETACH part")
        sizes[name] = (size(path) - empty) / n
        path.unlink()
    return sizes


# -- report -----------------------------------------------------------------------------------------

def load_note() -> str:
    one, _, _ = os.getloadavg()
    return f"load average (1 min) {one:.1f}"


def report(results: list[dict], elapsed: float, started_load: str) -> str:
    lines = [
        "# Judge-call ledger: bytes per sample before and after packing requests",
        "",
        f"Command, from the repository root: `.venv/bin/python bench/bench_ledger.py --samples "
        f"{' '.join(str(r['n']) for r in results)}` (the whole script: {elapsed:.0f} s)",
        "",
        f"Date: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')} · `nproc`: {os.cpu_count()} · "
        f"Python {platform.python_version()} · duckdb {duckdb.__version__} · prompts {prompts.PROMPT_VERSION} · "
        f"the machine is shared with other jobs: {started_load} at the start, {load_note()} at the end.",
        "",
        "What is written: per sample, the 3 judge calls of the OpenAI judge (extraction, verification of 12 chunks "
        "in one call, holistic), their requests built with `evaluators/judges/prompts.py` and serialised as "
        "`openai_judge` does, their response bodies shaped like api.openai.com's (indented chat completion with "
        "usage details; the reply as compact JSON: claims, a verdict per claim x chunk, a relevance and a reason "
        "per chunk, the holistic ratings with their reasoning). Texts are random words drawn from the demo's real "
        "chunk texts, so they compress like prose.",
        "",
        f"**Corpus assumption**: each sample's {CHUNKS_PER_SAMPLE} chunks (~{CHUNK_CHARS:,} characters, "
        f"{LINE_BROKEN_SHARE:.0%} of them with a line break every ~60 characters, as PDF text has) are drawn "
        f"uniformly from one corpus of {CORPUS_CHUNKS:,} distinct chunks, as many questions of a RAG dataset "
        "retrieve the same chunks; a sample is a question x one of 2 methods (the two share the question and "
        "its reference). Chunk texts are stored once per corpus, so the fewer distinct chunks per sample, the "
        "smaller the ledger; with no chunk ever retrieved twice, each sample keeps one copy of its chunks "
        "(verification and holistic share it).",
        "",
        "Files: **before**, schema 6's `judge_calls` table, every request whole (DuckDB picks ZSTD for the long "
        "request strings and FSST for the responses); **before + zstd responses**, the same with ZSTD forced on "
        "`response` (what compression alone gives); **after**, `Store.write_judge_calls` (requests packed by "
        "`evaluators/store/ledger.py`, texts once in `judge_texts`, ZSTD on `response` and `judge_texts.text`), written "
        f"in batches of {BATCH_SAMPLES:,} samples as the engine writes them. Bytes per sample: the file's growth "
        "after CHECKPOINT from the first call to the last, divided by the samples; in brackets, the part of it "
        "in free blocks (space DuckDB reuses for later writes). Write: the time of the inserts only (the "
        "rows are built beforehand); after includes packing and looking up each sample's chunks in the store.",
        "",
        "| samples | calls | request chars / sample | response chars / sample | before: bytes / sample "
        "| before + zstd responses | **after** | after / before | write before | write after "
        "| every request read back identical |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]

    def cell(growth: tuple[int, int], n: int) -> str:
        return f"{growth[0] / n:,.0f} ({growth[1] / n:,.0f})"

    for r in results:
        n, g, e = r["n"], r["growth"], r["exact"]
        lines.append(
            f"| {n:,} | {r['calls']:,} | {r['request_chars'] / n:,.0f} | {r['response_chars'] / n:,.0f} "
            f"| {cell(g['before'], n)} | {cell(g['before_zstd'], n)} | **{cell(g['after'], n)}** "
            f"| {g['after'][0] / g['before'][0]:.2f} | {r['write_before']:.1f} s | {r['write_after']:.1f} s "
            f"| {'yes' if e['identical'] == e['calls'] and e['same_ids'] else 'NO'} "
            f"({e['identical']:,} of {e['calls']:,}, by md5) |")
    lines += [
        "", "Where the packed bytes go: each part copied alone, with its column definition, into a file of its "
        "own (bytes per sample; the PRIMARY KEY indexes included). Reads: the median of the Claims screen's "
        f"judge-call query (`queries.claims.judge_calls`) over {READ_QUESTIONS} random questions, before (the "
        "same query on the whole requests) and after (through the `judge_calls` view); every request of the "
        "run: `SELECT sum(length(request)) FROM judge_calls WHERE run_id = ?`.", "",
        "| samples | responses | request parts | judge_texts | other columns | judge_texts rows (characters) "
        "| parts / request (by hash) | one question: before | after | every request: before | after |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        c, rd = r["columns"], r["reads"]
        lines.append(
            f"| {r['n']:,} | {c['responses']:,.0f} | {c['request parts']:,.0f} | {c['judge_texts']:,.0f} "
            f"| {c['other columns']:,.0f} | {r['texts']:,} ({r['text_chars']:,}) "
            f"| {r['parts'][0]:.1f} ({r['parts'][1]:.1f}) | {rd['question_before'] * 1000:.0f} ms "
            f"| {rd['question_after'] * 1000:.0f} ms | {rd['all_before']:.1f} s | {rd['all_after']:.1f} s |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "ledger.md")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="where the DuckDB files go (default: a temporary directory)")
    args = parser.parse_args()
    started, started_load = time.perf_counter(), load_note()
    texts = Texts(vocabulary())
    chunks = corpus(texts)
    with tempfile.TemporaryDirectory(dir=args.workdir) as workdir:
        results = []
        for n in args.samples:
            results.append(run_size(n, texts, chunks, Path(workdir)))
            print(json.dumps(results[-1], default=str), file=sys.stderr)
    text = report(results, time.perf_counter() - started, started_load)
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
