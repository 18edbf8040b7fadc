"""Benchmark: every lexical metric over 100,000 synthetic samples.

    .venv/bin/python bench/bench_lexical.py [--samples 100000] [--methods 4] [--seed 7] [--no-write]

Samples are (question, method) pairs as in a real run: `samples / methods` golden items, each
answered by `methods` methods, so references repeat and answers do not. Answers have 5-120 words,
references 2-60, both with numbers ($, %, thousands separators, negatives) and capitalised names;
30% of the questions carry 1-5 checks; ~3% of the answers are "don't know"s and ~2% the reference
in another case and spacing.

Timings (wall clock, `time.perf_counter`):
  * "cold": the metric alone, caches cleared first (what it costs when it runs by itself);
  * "engine order": all metrics over one batch of 1,000 samples before the next batch, caches
    cleared once at the start (what `engine.execute_run` does: shared extractions are paid by the
    first metric that needs them);
  * "warm caches": the engine order again, without clearing the caches (a re-score).
The machine's load average is printed with the results: the machine may be shared.
Peak memory: Python allocations traced by tracemalloc over a separate engine-order run (tracing slows
it, so it is not timed), and the process's peak RSS.
Writes the markdown to bench/results/lexical.md unless --no-write.
"""
from __future__ import annotations

import argparse
import datetime as dt
import gc
import os
import platform
import random
import resource
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluators.maths.checks import CHECK_TYPES  # noqa: E402
from evaluators.runs.engine import BATCH_SIZE  # noqa: E402
from evaluators.metrics import REGISTRY  # noqa: E402
from evaluators.records import GoldenItem, RagOutput, Sample  # noqa: E402
from evaluators.maths.text import ANSWER_CACHE_SIZE, CACHE_SIZE, clear_caches, numbers  # noqa: E402

WORDS = """rate change premium policy territory coverage factor base table rule group rating plan
liability vehicle driver class discount surcharge limit deductible annual filing manual page
section increase decrease average indicated selected experience loss ratio trend expense county
zone symbol model year value credit tier score household multi car accident violation claim
frequency severity exposure earned written adjustment schedule effective date state company
program option endorsement collision comprehensive medical payments uninsured underinsured the a
of to in and is for on that with as by it this be are was from at or an which has have not its
their also were been more than other these each can may when would could should about into only
between over under after before during while because however therefore heath plant species cove
boat fish cave village harbour coast cliff journey narrative author chapter""".split()
NAMES = """Territory Rule GRG Cornwall Lizard Erica John Curgenven Penzance Falmouth Truro Helston
Mullion Kynance Cadgwith Coverack Porthleven Marazion Newlyn Mousehole Zone Group Class Tier
Table Section Program Plan""".split()
HEDGES = ["I don't know.", "I do not know based on the context.", "The information is not available.",
          "N/A", "Unknown", "There is insufficient data to answer this."]
CITES = ["According to the manual,", "Based on Table: 3,", "Source: rate filing page 12.",
         "From the PDF document,"]


NOTES = """## Profiling notes (same data, same machine)

The first version took 15.4 s in sequence with a 683 MiB traced peak. What changed:
- Regexes start with their first character class and check word boundaries in a lookbehind
  after it: Python's `re` only fast-scans a pattern with a literal/class prefix (the number
  scan went from 25 to 4 µs per answer, citations from 13 to 3 µs).
- Answers' ROUGE tokens are not cached (each answer is tokenised once; caching them cost
  ~350 MiB); reference tokens are cached and interned. ASCII text is tokenised with
  `bytes.translate` + `split` (2x the regex).
- Substring prefilters (`phrase in text`) before the boundary regex for citations and don't-know.
- Caches hold plain tuples of str/float, not named tuples or frozensets: the collector stops
  tracking those, while 459k cached `Keyword` named tuples made every full collection take 0.4 s.
- `checks_pass_rate` validates and pre-renders each question's checks once per batch.

Second round (issue 10; cProfile, then CPU time and valgrind instruction counts to compare
versions on a shared machine; every value, status and detail of the 100k samples unchanged).
Back to back with the first-round code at a load average of ~1, engine order went from 4.9-5.1 s
to 4.6-4.8 s of wall clock (-6%), 4.9 to 4.4 s of CPU time (-10%, `time.process_time`, best of 3)
and 1.81 to 1.61 G instructions for 4,000 samples (-11%); the 7.26 s recorded before this round
was measured under a heavier load (the first-round code takes 4.9 s at a load of ~1).
- `normalize` returns the lowercased text as is when it is single-spaced and printable (split +
  join rebuilt the same string): 2.3 -> 1.4 µs per answer.
- Keyword matching: a keyword of word characters is found with one substring test, " keyword " in
  the answer with its non-word characters made spaces (`bytes.translate`), instead of a substring
  test plus a Python boundary check on every hit (~8 per answer here).
- `fold` (answers' haystack for coverage, citations, don't know, checks) is cached; the caches of
  answers only (`fold`, a pair's coverage) hold 4,096 entries, enough for a batch, instead of
  every answer of the run: ~4% faster in engine order, 30 MiB less at the peak.
- `checks_pass_rate` prepares a question's checks once per process rather than once per batch
  (the engine scores a question's methods in different batches): 0.44 -> 0.26 s.
- One `json.JSONEncoder` instead of a `json.dumps(..., ensure_ascii=False)` per check name (which
  builds an encoder per call: 0.6 -> 0.09 µs); `Result(value, OK, detail)` rather than
  `detail=detail` (0.50 -> 0.38 µs a Result).
- Tried, not kept: a set of the answer's words shared by coverage, citations and don't know
  (building it costs what the ~36 substring tests it replaces cost), alternation regexes for the
  phrase lists (slower than one `in` per phrase), answers out of the large `normalize` and
  `number_values` caches (no measurable gain), one shared `Result` per ROUGE-L value (~0.5%).

What is left is spread thin and mostly CPython's own cost: the number scan and parse (~5 µs per
answer, shared), keyword matching (~6 µs), ROUGE tokens + LCS (~4 µs), keyword extraction
(~17 µs per reference, shared by its methods), citations and don't know (~2.5 µs each), one
`Result` per metric and sample (~0.4 µs), and one full garbage collection of the loaded samples
during the run (~0.3 s: see the `gc.freeze()` figure above).
"""


