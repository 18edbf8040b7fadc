"""Fit the weights of the offline judge_overall: writes evaluators/judges/weights/overall.json.

    .venv/bin/python -m calibration.fit_overall

judge_overall is a weighted mean of the 1-5 dimensions that apply to an answer (rubric._overall): correctness and
completeness need a reference, faithfulness retrieved chunks, relevance nothing. The plain mean agreed with people
less than token overlap did on long answers (SQuALITY overall, Pearson 0.51 vs BERTScore 0.67 on the test part),
while judge_correctness alone agreed more (0.73): completeness (the reference's claims the answer states) reads
another writer's summary as incomplete wherever it tells the story in other words.

The sets where people judged answers as a whole against a reference (calibration.sets, dev parts only):
  evouna    short answers, correct or not (for a one-fact answer, overall quality is being right); 1200 answers
            chosen by hash, as the bench chooses
  squality  long answers about a story, overall 0-100 (mean of 3 reviewers); Pearson over responses (the mean
            over a response's 3 references), as the bench reports it
No dev set rates answers as a whole with retrieved chunks (ALCE's and HaluQuestQA's answers come without them), so
faithfulness keeps the plain mean's weight, 1/4, and the other three share the remaining 3/4 on a grid of 0.05
steps; relevance keeps some weight, as it is all that applies to an answer with neither reference nor chunks. The
candidate is chosen by leave-one-set-out validation: weights chosen on one set (best statistic there) are scored on
the other beside its best simple baseline (token F1, ROUGE-L, MiniLM cosine, BERTScore); the grid point with the
best worst margin over both sets wins, ties to the one nearest the plain mean. The dimensions are the engine's own
stored judge_* scores (one engine run, offline judge, a temporary DuckDB file), so the weights mean at run time what
they meant here. Deterministic: the same data gives the same file. About 8 minutes on 2 cores.
"""
from __future__ import annotations

import itertools
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from calibration.fit_correctness import pearson_over_responses
from calibration.sets import DEV, Item, load, subsample
from evaluators.maths import stats
from evaluators.maths.text import rouge_l_f1, token_overlap

WEIGHTS = Path(__file__).resolve().parent.parent / "evaluators" / "judges" / "weights" / "overall.json"
SETS = {"evouna": 1200, "squality": None}  # dev answers per set (None: all)
DIMENSIONS = ("correctness", "completeness", "faithfulness", "relevance")
METRICS = ("judge_correctness", "judge_completeness", "judge_relevance", "bert_score_f1", "semantic_similarity")
FAITHFULNESS, STEP = 0.25, 0.05


class Data:
    """One set's dev items, the engine's dimensions (1-5) and baselines, and what people said."""

    def __init__(self, name: str, items: list[Item], scores):
        self.name, self.items = name, items
        ids = [i.item_id for i in items]
        self.dims = np.column_stack([scores.loc[ids, f"judge_{d}"].to_numpy(float) for d in ("correctness",
                                     "completeness", "relevance")])
        self.baselines = {"token_f1": np.array([token_overlap(i.answer, i.reference)[2] for i in items]),
                          "rouge_l": np.array([rouge_l_f1(i.answer, i.reference) for i in items]),
                          "minilm_cosine": scores.loc[ids, "semantic_similarity"].to_numpy(float),
                          "bertscore": scores.loc[ids, "bert_score_f1"].to_numpy(float)}

    def overall(self, w: tuple[float, float, float]) -> np.ndarray:
        """judge_overall with weights w (correctness, completeness, relevance); no chunks, so no faithfulness."""
        return (self.dims @ np.array(w)) / sum(w)

    def statistic(self, scores: np.ndarray) -> float:
        if self.name == "evouna":
            return float(stats.auroc(scores, np.array([bool(i.label) for i in self.items])))
        return pearson_over_responses(self.items, scores, [dict(i.extra)["overall"] for i in self.items])

    def best_baseline(self) -> tuple[float, str]:
        return max((round(self.statistic(v), 4), k) for k, v in self.baselines.items())


def engine_scores(items: list[Item]):
    from calibration.engine_scores import score_items

    with tempfile.TemporaryDirectory() as tmp:
        return score_items(items, METRICS, Path(tmp) / "fit_overall.duckdb", name="fit judge_overall").scores


def candidates() -> list[tuple[float, float, float]]:
    """(correctness, completeness, relevance) weights summing to 1 - FAITHFULNESS, relevance's above 0."""
    steps = round((1 - FAITHFULNESS) / STEP)
    return [(round(c * STEP, 2), round(k * STEP, 2), round((steps - c - k) * STEP, 2))
            for c, k in itertools.product(range(steps + 1), repeat=2) if c + k < steps]


def nearest_plain(w: tuple[float, float, float]) -> float:
    return -sum((x - FAITHFULNESS) ** 2 for x in w)


def main() -> None:
    start = time.perf_counter()
    items = {name: list(load(name, DEV)) if n is None else subsample(load(name, DEV), n) for name, n in SETS.items()}
    scores = engine_scores([i for part in items.values() for i in part])
    data = {name: Data(name, part, scores) for name, part in items.items()}
    grid = candidates()
    statistic = {name: {w: round(d.statistic(d.overall(w)), 4) for w in grid} for name, d in data.items()}
    baseline = {name: d.best_baseline() for name, d in data.items()}
    # leave one set out: weights chosen on the other set, scored on this one
    held_out = {}
    for name in data:
        (other,) = [k for k in data if k != name]
        chosen = max(grid, key=lambda w: (statistic[other][w], nearest_plain(w)))
        held_out[name] = {"weights chosen without it": chosen, "statistic": statistic[name][chosen],
                          "best_baseline": baseline[name][1], "baseline_statistic": baseline[name][0],
                          "difference": round(statistic[name][chosen] - baseline[name][0], 4)}
    # the weights: the best worst margin over both sets
    margin = {w: min(statistic[n][w] - baseline[n][0] for n in data) for w in grid}
    best = max(grid, key=lambda w: (round(margin[w], 4), nearest_plain(w)))
    weights = dict(zip(DIMENSIONS, (best[0], best[1], FAITHFULNESS, best[2])))
    WEIGHTS.write_text(json.dumps({
        "about": "judge_overall = the weighted mean of the 1-5 dimensions that apply (evaluators/metrics/rubric.py); "
                 "written by python -m calibration.fit_overall",
        "weights": weights,
        "plain_mean": {n: statistic[n][(0.25, 0.25, 0.25)] for n in data},
        "fitted": {n: {"statistic": statistic[n][best], "best_baseline": baseline[n][1],
                       "baseline_statistic": baseline[n][0]} for n in data},
        "leave_one_set_out": held_out,
        "statistics": {"evouna": "AUROC (dev, 1200 answers)", "squality": "Pearson over responses (dev)"},
    }, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(json.loads(WEIGHTS.read_text()), indent=1))
    print(f"wrote {WEIGHTS} ({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
