"""What the RAG system itself spent on one answer, from an outputs file's columns (issue 37): one cell -> a
latency, a token count, a cost or a model name, or `cells.Bad` saying why. (An answer with tokens and a listed
model but no cost is priced where it is stored, evaluators.store: prices live in judges/, a layer above this.)"""
from __future__ import annotations

import math
from typing import Any

from evaluators.loaders.cells import Bad, none_if_blank, text
from evaluators.loaders.problems import kind
from evaluators.records import Usage


def _number(value: Any, what: str, unit: str) -> float | None:
    """A number >= 0 (a CSV cell's text, or a JSON / Parquet number); None when missing or blank."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            value = float(value.strip())
        except ValueError:
            raise Bad(f"the {what} is {kind(value)}, not a number; give it in {unit} (or leave it empty where not "
                      "known)") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Bad(f"the {what} is {kind(value)}, not a number; give it in {unit}")
    if not math.isfinite(value) or value < 0:
        raise Bad(f"the {what} is {value}; it must be a finite number >= 0, in {unit}")
    return float(value)


def latency_ms(value: Any) -> float | None:
    return _number(value, "latency", "milliseconds")


def latency_s(value: Any) -> float | None:
    seconds = _number(value, "latency", "seconds")
    return None if seconds is None else seconds * 1000.0


def tokens(value: Any) -> int | None:
    count = _number(value, "token count", "whole tokens")
    if count is not None and not count.is_integer():
        raise Bad(f"the token count is {count}, not a whole number")
    return None if count is None else int(count)


def cost_usd(value: Any) -> float | None:
    return _number(value, "cost", "USD")


def model(value: Any) -> str | None:
    return none_if_blank(text(value))


CONVERTERS = {"latency_ms": latency_ms, "latency_s": latency_s, "input_tokens": tokens, "output_tokens": tokens,
              "cost_usd": cost_usd, "model": model}


def usage_of(values: dict[str, Any]) -> Usage | None:
    """The Usage of converted `values` (field -> value, as CONVERTERS names them; latency_s is read in seconds and
    kept in ms, the one unit of `Usage.latency_ms`); None when none is given."""
    latency = values.get("latency_ms")
    latency = values.get("latency_s") if latency is None else latency
    found = Usage(latency, values.get("input_tokens"), values.get("output_tokens"), values.get("cost_usd"),
                  values.get("model"))
    return None if found == Usage() else found
