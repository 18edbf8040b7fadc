"""What a judge is to the rest of RAGScope (DESIGN.md "Judging"): the protocol every kind of judge follows.

A kind of judge is a `Judge` subclass registered under its name (`registry.register`); an instance holds its
settings (a model, a server, prices...). The engine, the metrics and the screens talk to a judge only through
this protocol, never by asking which kind it is:

* what it needs: `needs_key` (from `key_env`), `needs_model`, `needs_network`, and what it still lacks of them
  (`lacks`) or which of its settings no run can use (`problems`), as the run's problems say them;
* what it can do, asked as capabilities: `makes_calls`, `rates_holistically`, `generates_questions`,
  `agreement_measured` (each says what a metric or screen does without it);
* its estimate of a run's calls and tokens (`estimate`), its settings in the run's config and back (`config`,
  `of_config`), how the engine feeds it (`batch_size`, `min_batch_size`, `max_chars`);
* `judge(samples, parts, lent)`: the parts (CLAIMS: the claim matrix and the questions generated from the answer;
  HOLISTIC: the rubric ratings; CRITERIA: the scores of the run's own criteria, `lent.criteria`) of every sample, as
  `Judged` records, and the calls that took.
"""
from __future__ import annotations

import abc
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from evaluators.judges import prices
from evaluators.records import Sample
from evaluators.records.criteria import Criterion
from evaluators.records.judgments import ClaimMatrix, CriterionScore, Holistic, JudgeFailure

CLAIMS, HOLISTIC, CRITERIA = "claims", "holistic", "criteria"  # the parts a judge is asked for
PARTS = (CLAIMS, HOLISTIC, CRITERIA)
DEFAULT_BATCH = 1000  # samples scored and committed together (engine.BATCH_SIZE)

# What one sample may hold to be judged; beyond it, the engine stores its judged cells `skipped` with the reason
# (`too_big`). Within them the offline judge takes seconds a sample; 10,000 chunks took it 2.5 minutes and one chunk
# of a million characters over a minute (bench/results/limits.md). An LLM's context window ends well before.
# A judge's own bound on characters is its `max_chars` (the offline judge's: question, answer, reference and chunks).
MAX_CHUNKS = 1_000  # per answer, for every judge


@dataclass(frozen=True)
class CallRecord:
    """One call to a model server, as the `judge_calls` table keeps it (run and sample keys added by the engine)."""

    purpose: str  # extraction, verification, holistic, criteria; with _repair for a repair call
    model: str
    prompt_hash: str  # sha256 of the request's messages (prompts.prompt_json)
    request: str  # the request body as JSON text (never holds the key: it travels in a header)
    response: str | None  # the raw response body, or None when none came back
    input_tokens: int | None
    output_tokens: int | None
    latency_ms: float
    status: str
    error: str | None
    cached: bool = False  # answered from the judge cache: no request went out
    # input tokens the server served from its prompt cache (usage.prompt_tokens_details.cached_tokens), billed at the
    # cached-input price; None where the server does not say
    cached_input_tokens: int | None = None
    batch_id: str | None = None  # the Batch API batch the request went in (batch mode), else None
    # hidden reasoning tokens of the reply (usage.completion_tokens_details.reasoning_tokens), part of output_tokens
    # as OpenAI counts them and billed as output; None where the server does not say
    reasoning_tokens: int | None = None
    # whether the server held the reply to the request's JSON schema: False when none was sent (JSON mode) or the
    # JSON had to be found in prose (a server that ignores response_format); None: no usable reply
    schema_enforced: bool | None = None


@dataclass(frozen=True)
class Judged:
    """One sample's judge output so far, and the calls it took. None: that part was not asked for,
    or this judge has no such part (a judge that does not generate questions or rate holistically)."""

    matrix: ClaimMatrix | JudgeFailure | None = None
    generated_questions: tuple[str, ...] | JudgeFailure | None = None  # from the answer (answer relevance)
    holistic: Holistic | JudgeFailure | None = None
    calls: tuple[CallRecord, ...] = field(default=())
    # the run's criteria (Lent.criteria): each one's score, or why it has none; a JudgeFailure for the whole call
    criteria: Mapping[str, CriterionScore | JudgeFailure] | JudgeFailure | None = None

    def merged(self, other: Judged) -> Judged:
        """This output with the parts `other` adds, and both's calls."""
        return Judged(other.matrix if other.matrix is not None else self.matrix,
                      other.generated_questions if other.generated_questions is not None else self.generated_questions,
                      other.holistic if other.holistic is not None else self.holistic,
                      self.calls + other.calls,
                      other.criteria if other.criteria is not None else self.criteria)


