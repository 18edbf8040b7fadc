"""Judge prices and a run's cost (evaluators.judges.prices, queries.run_cost): the list, the choice
of prices, the arithmetic, and the cost of a stored run's calls (cached replies cost nothing)."""
import math

import pytest

from evaluators import queries
from evaluators.judges import prices
from evaluators.judges.prices import Price
from evaluators.store import close_store, open_store


def test_list_prices_of_common_models_and_their_dated_snapshots():
    assert prices.list_price("gpt-4o-mini") == Price(0.15, 0.60, 0.075)
    assert prices.list_price("gpt-4o-mini-2024-07-18") == Price(0.15, 0.60, 0.075)  # a snapshot is billed as its alias
    assert prices.list_price(" GPT-4.1 ") == Price(2.00, 8.00, 0.50)
    assert prices.list_price("gpt-5-nano") == Price(0.05, 0.40, 0.005)
    for model in ("gpt-4o", "gpt-4.1-mini", "gpt-4.1-nano", "o3-mini", "o4-mini", "gpt-5", "gpt-5-mini"):
        assert prices.list_price(model) is not None, model
    # unknown: no price, never a made-up one (a longer name is another model, not its prefix's)
    assert prices.list_price("gpt-4o-audio-preview") is None
    assert prices.list_price("llama-3-8b") is None
    assert prices.list_price(None) is None and prices.list_price("") is None
    assert all(p.input > 0 and p.output >= p.input > p.cached_input > 0 for p in prices.LIST_PRICES.values())


def test_choose_takes_the_given_prices_else_the_list_price():
    assert prices.choose("gpt-4o-mini") == Price(0.15, 0.60, 0.075)
    assert prices.choose("gpt-4o-mini", 0.1, 0.2) == Price(0.1, 0.2)  # another input price: cached input as input
    assert prices.choose("gpt-4o-mini", 0.1, 0.2, 0.01) == Price(0.1, 0.2, 0.01)
    assert prices.choose("gpt-4o-mini", price_out=1.0) == Price(0.15, 1.0, 0.075)  # one side given, the rest listed
    assert prices.choose("gpt-4o-mini", price_cached_in=0.05) == Price(0.15, 0.60, 0.05)
    assert prices.choose("my-local-model", 0, 0) == Price(0.0, 0.0)  # a server of your own
    assert prices.choose("my-local-model") is None and prices.choose(None) is None
    with pytest.raises(ValueError, match="give both"):
        prices.choose("my-local-model", price_in=1.0)
    for bad in (-1.0, math.nan):
        with pytest.raises(ValueError, match=">= 0"):
            prices.choose("gpt-4o", bad, 1.0)


def test_cost_is_tokens_times_price_per_million():
    assert prices.cost(1_000_000, 500_000, Price(2.50, 10.00)) == pytest.approx(7.50)
    assert prices.cost(1234, 567, Price(0.15, 0.60)) == pytest.approx((1234 * 0.15 + 567 * 0.60) / 1e6)
    assert prices.cost(0, 0, Price(2.5, 10)) == 0
    # cached input (part of the input) at its own price; without one, at the input price
    assert prices.cost(1_000_000, 0, Price(2.0, 8.0, 0.5), cached_input_tokens=600_000) == pytest.approx(0.8 + 0.3)
    assert prices.cost(1_000_000, 0, Price(2.0, 8.0), cached_input_tokens=600_000) == pytest.approx(2.0)


@pytest.mark.parametrize("prefix, cached", [(0, 0), (1023, 0), (1024, 1024), (1151, 1024), (1152, 1152),
                                            (1279, 1152), (5000, 4992)])
def test_a_prompt_cache_serves_1024_tokens_and_then_whole_128_token_steps(prefix, cached):
    assert prices.cacheable(prefix) == cached


def test_usd_never_rounds_a_small_cost_to_zero():
    assert prices.usd(0) == "$0.00"
    assert prices.usd(0.0042) == "$0.0042"
    assert prices.usd(0.0000123) == "$0.000012"
    assert prices.usd(0.456) == "$0.46"
    assert prices.usd(1234.567) == "$1,234.57"


