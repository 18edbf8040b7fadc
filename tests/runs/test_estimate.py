"""The pre-run estimate of judge calls and tokens (evaluators.runs.estimate)."""
import json
import math

import pytest

from evaluators.judges import OfflineJudge, OpenAIJudge, prices, prompts
from evaluators.judges.openai_estimate import approx_tokens
from evaluators.runs.estimate import estimate, needed_parts
from evaluators.metrics import resolve
from evaluators.records import Chunk, GoldenItem, RagOutput, Sample


def sample(n_chunks: int, answer: str = "Paris is the capital. It is in France.", qid: str = "q1") -> Sample:
    chunks = tuple(Chunk(f"c{i}", f"Chunk {i} text about Paris.") for i in range(n_chunks))
    return Sample(GoldenItem(qid, "What is the capital of France?", "Paris."), RagOutput(qid, "m", answer, chunks))


ALL = resolve(None)


@pytest.mark.parametrize("n_chunks, verifications", [(0, 1), (3, 1), (16, 1), (17, 2), (40, 3)])
def test_calls_per_sample_follow_the_judges_batching(n_chunks, verifications):
    e = estimate([sample(n_chunks)], OpenAIJudge("m"), ALL)
    assert e.calls == {"extraction": 1, "verification": verifications, "holistic": 1}
    assert e.total_calls == 2 + verifications


def test_nothing_to_verify_takes_no_verification_call():
    e = estimate([Sample(GoldenItem("q", "Q?", ""), RagOutput("q", "m", "", ()))], OpenAIJudge("m"), ALL)
    assert e.calls == {"extraction": 1, "holistic": 1}


def test_only_the_parts_the_chosen_metrics_need():
    assert needed_parts(resolve(["exact_match", "rouge_l"])) == set()
    assert needed_parts(resolve(["faithfulness"])) == {"claims"}
    assert needed_parts(resolve(["answer_relevance"])) == {"claims"}  # the generated questions
    assert needed_parts(resolve(["judge_overall"])) == {"claims", "holistic"}
    assert estimate([sample(2)] * 3, OpenAIJudge("m"), resolve(["faithfulness"])).calls == {"extraction": 3, "verification": 3}
    lexical = estimate([sample(2)], OpenAIJudge("m"), resolve(["exact_match"]))
    assert lexical.total_calls == 0 and "none" in lexical.summary()
    assert estimate([sample(2)], OfflineJudge(), ALL).total_calls == 0


def test_input_tokens_of_extraction_and_holistic_come_from_the_real_messages_and_the_schema():
    s = sample(2)
    e = estimate([s], OpenAIJudge("m"), ALL)
    text = prompts.sample_text(s.golden.question, s.golden.reference, s.output.answer, [c.text for c in s.output.contexts])
    schema = math.ceil(len(json.dumps(prompts.SCHEMA)) / 4)  # billed as input too
    for purpose, messages in (("extraction", prompts.extraction_messages(text)),
                              ("holistic", prompts.holistic_messages(text))):
        assert e.input_tokens[purpose] == sum(math.ceil(len(m["content"]) / 4) for m in messages) + schema
    # Longer chunks cost more verification input; more claims more verification output.
    longer = estimate([sample(2, answer="Paris is the capital. It is in France. It has the Louvre. It is big.")],
                      OpenAIJudge("m"), ALL)
    assert longer.output_tokens["verification"] > e.output_tokens["verification"]
    assert approx_tokens("") == 0 and approx_tokens("abcde") == 2


def _long(qid: str, n_chunks: int = 12) -> Sample:
    chunks = tuple(Chunk(f"c{i}", f"Chunk {i} tells of the river and the old town by the bridge. " * 16)
                   for i in range(n_chunks))
    return Sample(GoldenItem(qid, "Which river runs through the old town?", "The Avon."),
                  RagOutput(qid, "m", "The Avon runs through it.", chunks))


def test_cached_input_follows_the_prompt_caches_rule_and_the_calls_order():
    instructions = approx_tokens(prompts.SYSTEM) + approx_tokens(json.dumps(prompts.SCHEMA))
    judge = OpenAIJudge("m", concurrency=2)
    samples = [_long(f"q{i}") for i in range(3)]
    e = estimate(samples, judge, ALL)
    # the first wave (2 samples in flight) finds nothing cached; the third finds the instructions
    assert e.cached_input_tokens["extraction"] == prices.cacheable(instructions) > 0
    assert e.cached_input_tokens["holistic"] == prices.cacheable(instructions)
    # a verification call finds the instructions, the sample and its chunks, as the holistic call left them
    s = samples[0]
    text = prompts.sample_text(s.golden.question, s.golden.reference, s.output.answer, [c.text for c in s.output.contexts])
    shared = instructions + approx_tokens(text.whole)
    assert e.cached_input_tokens["verification"] == 3 * prices.cacheable(shared)
    assert e.total_cached_input_tokens > e.total_input_tokens / 2  # over half of a 12-chunk sample's input
    # without the holistic call, only what the extraction left: the instructions and the question, reference, answer
    claims_only = estimate(samples, judge, resolve(["faithfulness"]))
    assert claims_only.cached_input_tokens["verification"] == 3 * prices.cacheable(
        instructions + approx_tokens(text.head))
    # the cost prices cached input at its own price
    price = prices.Price(1.0, 4.0, 0.1)
    uncached = e.total_input_tokens - e.total_cached_input_tokens
    assert e.cost(price) == pytest.approx((uncached + e.total_cached_input_tokens * 0.1 + e.total_output_tokens * 4) / 1e6)
    assert "cacheable by the server" in e.summary() and e.cache_note().endswith("from the server's prompt cache")


def test_summary_names_calls_per_sample_and_tokens():
    text = estimate([sample(3, qid="a"), sample(20, qid="b")], OpenAIJudge("m"), ALL).summary()
    assert text.startswith("judge calls: 7 (3.5 per sample: 2 extraction, 3 verification, 2 holistic)")
    assert "tokens, estimated at 4 characters each" in text


def test_cost_is_the_estimated_tokens_at_the_price():
    from evaluators.judges.prices import Price

    e = estimate([sample(3, qid="a"), sample(20, qid="b")], OpenAIJudge("m"), ALL)
    expected = (e.total_input_tokens * 0.15 + e.total_output_tokens * 0.60) / 1e6  # no cached price: as input
    assert e.cost(Price(0.15, 0.60)) == pytest.approx(expected)
    assert e.cost(Price(2.5, 10.0)) > e.cost(Price(0.15, 0.60)) > 0
    assert estimate([sample(3)], OfflineJudge(), ALL).cost(Price(2.5, 10.0)) == 0  # the offline judge makes no call


def test_repeats_count_as_that_many_holistic_calls():
    once, thrice = (estimate([sample(2)], OpenAIJudge("m", repeats=n), ALL) for n in (1, 3))
    assert thrice.calls == {**once.calls, "holistic": 3}
    assert thrice.input_tokens["holistic"] == 3 * once.input_tokens["holistic"]
    assert thrice.output_tokens["holistic"] == 3 * once.output_tokens["holistic"]
    assert thrice.input_tokens["extraction"] == once.input_tokens["extraction"]  # the claims are asked once


def test_a_sample_over_the_judges_limits_costs_nothing():
    from evaluators.judges import MAX_CHUNKS
    within = estimate([sample(3)], OpenAIJudge("m"), ALL)
    both = estimate([sample(3), sample(MAX_CHUNKS + 1, qid="q2")], OpenAIJudge("m"), ALL)
    assert both.total_calls == within.total_calls and both.total_input_tokens == within.total_input_tokens
