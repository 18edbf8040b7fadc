"""A user's deterministic metrics from their own Python module (`run --plugin path.py`, or the `ragscope.metrics`
entry point group). Placeholder: a stored plug-in metric is shown from its stored definition."""
from __future__ import annotations

from collections.abc import Mapping

from evaluators.metrics.registry import Metric

KIND = "plugin"


def stored(definition: Mapping, version: str) -> Metric:
    """A plug-in's metric as a run stored it: shown like any metric; computing it needs its plug-in loaded."""
    def not_loaded(samples, context):
        raise RuntimeError(f"metric {definition['id']} comes from the plug-in {definition.get('source')}: load it "
                           "again (run --plugin FILE) to compute it")

    return Metric(definition["id"], definition.get("family", "plugins"), definition["scale"],
                  definition.get("higher_is_better"), tuple(definition.get("needs", ())), "",
                  definition.get("formula", ""), not_loaded, uses=tuple(definition.get("uses", ())),
                  user={"kind": KIND, "version": version, "definition": dict(definition)})
