"""Fit the offline judge's correctness scorer: writes evaluators/judges/weights/correctness.json.

    .venv/bin/python -m calibration.fit_correctness

The sets where people judged answers against a reference (calibration.sets, dev parts only; the test
parts are bench/judge_quality.py's):
  evouna    TriviaQA questions, 5 QA systems' short answers, correct or not (Apache-2.0)
  squality  long answers about a story, correctness 0-100 (mean of 3 reviewers; CC BY 4.0), read as the
            probability that the answer is correct: each answer counts as correct with weight r / 100 and
            as incorrect with weight 1 - r / 100
Each set weighs the same in the fit, and within a set each class does (so P 0.5 is "as likely correct as
not" whatever a set's share of correct answers). The regularisation is chosen by leave-one-set-out
validation: fitted on the other set's dev part alone, scored on this set's dev part, each beside the best
simple baseline on the same items (AUROC on evouna; Pearson over responses, each the mean over its 3
references, on squality); the candidate with the best worst margin wins. Grouped 5-fold cross-validation over
both dev parts at once (a question's answers in one fold) is recorded beside it for every candidate.
The signals are computed by the functions the engine calls (`correctness.signals` over the offline claim
matrix and the semantic family's cosine and BERTScore), so the weights mean at run time what they meant
here. Deterministic: the same data gives the same file. A few minutes on 2 cores (the claim matrices).
"""
from __future__ import annotations

import json
import time
from collections.abc import Sequence

import numpy as np
from sklearn.linear_model import LogisticRegression

from calibration.sets import DEV, Item, load
from evaluators.maths import stats
from evaluators.judges import offline
from evaluators.judges.correctness import INPUTS, SIGNALS, WEIGHTS, inputs, is_long, signals
from evaluators.metrics.claims import claim_metrics
from evaluators.metrics.rubric import answer_contradicted_by_reference, similarities
from evaluators.records import GoldenItem, RagOutput, Sample

SETS = ("evouna", "squality")
CANDIDATES = (0.01, 0.03, 0.1, 0.3, 1.0)  # sklearn's C; the signals are all in [0, 1], so no scaling is needed
FOLDS = 5
BASELINES = ("token_f1", "rouge_l", "cosine", "bertscore")  # signals that are the bench's simple baselines