@dataclass
class Estimate:
    """A judge's calls and tokens for a run, per purpose (extraction, verification, holistic), before it starts."""

    samples: int = 0
    calls: dict[str, int] = field(default_factory=dict)  # purpose -> calls
    input_tokens: dict[str, int] = field(default_factory=dict)
    output_tokens: dict[str, int] = field(default_factory=dict)
    cached_input_tokens: dict[str, int] = field(default_factory=dict)  # of input_tokens, from the prompt cache
    # hidden reasoning tokens assumed per call (a reasoning model's), counted in output_tokens: billed as output
    reasoning_per_call: int = 0

    def add(self, purpose: str, calls: int, input_tokens: int, output_tokens: int,
            cached_input_tokens: int = 0) -> None:
        for counts, n in ((self.calls, calls), (self.input_tokens, input_tokens), (self.output_tokens, output_tokens),
                          (self.cached_input_tokens, cached_input_tokens)):
            counts[purpose] = counts.get(purpose, 0) + n

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    @property
    def total_input_tokens(self) -> int:
        return sum(self.input_tokens.values())

    @property
    def total_output_tokens(self) -> int:
        return sum(self.output_tokens.values())

    @property
    def total_cached_input_tokens(self) -> int:
        return sum(self.cached_input_tokens.values())

    def cost(self, price: prices.Price) -> float:
        """USD for the estimated tokens at `price`, cached input at its price (an estimate like the tokens it is
        made of)."""
        return prices.cost(self.total_input_tokens, self.total_output_tokens, price, self.total_cached_input_tokens)

    def cache_note(self) -> str:
        """The share of the input a prompt cache would serve, for the cost line."""
        if not self.total_cached_input_tokens:
            return ""
        share = self.total_cached_input_tokens / self.total_input_tokens
        return f"; {share:.0%} of the input from the server's prompt cache"

    def summary(self) -> str:
        if not self.total_calls:
            return "judge calls: none (no chosen metric needs an LLM judge)"
        per = self.total_calls / self.samples
        return (f"judge calls: {self.total_calls} ({per:.1f} per sample: "
                + ", ".join(f"{n} {p}" for p, n in self.calls.items())
                + f"); tokens, estimated at 4 characters each: ~{self.total_input_tokens:,} in "
                  f"(~{self.total_cached_input_tokens:,} of them cacheable by the server), "
                  f"~{self.total_output_tokens:,} out{self.reasoning_note()} (retries and repairs add, cached replies "
                  f"cost nothing)")

    def reasoning_note(self) -> str:
        """The reasoning allowance in the output tokens, said (a reasoning model's hidden tokens are billed)."""
        if not self.reasoning_per_call:
            return ""
        return f" (reasoning: ~{self.reasoning_per_call:,} tokens per call assumed, billed as output)"


@dataclass(frozen=True)
class Lent:
    """What a run lends its judge for one batch: nothing of it is a judge's setting or is ever stored with the run."""

    store: Any = None  # the run's Store: a judge may keep its cache and its Batch API batches there
    run_id: str | None = None
    api_key: str | None = None  # lent for this run (`judges.lent_api_key`); None: the environment's
    budget: Any = None  # evaluators.runs.budget.Budget: once reached, a judge that makes calls makes no more
    on_sample: Callable[[], None] | None = None  # to call as each sample is judged (progress within a batch)
    criteria: tuple[Criterion, ...] = ()  # the run's own criteria (the CRITERIA part scores them)


