"""How well the offline judge agrees with people, beside simple baselines and the previous release, on test parts only.

    .venv/bin/python bench/judge_quality.py [--max-items 800] [--sets evouna,squality,...] [--previous e063c5b|none]
                                            [--no-write]

For each human label of the public sets in ../shared/data (calibration/sets.py reads them and fixes each set's
dev/test split by a hash of the item's group), the test items are scored by RAGScope through the real engine
(calibration/engine_scores.py: a DuckDB file, `engine.execute_run`, the offline judge), by the release before the judge
work through its own engine (bench/previous_release.py, cached), and by the simple baselines of bench/baselines.py.
Each label is set beside the metrics the screens present for it (bench/quality_tasks.py), with the statistics of
bench/quality_stats.py: binary labels AUROC and balanced accuracy at the product's threshold (baselines: the
threshold best on the dev part); classes macro-F1 and the confusion matrix; graded labels Spearman and Pearson
(and, where answers to one question are compared, pairwise accuracy); preferences pairwise accuracy. Every figure
has a 95% bootstrap CI over groups; every RAGScope metric has paired differences to the best baseline and to the
previous release, and everything is also split by reference length. Nothing here is fitted on test items.
Writes bench/results/judge_quality.md and evaluators/judges/agreement.json unless --no-write.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import previous_release  # noqa: E402
from bench.baselines import BASELINES  # noqa: E402
from calibration.engine_scores import Scored, score_items  # noqa: E402
from bench.quality_report import ALL, agreement, report  # noqa: E402
from bench.quality_stats import Scorer, Units, part_rows, status_note, units_of  # noqa: E402
from bench.quality_tasks import TASKS, VERDICTS, WHOLE_GROUPS, Ours, Task, cells  # noqa: E402
from calibration.sets import DEV, TEST, Item, load, subsample  # noqa: E402
from evaluators.maths import stats  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "judge_quality.md"
AGREEMENT = ROOT / "evaluators" / "judges" / "agreement.json"  # what the app's panels quote

# -- items ----------------------------------------------------------------------------------------------------------


def subsample_groups(items: Sequence[Item], max_items: int) -> list[Item]:
    """At most `max_items` in whole groups (a question's answers stay together), groups chosen by a hash of the
    group, in the set's own order."""
    if len(items) <= max_items:
        return list(items)
    sizes: dict[str, int] = {}
    for i in items:
        sizes[i.group] = sizes.get(i.group, 0) + 1
    chosen, total = set(), 0
    for g in sorted(sizes, key=lambda g: hashlib.sha256(g.encode()).hexdigest()):
        if total + sizes[g] <= max_items:
            chosen.add(g)
            total += sizes[g]
    return [i for i in items if i.group in chosen]


def chosen_items(set_name: str, tasks: Sequence[Task], split: str, max_items: int) -> list[Item]:
    items = [i for i in load(set_name, split) if any(t.keep(i) for t in tasks)]
    return subsample_groups(items, max_items) if set_name in WHOLE_GROUPS else subsample(items, max_items)


# -- baselines ------------------------------------------------------------------------------------------------------


def baseline_scores(items: Sequence[Item], task: Task) -> dict[str, np.ndarray]:
    cands, refs = zip(*(task.pair(i) for i in items)) if items else ((), ())
    return {name: np.asarray(BASELINES[name](list(cands), list(refs)), dtype=float) for name in task.baselines}


def best_threshold(scores: np.ndarray, truth: np.ndarray) -> float:
    """The cut with the best balanced accuracy (used on dev items only)."""
    cuts = np.unique(np.round(scores[~np.isnan(scores)], 4))
    if len(cuts) > 200:
        cuts = np.quantile(scores[~np.isnan(scores)], np.linspace(0, 1, 201))
    return float(max(cuts, key=lambda t: stats.balanced_accuracy(scores >= t, truth)))


def three_way(scores: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """A baseline's verdict: supported from `hi` on, not_found below `lo`, contradicted between
    (same topic, different fact): the simplest three-way rule a score allows."""
    return np.where(scores >= hi, VERDICTS[0], np.where(scores < lo, VERDICTS[2], VERDICTS[1])).astype(object)


def best_three_way(scores: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    qs = np.quantile(scores, np.linspace(0, 1, 21))
    return max(((lo, hi) for lo in qs for hi in qs if lo <= hi),
               key=lambda c: stats.macro_f1(three_way(scores, *c), truth, VERDICTS))


def baseline_scorers(task: Task, test: Sequence[Item], dev: Sequence[Item], units: Units) -> list[Scorer]:
    """The baselines on the test units; binary and 3-way labels cut where the dev part says is best."""
    test_scores = baseline_scores(test, task)
    dev_scores = baseline_scores(dev, task) if task.kind in ("binary", "classes") else {}
    dev_truth = np.array([task.truth(i) for i in dev], dtype=object)
    out = []
    for name, scores in test_scores.items():
        if task.kind == "binary":
            out.append(Scorer(name, "baseline", units.values(scores),
                              best_threshold(dev_scores[name], dev_truth.astype(bool))))
        elif task.kind == "classes":
            lo, hi = best_three_way(dev_scores[name], dev_truth)
            out.append(Scorer(name, "baseline", units.values(three_way(scores, lo, hi)), (lo, hi)))
        else:
            out.append(Scorer(name, "baseline", units.values(scores)))
    for name, (fn, threshold) in task.extra_baselines.items():
        out.append(Scorer(name, "baseline", units.values(fn(test)), threshold))
    return out


# -- RAGScope, now and in the previous release ----------------------------------------------------------------------


def ours_scorer(o: Ours, source: str, scored: Scored, items: Sequence[Item], units: Units, missing: str) -> Scorer:
    statuses = cells(scored.statuses, o.id, items).to_numpy(dtype=object)
    details = cells(scored.details, o.id, items).to_numpy(dtype=object)
    gone = missing if o.id in scored.missing else ""
    fate = "read as no" if o.not_ok_read_as_no else "left out"

    def note(index: np.ndarray) -> str:
        return status_note(statuses[index], details[index], gone, fate)
    return Scorer(o.name, source, units.values(o.read(scored, items)), o.threshold, o.id, note)


def evaluate(task: Task, test: Sequence[Item], dev: Sequence[Item], scored: Scored,
             previous: previous_release.Previous | None) -> dict:
    test = [i for i in test if task.keep(i)]
    dev = [i for i in dev if task.keep(i)]
    units = units_of(test, task.truth, task.unit, task.within, classes=task.kind == "classes")
    scorers = [ours_scorer(o, "ours", scored, test, units, "") for o in task.ours]
    if previous is not None:
        scorers += [ours_scorer(o, "previous", previous.scored, test, units, f"not in {previous.commit[:7]}")
                    for o in task.ours]
    scorers += baseline_scorers(task, test, dev, units)
    present = sorted(set(units.part.tolist()))
    masks = {ALL if len(present) > 1 else f"{ALL} ({present[0]})": np.ones(len(units.keys), dtype=bool)}
    if len(present) > 1:
        masks.update({part: units.part == part for part in present})
    parts = {name: part_rows(task.kind, units, mask, scorers, lead=task.statistic, classes=VERDICTS, beat=task.beat,
                             beat_metrics=task.beat_metrics) for name, mask in masks.items()}
    confusion = stats.confusion(scorers[0].values, units.truth, VERDICTS) if task.kind == "classes" else None
    return {"task": task, "n_items": len(test), "n_units": len(units.keys), "parts": parts, "confusion": confusion}


def evaluate_set(set_name: str, tasks: Sequence[Task], max_items: int, workdir: Path, commit: str | None) -> list[dict]:
    """Score the set's test items once (every metric its labels need), then every label of the set."""
    test = chosen_items(set_name, tasks, TEST, max_items)
    needs_dev = any(t.kind in ("binary", "classes") for t in tasks)
    dev = chosen_items(set_name, tasks, DEV, max_items) if needs_dev else []
    metrics = sorted({m for t in tasks for m in t.engine_metrics})
    previous = previous_release.score(test, metrics, commit, set_name) if commit else None  # first: quick, cached
    if previous is not None:
        print(f"{set_name}: previous release {previous.commit[:7]}: {previous.seconds:.0f} s"
              + (" (cached)" if previous.cached else ""), file=sys.stderr)
    started = time.perf_counter()
    scored = score_items(test, metrics, workdir / f"{set_name}.duckdb", name=f"{set_name} test")
    seconds = time.perf_counter() - started
    print(f"{set_name}: {len(test)} items scored in {seconds:.0f} s", file=sys.stderr)
    results = []
    for task in tasks:
        r = evaluate(task, test, dev, scored, previous)
        r.update(seconds=seconds, previous=previous.commit if previous else "",
                 previous_seconds=previous.seconds if previous else 0.0,
                 previous_cached=bool(previous and previous.cached))
        results.append(r)
        print(f"{set_name}: {task.label}: done", file=sys.stderr)
    return results


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-items", type=int, default=800, help="test items per set at most (hash-chosen)")
    parser.add_argument("--sets", default="", help="comma-separated set names (default: all)")
    parser.add_argument("--previous", default=previous_release.DEFAULT_COMMIT,
                        help="the release to compare with (a commit), or 'none' to skip it")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    wanted = [s for s in args.sets.split(",") if s]
    unknown = set(wanted) - {t.set for t in TASKS}
    if unknown:
        parser.error(f"unknown sets: {', '.join(sorted(unknown))}")
    commit = None if args.previous.lower() == "none" else args.previous
    started = time.perf_counter()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for set_name in dict.fromkeys(t.set for t in TASKS):
            if not wanted or set_name in wanted:
                tasks = [t for t in TASKS if t.set == set_name]
                results += evaluate_set(set_name, tasks, args.max_items, Path(tmp), commit)
    previous_seconds = sum({r["task"].set: r["previous_seconds"] for r in results if not r["previous_cached"]}.values())
    command = "python bench/judge_quality.py" + (f" --max-items {args.max_items}" if args.max_items != 800 else "") + \
        (f" --sets {args.sets}" if args.sets else "") + \
        (f" --previous {args.previous}" if args.previous != previous_release.DEFAULT_COMMIT else "")
    text = report(results, command, time.perf_counter() - started, previous_seconds)
    print(text)
    if not args.no_write:
        RESULTS.write_text(text)
        AGREEMENT.write_text(json.dumps(agreement(results, command), indent=1) + "\n")


if __name__ == "__main__":
    main()
