"""Fit the offline judge's correctness scorer on EVOUNA's dev part: writes evaluators/judges/weights/correctness.json.

    .venv/bin/python -m calibration.fit_correctness

EVOUNA (TriviaQA questions, 5 QA systems' answers, each judged correct or incorrect by people;
Apache-2.0, ../shared/data/calibration/evouna) is the only set here whose people judge an answer's
correctness against a reference. Its dev part (calibration.sets, by a hash of the question) is all the
fit sees; bench/judge_quality.py reports the test part. The signals are computed by the same
functions the engine calls (`evaluators.judges.correctness.signals`; the contradicted share from the
offline claim matrix), so the fitted weights mean at run time what they meant here.
Deterministic: the same data gives the same file. About a minute on 2 cores (the claim matrices).
"""
from __future__ import annotations

import json
import time

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score, roc_auc_score

from calibration.sets import DEV, load
from evaluators.judges import offline
from evaluators.judges.correctness import SIGNALS, WEIGHTS, signals
from evaluators.metrics.rubric import CORRECT_P, answer_contradicted_by_reference, similarities
from evaluators.schema import GoldenItem, RagOutput, Sample

REGULARISATION = 1.0  # sklearn's C; the signals are all in [0, 1], so no scaling is needed


def signal_matrix(items) -> np.ndarray:
    """`signals` of every item, as the engine computes them (offline claim matrix, the semantic family's
    cosine and BERTScore)."""
    samples = [Sample(GoldenItem(i.item_id, i.question, i.reference), RagOutput(i.item_id, "answer", i.answer))
               for i in items]
    matrices = offline.build_matrices(samples)
    rows = []
    for item, matrix, similar in zip(items, matrices, similarities(samples)):
        contradicted = answer_contradicted_by_reference(matrix).value or 0.0
        rows.append(signals(item.answer, item.reference, *similar, contradicted))
    return np.vstack(rows)


def main() -> None:
    started = time.perf_counter()
    items = load("evouna", DEV)
    x = signal_matrix(items)
    y = np.array([bool(i.label) for i in items])
    model = LogisticRegression(C=REGULARISATION, class_weight="balanced", max_iter=1000).fit(x, y)
    p = model.predict_proba(x)[:, 1]
    fitted = {
        "signals": list(SIGNALS),
        "coefficients": [round(float(c), 6) for c in model.coef_[0]],
        "intercept": round(float(model.intercept_[0]), 6),
        "fitted_on": f"EVOUNA (TriviaQA) dev part: {len(items)} answers, {int(y.sum())} judged correct by people",
        "dev_auroc": round(float(roc_auc_score(y, p)), 4),
        "dev_balanced_accuracy": round(float(balanced_accuracy_score(y, p >= CORRECT_P)), 4),
        "command": "python -m calibration.fit_correctness",
        "seconds": round(time.perf_counter() - started, 1),
    }
    WEIGHTS.parent.mkdir(exist_ok=True)
    WEIGHTS.write_text(json.dumps(fitted, indent=1) + "\n")
    print(json.dumps(fitted, indent=1))


if __name__ == "__main__":
    main()
