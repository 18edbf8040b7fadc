"""What a run will cost the OpenAI-compatible judge (`OpenAIJudge.estimate`), before it starts: calls and tokens per
sample, summed.

Calls are exact for a judge that answers every call at the first try: a sample takes 1 extraction,
1 verification per 16 chunks (`prompts.CHUNKS_PER_CALL`), 1 holistic call and 1 criteria call (for all
of the run's criteria), each only when a chosen metric needs that part (`runs.estimate.needed_parts`).
Retries, repairs and cache hits change the real number: the run's `judge_calls` has it.

Tokens are estimated, as no tokenizer ships for every judge model: about 4 characters per token
(`approx_tokens`, OpenAI's rule of thumb for English). Input tokens are those of the real messages and the
reply schema (billed as input too) of the extraction and holistic calls, and for verification the same
with the answer and the reference standing in for the claims extracted from them. Output tokens assume
claims as the offline judge segments them and a JSON verdict per claim and chunk.

Reasoning: a known reasoning model (`openai_params.is_reasoning`) spends hidden reasoning tokens on every reply, billed
as output; no one can count them before, so an allowance per call by reasoning effort (`REASONING_TOKENS`, the
server's default being medium) is added to the output and stated (`Estimate.reasoning_note`).

Cached input: what a provider that caches prompt prefixes as OpenAI does (`prices.cacheable`) would serve
from its cache, given the judge's order (prompts): a sample's extraction and holistic calls find the
instructions (schema and system message) cached by earlier samples, except in the first wave of
`concurrency` samples; its verification calls find the instructions, the sample and its chunks cached by
its holistic call (without one, the instructions and the sample's question, reference and answer, by its
extraction). Whether a provider hits its cache is
its own affair (OpenAI: "not guaranteed"): the recorded cost counts what it reported.
"""
from __future__ import annotations

import json
import math
from collections.abc import Collection, Sequence

from evaluators.judges import offline, openai_params, prices, prompts
from evaluators.judges.protocol import CLAIMS, CRITERIA, HOLISTIC, Estimate, too_big
from evaluators.records import Sample
from evaluators.records.criteria import Criterion

# Output tokens a reply spends per item (measured on the prompts' example replies, rounded up).
QUESTION_TOKENS = 15  # one generated question
VERDICT_TOKENS = 14  # {"chunk_id": "C1", "verdict": "not_found"}
CLAIM_TOKENS = 20  # a claim's id, brackets and comparison fields
CHUNK_TOKENS = 30  # a chunk's relevance, score and short reason
HOLISTIC_TOKENS = 350  # six ratings, a verdict, an explanation, four reasoned scores, a class
CRITERION_TOKENS = 90  # a criterion's id, a few sentences of reasoning and its score
JSON_TOKENS = 20  # the reply's outer keys and brackets
# Reasoning tokens assumed per call of a reasoning model, by reasoning effort (None: the server's default, medium).
# An allowance, not a measurement: OpenAI bills them as output and says only that they vary (a few hundred to tens of
# thousands); the run's judge_calls keep the real ones (`reasoning_tokens`).
REASONING_TOKENS = {"minimal": 100, "low": 500, None: 1_500, "medium": 1_500, "high": 4_000}


def approx_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def estimate(judge, samples: Sequence[Sample], parts: Collection[str],
             criteria: Sequence[Criterion] = ()) -> Estimate:
    """`judge`'s (an OpenAIJudge) calls and tokens for `parts` of `samples` (CRITERIA: of `criteria`). Its `repeats`
    holistic and criteria replies per sample count as that many calls: the upper bound, as a server that gives `n` choices per request takes one call and
    the input tokens once. A sample over the judge's limits is not judged (`too_big`), so it costs nothing."""
    reasoning = reasoning_allowance(judge.model, judge.reasoning_effort)
    out = Estimate(samples=len(samples), reasoning_per_call=reasoning)
    repeats = judge.repeats
    instructions = approx_tokens(prompts.SYSTEM) + approx_tokens(json.dumps(prompts.SCHEMA))
    judged = [s for s in samples if not too_big(judge, s)]
    for i, sample in enumerate(judged):
        golden, answer = sample.golden, sample.output
        text = prompts.sample_text(golden.question, golden.reference, answer.answer, [c.text for c in answer.contexts])
        first = prices.cacheable(instructions) if i >= judge.concurrency else 0  # cached by earlier samples
        if CLAIMS in parts:
            # what the holistic call (else the extraction) left in the cache for the verification calls
            shared = text.whole if HOLISTIC in parts else text.head
            _claims(out, sample, text, first, prices.cacheable(instructions + approx_tokens(shared)), reasoning)
        if HOLISTIC in parts:
            tokens = _input_tokens(prompts.holistic_messages(text))
            out.add("holistic", repeats, repeats * tokens, repeats * (HOLISTIC_TOKENS + reasoning), repeats * first)
        if CRITERIA in parts and criteria:  # it goes out with the first round: only the instructions are cached
            tokens = _input_tokens(prompts.criteria_messages(text, criteria))
            output = len(criteria) * CRITERION_TOKENS + JSON_TOKENS + reasoning
            out.add("criteria", repeats, repeats * tokens, repeats * output, repeats * first)
    return out


def reasoning_allowance(model: str | None, effort: str | None) -> int:
    """Reasoning tokens assumed per call: REASONING_TOKENS for a known reasoning model, none for another."""
    return REASONING_TOKENS.get(effort, REASONING_TOKENS[None]) if openai_params.is_reasoning(model) else 0


def _claims(out: Estimate, sample: Sample, text: prompts.SampleText, first_cached: int, cached: int,
            reasoning: int) -> None:
    golden, answer = sample.golden, sample.output
    n_answer, n_reference = len(offline.segment_claims(answer.answer)), len(offline.segment_claims(golden.reference))
    claim_text = approx_tokens(answer.answer) + approx_tokens(golden.reference)
    out.add("extraction", 1, _input_tokens(prompts.extraction_messages(text)),
            claim_text + prompts.N_GENERATED_QUESTIONS * QUESTION_TOKENS + JSON_TOKENS + reasoning, first_cached)
    n_chunks = len(answer.contexts)
    if not (n_chunks or n_answer or n_reference):
        return  # the judge skips verification: nothing to verify
    size = prompts.CHUNKS_PER_CALL
    for start in range(0, max(n_chunks, 1), size):
        batch = range(start, min(start + size, n_chunks))
        # the claims stand in for the answer and the reference they come from
        messages = prompts.verification_messages(text, [answer.answer], [golden.reference], batch, start == 0)
        replies = (n_answer + n_reference) * (CLAIM_TOKENS + VERDICT_TOKENS * len(batch)) + CHUNK_TOKENS * len(batch)
        out.add("verification", 1, _input_tokens(messages), replies + JSON_TOKENS + reasoning, cached)


def _input_tokens(messages: prompts.Messages) -> int:
    """The messages' and the reply schema's tokens (a provider bills the schema as input)."""
    return sum(approx_tokens(m["content"]) for m in messages) + approx_tokens(json.dumps(prompts.SCHEMA))
