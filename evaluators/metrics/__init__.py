"""Metric families. Importing this package registers every metric in `REGISTRY`."""
from evaluators.metrics.registry import REGISTRY, Metric, metric, resolve
from evaluators.metrics import lexical  # noqa: F401  (registers the lexical family)
from evaluators.metrics import semantic  # noqa: F401
from evaluators.metrics import claims  # noqa: F401
from evaluators.metrics import rubric  # noqa: F401
from evaluators.metrics import composite  # noqa: F401
from evaluators.metrics import ranking  # noqa: F401

__all__ = ["REGISTRY", "Metric", "metric", "resolve"]