class Judge(abc.ABC):
    """A kind of judge. Subclasses are frozen dataclasses of their settings, registered with `registry.register`;
    the defaults below are those of a judge that needs nothing, makes no call and fills only the claim matrix."""

    name: ClassVar[str]  # its kind, as runs store it (`runs.judge`, `scores.judge`) and the CLI's --judge names it
    label: ClassVar[str]  # what people choose it by (the Evaluate screen, the report)

    # What it needs from whoever starts a run.
    needs_key: ClassVar[bool] = False  # an API key (never stored: see `Lent.api_key`)
    key_env: ClassVar[str | None] = None  # the environment variable the key comes from when none is lent
    needs_model: ClassVar[bool] = False  # a model name
    needs_network: ClassVar[bool] = False  # a server to reach: its settings are shown and stored

    # What it can do. Without each, a metric or screen does what the comment says.
    makes_calls: ClassVar[bool] = False  # calls a model server: calls estimated, priced, held to a budget, recorded
    # in judge_calls (without: no estimate, no cost, no budget; "makes no calls")
    rates_holistically: ClassVar[bool] = False  # the HOLISTIC part (without: the rubric ids come from the claim
    # metrics by the documented mapping, metrics/rubric.py)
    generates_questions: ClassVar[bool] = False  # questions from the answer in the CLAIMS part (without:
    # answer_relevance is the question-answer cosine)
    agreement_measured: ClassVar[bool] = False  # its agreement with people was measured (judges/agreement.json):
    # the panels and the report quote it (without: they say it was not measured)
    judges_criteria: ClassVar[bool] = False  # scores an analyst's free-text criteria, the CRITERIA part (without:
    # their cells are not_applicable, "needs an LLM judge": metrics/criteria.py)

    model: str | None = None  # what runs store as `judge_model`
    price: prices.Price | None = None  # of a judge that makes calls: what its tokens cost (None: unknown)
    billed_price: prices.Price | None = None  # what they are billed at (e.g. a batch discount)
    batch_size: int = DEFAULT_BATCH  # the most samples the engine gives it at once
    min_batch_size: int = DEFAULT_BATCH  # its first batch, and the fewest the engine paces a batch to
    max_chars: int | None = None  # characters of one sample it judges (`too_big`); None: no bound of its own

    def config(self) -> dict:
        """Its settings as the run's config keeps them (`of_config` reads them back); never a key."""
        return {}

    @classmethod
    def of_config(cls, model: str | None, config: Mapping) -> Judge:
        """The judge of a stored run: its `judge_model` and its config (which holds other entries too)."""
        return cls()

    def key(self, api_key: str | None = None) -> str | None:
        """The key it would use: `api_key`, lent for one run, else the environment's `key_env` (None: neither)."""
        return api_key or (os.environ.get(self.key_env) if self.key_env else None) or None

    def lacks(self, api_key: str | None = None) -> list[tuple[str, str]]:
        """What it still lacks to judge (an estimate needs none of it), as (what it is about, the message): its model,
        and a key (`key`; never stored)."""
        found = []
        if self.needs_model and not self.model:
            found.append(("model", "name the judge's model"))
        if self.needs_key and not self.key(api_key):
            found.append(("api_key", f"enter the API key (or set {self.key_env} on the server)"))
        return found

    def problems(self) -> list[tuple[str, str]]:
        """Its settings that no run can use (a mode its server does not offer), as (what it is about, the message);
        none by default."""
        return []

    def learned(self) -> dict:
        """Config entries it found out while judging (e.g. the parameters its server refuses): the engine records them
        in the run's config after each batch, so a resume (`of_config`) need not find them out again."""
        return {}

    def estimate(self, samples: Sequence[Sample], parts: Collection[str],
                 criteria: Sequence[Criterion] = ()) -> Estimate:
        """Its calls and tokens for `parts` of `samples` (CRITERIA: for `criteria`), before a run; no calls by
        default."""
        return Estimate(samples=len(samples))

    @abc.abstractmethod
    def judge(self, samples: Sequence[Sample], parts: Collection[str], lent: Lent) -> list[Judged]:
        """The `parts` of every sample, in order (a part it does not make stays None); never raises for a fault of
        one sample or call: that sample's part is a JudgeFailure. May raise JudgeRefused when no call can succeed."""


def too_big(judge: Judge, sample: Sample) -> str | None:
    """Why `judge` does not judge `sample` (over MAX_CHUNKS or the judge's `max_chars`), or None."""
    chunks = sample.output.contexts
    if len(chunks) > MAX_CHUNKS:
        return (f"not judged: {len(chunks):,} chunks, over the limit of {MAX_CHUNKS:,} per answer (keep the chunks "
                "the method ranked first)")
    if judge.max_chars is not None:
        chars = (len(sample.golden.question) + len(sample.golden.reference) + len(sample.output.answer)
                 + sum(len(c.text) for c in chunks))
        if chars > judge.max_chars:
            return (f"not judged: {chars:,} characters in question, answer, reference and chunks, over the "
                    f"{judge.name} judge's limit of {judge.max_chars:,} (shorten the chunks, or use an LLM judge)")
    return None
