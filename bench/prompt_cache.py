"""Section 4 of bench/bench_judge.py: what a provider's prompt cache serves of the LLM judge's input, before and
after the cache-friendly prompts, and what a sample costs at list prices with caching counted.

Samples (`long_samples`): 12 questions of the demo (data/demo/novel_44557_*, method local_search), each given 12
chunks of ~1,000 characters cut in order from the demo's chunk texts (the issue's shape: 12 samples of 12 chunks).

After: this checkout's judge (`judges.judge_samples`, claims and holistic parts, concurrency 8) against the
loopback server with `tests.helpers.openai_server.PromptCache`, which applies OpenAI's documented rule (the schema and
the messages in order; the longest prefix seen in the last 5 minutes, >= 1,024 tokens, in 128-token steps; a
prompt counts as cached from its arrival). Cached tokens come back in each reply's
`usage.prompt_tokens_details.cached_tokens` and are read from the judge's CallRecords.

Before: the previous release's requests for the same samples, built with its own prompts module (read from git,
`PREVIOUS`) and the claims the loopback server's extraction replies give, sent in its order (every sample's
extraction and holistic call, then the verifications) through a fresh `PromptCache`. The after requests, taken
from the CallRecords, are replayed the same way, and that replay must count what the server reported (checked),
so both columns are counted alike. Output tokens: the replies' contents in the same token unit (the previous
release got the bare result; this one the result under its task's name).
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from evaluators.runs.estimate import estimate
from evaluators.judges import CLAIMS, HOLISTIC, OpenAIJudge, judge_samples, offline, prices, prompts
from evaluators.metrics import resolve
from evaluators.records import Chunk, RagOutput, Sample
from tests.helpers.openai_server import PromptCache

ROOT = Path(__file__).resolve().parent.parent
PREVIOUS = "da43f11"  # the last release with the earlier prompts (PROMPT_VERSION 2026-11.3)
N_SAMPLES, N_CHUNKS, CHUNK_CHARS = 12, 12, 1_000
MODELS = ("gpt-5-mini", "gpt-4.1-mini", "gpt-4o-mini")  # a tenth, a quarter and half the input price cached


@dataclass
class Tally:
    """Tokens of one layout's requests over the samples, in the server's token unit."""

    calls: int = 0
    input: int = 0
    cached: int = 0
    output: int = 0

    def add(self, input_tokens: int, cached: int, output: int) -> None:
        self.calls, self.input, self.cached, self.output = (self.calls + 1, self.input + input_tokens,
                                                            self.cached + cached, self.output + output)

    def cost(self, price: prices.Price) -> float:
        return prices.cost(self.input, self.output, price, self.cached)


def long_samples(samples: list[Sample]) -> list[Sample]:
    """N_SAMPLES of `samples` (one method), each with N_CHUNKS chunks of CHUNK_CHARS cut from all their chunk texts."""
    text = " ".join(c.text for s in samples for c in s.output.contexts)
    pieces = [text[i:i + CHUNK_CHARS] for i in range(0, len(text) - CHUNK_CHARS, CHUNK_CHARS)]
    chosen = [s for s in samples if s.output.method == "local_search"][:N_SAMPLES]
    out = []
    for k, s in enumerate(chosen):
        chunks = tuple(Chunk(f"p{k}-{j}", pieces[(k * N_CHUNKS + j) % len(pieces)]) for j in range(N_CHUNKS))
        out.append(Sample(s.golden, RagOutput(s.output.question_id, s.output.method, s.output.answer, chunks)))
    return out


def previous_prompts():
    """The prompts module of release PREVIOUS, from git, its imports moved to where this checkout has them (the
    records it imports moved to evaluators.records in issue 32)."""
    source = subprocess.run(["git", "show", f"{PREVIOUS}:evaluators/judges/prompts.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    source = source.replace("from evaluators.judgments import", "from evaluators.records.judgments import")
    path = Path(tempfile.mkdtemp()) / "previous_prompts.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("previous_prompts", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _body(messages, schema: dict) -> dict:
    return {"model": "bench-model", "messages": messages, "temperature": 0, "seed": 0,
            "response_format": {"type": "json_schema", "json_schema": schema}}


def previous_rounds(old, samples: list[Sample]) -> list[list[dict]]:
    """The previous release's request bodies: round 1 (extraction, holistic), round 2 (verification per 16 chunks)."""
    first, second = [], []
    for s in samples:
        q, r, a, chunks = s.golden.question, s.golden.reference, s.output.answer, [c.text for c in s.output.contexts]
        first += [_body(old.extraction_messages(q, a, r), old.EXTRACTION_SCHEMA),
                  _body(old.holistic_messages(q, r, chunks, a), old.HOLISTIC_SCHEMA)]
        answer_claims, reference_claims = offline.segment_claims(a), offline.segment_claims(r)
        for start in range(0, len(chunks), old.CHUNKS_PER_CALL):
            batch = [(j, chunks[j]) for j in range(start, min(start + old.CHUNKS_PER_CALL, len(chunks)))]
            second.append(_body(old.verification_messages(q, answer_claims, reference_claims, batch, start == 0),
                                old.verification_schema(start == 0)))
    return [first, second]


