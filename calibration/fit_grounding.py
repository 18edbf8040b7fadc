"""Choose the weight of the offline faithfulness rating: writes evaluators/judges/weights/grounding.json.

    .venv/bin/python -m calibration.fit_grounding

`evaluators.judges.grounding` rates faithfulness as w x faithfulness + (1 - w) x word support. This
script tries w = 0, 0.05, ..., 1 on the dev parts of the four sets whose people judge an answer's
support by a passage: InspectorRAGet (ClapNQ answers, mean of three faithfulness ratings: Spearman),
BEGIN (attributable: AUROC), SummEdits (consistent: AUROC) and Fool-Me-Twice (supported: AUROC), at
most 600 hash-chosen dev items each, and keeps the w with the best mean of the four. Faithfulness comes
from the offline claim matrix and `claim_metrics`, the functions the engine calls. Deterministic;
about 3 minutes on 2 cores.
"""
from __future__ import annotations

import json
import time

import numpy as np

from calibration.sets import DEV, SUPPORTED, load, subsample
from evaluators.maths import stats
from evaluators.metrics.claims import claim_metrics
from evaluators.judges import offline
from evaluators.judges.grounding import WEIGHTS, word_support
from evaluators.records import Chunk, GoldenItem, RagOutput, Sample

MAX_ITEMS = 600
CANDIDATES = np.round(np.linspace(0.0, 1.0, 21), 2)
SETS = {  # set -> (human label as a number, statistic)
    "inspectorraget": (lambda i: float(i.label), stats.spearman),
    "begin": (lambda i: float(bool(i.label)), stats.auroc),
    "summedits": (lambda i: float(bool(i.label)), stats.auroc),
    "fool_me_twice": (lambda i: float(i.label == SUPPORTED), stats.auroc),
}


def signals(items) -> tuple[np.ndarray, np.ndarray]:
    """(faithfulness, word support) of every item, as the engine computes them."""
    samples = [Sample(GoldenItem(i.item_id, i.question, i.reference),
                      RagOutput(i.item_id, "answer", i.answer,
                                tuple(Chunk(str(k), t) for k, t in enumerate(i.contexts))))
               for i in items]
    faithfulness = [claim_metrics(m)["faithfulness"].value for m in offline.build_matrices(samples)]
    support = [word_support(i.answer, i.contexts) for i in items]
    return np.array(faithfulness, dtype=float), np.array(support, dtype=float)


def main() -> None:
    started = time.perf_counter()
    by_set = {}
    for name, (truth, statistic) in SETS.items():
        items = subsample(load(name, DEV), MAX_ITEMS)
        faithfulness, support = signals(items)
        y = np.array([truth(i) for i in items])
        by_set[name] = [round(float(statistic(w * faithfulness + (1 - w) * support, y)), 4) for w in CANDIDATES]
    means = np.mean(list(by_set.values()), axis=0)
    best = int(np.argmax(means))
    fitted = {
        "claims_weight": float(CANDIDATES[best]),
        "dev_mean_statistic": round(float(means[best]), 4),
        "dev_statistic_by_weight": {name: dict(zip(map(str, CANDIDATES), values)) for name, values in by_set.items()},
        "statistics": {name: statistic.__name__ for name, (_, statistic) in SETS.items()},
        "fitted_on": f"dev parts, at most {MAX_ITEMS} hash-chosen items each: {', '.join(SETS)}",
        "command": "python -m calibration.fit_grounding",
        "seconds": round(time.perf_counter() - started, 1),
    }
    WEIGHTS.parent.mkdir(exist_ok=True)
    WEIGHTS.write_text(json.dumps(fitted, indent=1) + "\n")
    print(json.dumps({k: v for k, v in fitted.items() if k != "dev_statistic_by_weight"}, indent=1))


if __name__ == "__main__":
    main()
