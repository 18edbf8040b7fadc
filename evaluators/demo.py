"""The demo runs, evaluated with the offline judge from the files in data/demo/ (data/demo/README.md):

- ARAGOG retrieval settings (the app opens on it): real GPT-3.5-turbo answers of four haystack pipelines
  that differ in embedder, top_k and chunk size, on ARAGOG's 107 questions;
- ClapNQ, three LLMs vs three annotators: GPT-3.5, Llama-2 and Mistral on 100 ClapNQ questions (20
  unanswerable), whose human ratings go to `annotations`;
- GraphRAG-Bench Novel-44557: simulated outputs (an extractive stand-in, no LLM) of two retrievers;
- ARAGOG baseline RAG vs HyDE: the same questions answered by a plain and a HyDE pipeline, judged on the
  answers alone (the source keeps no HyDE chunks).

Every step is idempotent: datasets are stored once by content, a demo's run is found by its name and golden
set, and only unfinished runs are computed (a killed build resumes). The app opens on the newest run, so the
runs are created in reverse order of `DEMOS` (the default last, hence newest) and computed in order (the
default first, hence ready first).
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from evaluators import loaders
from evaluators.records.run_status import RunStatus
from evaluators.runs import engine, lifecycle
from evaluators.store import ratings
from evaluators.metrics import REGISTRY
from evaluators.store import Store

# data/demo in a checkout; an installed package carries a copy (pyproject.toml: evaluators.demo_data)
_CHECKOUT = Path(__file__).resolve().parent.parent / "data" / "demo"
DEMO_DIR = _CHECKOUT if _CHECKOUT.is_dir() else Path(__file__).resolve().parent / "demo_data"
ARAGOG_DIR = DEMO_DIR / "aragog"
CLAPNQ_FILE = DEMO_DIR / "clapnq" / "rag_model_performance.json"
CLAPNQ_QRELS = DEMO_DIR / "clapnq_qrels.tsv"  # each answerable question's passage id (data/demo/build_clapnq_qrels.py)
# The GraphRAG-Bench files: the tests upload them as a user would.
DEMO_GOLDEN = DEMO_DIR / "novel_44557_golden.csv"
DEMO_OUTPUTS = DEMO_DIR / "novel_44557_outputs.jsonl"
DEMO_RUN_NAME = "Demo: GraphRAG-Bench Novel-44557, basic_search vs local_search (simulated outputs, no LLM)"


@dataclass(frozen=True)
class Source:
    """One file of a demo, read by the normal loaders as the Data screen would read it."""

    path: Path
    method: str | None = None  # None: the file names its methods (or the loader names one from the file)
    columns: tuple[tuple[str, str | None], ...] = ()  # loaders.load's column_map, as (field, column) pairs


@dataclass(frozen=True)
class Demo:
    key: str  # what `python -m evaluators demo KEY` calls it
    name: str  # the run's name
    description: str  # what the run shows and where its data come from (Overview shows it)
    golden: Source
    outputs: tuple[Source, ...]
    metrics: tuple[str, ...] | None = None  # None: every metric
    qrels: Path | None = None  # a qrels file naming the golden set's relevant documents (loaders.with_qrels)
    after: Callable[[Store, str], None] | None = None  # once the run is finished (must be idempotent)
    legacy_names: tuple[str, ...] = ()  # earlier names of the same run: renamed, not computed again


@dataclass(frozen=True)
class Built:
    """One demo's run after `build_demos`: `seconds` spent on it, `computed` False when it was finished."""

    name: str
    run_id: str
    seconds: float
    computed: bool


def _import_clapnq_ratings(store: Store, run_id: str) -> None:
    """The ClapNQ file's 2,700 human ratings (three annotators x faithfulness, answer relevance, fluency) into
    `annotations`, so Error analysis shows judge vs humans. Idempotent: a re-import of the same file stores
    nothing (its content hash), so every build_demos may call it."""
    with store.lease():  # one unit of work: the file is not let go of between its reads and its write
        ratings.import_file(store, run_id, CLAPNQ_FILE)


# The four retrieval settings of haystack's ARAGOG parameter search: the embedder, the chunks retrieved
# (top_k) and the chunk size in words. Method names say all three.
ARAGOG_SETTINGS = {
    "minilm_top1_chunk64": "detailed_all-MiniLM-L6-v2__top_k1__chunk_size64.csv",
    "minilm_top3_chunk128": "detailed_all-MiniLM-L6-v2__top_k3__chunk_size128.csv",
    "mpnet_top2_chunk128": "detailed_all-mpnet-base-v2__top_k2__chunk_size128.csv",
    "msmarco-distilroberta_top3_chunk256": "detailed_msmarco-distilroberta-base-v2__top_k3__chunk_size256.csv",
}

