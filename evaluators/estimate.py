"""What a run will cost an LLM judge, before it starts: calls and tokens per sample, summed. (It reads
both the judges and the metrics, so it sits beside the engine, above both.)

Calls are exact for a judge that answers every call at the first try: a sample takes 1 extraction,
1 verification per 16 chunks (`prompts.CHUNKS_PER_CALL`) and 1 holistic call, each only when a
chosen metric needs that part (`needed_parts`). Retries, repairs and cache hits change the
real number: the run's `judge_calls` has it.

Tokens are estimated, as no tokenizer ships for every judge model: about 4 characters per token
(`approx_tokens`, OpenAI's rule of thumb for English). Input tokens come from the real messages
of the extraction and holistic calls, and for verification from the question, the answer and the
reference (standing in for the claims extracted from them) and the chunks. Output tokens assume
claims as the offline judge segments them and a JSON verdict per claim and chunk.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from evaluators.judges import CLAIMS, HOLISTIC, Judge, offline, prices, prompts, too_big
from evaluators.metrics import Metric
from evaluators.schema import Sample

# Output tokens a reply spends per item (measured on the prompts' example replies, rounded up).
QUESTION_TOKENS = 15  # one generated question
VERDICT_TOKENS = 14  # {"chunk_id": "C1", "verdict": "not_found"}
CLAIM_TOKENS = 20  # a claim's id, brackets and comparison fields
CHUNK_TOKENS = 30  # a chunk's relevance, score and short reason
HOLISTIC_TOKENS = 350  # six ratings, a verdict, an explanation, four reasoned scores, a class
JSON_TOKENS = 20  # the reply's outer keys and brackets


def approx_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


@dataclass
class Estimate:
    samples: int = 0
    calls: dict[str, int] = field(default_factory=dict)  # purpose -> calls
    input_tokens: dict[str, int] = field(default_factory=dict)
    output_tokens: dict[str, int] = field(default_factory=dict)

    def add(self, purpose: str, calls: int, input_tokens: int, output_tokens: int) -> None:
        self.calls[purpose] = self.calls.get(purpose, 0) + calls
        self.input_tokens[purpose] = self.input_tokens.get(purpose, 0) + input_tokens
        self.output_tokens[purpose] = self.output_tokens.get(purpose, 0) + output_tokens

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    @property
    def total_input_tokens(self) -> int:
        return sum(self.input_tokens.values())

    @property
    def total_output_tokens(self) -> int:
        return sum(self.output_tokens.values())

    def cost(self, price: prices.Price) -> float:
        """USD for the estimated tokens at `price` (an estimate like the tokens it is made of)."""
        return prices.cost(self.total_input_tokens, self.total_output_tokens, price)

    def summary(self) -> str:
        if not self.total_calls:
            return "judge calls: none (no chosen metric needs an LLM judge)"
        per = self.total_calls / self.samples
        return (f"judge calls: {self.total_calls} ({per:.1f} per sample: "
                + ", ".join(f"{n} {p}" for p, n in self.calls.items())
                + f"); tokens, estimated at 4 characters each: ~{self.total_input_tokens:,} in, "
                  f"~{self.total_output_tokens:,} out (retries and repairs add, cached replies cost nothing)")


def needed_parts(metrics: Iterable[Metric]) -> set[str]:
    """The judge parts a run of `metrics` asks for (see engine.RunContext.judged): every judged
    metric needs the claim matrix (the rubric family's wp_overall too); the rubric family also the
    holistic ratings."""
    judged = [m for m in metrics if "judge" in m.needs]
    parts = {CLAIMS} if judged else set()
    if any(m.family == "rubric" for m in judged):
        parts.add(HOLISTIC)
    return parts


def estimate(samples: Sequence[Sample], judge: Judge, metrics: Iterable[Metric]) -> Estimate:
    """The judge's `repeats` holistic replies per sample count as that many calls: the upper bound, as a server that
    gives `n` choices per request takes one call and the input tokens once. A sample over the judge's limits is
    not judged (`too_big`), so it costs nothing."""
    out = Estimate(samples=len(samples))
    if judge.offline:
        return out
    parts, repeats = needed_parts(metrics), judge.repeats
    for sample in (s for s in samples if not too_big(judge, s)):
        if CLAIMS in parts:
            _claims(out, sample)
        if HOLISTIC in parts:
            golden, answer = sample.golden, sample.output
            messages = prompts.holistic_messages(golden.question, golden.reference,
                                                 [c.text for c in answer.contexts], answer.answer)
            out.add("holistic", repeats, repeats * _message_tokens(messages), repeats * HOLISTIC_TOKENS)
    return out


def _claims(out: Estimate, sample: Sample) -> None:
    golden, answer = sample.golden, sample.output
    messages = prompts.extraction_messages(golden.question, answer.answer, golden.reference)
    n_answer, n_reference = len(offline.segment_claims(answer.answer)), len(offline.segment_claims(golden.reference))
    claim_text = approx_tokens(answer.answer) + approx_tokens(golden.reference)
    out.add("extraction", 1, _message_tokens(messages),
            claim_text + prompts.N_GENERATED_QUESTIONS * QUESTION_TOKENS + JSON_TOKENS)
    chunks = [c.text for c in answer.contexts]
    if not (chunks or n_answer or n_reference):
        return  # the judge skips verification: nothing to verify
    size = prompts.CHUNKS_PER_CALL
    for first in range(0, max(len(chunks), 1), size):
        batch = chunks[first:first + size]
        fixed = approx_tokens(prompts.VERIFICATION_SYSTEM) + approx_tokens(golden.question) + claim_text
        replies = (n_answer + n_reference) * (CLAIM_TOKENS + VERDICT_TOKENS * len(batch)) + CHUNK_TOKENS * len(batch)
        out.add("verification", 1, fixed + sum(approx_tokens(c) for c in batch), replies + JSON_TOKENS)


def _message_tokens(messages: prompts.Messages) -> int:
    return sum(approx_tokens(m["content"]) for m in messages)
