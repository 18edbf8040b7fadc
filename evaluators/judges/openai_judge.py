"""The OpenAI-compatible judge as a registered kind: any OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp;
Azure OpenAI is a kind of its own built on this one: azure_judge). Its settings, as runs store them; what it needs (a
key, a model, the server); its estimate (openai_estimate); and `judge`, which hands the samples to its protocol
(openai_protocol) over its transport (openai_transport), with the run's store as the cache and the record of Batch API
batches."""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple

from evaluators.judges import openai_estimate, openai_params, prices
from evaluators.judges.protocol import CLAIMS, CRITERIA, HOLISTIC, Estimate, Judge, Judged, Lent
from evaluators.judges.registry import register
from evaluators.records import Sample
from evaluators.records.judgments import JudgeFailure

MIN_JUDGED_BATCH = 32
DEFAULT_CONCURRENCY = 8
# Samples per engine batch in Batch API mode: each batch of samples costs 2+ rounds of up to 24 h, so as many as
# fit: 5,000 samples make ~10,000 requests a round, within the API's 50,000 (batch_api splits by size).
BATCH_API_SAMPLES = 5_000


class ServerField(NamedTuple):
    """A setting of where a judge's server is, as the Evaluate screen asks for it."""

    name: str  # the judge's field
    label: str
    env: str  # the environment variable read when it is empty
    placeholder: str
    help: str


@register
@dataclass(frozen=True)
class OpenAIJudge(Judge):
    """Any OpenAI-compatible server. The key comes from OPENAI_API_KEY, or is lent for one run
    (`judges.lent_api_key`); it is never stored."""

    model: str | None = None
    base_url: str | None = None  # None: $OPENAI_BASE_URL, else the OpenAI API
    concurrency: int = DEFAULT_CONCURRENCY
    repeats: int = 1  # holistic and criteria replies per sample
    timeout: float | None = None  # seconds per reply as a whole (None: the client's default)
    max_attempts: int | None = None
    max_output_tokens: int | None = None  # the most a cut-off reply is asked again with (None: the judge's default)
    price_in: float | None = None  # USD per 1M tokens; None: the model's list price
    price_out: float | None = None
    price_cached_in: float | None = None  # for input the server served from its prompt cache
    batch: bool = False  # through the Batch API: half the price, results within 24 h (judges/batch_api.py)
    reasoning_effort: str | None = None  # minimal, low, medium or high (reasoning models); None: the server's default
    # the parameters its server was found to take (openai_params.Params.to_config, a run's config); None: the model's
    server_params: Mapping | None = field(default=None, hash=False)

    name = "openai"
    label = "OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp)"
    needs_key = needs_model = needs_network = True
    key_env = "OPENAI_API_KEY"
    list_priced: ClassVar[bool] = True  # its model's name is a model's: the list price applies (prices.list_price)
    offers_batch: ClassVar[bool] = True  # its server takes the Batch API (batch_api)
    # where its server is and what its model is called, as the Evaluate screen asks for them
    server_fields: ClassVar[tuple[ServerField, ...]] = (
        ServerField("base_url", "Base URL", "OPENAI_BASE_URL", "https://api.openai.com/v1",
                    "Empty: the OpenAI API (or the server's OPENAI_BASE_URL)."),)
    model_label: ClassVar[tuple[str, str]] = ("Model", "e.g. gpt-4o-mini")  # (label, placeholder)
    makes_calls = rates_holistically = generates_questions = judges_criteria = True
    max_chars = None  # the server says what its context window holds

    def __post_init__(self):
        # One Params per judge, so per run: every batch's transport sends what the ones before learned (not a field:
        # it changes while the run works, and `learned` reports it)
        object.__setattr__(self, "_params", openai_params.Params.of(self.model, dict(self.server_params or {})))

    @property
    def price(self) -> prices.Price | None:
        """The prices the run records: those given, else the model's list price; None when unknown."""
        return prices.choose(self.model, self.price_in, self.price_out, self.price_cached_in, self.list_priced)

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

    def server(self) -> dict:
        """Where its server is and how the transport reaches it (openai_transport.Transport's base_url, key_env and,
        for a server the SDK reaches otherwise, client_factory): what a run and `judge check` send through."""
        return {"base_url": self.base_url, "key_env": self.key_env}

    def options(self) -> dict:
        """The judge client's settings given (None: its defaults), as the run's config and the client take them."""
        return {k: v for k, v in (("timeout", self.timeout), ("max_attempts", self.max_attempts),
                                  ("max_output_tokens", self.max_output_tokens),
                                  ("reasoning_effort", self.reasoning_effort)) if v is not None}

    def config(self) -> dict:
        """Its settings, and the parameters its requests carry (the temperature sent, the output limit's name...)."""
        price = self.price
        return ({"base_url": self.base_url, "concurrency": self.concurrency, "repeats": self.repeats}
                | self.options()
                | (prices.to_config(price) if price else {}) | ({"batch": True} if self.batch else {})
                | self.learned())

    def learned(self) -> dict:
        """The parameters its server takes, as found so far (openai_params): recorded in the run's config."""
        return self._params.to_config()

    @classmethod
    def of_config(cls, model: str | None, config: Mapping) -> OpenAIJudge:
        recorded = prices.from_config(dict(config))
        return cls(model=model, base_url=config.get("base_url"),
                   concurrency=config.get("concurrency") or DEFAULT_CONCURRENCY,
                   repeats=config.get("repeats") or 1, timeout=config.get("timeout"),
                   max_attempts=config.get("max_attempts"), max_output_tokens=config.get("max_output_tokens"),
                   price_in=recorded.input if recorded else None, price_out=recorded.output if recorded else None,
                   price_cached_in=recorded.cached_input if recorded else None,
                   batch=bool(config.get("batch")), reasoning_effort=config.get("reasoning_effort"),
                   server_params=config.get(openai_params.CONFIG_KEY))

    def estimate(self, samples: Sequence[Sample], parts: Collection[str], criteria: Sequence = ()) -> Estimate:
        return openai_estimate.estimate(self, samples, parts, criteria)

    def judge(self, samples: Sequence[Sample], parts: Collection[str], lent: Lent) -> list[Judged]:
        """A sample's parts are asked for at once: 2 rounds per sample (openai_protocol); the criteria (CRITERIA) are
        the run's, `lent.criteria`, all in one call."""
        from evaluators.judges.openai_protocol import JudgeClient  # imports openai only when used

        store = lent.store
        client = JudgeClient(model=self.model, api_key=lent.api_key, concurrency=self.concurrency,
                             repeats=self.repeats, cache=StoreCache(store) if store is not None else None,
                             batch=self.batch,
                             batches=StoreBatches(store, lent.run_id) if store is not None and lent.run_id else None,
                             budget=lent.budget, params=self._params, **self.server(), **self.options())
        criteria = lent.criteria if CRITERIA in parts else ()
        return [_judged(*parts) for parts in client.assess_parts_sync(samples, CLAIMS in parts, HOLISTIC in parts,
                                                                      criteria, lent.on_sample)]