def replay(rounds: list[list[dict]]) -> list[int]:
    """The cached tokens of each request, sent in order through a fresh cache."""
    cache = PromptCache()
    return [cache.serve(PromptCache.tokens(body)) for round_ in rounds for body in round_]


def measure(samples: list[Sample], base_url: str) -> tuple[Tally, Tally, list[str]]:
    """(after, before, checks): after as the server billed this judge's run, before replayed (module doc)."""
    judged = judge_samples(OpenAIJudge("bench-model", base_url, concurrency=8), samples, (CLAIMS, HOLISTIC))
    records = [r for j in judged for r in j.calls]
    assert all(r.status == "ok" and not r.cached for r in records), Counter(r.status for r in records)
    after = Tally()
    for r in records:
        after.add(r.input_tokens, r.cached_input_tokens, PromptCache.count(_content(r.response)))
    # the same requests replayed in rounds count what the server reported
    by_purpose = {p: [json.loads(r.request) for r in records if r.purpose == p] for p in prompts.TASKS}
    replayed = sum(replay([by_purpose[prompts.EXTRACTION] + by_purpose[prompts.HOLISTIC],
                           by_purpose[prompts.VERIFICATION]]))
    checks = [f"replayed in rounds, this release's requests count {replayed:,} cached tokens; the server reported "
              f"{after.cached:,} over the run"]
    old = previous_prompts()
    rounds = previous_rounds(old, samples)
    before = Tally()
    results = {p: [json.loads(_content(r.response))[p] for r in records if r.purpose == p] for p in prompts.TASKS}
    outputs = results[prompts.EXTRACTION] + results[prompts.HOLISTIC] + results[prompts.VERIFICATION]
    for body, cached, result in zip([b for round_ in rounds for b in round_], replay(rounds), _reorder(rounds, outputs)):
        before.add(len(PromptCache.tokens(body)), cached, PromptCache.count(json.dumps(result)))
    return after, before, checks


def _reorder(rounds: list[list[dict]], outputs: list[dict]) -> list[dict]:
    """The replies' results in the order of the previous release's requests: (extraction, holistic) per sample,
    then the verifications. `outputs`: all extraction results, all holistic results, all verification results."""
    n = N_SAMPLES
    extraction, holistic, verification = outputs[:n], outputs[n:2 * n], outputs[2 * n:]
    first = [result for pair in zip(extraction, holistic) for result in pair]
    assert len(first) == len(rounds[0]) and len(verification) == len(rounds[1])
    return first + verification


def _content(response: str) -> str:
    return json.loads(response)["choices"][0]["message"]["content"]


