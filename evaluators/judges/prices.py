"""What an LLM judge's tokens cost: list prices per model and the arithmetic, nothing else (no I/O).

Prices are USD per million tokens, input and output apart, as OpenAI lists them for its standard
tier. A run records the prices it was started with in its config (`CONFIG_KEY`), so its cost can
be recomputed from its `judge_calls` tokens later, whatever the list says by then. A model not in
the table has no price: callers say so rather than show $0.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

# List prices from https://developers.openai.com/api/docs/pricing (formerly
# platform.openai.com/docs/pricing) and the models' pages there, as of 2026-11-24 (gpt-5-nano, gpt-5.1
# and o3 read on the model pages that day; the others as listed since their launch in 2024-2025).
# Standard tier; the Batch tier as its discount (BATCH_DISCOUNT); Flex, Priority and cached input not modelled.
AS_OF = "2026-11-24"
SOURCE = "https://developers.openai.com/api/docs/pricing"
# The Batch API bills every request at half the standard price (SOURCE, its "Batch" tier, read 2026-11-27; results
# within 24 h). A run made through it (`OpenAIJudge.batch`) records the standard price and costs this share of it.
BATCH_DISCOUNT = 0.5
CONFIG_KEY = "price_usd_per_1m"  # in a run's config: {"input": float, "output": float}


@dataclass(frozen=True)
class Price:
    input: float  # USD per 1M input (prompt) tokens
    output: float  # USD per 1M output (completion, reasoning included) tokens

    def describe(self) -> str:
        return f"${self.input:g} in, ${self.output:g} out per 1M tokens"


LIST_PRICES: dict[str, Price] = {
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "o3": Price(2.00, 8.00),
    "o3-mini": Price(1.10, 4.40),
    "o4-mini": Price(1.10, 4.40),
    "gpt-5": Price(1.25, 10.00),
    "gpt-5-mini": Price(0.25, 2.00),
    "gpt-5-nano": Price(0.05, 0.40),
    "gpt-5.1": Price(1.25, 10.00),
}

_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")  # gpt-4o-mini-2024-07-18 is billed as gpt-4o-mini


def list_price(model: str | None) -> Price | None:
    """The table's price of `model` (a dated snapshot takes its alias's price); None if unknown."""
    if not model:
        return None
    name = model.strip().lower()
    return LIST_PRICES.get(name) or LIST_PRICES.get(_SNAPSHOT.sub("", name))


def choose(model: str | None, price_in: float | None = None, price_out: float | None = None) -> Price | None:
    """The prices a run uses: those given, the model's list price for one not given; None when
    neither is known. A price given for one side only of a model without a list price is an error."""
    for value in (price_in, price_out):
        if value is not None and not value >= 0:  # `not >=` also refuses NaN
            raise ValueError(f"a price must be a number of USD >= 0, not {value}")
    if price_in is not None and price_out is not None:
        return Price(float(price_in), float(price_out))
    listed = list_price(model)
    if price_in is None and price_out is None:
        return listed
    if listed is None:
        raise ValueError(f"no list price for model {model!r}: give both the input and the output price")
    return Price(listed.input if price_in is None else float(price_in),
                 listed.output if price_out is None else float(price_out))


def cost(input_tokens: int, output_tokens: int, price: Price) -> float:
    """USD for these tokens at `price`."""
    return (input_tokens * price.input + output_tokens * price.output) / 1_000_000


def billed(price: Price | None, batch: bool) -> Price | None:
    """What tokens cost at `price` when sent `batch`ed (the Batch API's discount), else `price` itself."""
    if price is None or not batch:
        return price
    return Price(price.input * BATCH_DISCOUNT, price.output * BATCH_DISCOUNT)


def to_config(price: Price) -> dict:
    return {CONFIG_KEY: {"input": price.input, "output": price.output}}


def from_config(config: dict) -> Price | None:
    """The prices recorded with a run; None for a run recorded without (offline, unknown model)."""
    stored = (config or {}).get(CONFIG_KEY)
    return Price(float(stored["input"]), float(stored["output"])) if stored else None


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