def number(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.3:
        return str(rng.randint(1, 999))
    if kind < 0.5:
        return f"{rng.uniform(-2, 5):.3f}%"
    if kind < 0.7:
        return f"${rng.randint(50, 5000):,}"
    if kind < 0.85:
        return f"{rng.randint(1000, 99999):,}"
    return f"{rng.uniform(0, 10):.3f}"


def text(rng: random.Random, n_words: int) -> str:
    out = []
    while len(out) < n_words:
        r = rng.random()
        if r < 0.08:
            out.append(number(rng))
        elif r < 0.14:
            name = rng.choice(NAMES)
            out.append(f"{name} {rng.randint(1, 200)}" if name in ("Territory", "GRG", "Zone", "Table")
                       else f"Rule C-{rng.randint(1, 9)}" if name == "Rule" else name)
        else:
            out.append(rng.choice(WORDS))
        if rng.random() < 0.07:
            out[-1] += "."
    s = " ".join(out)
    return s[0].upper() + s[1:]


def checks(rng: random.Random, reference: str) -> tuple[dict, ...]:
    if rng.random() >= 0.3:
        return ()
    nums = sorted(numbers(reference))
    out = []
    for _ in range(rng.randint(1, 5)):
        kind = rng.choice(CHECK_TYPES)
        if kind in ("contains", "not_contains"):
            out.append({"type": kind, "value": rng.choice(WORDS + NAMES)})
        elif kind == "regex":
            out.append({"type": "regex", "pattern": rf"\b{rng.choice(NAMES)}\s+\d+"})
        elif kind == "number":
            out.append({"type": "number", "value": rng.choice(nums) if nums else rng.randint(1, 999)})
        else:
            out.append({"type": "list_items", "items": [f"Rule C-{i}" for i in rng.sample(range(1, 10), 3)],
                        "min_share": rng.choice([1.0, 0.5])})
    return tuple(out)


def make_samples(n: int, methods: int, seed: int) -> list[Sample]:
    rng = random.Random(seed)
    samples = []
    for q in range(n // methods):
        reference = text(rng, rng.randint(2, 60))
        golden = GoldenItem(f"q{q}", f"question {q}?", reference, checks=checks(rng, reference))
        ref_words = reference.split()
        for m in range(methods):
            r = rng.random()
            if r < 0.03:
                answer = rng.choice(HEDGES)
            elif r < 0.05:  # the reference itself, in another case and spacing
                answer = "  " + reference.upper().replace(" ", "\n", 3) + " "
            else:
                # answers reuse part of the reference, as real ones do, plus their own words
                start = rng.randint(0, len(ref_words) - 1)
                answer = " ".join(ref_words[start:start + rng.randint(1, 40)]) + " " + text(rng, rng.randint(5, 90))
                answer = " ".join(answer.split()[:120])
                if rng.random() < 0.3:
                    answer = rng.choice(CITES) + " " + answer
            samples.append(Sample(golden, RagOutput(f"q{q}", f"method_{m}", answer)))
    return samples


def run_all(metrics, samples, summary: dict | None = None, batch_size: int | None = None) -> dict[str, float]:
    """Seconds per metric; with `batch_size`, all metrics run over one batch before the next."""
    times = dict.fromkeys((m.id for m in metrics), 0.0)
    values: dict[str, list[float]] = {m.id: [] for m in metrics}
    step = batch_size or len(samples)
    for start in range(0, len(samples), step):
        batch = samples[start:start + step]
        for m in metrics:
            t = time.perf_counter()
            results = m.compute(batch, None)
            times[m.id] += time.perf_counter() - t
            assert len(results) == len(batch)
            if summary is not None:
                values[m.id].extend(r.value for r in results if r.value is not None)
    if summary is not None:
        summary.update({k: (len(v), sum(v) / len(v) if v else float("nan")) for k, v in values.items()})
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--methods", type=int, default=4)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()

    load_before = os.getloadavg()
    t = time.perf_counter()
    # the engine's order: by method, then question (Store.rag_outputs), so a reference's methods
    # fall in different batches
    samples = sorted(make_samples(args.samples, args.methods, args.seed),
                     key=lambda s: (s.output.method, s.golden.question_id))
    gen_s = time.perf_counter() - t
    metrics = [m for m in REGISTRY.values() if m.family == "lexical"]
    n = len(samples)
    gc.collect()

    cold = {}
    for m in metrics:
        clear_caches()
        cold.update(run_all([m], samples))
    clear_caches()
    seq = run_all(metrics, samples, batch_size=BATCH_SIZE)
    summary: dict = {}
    # caches full: what a second pass (e.g. a re-score) costs, in the same order
    warm = run_all(metrics, samples, summary, batch_size=BATCH_SIZE)

    # The same cold sequence with the loaded samples moved out of the collector's sight: a full
    # collection walks every live Sample, so the engine could call gc.freeze() after loading.
    clear_caches()
    gc.collect()
    gc.freeze()
    frozen = sum(run_all(metrics, samples, batch_size=BATCH_SIZE).values())
    gc.unfreeze()

    clear_caches()
    gc.collect()
    tracemalloc.start()
    run_all(metrics, samples, batch_size=BATCH_SIZE)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    load = " / ".join(f"{one:.2f}, {five:.2f}" for one, five, _ in (load_before, os.getloadavg()))

    n_checks = sum(1 for s in samples if s.golden.checks)
    ans_words = sum(len(s.output.answer.split()) for s in samples) / n
    ref_words = sum(len(s.golden.reference.split()) for s in samples) / n
    rows = ["| metric | cold (s) | engine order (s) | engine order (µs/sample) | warm caches (s) | ok | mean |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for m in metrics:
        ok, mean = summary[m.id]
        rows.append(f"| `{m.id}` | {cold[m.id]:.3f} | {seq[m.id]:.3f} | {seq[m.id] / n * 1e6:.1f} | "
                    f"{warm[m.id]:.3f} | {ok:,} | {mean:.3f} |")
    rows.append(f"| **all {len(metrics)} lexical metrics** | {sum(cold.values()):.3f} | **{sum(seq.values()):.3f}** | "
                f"{sum(seq.values()) / n * 1e6:.1f} | {sum(warm.values()):.3f} | | |")
    table = "\n".join(rows)
    cmd = ".venv/bin/python bench/bench_lexical.py" + (
        "" if (args.samples, args.methods, args.seed) == (100_000, 4, 7)
        else f" --samples {args.samples} --methods {args.methods} --seed {args.seed}")
    report = f"""# Lexical metrics benchmark

Command, from the repository root: `{cmd}`

Date: {dt.datetime.now().astimezone().isoformat(timespec="seconds")} · `nproc`: {os.cpu_count()} ·
Python {platform.python_version()} on {platform.machine()} ({platform.system()}) · load average (1, 5 min)
at the start / at the end: {load} (the machine is shared: timings vary with its load)

{n:,} samples = {n // args.methods:,} questions x {args.methods} methods (seed {args.seed}); mean answer
{ans_words:.1f} words, mean reference {ref_words:.1f} words; {n_checks:,} samples carry checks.
Generating them took {gen_s:.1f} s (not counted).

{table}

- **cold**: the metric alone, memo caches cleared first.
- **engine order**: the {len(metrics)} metrics over each batch of {BATCH_SIZE:,} samples before the next batch,
  caches cleared once (what `engine.execute_run` does; extractions shared through `lru_cache` are
  paid by the first metric that needs them).
- **warm caches**: the engine order again with the caches full: references' extractions are found,
  answers' are not (their caches span a batch). **ok**: samples with a value (the rest are not
  applicable: no numbers, no checks, ...); **mean**: their mean value.
- The engine-order run again after `gc.freeze()` (loaded samples hidden from the garbage
  collector's full passes): **{frozen:.3f} s** in all.
- Peak traced Python allocations during an engine-order run: **{peak / 2**20:.1f} MiB**
  (tracemalloc; mostly the memo caches, bounded at {CACHE_SIZE:,} entries each for those that see
  references and {ANSWER_CACHE_SIZE:,} for those of answers only).
  Peak RSS of the whole process (samples included): {rss_mb:.0f} MiB.

{NOTES}"""
    print(report)
    if not args.no_write:
        out = ROOT / "bench" / "results" / "lexical.md"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(report)
        print(f"written to {out}")


if __name__ == "__main__":
    main()
