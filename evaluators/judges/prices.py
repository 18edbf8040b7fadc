"""What an LLM judge's tokens cost: list prices per model and the arithmetic, nothing else (no I/O).

Prices are USD per million tokens, input, cached input and output apart, as OpenAI lists them for its
standard tier. Cached input is what the provider served from its prompt cache (a repeated prefix of at least
`CACHE_MIN_TOKENS`, in `CACHE_STEP_TOKENS` steps: `cacheable`); a call's usage says how much. A run records
the prices it was started with in its config (`CONFIG_KEY`), so its cost can be recomputed from its
`judge_calls` tokens later, whatever the list says by then. A model not in the table has no price: callers
say so rather than show $0.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

# List prices from https://developers.openai.com/api/docs/pricing (formerly
# platform.openai.com/docs/pricing) and the models' pages there, as of 2026-11-24 (gpt-5-nano, gpt-5.1
# and o3 read on the model pages that day; the others as listed since their launch in 2024-2025); cached
# input as listed there on 2026-11-27 (a tenth of the input price for the gpt-5 family, a quarter for gpt-4.1,
# o3 and o4-mini, half for gpt-4o and o3-mini). Standard tier; the Batch tier as its discount (BATCH_DISCOUNT);
# Flex and Priority tiers are not modelled.
AS_OF = "2026-11-27"
SOURCE = "https://developers.openai.com/api/docs/pricing"
# The Batch API bills every request at half the standard price (SOURCE, its "Batch" tier, read 2026-11-27; results
# within 24 h). A run made through it (`OpenAIJudge.batch`) records the standard price and costs this share of it.
BATCH_DISCOUNT = 0.5
CONFIG_KEY = "price_usd_per_1m"  # in a run's config: {"input": float, "output": float, "cached_input": float}
# OpenAI's prompt cache (https://developers.openai.com/api/docs/guides/prompt-caching, read 2026-11-27): prompts of
# 1,024 tokens or more, the longest prefix seen recently (minutes), cached in steps of 128 tokens.
CACHE_MIN_TOKENS = 1024
CACHE_STEP_TOKENS = 128


@dataclass(frozen=True)
class Price:
    input: float  # USD per 1M input (prompt) tokens
    output: float  # USD per 1M output (completion, reasoning included) tokens
    cached_input: float | None = None  # USD per 1M input tokens served from the prompt cache; None: as input

    @property
    def cached(self) -> float:
        return self.input if self.cached_input is None else self.cached_input

    def describe(self) -> str:
        cached = "" if self.cached_input is None else f", ${self.cached_input:g} cached in"
        return f"${self.input:g} in{cached}, ${self.output:g} out per 1M tokens"


LIST_PRICES: dict[str, Price] = {
    "gpt-4o": Price(2.50, 10.00, 1.25),
    "gpt-4o-mini": Price(0.15, 0.60, 0.075),
    "gpt-4.1": Price(2.00, 8.00, 0.50),
    "gpt-4.1-mini": Price(0.40, 1.60, 0.10),
    "gpt-4.1-nano": Price(0.10, 0.40, 0.025),
    "o3": Price(2.00, 8.00, 0.50),
    "o3-mini": Price(1.10, 4.40, 0.55),
    "o4-mini": Price(1.10, 4.40, 0.275),
    "gpt-5": Price(1.25, 10.00, 0.125),
    "gpt-5-mini": Price(0.25, 2.00, 0.025),
    "gpt-5-nano": Price(0.05, 0.40, 0.005),
    "gpt-5.1": Price(1.25, 10.00, 0.125),
}

_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")  # gpt-4o-mini-2024-07-18 is billed as gpt-4o-mini


def list_price(model: str | None) -> Price | None:
    """The table's price of `model` (a dated snapshot takes its alias's price); None if unknown."""
    if not model:
        return None
    name = model.strip().lower()
    return LIST_PRICES.get(name) or LIST_PRICES.get(_SNAPSHOT.sub("", name))


def choose(model: str | None, price_in: float | None = None, price_out: float | None = None,
           price_cached_in: float | None = None, listed: bool = True) -> Price | None:
    """The prices a run uses: those given, the model's list price for one not given; None when
    neither is known. A price given for one side only of a model without a list price is an error.
    The cached-input price not given is the list's when the input price is the list's, else none (cached
    input is then priced as input: never less than it may cost). `listed` False: the name is no model's (an Azure
    deployment's name is its owner's choice), so no list price applies."""
    for value in (price_in, price_out, price_cached_in):
        if value is not None and not value >= 0:  # `not >=` also refuses NaN
            raise ValueError(f"a price must be a number of USD >= 0, not {value}")
    listed = list_price(model) if listed else None
    if price_in is None and price_out is None:
        if listed is None or price_cached_in is None:
            return listed
        return Price(listed.input, listed.output, float(price_cached_in))
    if (price_in is None or price_out is None) and listed is None:
        raise ValueError(f"no list price for model {model!r}: give both the input and the output price")
    given_in = listed.input if price_in is None else float(price_in)
    cached = price_cached_in if price_cached_in is not None else (
        listed.cached_input if listed is not None and given_in == listed.input else None)
    return Price(given_in, listed.output if price_out is None else float(price_out),
                 None if cached is None else float(cached))


def cost(input_tokens: int, output_tokens: int, price: Price, cached_input_tokens: int = 0) -> float:
    """USD for these tokens at `price`; `cached_input_tokens` (part of `input_tokens`) at the cached-input price."""
    uncached = input_tokens - cached_input_tokens
    return (uncached * price.input + cached_input_tokens * price.cached + output_tokens * price.output) / 1_000_000


def cacheable(prefix_tokens: int) -> int:
    """The tokens of a repeated prompt prefix that OpenAI's prompt cache serves: none below CACHE_MIN_TOKENS,
    else whole CACHE_STEP_TOKENS steps from there."""
    if prefix_tokens < CACHE_MIN_TOKENS:
        return 0
    return CACHE_MIN_TOKENS + (prefix_tokens - CACHE_MIN_TOKENS) // CACHE_STEP_TOKENS * CACHE_STEP_TOKENS


def billed(price: Price | None, batch: bool) -> Price | None:
    """What tokens cost at `price` when sent `batch`ed (the Batch API's discount), else `price` itself."""
    if price is None or not batch:
        return price
    cached = None if price.cached_input is None else price.cached_input * BATCH_DISCOUNT
    return Price(price.input * BATCH_DISCOUNT, price.output * BATCH_DISCOUNT, cached)


def to_config(price: Price) -> dict:
    cached = {} if price.cached_input is None else {"cached_input": price.cached_input}
    return {CONFIG_KEY: {"input": price.input, "output": price.output} | cached}


def from_config(config: dict) -> Price | None:
    """The prices recorded with a run; None for a run recorded without (offline, unknown model). A run recorded
    before cached input was priced has none: its cached input is priced as input."""
    stored = (config or {}).get(CONFIG_KEY)
    if not stored:
        return None
    cached = stored.get("cached_input")
    return Price(float(stored["input"]), float(stored["output"]), None if cached is None else float(cached))


def usd(amount: float) -> str:
    """$1,234.56; below a cent, two significant digits ($0.0042), so a small run does not read $0.00."""
    if amount >= 0.01 or amount == 0:
        return f"${amount:,.2f}"
    return f"${amount:.{1 - math.floor(math.log10(amount))}f}"


def spent_text(amount: float | None, price: Price | None, model: str | None, recorded: bool = True) -> str:
    """A run's cost line: the amount and the prices behind it, or why there is none."""
    if price is None or amount is None:
        return f"cost unknown: no price recorded with the run and none listed for model {model!r}"
    note = "" if recorded else f" (list price of {model}: the run recorded none)"
    return f"cost {usd(amount)} at {price.describe()}{note}"
