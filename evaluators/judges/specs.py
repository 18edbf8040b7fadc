"""The judges a run can use, as objects that say what they need: a key, a model, a batch size, prices.

`OfflineJudge()` and `OpenAIJudge(model=...)` are what `evaluators.evaluate()`, the CLI and the Evaluate
screen pass around; `of_run` rebuilds a stored run's judge. Outside `judges/` nobody compares a judge's
name with a literal: they ask the object (`offline`, `needs_key`, `price`, ...).

A judge's settings live in the run's config under the keys `config()` writes (`judges.judge_samples` reads
them back), so a run's config has one shape whoever made it. The API key is never part of a judge object.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from evaluators.judges import offline, prices

DEFAULT_BATCH = 1000  # samples scored and committed together (engine.BATCH_SIZE)
MIN_JUDGED_BATCH = 32
DEFAULT_CONCURRENCY = 8
# Samples per engine batch in Batch API mode: each batch of samples costs 2+ rounds of up to 24 h, so as many as
# fit: 5,000 samples make ~10,000 requests a round, within the API's 50,000 (batch_api splits by size).
BATCH_API_SAMPLES = 5_000


@dataclass(frozen=True)
class OfflineJudge:
    """The deterministic heuristic: no key, no network, no cost (judges/offline.py)."""

    name: ClassVar[str] = offline.JUDGE
    label: ClassVar[str] = "Offline (no key, no network: a deterministic heuristic)"
    offline: ClassVar[bool] = True  # makes no call: nothing to estimate, price or retry
    needs_key: ClassVar[bool] = False
    model: ClassVar[None] = None
    price: ClassVar[None] = None
    batch_size: ClassVar[int] = DEFAULT_BATCH
    # its first batch, and the fewest the engine paces a batch to (engine.BATCH_SECONDS): at ~10 samples a second,
    # batches of ~50 commit every 5 s, and the first batch, which loads the models, ends early
    min_batch_size: ClassVar[int] = 16
    # characters of one sample (question, answer, reference, chunks) it judges; over it the sample's judged cells
    # are `skipped` (judges.too_big): 200,000 take it about 10 s (bench/results/limits.md)
    max_chars: ClassVar[int] = 200_000

    def config(self) -> dict:
        return {}


@dataclass(frozen=True)
class OpenAIJudge:
    """Any OpenAI-compatible server (OpenAI, Azure, vLLM, Ollama, llama.cpp). The key comes from
    OPENAI_API_KEY, or is lent for one run (`judges.lent_api_key`); it is never stored."""

    model: str | None = None
    base_url: str | None = None  # None: $OPENAI_BASE_URL, else the OpenAI API
    concurrency: int = DEFAULT_CONCURRENCY
    repeats: int = 1  # holistic replies per sample
    timeout: float | None = None  # seconds per reply as a whole (None: the client's default)
    max_attempts: int | None = None
    max_output_tokens: int | None = None  # the most a cut-off reply is asked again with (None: the judge's default)
    price_in: float | None = None  # USD per 1M tokens; None: the model's list price
    price_out: float | None = None
    price_cached_in: float | None = None  # for input the server served from its prompt cache
    batch: bool = False  # through the Batch API: half the price, results within 24 h (judges/batch_api.py)

    name: ClassVar[str] = "openai"
    label: ClassVar[str] = "OpenAI-compatible server (OpenAI, Azure, vLLM, Ollama, llama.cpp)"
    offline: ClassVar[bool] = False
    needs_key: ClassVar[bool] = True
    max_chars: ClassVar[None] = None  # the server says what its context window holds

    @property
    def price(self) -> prices.Price | None:
        """The prices the run records: those given, else the model's list price; None when unknown."""
        return prices.choose(self.model, self.price_in, self.price_out, self.price_cached_in)

    @property
    def billed_price(self) -> prices.Price | None:
        """What its tokens cost: `price`, or half of it through the Batch API."""
        return prices.billed(self.price, self.batch)

    @property
    def batch_size(self) -> int:
        """An LLM judge takes minutes over the default batch: a few calls in flight per slot keep it busy
        while progress, commits and cancel stay responsive."""
        if self.batch:
            return BATCH_API_SAMPLES
        return max(MIN_JUDGED_BATCH, 8 * int(self.concurrency or DEFAULT_CONCURRENCY))

    @property
    def min_batch_size(self) -> int:
        """Not paced below `batch_size`: fewer samples than that would leave its concurrency idle."""
        return self.batch_size

    def options(self) -> dict:
        """The judge client's settings given (None: its defaults), as the run's config and the client take them."""
        return {k: v for k, v in (("timeout", self.timeout), ("max_attempts", self.max_attempts),
                                  ("max_output_tokens", self.max_output_tokens)) if v is not None}

    def config(self) -> dict:
        price = self.price
        return ({"base_url": self.base_url, "concurrency": self.concurrency, "repeats": self.repeats}
                | self.options()
                | (prices.to_config(price) if price else {}) | ({"batch": True} if self.batch else {}))


Judge = OfflineJudge | OpenAIJudge
JUDGES: dict[str, type] = {OfflineJudge.name: OfflineJudge, OpenAIJudge.name: OpenAIJudge}


def of_run(run: Mapping) -> Judge:
    """The judge of a stored run (a row of `runs`: its `judge`, `judge_model` and `config` columns)."""
    if named(run["judge"]).offline:
        return OfflineJudge()
    config = json.loads(run["config"] or "{}")
    recorded = prices.from_config(config)
    return OpenAIJudge(model=run["judge_model"], base_url=config.get("base_url"),
                       concurrency=config.get("concurrency") or DEFAULT_CONCURRENCY,
                       repeats=config.get("repeats") or 1, timeout=config.get("timeout"),
                       max_attempts=config.get("max_attempts"), max_output_tokens=config.get("max_output_tokens"),
                       price_in=recorded.input if recorded else None, price_out=recorded.output if recorded else None,
                       price_cached_in=recorded.cached_input if recorded else None,
                       batch=bool(config.get("batch")))


def named(judge: str) -> type:
    """The judge class called `judge` (a run's `judge` column, a CLI choice)."""
    if judge not in JUDGES:
        raise ValueError(f"unknown judge {judge!r}; available: {', '.join(JUDGES)}")
    return JUDGES[judge]