class Data:
    """One set's dev items, their model inputs and what people said."""

    def __init__(self, name: str, items: Sequence[Item]):
        self.name, self.items = name, list(items)
        self.signals = signal_matrix(self.items)
        self.x = np.vstack([inputs(row, is_long(i.reference)) for row, i in zip(self.signals, self.items)])
        self.p = targets(name, self.items)
        number = {g: n for n, g in enumerate(sorted({i.group for i in self.items}))}
        self.fold = np.array([number[i.group] % FOLDS for i in self.items])  # a group stays in one fold
        self.every = np.ones(len(self.items), dtype=bool)

    def part(self, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.x[keep], self.p[keep]


def signal_matrix(items: Sequence[Item]) -> np.ndarray:
    """`signals` of every item, as the engine computes them."""
    samples = [Sample(GoldenItem(i.item_id, i.question, i.reference), RagOutput(i.item_id, "answer", i.answer))
               for i in items]
    rows = []
    for item, matrix, similar in zip(items, offline.build_matrices(samples), similarities(samples)):
        contradicted = answer_contradicted_by_reference(matrix).value or 0.0
        completeness = claim_metrics(matrix)["completeness"].value
        rows.append(signals(item.question, item.answer, item.reference, *similar, contradicted, completeness))
    return np.vstack(rows)


def targets(name: str, items: Sequence[Item]) -> np.ndarray:
    """P(correct) as people said it: 1 / 0 on evouna, the 0-100 rating / 100 on squality."""
    return np.array([float(i.label) if name == "evouna" else float(i.label) / 100 for i in items])


def weighted_rows(x: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row twice, as correct with weight p and as incorrect with weight 1 - p, the two classes weighing the
    same and the set weighing 1 in all."""
    xx, yy = np.vstack([x, x]), np.r_[np.ones(len(p)), np.zeros(len(p))]
    w = np.r_[p / p.sum(), (1 - p) / (1 - p).sum()] / 2
    keep = w > 0
    return xx[keep], yy[keep], w[keep]


def fit(parts: Sequence[tuple[np.ndarray, np.ndarray]], c: float) -> LogisticRegression:
    x, y, w = (np.concatenate(col) for col in zip(*(weighted_rows(x, p) for x, p in parts)))
    return LogisticRegression(C=c, max_iter=5000).fit(x, y, sample_weight=w * len(y))


def statistic(name: str, items: Sequence[Item], scores: np.ndarray) -> float:
    """The bench's headline figure: AUROC on evouna, Pearson over responses (the mean over a response's 3
    references) on squality."""
    truth = targets(name, items)
    if name == "evouna":
        return float(stats.auroc(scores, truth.astype(bool)))
    return pearson_over_responses(items, scores, truth)


def pearson_over_responses(items: Sequence[Item], scores: np.ndarray, truth: Sequence[float]) -> float:
    """Pearson of scores and what people said over SQuALITY's responses, each score the mean over the response's
    references (a response's items share its rating), as the bench reports it."""
    by_response: dict[str, tuple[list[float], float]] = {}
    for item, score, t in zip(items, scores, truth):
        by_response.setdefault(dict(item.extra)["response"], ([], t))[0].append(score)
    per = np.array([(np.mean(s), t) for s, t in by_response.values()])
    return float(stats.pearson(per[:, 0], per[:, 1]))


def versus_baseline(d: Data, keep: np.ndarray, scores: np.ndarray) -> dict:
    """Our statistic on d's items `keep` beside the best simple baseline's on the same items."""
    items = [i for i, k in zip(d.items, keep) if k]
    ours = statistic(d.name, items, scores)
    best = max((statistic(d.name, items, d.signals[keep, SIGNALS.index(b)]), b) for b in BASELINES)
    return {"statistic": round(ours, 4), "best_baseline": best[1], "baseline_statistic": round(best[0], 4),
            "difference": round(ours - best[0], 4)}


def cross_validated(data: dict[str, Data], c: float) -> dict:
    """Grouped k-fold over every set's dev part at once: each fold fitted on the others, scored held out."""
    scores = {name: np.zeros(len(d.items)) for name, d in data.items()}
    for k in range(FOLDS):
        model = fit([d.part(d.fold != k) for d in data.values()], c)
        for name, d in data.items():
            scores[name][d.fold == k] = model.predict_proba(d.x[d.fold == k])[:, 1]
    return {name: versus_baseline(d, d.every, scores[name]) for name, d in data.items()}


def leave_one_set_out(data: dict[str, Data], c: float) -> dict:
    """Fitted without a set, scored on that set's dev part."""
    out = {}
    for name, d in data.items():
        model = fit([o.part(o.every) for k, o in data.items() if k != name], c)
        out[name] = versus_baseline(d, d.every, model.predict_proba(d.x)[:, 1])
    return out


def main() -> None:
    started = time.perf_counter()
    data = {name: Data(name, load(name, DEV)) for name in SETS}
    candidates = [{"C": c, "cross_validated": cross_validated(data, c), "leave_one_set_out": leave_one_set_out(data, c)}
                  for c in CANDIDATES]
    # Chosen leave-one-set-out: the best worst margin over the best baseline on a set the fit has not seen (the
    # stronger regularisation on a tie), so that the scorer holds on answers unlike those it was fitted on.
    chosen = max(candidates, key=lambda k: (min(s["difference"] for s in k["leave_one_set_out"].values()), -k["C"]))
    model = fit([d.part(d.every) for d in data.values()], chosen["C"])
    fitted = {
        "inputs": list(INPUTS),
        "coefficients": [round(float(c), 6) for c in model.coef_[0]],
        "intercept": round(float(model.intercept_[0]), 6),
        "fitted_on": "dev parts, each set weighing the same: " + "; ".join(
            f"{name} {len(d.items)} answers" for name, d in data.items()) + " (EVOUNA: people's correct / "
            "incorrect; SQuALITY: correctness 0-100 as P(correct), each response against 3 references)",
        "C": chosen["C"],
        "candidates": candidates,
        "command": "python -m calibration.fit_correctness",
        "seconds": round(time.perf_counter() - started, 1),
    }
    WEIGHTS.parent.mkdir(exist_ok=True)
    WEIGHTS.write_text(json.dumps(fitted, indent=1) + "\n")
    print(json.dumps(fitted, indent=1))


if __name__ == "__main__":
    main()