def test_prices_round_trip_through_a_run_config():
    config = {"concurrency": 8} | prices.to_config(Price(0.4, 1.6))
    assert config[prices.CONFIG_KEY] == {"input": 0.4, "output": 1.6}
    assert prices.from_config(config) == Price(0.4, 1.6)
    assert prices.from_config(prices.to_config(Price(0.4, 1.6, 0.1))) == Price(0.4, 1.6, 0.1)
    assert prices.from_config({"concurrency": 8}) is None and prices.from_config({}) is None


def test_spent_text_names_the_amount_and_its_prices_or_says_why_there_is_none():
    assert (prices.spent_text(0.0042, Price(0.15, 0.6), "gpt-4o-mini")
            == "cost $0.0042 at $0.15 in, $0.6 out per 1M tokens")
    listed = prices.spent_text(1.5, Price(2.5, 10), "gpt-4o", recorded=False)
    assert listed.startswith("cost $1.50 at $2.5 in, $10 out") and "list price of gpt-4o" in listed
    unknown = prices.spent_text(None, None, "my-model")
    assert unknown.startswith("cost unknown") and "'my-model'" in unknown and "$" not in unknown


def _calls(run_id, *rows):
    """judge_calls rows: (input_tokens, output_tokens, cached, status[, cached_input_tokens])."""
    return [{"call_id": f"{run_id}-{i}", "run_id": run_id, "question_id": "q1", "method": "m", "purpose": "extraction",
             "model": "gpt-4o-mini", "input_tokens": tin, "output_tokens": tout, "cached": cached, "status": status,
             "cached_input_tokens": prompt_cache[0] if prompt_cache else None}
            for i, (tin, tout, cached, status, *prompt_cache) in enumerate(rows)]


def test_run_cost_sums_the_calls_tokens_at_the_run_prices_and_cached_replies_cost_nothing(tmp_path):
    db = tmp_path / "cost.duckdb"
    store = open_store(db)
    try:
        def run(judge, model, config):
            return store.create_run(name="r", golden_dataset_id="g", outputs_dataset_ids=[], judge=judge,
                                    judge_model=model, metrics=[], config=config, n_samples=1)

        priced = run("openai", "gpt-4o-mini", prices.to_config(Price(1.0, 4.0)))
        store.write_judge_calls(_calls(priced, (1000, 200, False, "ok"), (3000, 100, False, "judge_error"),
                                       (50_000, 9_000, True, "ok")))  # the cached reply's tokens are not paid
        spent = queries.run_cost(store, priced)
        assert (spent["calls"], spent["cached"], spent["input_tokens"], spent["output_tokens"]) == (2, 1, 4000, 300)
        assert spent["usd"] == pytest.approx((4000 * 1.0 + 300 * 4.0) / 1e6) and spent["recorded"]

        unlisted = run("openai", "my-local-model", {})
        store.write_judge_calls(_calls(unlisted, (1000, 200, False, "ok")))
        assert queries.run_cost(store, unlisted)["usd"] is None  # unknown, not $0

        legacy = run("openai", "gpt-4o", {})  # recorded before prices were: the model's list price
        store.write_judge_calls(_calls(legacy, (1_000_000, 0, False, "ok")))
        spent = queries.run_cost(store, legacy)
        assert spent["usd"] == pytest.approx(2.50) and not spent["recorded"]

        # input the server served from its prompt cache, at the cached-input price recorded with the run
        cached = run("openai", "gpt-4.1", prices.to_config(Price(2.0, 8.0, 0.5)))
        store.write_judge_calls(_calls(cached, (4000, 100, False, "ok", 3000), (1000, 100, False, "ok")))
        spent = queries.run_cost(store, cached)
        assert (spent["input_tokens"], spent["cached_input_tokens"]) == (5000, 3000)
        assert spent["usd"] == pytest.approx((2000 * 2.0 + 3000 * 0.5 + 200 * 8.0) / 1e6)

        assert queries.run_cost(store, run("offline", None, {})) is None  # no calls, no money line
        assert queries.run_cost(store, "run-nope") is None
    finally:
        close_store(db)


def test_the_batch_api_bills_half_the_price():
    price = prices.Price(2.0, 8.0)
    assert prices.billed(price, batch=True) == prices.Price(1.0, 4.0)
    assert prices.billed(price, batch=False) is price and prices.billed(None, batch=True) is None
