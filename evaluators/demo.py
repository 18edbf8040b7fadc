"""The demo run the app opens on: GraphRAG-Bench Novel-44557 with two demo retrieval methods."""
from __future__ import annotations

from pathlib import Path

from evaluators import engine, loaders
from evaluators.store import Store

DEMO_DIR = Path(__file__).resolve().parent.parent / "data" / "demo"
DEMO_GOLDEN = DEMO_DIR / "novel_44557_golden.csv"
DEMO_OUTPUTS = DEMO_DIR / "novel_44557_outputs.jsonl"
DEMO_RUN_NAME = "Demo: GraphRAG-Bench Novel-44557, basic_search vs local_search"


def ensure_demo(store: Store, progress: engine.Progress | None = None) -> str:
    """The finished demo run, evaluating it first if the database has none (idempotent)."""
    golden = store.save_dataset(loaders.load(DEMO_GOLDEN, role="golden")).dataset_id
    outputs = store.save_dataset(loaders.load(DEMO_OUTPUTS, role="outputs")).dataset_id
    existing = store.cursor().execute(
        "SELECT run_id, status FROM runs WHERE name = ? AND golden_dataset_id = ? ORDER BY created_at DESC LIMIT 1",
        [DEMO_RUN_NAME, golden],
    ).fetchall()
    if existing and existing[0][1] == "finished":
        return existing[0][0]
    run_id = existing[0][0] if existing else engine.create_run(
        store, golden_dataset_id=golden, outputs_dataset_ids=[outputs], name=DEMO_RUN_NAME
    )
    engine.execute_run(store, run_id, progress=progress)
    return run_id