def _judged(judgment, rating, scored=None) -> Judged:
    """The parts of one sample (openai_protocol.Judgment, HolisticJudgment, CriteriaJudgment; None: not asked)."""
    out = Judged()
    if judgment is not None:
        if judgment.matrix is None:  # the extraction failed: no claims and no questions
            failure = JudgeFailure(judgment.status, judgment.error or judgment.status)
            out = Judged(failure, failure, calls=tuple(judgment.calls))
        else:
            out = Judged(judgment.matrix, judgment.generated_questions, calls=tuple(judgment.calls))
    if rating is not None:
        holistic = rating.holistic or JudgeFailure(rating.status, rating.error or rating.status)
        out = out.merged(Judged(holistic=holistic, calls=tuple(rating.calls)))
    if scored is not None:
        criteria = scored.scores if scored.scores is not None else JudgeFailure(scored.status,
                                                                                scored.error or scored.status)
        out = out.merged(Judged(criteria=criteria, calls=tuple(scored.calls)))
    return out


class StoreCache:
    """The transport's cache (get/put) on a Store's `judge_cache`: a re-run makes no call it made before."""

    def __init__(self, store):
        self.store = store

    def get(self, key: str) -> dict | None:
        return self.store.cached_reply(key)

    def put(self, key: str, **fields) -> None:
        self.store.cache_reply(key, **fields)


class StoreBatches:
    """The record of a run's Batch API batches (as `batch_api.Batcher` takes it) in a Store's `judge_batches`."""

    def __init__(self, store, run_id: str):
        self.store, self.run_id = store, run_id

    def open(self) -> dict[str, str]:
        return self.store.open_batches(self.run_id)

    def add(self, batch_id: str, input_file_id: str, custom_ids: list[str]) -> None:
        self.store.add_batch(self.run_id, batch_id, input_file_id, custom_ids)

    def update(self, batch_id: str, status: str) -> None:
        self.store.update_batch(batch_id, status)

    def consume(self, batch_ids: list[str]) -> None:
        self.store.consume_batches(batch_ids)
