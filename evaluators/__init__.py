"""RAGScope's metric engine: load golden sets and RAG outputs, score them, store them in DuckDB.

    from evaluators import evaluate, OpenAIJudge
    result = evaluate("golden.csv", "outputs.jsonl")   # the offline judge, a temporary DuckDB file
"""
from __future__ import annotations

from evaluators import threads

threads.limit_blas()  # before numpy is imported (evaluators/threads.py)

__version__ = "0.1.0"  # RAGScope's version, as the report file states it (no release was numbered before)

_API = {"evaluate": "evaluators.api", "Evaluation": "evaluators.api", "read_inputs": "evaluators.api",
        "Criterion": "evaluators.records.criteria",
        "plugin_metric": "evaluators.metrics.plugins", "NotApplicable": "evaluators.metrics.plugins",
        "OfflineJudge": "evaluators.judges", "OpenAIJudge": "evaluators.judges", "AzureJudge": "evaluators.judges"}
__all__ = list(_API)


def __getattr__(name: str):
    # Imported when first asked for: `python -m evaluators metrics` need not load the engine.
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'evaluators' has no attribute {name!r}")
