"""A run's budget (`max_cost_usd` in its config): what an LLM-judged run may spend on its judge.

Two checks. Before a run is stored, its cost estimate (`estimate.Estimate.cost`, what `run --estimate` prints) must
not be above the budget (`refuse_over`). While it runs, a `Budget` shared by the judge's requests holds the cost
recorded so far (the run's `judge_calls`, priced as `run_cost` prices them; cached replies are free) plus
what this process's replies cost: once it is reached no request goes out (those in flight finish), and the engine
stops the run with its cells not fully judged still to do (`RunStatus.BUDGET_REACHED`), resumable with a higher budget.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Sequence

from evaluators.runs.estimate import Estimate, estimate
from evaluators.judges import Judge, prices
from evaluators.judges import of_run as judge_of_run
from evaluators.metrics import resolve
from evaluators.judges.options import MAX_COST as CONFIG_KEY  # in a run's config: USD; absent: no budget
from evaluators.judges.options import check_numbers
from evaluators.records import ANSWERED, Sample
from evaluators.store import Store

_ANSWERED = "(" + ", ".join(f"'{s}'" for s in ANSWERED) + ")"  # as SQL: judge calls whose reply was used


class OverBudget(ValueError):
    """A run whose estimated cost is above its budget, or whose cost cannot be known: it is not started."""


class Budget:
    """USD a run may spend and has spent, shared by the concurrent requests of its judge (thread-safe)."""

    def __init__(self, limit: float, price: prices.Price, spent: float = 0.0):
        self.limit, self.price, self.spent = limit, price, spent
        self._lock = threading.Lock()

    def charge(self, input_tokens: int | None, output_tokens: int | None, cached_input_tokens: int | None) -> None:
        """Count one reply's tokens (as the ledger prices them: `run_cost`)."""
        with self._lock:
            self.spent += prices.cost(input_tokens or 0, output_tokens or 0, self.price, cached_input_tokens or 0)

    @property
    def reached(self) -> bool:
        return self.spent >= self.limit

    def reason(self) -> str:
        return f"stopped: budget of {prices.usd(self.limit)} reached ({prices.usd(self.spent)} spent)"


def of_config(config: dict) -> float | None:
    return (config or {}).get(CONFIG_KEY)


def to_config(max_cost: float | None) -> dict:
    return {} if max_cost is None else {CONFIG_KEY: max_cost}


def refuse_over(samples: Sequence[Sample], judge: Judge, metrics: Sequence[str] | None, max_cost: float | None,
                est: Estimate | None = None) -> None:
    """OverBudget when a run of `samples` with this judge and metrics is estimated to cost more than `max_cost`
    USD, or when its judge has no price to check it with; nothing for no budget. `est`: their estimate, when the
    caller has made it."""
    if max_cost is None:
        return
    price = _price(judge)
    cost = (est or estimate(samples, judge, resolve(metrics))).cost(price)
    if cost > max_cost:
        raise OverBudget(f"the run is estimated to cost {prices.usd(cost)} at {price.describe()}, above its budget of "
                         f"{prices.usd(max_cost)}: raise the budget, or choose fewer samples or metrics")


def of_run(store, run_id: str) -> Budget | None:
    """The budget of a stored run with what it has spent so far (its judge_calls at its prices); None without one.
    OverBudget for a budget without a price to count with."""
    run = store.run(run_id)
    limit = of_config(json.loads(run["config"] or "{}"))
    if limit is None:
        return None
    spent = run_cost(store, run_id)
    if spent is None or spent["price"] is None:
        raise OverBudget(f"run {run_id} has a budget but no price to count its cost with")
    return Budget(limit, spent["price"], spent["usd"])


def set_limit(store, run_id: str, max_cost: float) -> None:
    """Give a stored run another budget (`run --resume RUN_ID --max-cost USD`, the Evaluate screen's resume),
    recorded in its config; OverBudget for a run whose cost cannot be counted, ValueError for no amount."""
    check_numbers({CONFIG_KEY: max_cost})
    with store.lease():
        run = store.run(run_id)
        if run is None:
            raise KeyError(f"no run {run_id!r} in {store.path}")
        _price(judge_of_run(run))
        store.set_run_config(run_id, json.loads(run["config"] or "{}") | to_config(max_cost))


def _price(judge: Judge) -> prices.Price:
    """The price a budget of `judge`'s run is counted at; OverBudget when there is none."""
    if not judge.makes_calls:
        raise OverBudget("a budget (max cost) applies to an LLM judge: the offline judge costs nothing")
    if judge.price is None:
        raise OverBudget(f"a budget cannot be checked without a price: model {judge.model!r} has no list price and "
                         "none was given (the input and output prices, USD per 1M tokens)")
    return judge.billed_price


def run_calls(store: Store, run_id: str) -> dict:
    """The run's judge calls: how many went out, were answered from the judge cache (`cached`) or failed, and their
    tokens: those of the calls that went out; `cached_input_tokens` of the input, the server's prompt cache served;
    `reasoning_tokens` of the output, a reasoning model's hidden reasoning (billed as output, with it)."""
    row = store.cursor().execute(
        f"""
        SELECT count(*) FILTER (NOT cached) AS calls, count(*) FILTER (cached) AS cached,
               count(*) FILTER (status NOT IN {_ANSWERED}) AS failed,
               coalesce(sum(input_tokens) FILTER (NOT cached), 0) AS input_tokens,
               coalesce(sum(output_tokens) FILTER (NOT cached), 0) AS output_tokens,
               coalesce(sum(cached_input_tokens) FILTER (NOT cached), 0) AS cached_input_tokens,
               coalesce(sum(reasoning_tokens) FILTER (NOT cached), 0) AS reasoning_tokens
        FROM judge_calls WHERE run_id = ?
        """, [run_id]).fetchall()[0]  # fetchone leaves the result open (PITFALLS.md)
    return dict(zip(("calls", "cached", "failed", "input_tokens", "output_tokens", "cached_input_tokens",
                     "reasoning_tokens"), row))


def run_cost(store: Store, run_id: str) -> dict | None:
    """What the run's judge calls cost (`run_calls`' tokens: cached replies cost nothing) at the prices
    recorded with the run, else the model's list price (`recorded` False); `usd` None while no price is
    known. None for a run of the offline judge, which makes no call."""
    run = store.run(run_id)
    judge = None if run is None else judge_of_run(run)
    if judge is None or not judge.makes_calls:
        return None
    calls = run_calls(store, run_id)
    recorded = prices.from_config(json.loads(run["config"] or "{}"))
    # A run through the Batch API sent every call there: all at the batch price.
    price = prices.billed(recorded or prices.list_price(run["judge_model"]), judge.batch)
    spent = None if price is None else prices.cost(calls["input_tokens"], calls["output_tokens"], price,
                                                   calls["cached_input_tokens"])
    return calls | {"model": run["judge_model"], "price": price, "recorded": recorded is not None, "usd": spent}
