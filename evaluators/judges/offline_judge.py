"""The offline judge as a registered kind (the default): no key, no network, no cost; its heuristics are offline.py."""
from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from evaluators.judges import offline
from evaluators.judges.protocol import CLAIMS, Judge, Judged, Lent
from evaluators.judges.registry import register
from evaluators.records import Sample


@register
@dataclass(frozen=True)
class OfflineJudge(Judge):
    """The deterministic heuristic: it fills the claim matrix only; the rubric ids come from its claim metrics and
    answer_relevance from the question-answer cosine. Its agreement with people is measured (judges/agreement.json)."""

    name = offline.JUDGE
    label = "Offline (no key, no network: a deterministic heuristic)"
    agreement_measured = True
    # its first batch, and the fewest the engine paces a batch to (engine.BATCH_SECONDS): at ~10 samples a second,
    # batches of ~50 commit every 5 s, and the first batch, which loads the models, ends early
    min_batch_size = 16
    # characters of one sample (question, answer, reference, chunks) it judges; over it the sample's judged cells
    # are `skipped` (protocol.too_big): 200,000 take it about 10 s (bench/results/limits.md)
    max_chars = 200_000

    def judge(self, samples: Sequence[Sample], parts: Collection[str], lent: Lent) -> list[Judged]:
        if CLAIMS not in parts:
            return [Judged() for _ in samples]  # the rubric ids come from the offline mapping instead
        return [Judged(m) for m in offline.build_matrices(samples)]