ARAGOG = Demo(
    key="aragog",
    name="Demo: ARAGOG retrieval settings (real GPT-3.5-turbo answers)",
    description=(
        "Real answers: GPT-3.5-turbo in four haystack RAG pipelines that differ only in retrieval, on ARAGOG's 107 "
        "questions about AI papers with human-checked gold answers. A method is embedder_topK_chunkN: the "
        "sentence-transformers embedder (all-MiniLM-L6-v2, all-mpnet-base-v2, msmarco-distilroberta-base-v2), how "
        "many chunks were retrieved, and the chunk size in words. The pipelines were told to answer \"None\" when "
        "the chunks do not hold the answer. No question types: the dataset has none. Source: deepset-ai/"
        "haystack-evaluation (Apache-2.0), ARAGOG (Eibich et al., arXiv 2404.01037)."),
    # every file holds the same questions and answers
    golden=Source(ARAGOG_DIR / ARAGOG_SETTINGS["minilm_top1_chunk64"]),
    outputs=tuple(Source(ARAGOG_DIR / file, method) for method, file in ARAGOG_SETTINGS.items()),
)
CLAPNQ = Demo(
    key="clapnq",
    name="Demo: ClapNQ, three LLMs vs three annotators",
    description=(
        "Real answers: GPT-3.5, Llama-2-13b-chat and Mistral-7b-instruct on 100 ClapNQ questions, each with one "
        "Wikipedia passage; 20 questions are UNANSWERABLE from their passage (the reference is then an "
        "abstention: DON'T KNOW is the right answer). Three people rated every answer for faithfulness, answer "
        "relevance and fluency (1-4, with reasons). The rank metrics (id_recall, id_ndcg, ...) read each answerable "
        "question's passage id as its relevant document (ClapNQ's gold passage; data/demo/clapnq_qrels.tsv): every "
        "model was given that passage, so retrieval is perfect there and any loss is the answer's. Source: "
        "IBM/InspectorRAGet's \"RAG Model Performance\" example (Apache-2.0), from ClapNQ (Rosenthal et al. 2024, "
        "github.com/primeqa/clapnq)."),
    golden=Source(CLAPNQ_FILE),
    outputs=(Source(CLAPNQ_FILE),),
    qrels=CLAPNQ_QRELS,
    after=_import_clapnq_ratings,
)
GRAPHRAG = Demo(
    key="graphrag",
    name=DEMO_RUN_NAME,
    description=(
        "Simulated outputs: no LLM wrote these answers. Both methods answer with sentences an extractive stand-in "
        "picked from the chunks they retrieved from the book (dense MiniLM retrieval vs an entity-centred "
        "retriever in the spirit of GraphRAG local search), so only retrieval differs. The golden set is "
        "GraphRAG-Bench's (MIT). data/demo/README.md says how the outputs were made."),
    golden=Source(DEMO_GOLDEN),
    outputs=(Source(DEMO_OUTPUTS),),
    legacy_names=("Demo: GraphRAG-Bench Novel-44557, basic_search vs local_search",),
)
# haystack's comparative report of the two pipelines: one row per question, each pipeline's answer in its own
# column, and one contexts column that holds the baseline's chunks only (haystack-evaluation keeps the first
# run's inputs). So both are judged without chunks, on what needs none: an answer against the gold answer.
HYDE_FILE = ARAGOG_DIR / "baseline_rag_vs_hyde.csv"
ARAGOG_HYDE = Demo(
    key="hyde",
    name="Demo: ARAGOG baseline RAG vs HyDE (real GPT-3.5-turbo answers, judged without chunks)",
    description=(
        "Real answers: GPT-3.5-turbo in a plain vector-RAG pipeline (baseline_rag) and in one that retrieves with a "
        "hypothetical answer first (HyDE, hyde_rag), on ARAGOG's 107 questions. The source keeps only the "
        "baseline's retrieved chunks, so both are judged on the answers alone: the metrics that need no chunks "
        "(correctness against the gold answer, similarity, relevance, rubric scores). Source: deepset-ai/"
        "haystack-evaluation (Apache-2.0), ARAGOG (Eibich et al., arXiv 2404.01037)."),
    golden=Source(HYDE_FILE, columns=(("reference", "baseline_rag_ground_truth_answers"), ("answer", None),
                                      ("contexts", None))),
    outputs=tuple(Source(HYDE_FILE, method, (("answer", f"{method}_responses"), ("reference", None),
                                             ("contexts", None)))
                  for method in ("baseline_rag", "hyde_rag")),
    metrics=tuple(m for m, spec in REGISTRY.items() if "contexts" not in spec.reads),
)
DEMOS = (ARAGOG, CLAPNQ, GRAPHRAG, ARAGOG_HYDE)  # computed in this order; the first is the run the app opens on


def _datasets(store: Store, demo: Demo) -> tuple[str, list[str]]:
    """The demo's golden and outputs dataset ids (stored on first use)."""
    golden_set = read_source(demo.golden, "golden")
    if demo.qrels is not None:
        golden_set = loaders.with_qrels(golden_set, demo.qrels)
    golden = store.save_dataset(golden_set).dataset_id
    outputs = [store.save_dataset(read_source(source, "outputs")).dataset_id for source in demo.outputs]
    return golden, outputs


