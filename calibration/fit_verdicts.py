"""Fit the offline judge's verdict model: writes evaluators/judges/weights/verdict_model.json.

    .venv/bin/python -m calibration.fit_verdicts

Data: the claim x passage sets' dev items that the cross-encoder never trained on (its validation
slice, `calibration.train_nli.is_validation`), whose answer is one claim (`offline.segment_claims`),
so the item's human label is that claim's verdict, and that no precise rule decides
(`offline.rule_verdict`): the model decides only those pairs. Signals come from `offline.signals`, the function
the engine calls. A multinomial logistic regression, the three labels weighed equally
(class_weight="balanced"); printed beside it, on the same items with 5-fold grouped cross-validation,
the macro-F1 of the heuristic alone and of the cross-encoder alone on those pairs. Deterministic. A few minutes.
"""
from __future__ import annotations

import json
import time
from collections import Counter

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.model_selection import GroupKFold

from calibration import sets
from calibration.train_nli import SETS_USED, is_validation, pairs_of
from evaluators.judges import offline, verdict_model

REGULARISATION = 1.0


def examples() -> tuple[np.ndarray, np.ndarray, np.ndarray, Counter]:
    """(signals, labels, groups, items per set) of the one-claim validation items."""
    chosen = []
    for name in SETS_USED:
        for item in sets.load(name, sets.DEV):
            pair = pairs_of(name, item)
            if pair is None or not is_validation(name, item):
                continue
            claims = offline.segment_claims(item.answer)
            if len(claims) == 1:
                chosen.append((name, item, claims[0], pair[2]))
    passages = [" ".join(item.contexts) for _, item, _, _ in chosen]
    vectors = offline.Vectors(t for (_, _, claim, _), p in zip(chosen, passages) for t in (claim, *offline.units(p)))
    x = np.vstack([offline.signals([claim], [p], vectors)[0, 0] for (_, _, claim, _), p in zip(chosen, passages)])
    # the model decides only the pairs no rule decides (offline.rule_verdict)
    read = np.array([offline.rule_verdict(row, claim, p) is None for row, (_, _, claim, _), p in zip(x, chosen, passages)])
    chosen = [c for c, r in zip(chosen, read) if r]
    y = np.array([label for *_, label in chosen])
    groups = np.array([f"{name}:{item.group}" for name, item, _, _ in chosen])
    return x[read], y, groups, Counter(name for name, *_ in chosen)


def main() -> None:
    started = time.perf_counter()
    x, y, groups, per_set = examples()
    labels = list(verdict_model.LABELS)

    def macro(pred) -> float:
        return round(float(f1_score(y, pred, labels=labels, average="macro")), 4)

    heuristic = np.array(labels)[x[:, 0:3].argmax(axis=1)]
    cross_encoder = np.array(labels)[x[:, 3:6].argmax(axis=1)]
    combined = np.empty_like(y)
    for train, test in GroupKFold(n_splits=5).split(x, y, groups):
        fold = LogisticRegression(C=REGULARISATION, class_weight="balanced", max_iter=2000).fit(x[train], y[train])
        combined[test] = fold.predict(x[test])
    model = LogisticRegression(C=REGULARISATION, class_weight="balanced", max_iter=2000).fit(x, y)
    order = [list(model.classes_).index(label) for label in labels]
    fitted = {
        "signals": list(verdict_model.SIGNALS),
        "labels": labels,
        "coefficients": [[round(float(c), 6) for c in model.coef_[i]] for i in order],
        "intercepts": [round(float(model.intercept_[i]), 6) for i in order],
        "fitted_on": f"{len(y)} one-claim dev items of the cross-encoder's validation slice: {dict(per_set)}; "
                     f"labels {dict(Counter(map(str, y)))}",
        "cross_validated_macro_f1": {"heuristic": macro(heuristic), "cross_encoder": macro(cross_encoder),
                                     "verdict_model": macro(combined)},
        "command": "python -m calibration.fit_verdicts",
        "seconds": round(time.perf_counter() - started, 1),
    }
    verdict_model.WEIGHTS.write_text(json.dumps(fitted, indent=1) + "\n")
    print(json.dumps(fitted, indent=1))


if __name__ == "__main__":
    main()
