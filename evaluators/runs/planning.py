"""Which (question, method) samples a run judges: every output paired with its golden item (`plan`), then those of
the run's methods, of its sample's questions (`of_run`, from the run's config). A run starting (runs.lifecycle) and
a run resumed (`of_stored_run`) choose them by these same steps, so a resumed sampled run stays sampled."""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from evaluators.records import GoldenItem, RagOutput, Sample
from evaluators.runs import sampling


@dataclass(frozen=True)
class Plan:
    samples: list[Sample]
    missing: dict[str, list[str]] = field(default_factory=dict)  # method -> golden ids it did not answer


def plan(golden: Sequence[GoldenItem], outputs: Sequence[RagOutput]) -> Plan:
    """Pair every output with its golden item; report the golden questions a method left out."""
    by_id = {g.question_id: g for g in golden}
    samples = [Sample(by_id[o.question_id], o) for o in outputs if o.question_id in by_id]
    keys = Counter(s.key for s in samples)
    if len(keys) < len(samples):  # a cell is keyed by (question, method): one answer would be lost
        (qid, method), _ = keys.most_common(1)[0]
        raise ValueError(f"question {qid!r} has more than one answer from method {method!r}; "
                         "give each outputs file its own method name")
    answered: dict[str, set[str]] = {}
    for s in samples:
        answered.setdefault(s.output.method, set()).add(s.golden.question_id)
    missing = {
        method: sorted(set(by_id) - ids) for method, ids in sorted(answered.items()) if len(ids) < len(by_id)
    }
    return Plan(samples, missing)


def of_methods(samples: Sequence[Sample], methods: Sequence[str] | None) -> list[Sample]:
    """The samples of `methods` (all when None): a run may evaluate some methods of its outputs."""
    if methods is None:
        return list(samples)
    chosen = set(methods)
    return [s for s in samples if s.output.method in chosen]


def of_run(samples: Sequence[Sample], config: dict) -> list[Sample]:
    """The samples a run evaluates: its methods' (config `methods`; all when None), of its sample's questions when it
    has one (config `sample`: {"n", "of", "seed"})."""
    samples = of_methods(samples, config.get("methods"))
    sample = config.get("sample")
    return sampling.draw(samples, sample["n"], sample["seed"]).samples if sample else samples


def of_stored_run(store, run: dict, config: dict | None = None) -> list[Sample]:
    """The samples of a stored run (a row of `runs`), read back from its stored datasets; `config`: the run's as
    it is about to be (a sample grown), else as stored."""
    outputs = store.rag_outputs(list(run["outputs_dataset_ids"]))
    config = json.loads(run["config"] or "{}") if config is None else config
    return of_run(plan(store.golden_items(run["golden_dataset_id"]), outputs).samples, config)