def read_source(source: Source, role: str) -> loaders.Dataset:
    """A demo file as the normal loaders read it."""
    return loaders.load(source.path, role=role, method=source.method, column_map=dict(source.columns))


def _find_run(store: Store, demo: Demo, golden_id: str) -> str | None:
    """The demo's newest run on this golden set; one under an earlier name is renamed (and described)."""
    names = [demo.name, *demo.legacy_names]
    rows = store.cursor().execute(
        "SELECT run_id, name, config FROM runs WHERE list_contains(?, name) AND golden_dataset_id = ? "
        "ORDER BY created_at DESC LIMIT 1", [names, golden_id]).fetchall()
    if not rows:
        return None
    run_id, name, config = rows[0]
    if name != demo.name:
        config = {**json.loads(config or "{}"), "description": demo.description}
        store.cursor().execute("UPDATE runs SET name = ?, config = ? WHERE run_id = ?",
                               [demo.name, json.dumps(config), run_id])
    return run_id


def demo_runs(store: Store, demos=None) -> list[tuple[Demo, str]]:
    """(demo, run id) for each demo, creating the missing runs last demo first, so the first is the newest."""
    demos = DEMOS if demos is None else demos
    found = {}
    with store.lease():
        for demo in reversed(demos):
            golden, outputs = _datasets(store, demo)
            found[demo] = _find_run(store, demo, golden) or lifecycle.start_stored(
                store, golden, outputs,
                lifecycle.RunSpec(name=demo.name, metrics=demo.metrics, description=demo.description))
    return [(demo, found[demo]) for demo in demos]


def _finished(store: Store, run_id: str) -> bool:
    return store.run(run_id)["status"] == RunStatus.FINISHED


def build_demos(store: Store, demos=None) -> Iterator[Built]:
    """Compute every unfinished demo run, in order, yielding each as it is done (for per-demo timings)."""
    runs = demo_runs(store, demos)
    for demo, run_id in runs:
        start = time.perf_counter()
        computed = not _finished(store, run_id)
        if computed:
            engine.execute_run(store, run_id)
        if demo.after:
            demo.after(store, run_id)
        yield Built(demo.name, run_id, time.perf_counter() - start, computed)


def ensure_demo(store: Store, demos=None) -> str:
    """Every demo run finished (computed where needed); the id of the first, the run the app opens on."""
    return [built.run_id for built in build_demos(store, demos)][0]


# --------------------------------------------------------------------------- the app's first start

_builders: dict[str, threading.Thread] = {}  # store path -> the thread computing its demo runs


def start_demos(store: Store, manager, demos=None) -> threading.Thread | None:
    """At app start: on a database with no finished run (a first start) create the demo runs, then compute every
    unfinished one in the background, one after another, the default first. The app opens at once on the
    default run, whose pages fill in when it is done; `manager` (the app's `runner.RunManager`) computes each
    run, so Evaluate shows its progress and can cancel it."""
    demos = DEMOS if demos is None else demos
    with store.lease():
        first_start = not store.cursor().execute("SELECT 1 FROM runs WHERE status = ? LIMIT 1",
                                                 [RunStatus.FINISHED.value]).fetchall()
        if not first_start and not _unfinished_by_name(store, demos):
            return None  # the usual start: nothing to load or compute
        pending = [(demo, run_id) for demo, run_id in demo_runs(store, demos) if not _finished(store, run_id)]
        if not pending:
            return None
        for _, run_id in pending:  # honest status while each waits for the one before it (a new run is RUNNING)
            store.cursor().execute("UPDATE runs SET status = ? WHERE run_id = ?", [RunStatus.QUEUED.value, run_id])
    thread = threading.Thread(target=_compute_in_turn, args=(store, manager, pending), name="ragscope-demos",
                              daemon=True)
    _builders[store.path] = thread
    thread.start()
    return thread


def _unfinished_by_name(store: Store, demos) -> bool:
    names = [name for demo in demos for name in (demo.name, *demo.legacy_names)]
    return bool(store.cursor().execute("SELECT 1 FROM runs WHERE list_contains(?, name) AND status <> ? LIMIT 1",
                                       [names, RunStatus.FINISHED.value]).fetchall())


def _compute_in_turn(store: Store, manager, pending: list[tuple[Demo, str]]) -> None:
    for demo, run_id in pending:
        manager.start(store, run_id)
        snapshot = manager.wait(run_id)
        if snapshot is not None and snapshot.status == RunStatus.FINISHED and demo.after:
            demo.after(store, run_id)


def wait_for_demos(store: Store, timeout: float | None = None) -> None:
    """Block until the background demo build of `store` (if any) is over."""
    thread = _builders.get(store.path)
    if thread is not None:
        thread.join(timeout)
