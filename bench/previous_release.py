"""The same bench items scored by an earlier release's engine (default e063c5b, the release before the judge work).

The release's source is taken from git (`git archive COMMIT`, extracted once into the cache folder), and
bench/previous_adapter.py runs in a subprocess with that tree first on its path and as its working directory:
the release's own `evaluators` (engine, store, offline judge) score the items, nothing of this checkout's. The
same venv python runs it: the release's requirements are a subset of today's.

Results are cached under CACHE/scores, one JSON file per (commit, set, hash of the items' texts and metrics),
so a re-run of the bench does not recompute the old release; CACHE is outside the repository
($RAGSCOPE_BENCH_CACHE, default ~/.cache/ragscope/judge_quality).
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from calibration.engine_scores import Scored, scored_from_cells
from calibration.sets import Item

ROOT = Path(__file__).resolve().parent.parent
ADAPTER = Path(__file__).with_name("previous_adapter.py")
DEFAULT_COMMIT = "e063c5b"
CACHE = Path(os.environ.get("RAGSCOPE_BENCH_CACHE", Path.home() / ".cache" / "ragscope" / "judge_quality"))


@dataclass(frozen=True)
class Previous:
    """An earlier release's scores of a list of items, and what they cost."""

    commit: str  # the full sha
    scored: Scored
    seconds: float  # the adapter's time when the scores were computed
    cached: bool  # read from the cache this time


def full_sha(commit: str) -> str:
    out = subprocess.run(["git", "rev-parse", "--verify", f"{commit}^{{commit}}"], cwd=ROOT, capture_output=True,
                         text=True)
    if out.returncode:
        raise ValueError(f"--previous {commit}: not a commit of {ROOT} ({out.stderr.strip()})")
    return out.stdout.strip()


def source_tree(sha: str, cache: Path = CACHE) -> Path:
    """The release's files, extracted once (extracted beside, then renamed: a half-written tree is never used)."""
    tree = cache / "trees" / sha
    if tree.is_dir():
        return tree
    archive = subprocess.run(["git", "archive", "--format=tar", sha], cwd=ROOT, capture_output=True, check=True)
    tree.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=tree.parent, prefix=f".{sha[:12]}-"))
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(staging, filter="data")
    staging.rename(tree)
    return tree


def items_key(items: Sequence[Item], metrics: Sequence[str]) -> str:
    """A hash of everything the engine reads (ids and texts) and the metrics asked for."""
    payload = json.dumps([_record(i) for i in items] + [sorted(metrics)], ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


def _record(i: Item) -> dict:
    return {"item_id": i.item_id, "question": i.question, "reference": i.reference, "answer": i.answer,
            "contexts": list(i.contexts)}


def score(items: Sequence[Item], metrics: Sequence[str], commit: str, set_name: str, cache: Path = CACHE) -> Previous:
    """`items` scored with `metrics` by the release `commit`'s engine, from the cache when it has them."""
    sha = full_sha(commit)
    path = cache / "scores" / f"{sha[:12]}-{set_name}-{items_key(items, metrics)[:20]}.json"
    cached = path.exists()
    if not cached:
        _run_adapter(items, metrics, source_tree(sha, cache), path)
    data = json.loads(path.read_text(encoding="utf-8"))
    cells = pd.DataFrame(data["scores"], columns=["item_id", "metric", "value", "status", "label", "detail"])
    claims = pd.DataFrame(data["claims"], columns=["item_id", "source", "claim_idx", "text", "verdict"])
    chunks = pd.DataFrame(data["chunks"], columns=["item_id", "chunk_idx", "relevant", "relevance_score"])
    return Previous(sha, scored_from_cells(cells, claims, chunks, data["missing_metrics"]), data["seconds"], cached)


def _run_adapter(items: Sequence[Item], metrics: Sequence[str], tree: Path, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        jsonl = Path(tmp) / "items.jsonl"
        # json's ASCII escapes keep one item a line whatever separators (U+2028 ...) a text holds
        jsonl.write_text("".join(json.dumps(_record(i)) + "\n" for i in items), encoding="utf-8")
        out = path.with_name(path.name + ".partial")  # renamed when complete: a killed run leaves no cache entry
        env = {**os.environ, "PYTHONPATH": str(tree)}  # the release's packages, not this checkout's
        done = subprocess.run([sys.executable, str(ADAPTER), str(tree), str(jsonl), ",".join(metrics), str(out)],
                              cwd=tree, env=env, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"the previous release ({tree.name[:12]}) failed to score the items:\n"
                               f"{done.stderr[-3000:]}")
        os.replace(out, path)
