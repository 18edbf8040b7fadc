"""Scores bench items with an earlier release's engine: run by bench/previous_release.py inside that release's tree.

    python previous_adapter.py TREE ITEMS.jsonl METRICS OUT.json

TREE is the release's source (a `git archive` of its commit); its own `evaluators` package is imported, never
this checkout's, so this file uses only the standard library and the API that release had (`Store`,
`loaders.Dataset`, `engine.create_run` / `execute_run`, the `scores`, `claims` and `chunk_verdicts` tables), which
has not changed since e063c5b but for where the engine lives and how a run is made (issue 32: `runs.lifecycle`).
ITEMS.jsonl holds one item a line (item_id, question, reference, answer, contexts); METRICS is a comma-separated
list of metric ids. OUT.json gets the stored cells, claims and chunk verdicts, and the metric ids the release did
not have (those are not run: its engine would refuse them).
A label metric's label is read from `label` where the release stored it, else from `detail` (e063c5b kept
"the label in detail").
"""
from __future__ import annotations

import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path


def _dataset(Dataset, name: str, golden=(), outputs=()):
    payload = repr((name, golden, outputs)).encode()
    return Dataset(source=name, format="jsonl", content_hash=hashlib.sha256(payload).hexdigest(),
                   golden=tuple(golden), outputs=tuple(outputs), columns={})


def _rows(cur, sql: str, run_id: str) -> list[dict]:
    result = cur.execute(sql, [run_id])
    names = [d[0] for d in result.description]
    return [dict(zip(names, row)) for row in result.fetchall()]


def _label(metric, cell: dict) -> str | None:
    """The label of a label metric's ok cell: the `label` column, else the first word(s) of `detail`."""
    if cell["status"] != "ok" or not getattr(metric, "scale", None) == "label":
        return cell.get("label")
    if cell.get("label"):
        return cell["label"]
    detail = cell.get("detail") or ""
    known = _known_labels(metric.id)
    return next((k for k in sorted(known, key=len, reverse=True) if detail.startswith(k)), detail or None)


def _known_labels(metric_id: str) -> tuple[str, ...]:
    # The labels of e063c5b's label metrics (its rubric.py), longest first when matched against `detail`.
    return {"verdict": ("pass", "partial", "fail"), "answer_class": ("CORRECT", "WRONG", "DON'T KNOW"),
            "accuracy_grade": ("A", "B", "C", "D", "E")}.get(metric_id, ())


def score(items: list[dict], metrics: list[str], db: Path) -> dict:
    from evaluators.loaders import Dataset
    from evaluators.metrics import REGISTRY
    from evaluators.store import Store
    try:  # the layout since issue 32
        from evaluators.records import Chunk, GoldenItem, RagOutput
        from evaluators.runs import engine
    except ImportError:  # releases before it: flat modules
        from evaluators import engine
        from evaluators.schema import Chunk, GoldenItem, RagOutput

    known = [m for m in metrics if m in REGISTRY]
    golden = [GoldenItem(i["item_id"], i["question"], i["reference"]) for i in items]
    outputs = [RagOutput(i["item_id"], "answer", i["answer"],
                         tuple(Chunk(str(k + 1), t) for k, t in enumerate(i["contexts"]))) for i in items]
    store = Store(db)
    try:
        golden_id = store.save_dataset(_dataset(Dataset, "previous golden", golden=golden)).dataset_id
        outputs_id = store.save_dataset(_dataset(Dataset, "previous outputs", outputs=outputs)).dataset_id
        try:  # a run is made by runs.lifecycle since issue 32 (the offline judge: every release's default)
            from evaluators.runs import lifecycle

            run_id = lifecycle.start_stored(store, golden_id, [outputs_id],
                                            lifecycle.RunSpec(metrics=known, name="previous release"))
        except ImportError:
            run_id = engine.create_run(store, golden_dataset_id=golden_id, outputs_dataset_ids=[outputs_id],
                                       metrics=known, name="previous release")
        engine.execute_run(store, run_id)
        cur = store.cursor()
        cells = _rows(cur, "SELECT * FROM scores WHERE run_id = ?", run_id)
        claims = _rows(cur, "SELECT question_id, source, claim_idx, text, verdict FROM claims WHERE run_id = ? "
                            "ORDER BY question_id, source, claim_idx", run_id)
        chunks = _rows(cur, "SELECT question_id, chunk_idx, relevant, relevance_score FROM chunk_verdicts "
                            "WHERE run_id = ? ORDER BY question_id, chunk_idx", run_id)
    finally:
        store.close()
    scores = [{"item_id": c["question_id"], "metric": c["metric"], "value": c["value"], "status": c["status"],
               "label": _label(REGISTRY[c["metric"]], c), "detail": c.get("detail")} for c in cells]
    return {"scores": scores, "claims": [{"item_id": c.pop("question_id"), **c} for c in claims],
            "chunks": [{"item_id": c.pop("question_id"), **c} for c in chunks],
            "missing_metrics": [m for m in metrics if m not in REGISTRY]}


def main(argv: list[str]) -> None:
    tree, items_path, metrics, out = argv
    sys.path.insert(0, str(Path(tree).resolve()))  # that release's evaluators, before anything else
    # split at "\n" only: str.splitlines would also split at U+2028 and the like, which a text may hold
    items = [json.loads(line) for line in Path(items_path).read_text(encoding="utf-8").split("\n") if line]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        result = score(items, [m for m in metrics.split(",") if m], Path(tmp) / "previous.duckdb")
    result["seconds"] = time.perf_counter() - started
    Path(out).write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
