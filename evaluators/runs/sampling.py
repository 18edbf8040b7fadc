"""Which golden questions a sampled run judges: a random sample of n, stratified by question type, fixed by a seed.

Each question is ranked inside its stratum (its question type; questions without one form a stratum of their
own) by sha256(f"{seed}:{question_id}") and gets the key (rank + 0.5) / stratum size; the sample of n is the
first n questions by key (ties broken by the hash). So each stratum takes its proportional share, rounded, and
the sample is NESTED: for one seed, the sample of n is part of the sample of every n' > n, so a larger sample
extends a smaller one (its judged cells and cached judge replies are used again). The draw depends only on the
seed and the questions' ids and types: a stored seed reproduces it anywhere. Pure functions, no I/O.
"""
from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from evaluators.records import Sample

SEED_LIMIT = 1_000_000  # a random seed below this: short enough to type again


def new_seed() -> int:
    """A random seed, for a run whose caller named none (stored with the run, so its sample is reproducible)."""
    return secrets.randbelow(SEED_LIMIT)


def _hash(seed: int, question_id: str) -> str:
    return hashlib.sha256(f"{seed}:{question_id}".encode()).hexdigest()


def order(questions: Iterable[tuple[str, str | None]], seed: int) -> list[str]:
    """Every question id of (question_id, question_type) pairs, in the seed's sampling order: a sample of n
    is the first n."""
    strata: dict[str, list[tuple[str, str]]] = {}
    for question_id, question_type in dict(questions).items():  # one entry per question
        strata.setdefault(question_type or "", []).append((_hash(seed, question_id), question_id))
    keyed = []
    for members in strata.values():
        for rank, (digest, question_id) in enumerate(sorted(members)):
            keyed.append(((rank + 0.5) / len(members), digest, question_id))
    return [question_id for *_, question_id in sorted(keyed)]


def choose(questions: Iterable[tuple[str, str | None]], n: int, seed: int) -> list[str]:
    """The ids of the sample of `n` questions for `seed`, in sampling order (all of them when n >= their number)."""
    return order(questions, seed)[:n]


@dataclass(frozen=True)
class Drawn:
    """A run's samples restricted to its sample's questions, and what the run records of the sample."""

    samples: list[Sample]
    n: int  # questions in the sample
    of: int  # questions the sample was drawn from (those the run's methods answer)
    seed: int

    @property
    def everything(self) -> bool:
        """The sample is every question (n asked >= the questions there are)."""
        return self.n >= self.of

    def config(self) -> dict:
        """The run config's `sample` entry."""
        return {"n": self.n, "of": self.of, "seed": self.seed}


def draw(samples: Sequence[Sample], n: int, seed: int) -> Drawn:
    """The (question, method) samples of the sample of `n` of the questions `samples` answer: every method
    judged on the same questions, so method comparisons stay paired."""
    questions = {s.golden.question_id: s.golden.question_type for s in samples}
    chosen = set(choose(questions.items(), n, seed))
    return Drawn([s for s in samples if s.golden.question_id in chosen], len(chosen), len(questions), seed)


def check(n, seed) -> None:
    """ValueError for a sample size or seed no run can use (None: not given)."""
    for name, value, low in (("sample", n, 1), ("seed", seed, 0)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
            raise ValueError(f"{name} must be a whole number of {low} or more, not {value!r}")


def note(sample: dict | None) -> str | None:
    """What every screen and export of a sampled run says: "sample of N of M questions (seed S)"; None for a
    run that judged every question."""
    if not sample:
        return None
    return f"sample of {sample['n']:,} of {sample['of']:,} questions (seed {sample['seed']})"


def run_note(run: dict) -> str | None:
    """`note` of a stored run (a row of `runs`): what its screens, report and exports say; None if unsampled."""
    return note(json.loads(run["config"] or "{}").get("sample"))