def section(samples: list[Sample], base_url: str) -> str:
    """The markdown of section 4."""
    long = long_samples(samples)
    after, before, checks = measure(long, base_url)
    est = estimate(long, OpenAIJudge("bench-model", concurrency=8), resolve(None))
    n = len(long)
    rows = ["| prompts | calls / sample | input tokens / sample | of them cached | cached share | output tokens / sample |"
            + "".join(f" {m} $ / 1,000 samples |" for m in MODELS),
            "|---|---:|---:|---:|---:|---:|" + "---:|" * len(MODELS)]
    for name, t in ((f"before ({PREVIOUS}, prompts 2026-11.3)", before),
                    (f"after (prompts {prompts.PROMPT_VERSION})", after)):
        costs = "".join(f" {t.cost(prices.list_price(m)) / n * 1000:.2f} |" for m in MODELS)
        rows.append(f"| {name} | {t.calls / n:.2f} | {t.input / n:,.0f} | {t.cached / n:,.0f} | "
                    f"{t.cached / t.input:.0%} | {t.output / n:,.0f} |{costs}")
    changes = "".join(f" {after.cost(prices.list_price(m)) / before.cost(prices.list_price(m)) - 1:+.0%} |"
                      for m in MODELS)
    rows.append(f"| after / before | | {after.input / before.input:.2f} | | | {after.output / before.output:.2f} |"
                f"{changes}")
    price_lines = ", ".join(f"{m} {prices.list_price(m).describe()}" for m in MODELS)
    return f"""## 4. What a provider's prompt cache serves, and the cost per sample

{n} samples of {N_CHUNKS} chunks of ~{CHUNK_CHARS:,} characters (12 demo questions, chunks cut from the demo's
chunk texts), all 34 metrics (3 calls per sample). The loopback server applies OpenAI's rule for its prompt cache
(`tests/helpers/openai_server.PromptCache`: the schema and the messages in order, the longest prefix seen in the last
5 minutes, >= 1,024 tokens, in 128-token steps) and reports the cached tokens in
`usage.prompt_tokens_details.cached_tokens`; tokens are the server's approximation (a word, up to 3 digits or
a run of punctuation: no tokenizer ships offline), schema included (OpenAI bills it as input). "Before" is the
previous release's requests for the same samples (its prompts.py from git), replayed in its order through the
same rule; "after" is this release's judge run against the server ({checks[0]}). Costs at list prices
as of {prices.AS_OF} ({price_lines}), cached input at its own price.

{chr(10).join(rows)}

- **Before**, each call had its own system message and schema, and the sample's chunks sat after them in two
  different places: only the holistic call's instructions (~1.7k tokens, over the 1,024-token minimum) were
  shared across samples, nothing within a sample.
- **After**, every call starts with the same schema and system message (all three tasks), then the sample:
  question, reference and answer (all three calls), then the chunks (verification and holistic). The
  instructions are cached across samples, and the verification call, which goes out after the holistic call
  has arrived, finds the whole sample cached. The extraction carries no chunks. The price: every call carries
  all instructions (~3k tokens), so more input tokens go out ({after.input / before.input:.2f}x), most of them cached.
- The client pays for the longer requests too: the openai package's per-call work (its typed-parameter
  transform walking every message and the schema, the JSON encoding) grows with them, so section 3's
  throughput at concurrency 32 against a 0.1 s server fell from 0.89 of the bound ({PREVIOUS}'s results) to
  the figure above. At a real model's 1-10 s a call that work is a few percent of a core (section 3's note).
- The change pays where cached input is cheap (a tenth of the input price: gpt-5 family; a quarter: gpt-4.1,
  o3, o4-mini) and costs more where it is half the input price (gpt-4o family, o3-mini).
- The pre-run estimate (`estimate.estimate`, ~4 characters a token) predicts {est.total_cached_input_tokens /
  est.total_input_tokens:.0%} of this run's input cached (its first wave of `concurrency` samples finds nothing
  cached; the server here counts a prompt cached from its arrival, so its first wave hits: a real provider may
  miss there).
"""
