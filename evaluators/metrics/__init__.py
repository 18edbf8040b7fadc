"""Metric families. Importing this package registers every metric in `REGISTRY`."""
from evaluators.metrics.registry import REGISTRY, Metric, metric, resolve
from evaluators.metrics import lexical  # noqa: F401  (registers the lexical family)

__all__ = ["REGISTRY", "Metric", "metric", "resolve"]
