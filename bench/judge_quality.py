"""How well the offline judge agrees with people, beside simple baselines, on the test parts only.

    .venv/bin/python bench/judge_quality.py [--max-items 800] [--sets evouna,snli,...] [--no-write]

For each human label of the public sets in ../shared/data (calibration/sets.py reads them and fixes
each set's dev/test split by a hash of the item's group), the test items are scored by RAGScope
through the real engine (bench/engine_scores.py: a DuckDB file, `engine.execute_run`, the offline
judge) and by the simple baselines of bench/baselines.py on the same items. Binary labels: AUROC and
balanced accuracy at the threshold the product uses (baselines: the threshold that is best on the
dev part); classes: macro-F1 and the confusion matrix; graded labels: Pearson and Spearman. Every
figure has a 95% bootstrap CI (resampling groups: the answers to one question move together), and
each RAGScope metric has the paired-bootstrap difference to the best baseline on the same resamples.
Nothing here is fitted on test items. Writes bench/results/judge_quality.md unless --no-write.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.baselines import BASELINES  # noqa: E402
from bench.engine_scores import Scored, score_items  # noqa: E402
from calibration.sets import CONTRADICTED, DEV, NOT_FOUND, SUPPORTED, TEST, Item, load, subsample  # noqa: E402
from evaluators import stats  # noqa: E402
from evaluators.text import is_dont_know  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "judge_quality.md"
AGREEMENT = ROOT / "evaluators" / "judges" / "agreement.json"  # what the app's panels quote
VERDICTS = (SUPPORTED, CONTRADICTED, NOT_FOUND)
N_BOOT = 1000

# -- what each human label is compared with -------------------------------------------------------------


def answer_vs_reference(i: Item) -> tuple[str, str]:
    return i.answer, i.reference


def passage_vs_answer(i: Item) -> tuple[str, str]:
    """Baselines of support: the passage as candidate, the answer as reference, so token recall is
    the share of the answer's tokens found in the passage."""
    return " ".join(i.contexts), i.answer


def answer_vs_question(i: Item) -> tuple[str, str]:
    return i.answer, i.question


def passage_vs_question(i: Item) -> tuple[str, str]:
    return " ".join(i.contexts), i.question


def response_verdict(scored: Scored, items: Sequence[Item]) -> np.ndarray:
    """The whole answer's verdict from its claims' verdicts against the passage: any contradicted ->
    contradicted; all supported -> supported; else not_found. An answer with no claim is not_found."""
    answer = scored.claims[scored.claims.source == "answer"]
    by_item = answer.groupby("item_id")["verdict"].apply(list).to_dict()
    out = []
    for i in items:
        verdicts = by_item.get(i.item_id, [])
        if not verdicts:
            out.append(NOT_FOUND)
        elif CONTRADICTED in verdicts:
            out.append(CONTRADICTED)
        else:
            out.append(SUPPORTED if all(v == SUPPORTED for v in verdicts) else NOT_FOUND)
    return np.array(out, dtype=object)


def metric(name: str) -> Callable[[Scored, Sequence[Item]], np.ndarray]:
    def values(scored: Scored, items: Sequence[Item]) -> np.ndarray:
        return scored.scores[name].reindex([i.item_id for i in items]).to_numpy(dtype=float)
    values.__name__ = name
    return values


def label_is(name: str, wanted: str) -> Callable[[Scored, Sequence[Item]], np.ndarray]:
    def values(scored: Scored, items: Sequence[Item]) -> np.ndarray:
        labels = scored.labels[name].reindex([i.item_id for i in items])
        return (labels == wanted).to_numpy(dtype=float)
    return values


def verdict_is_supported(scored: Scored, items: Sequence[Item]) -> np.ndarray:
    return (response_verdict(scored, items) == SUPPORTED).astype(float)


def best_chunk_relevance(scored: Scored, items: Sequence[Item]) -> np.ndarray:
    best = scored.chunks.groupby("item_id")["relevance_score"].max()
    return best.reindex([i.item_id for i in items]).to_numpy(dtype=float)


@dataclass(frozen=True)
class Ours:
    """One RAGScope score set beside a label: how to read it, and the product's threshold (binary)."""

    name: str
    read: Callable[[Scored, Sequence[Item]], np.ndarray]
    threshold: float | None = None  # a binary label's "yes" from this value on
    metric_id: str = ""  # the catalogue id the figure is quoted under in the app (default: name)


@dataclass(frozen=True)
class Task:
    set: str
    label: str  # what people said, for the table
    kind: str  # binary | classes | graded
    truth: Callable[[Item], object]
    engine_metrics: tuple[str, ...]
    ours: tuple[Ours, ...]
    pair: Callable[[Item], tuple[str, str]]
    keep: Callable[[Item], bool] = lambda i: True
    extra_baselines: dict = field(default_factory=dict)  # name -> (function of items, threshold or None)


def seed_phrases(items: Sequence[Item]) -> np.ndarray:
    """Seed 003's uncertainty phrases alone: the DON'T KNOW check before this issue."""
    return np.array([float(is_dont_know(i.answer) is not None) for i in items])


TASKS = (
    Task("evouna", "people: the answer is correct (vs the gold answer)", "binary", lambda i: bool(i.label),
         ("answer_correctness_f1", "judge_correctness", "factual_accuracy", "answer_class"),
         (Ours("judge_correctness", metric("judge_correctness"), 3.0),
          Ours("answer_class = CORRECT", label_is("answer_class", "CORRECT"), 0.5, "answer_class"),
          Ours("factual_accuracy", metric("factual_accuracy"), 60.0),
          Ours("answer_correctness_f1", metric("answer_correctness_f1"), 0.5)),
         answer_vs_reference),
    Task("snli", "people: hypothesis entailed / contradicted / neutral", "classes", lambda i: i.label,
         ("faithfulness",), (Ours("claim verdict", response_verdict, metric_id="faithfulness"),), passage_vs_answer),
    Task("factcheck_stance", "people: evidence supports / refutes / is irrelevant to the claim", "classes",
         lambda i: i.label, ("faithfulness",), (Ours("claim verdict", response_verdict, metric_id="faithfulness"),), passage_vs_answer,
         keep=lambda i: i.label in VERDICTS),
    Task("fool_me_twice", "people: evidence supports (vs refutes) the claim", "binary",
         lambda i: i.label == SUPPORTED, ("faithfulness", "judge_faithfulness"),
         (Ours("faithfulness", metric("faithfulness"), 1.0), Ours("claim verdict = supported", verdict_is_supported, 0.5, "faithfulness"),
          Ours("judge_faithfulness", metric("judge_faithfulness"), 4.0)),
         passage_vs_answer),
    Task("begin", "people: response fully attributable to the passage", "binary", lambda i: bool(i.label),
         ("faithfulness", "judge_faithfulness"),
         (Ours("faithfulness", metric("faithfulness"), 1.0), Ours("claim verdict = supported", verdict_is_supported, 0.5, "faithfulness"),
          Ours("judge_faithfulness", metric("judge_faithfulness"), 4.0)),
         passage_vs_answer),
    Task("summedits", "people: summary consistent with the document", "binary", lambda i: bool(i.label),
         ("faithfulness", "judge_faithfulness"),
         (Ours("faithfulness", metric("faithfulness"), 1.0), Ours("claim verdict = supported", verdict_is_supported, 0.5, "faithfulness"),
          Ours("judge_faithfulness", metric("judge_faithfulness"), 4.0)),
         passage_vs_answer),
    Task("inspectorraget", "people: faithfulness 1-4 (mean of 3)", "graded", lambda i: float(i.label),
         ("faithfulness", "judge_faithfulness"),
         (Ours("faithfulness", metric("faithfulness")), Ours("judge_faithfulness", metric("judge_faithfulness"))),
         passage_vs_answer),
    Task("inspectorraget", "people: answer relevance 1-4 (mean of 3)", "graded",
         lambda i: float(dict(i.extra)["answer_relevance"]), ("answer_relevance", "judge_relevance"),
         (Ours("answer_relevance", metric("answer_relevance")), Ours("judge_relevance", metric("judge_relevance"))),
         answer_vs_question),
    Task("inspectorraget", "ClapNQ: the question is unanswerable from the passage (answer should abstain)", "binary",
         lambda i: not dict(i.extra)["answerable"], ("answer_class",),
         (Ours("answer_class = DON'T KNOW", label_is("answer_class", "DON'T KNOW"), 0.5, "answer_class"),),
         answer_vs_question, extra_baselines={"seed 003 phrases": (seed_phrases, 0.5)}),
    Task("clapnq", "people: the passage holds the answer (answerable)", "binary", lambda i: bool(i.label),
         ("context_precision",),
         (Ours("context_precision", metric("context_precision"), 0.5), Ours("chunk relevance score", best_chunk_relevance, 45.0, "context_precision")),
         passage_vs_question),
    Task("squad2", "people: the passage holds the answer (answerable)", "binary", lambda i: bool(i.label),
         ("context_precision",),
         (Ours("context_precision", metric("context_precision"), 0.5), Ours("chunk relevance score", best_chunk_relevance, 45.0, "context_precision")),
         passage_vs_question),
)


# -- statistics ------------------------------------------------------------------------------------------


def primary(kind: str) -> tuple[str, Callable]:
    """The headline statistic of a label kind."""
    if kind == "binary":
        return "AUROC", stats.auroc
    if kind == "graded":
        return "Spearman", lambda s, y: stats.spearman(s, y)
    return "macro-F1", lambda s, y: stats.macro_f1(s, y, VERDICTS)


def best_threshold(scores: np.ndarray, truth: np.ndarray) -> float:
    """The cut with the best balanced accuracy (used on dev items only)."""
    cuts = np.unique(np.round(scores[~np.isnan(scores)], 4))
    if len(cuts) > 200:
        cuts = np.quantile(scores[~np.isnan(scores)], np.linspace(0, 1, 201))
    return float(max(cuts, key=lambda t: stats.balanced_accuracy(scores >= t, truth)))


def baseline_scores(items: Sequence[Item], pair) -> dict[str, np.ndarray]:
    cands, refs = zip(*(pair(i) for i in items)) if items else ((), ())
    return {name: np.asarray(fn(list(cands), list(refs)), dtype=float) for name, fn in BASELINES.items()}


def three_way(scores: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """A baseline's verdict: supported from `hi` on, not_found below `lo`, contradicted between
    (same topic, different fact): the simplest three-way rule a score allows."""
    return np.where(scores >= hi, SUPPORTED, np.where(scores < lo, NOT_FOUND, CONTRADICTED)).astype(object)


def best_three_way(scores: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    qs = np.quantile(scores, np.linspace(0, 1, 21))
    return max(((lo, hi) for lo in qs for hi in qs if lo <= hi),
               key=lambda c: stats.macro_f1(three_way(scores, *c), truth, VERDICTS))


def evaluate(task: Task, max_items: int, workdir: Path) -> dict:
    test = subsample([i for i in load(task.set, TEST) if task.keep(i)], max_items)
    dev = subsample([i for i in load(task.set, DEV) if task.keep(i)], max_items)
    started = time.perf_counter()
    scored = score_items(test, task.engine_metrics, workdir / f"{task.set}.duckdb", name=f"{task.set} test")
    seconds = time.perf_counter() - started
    truth = np.array([task.truth(i) for i in test], dtype=object if task.kind == "classes" else float)
    groups = np.array([i.group for i in test], dtype=object)
    stat_name, stat = primary(task.kind)

    rows = []  # (name, is_ours, scores or labels, threshold)
    for ours in task.ours:
        rows.append((ours.name, True, ours.read(scored, test), ours.threshold, ours.metric_id or ours.name))
    base_test = baseline_scores(test, task.pair)
    base_dev = baseline_scores(dev, task.pair) if task.kind != "graded" else {}
    dev_truth = np.array([task.truth(i) for i in dev], dtype=object if task.kind == "classes" else float)
    for name, scores in base_test.items():
        if task.kind == "binary":
            rows.append((name, False, scores, best_threshold(base_dev[name], dev_truth.astype(bool)), ""))
        elif task.kind == "classes":
            lo, hi = best_three_way(base_dev[name], dev_truth)
            rows.append((name, False, three_way(scores, lo, hi), (lo, hi), ""))
        else:
            rows.append((name, False, scores, None, ""))
    for name, (fn, threshold) in task.extra_baselines.items():
        rows.append((name, False, fn(test), threshold, ""))

    def headline(values):
        if task.kind == "binary":
            return stats.bootstrap_ci(stat, values, truth.astype(bool), n_boot=N_BOOT, groups=groups)
        return stats.bootstrap_ci(stat, values, truth, n_boot=N_BOOT, groups=groups)

    table = []
    for name, is_ours, values, threshold, metric_id in rows:
        entry = {"name": name, "ours": is_ours, "values": values, "threshold": threshold, "metric_id": metric_id,
                 "headline": headline(values)}
        if task.kind == "binary" and threshold is not None:
            entry["balanced_accuracy"] = stats.bootstrap_ci(
                lambda s, y: stats.balanced_accuracy(s >= threshold, y), values, truth.astype(bool),
                n_boot=N_BOOT, groups=groups)
        if task.kind == "graded":
            entry["pearson"] = stats.bootstrap_ci(lambda s, y: stats.pearson(s, y), values, truth,
                                                  n_boot=N_BOOT, groups=groups)
        table.append(entry)
    baselines = [e for e in table if not e["ours"]]
    best = max(baselines, key=lambda e: e["headline"][0])
    for e in table:
        if e["ours"]:
            y = truth.astype(bool) if task.kind == "binary" else truth
            e["vs_best"] = stats.paired_bootstrap_difference(stat, e["values"], best["values"], y,
                                                             n_boot=N_BOOT, groups=groups)
    confusion = None
    if task.kind == "classes":
        confusion = stats.confusion(table[0]["values"], truth, VERDICTS)
    return {"task": task, "n": len(test), "n_groups": len(set(groups)), "stat": stat_name, "table": table,
            "best": best["name"], "confusion": confusion, "seconds": seconds}


# -- report ----------------------------------------------------------------------------------------------


def ci(t) -> str:
    est, lo, hi = t
    return "n/a" if np.isnan(est) else f"{est:.3f} [{lo:.3f}, {hi:.3f}]"


def markdown_table(frame) -> str:
    head = "| people \\ RAGScope | " + " | ".join(map(str, frame.columns)) + " |"
    rows = [f"| {idx} | " + " | ".join(str(v) for v in row) + " |" for idx, row in zip(frame.index, frame.to_numpy())]
    return "\n".join([head, "|---|" + "---|" * len(frame.columns), *rows])


def report(results: list[dict], command: str, total_seconds: float) -> str:
    out = [
        "# Judge quality: the offline judge against people, beside simple baselines",
        "",
        f"Command: `{command}` ({total_seconds / 60:.1f} min on {platform.machine()}, "
        f"{dt.date.today().isoformat()}). Test parts only (calibration/sets.py's fixed hash split); anything "
        "fitted or tuned (the correctness scorer, the NLI cross-encoder, baseline thresholds) saw dev items "
        "only. RAGScope's numbers come from the engine (`engine.execute_run`, offline judge, a DuckDB file).",
        "",
        "95% CIs: bootstrap over groups (answers to one question, claims on one premise or document move "
        f"together), {N_BOOT} resamples. Δ best baseline: the paired-bootstrap difference of the headline "
        "statistic to the best baseline on the same resamples; a lower bound above 0 means RAGScope is better.",
        "Binary labels: balanced accuracy at the product's threshold for RAGScope's metrics (the column "
        "'threshold'), at the dev-best threshold for the baselines. Token F1 / recall: SQuAD normalisation.",
        "",
        "## Summary",
        "",
        "| set | label | n (groups) | statistic | best RAGScope metric | RAGScope | best baseline | baseline | Δ [95% CI] | target met |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        ours = [e for e in r["table"] if e["ours"]]
        top = max(ours, key=lambda e: (np.nan_to_num(e["headline"][0], nan=-9)))
        base = next(e for e in r["table"] if e["name"] == r["best"])
        met = "yes" if top["vs_best"][1] > 0 else "no"
        out.append(f"| {r['task'].set} | {r['task'].label} | {r['n']} ({r['n_groups']}) | {r['stat']} | {top['name']} | "
                   f"{ci(top['headline'])} | {base['name']} | {ci(base['headline'])} | {ci(top['vs_best'])} | {met} |")
    for r in results:
        t = r["task"]
        out += ["", f"## {t.set}: {t.label}", "",
                f"{r['n']} test items in {r['n_groups']} groups; engine time {r['seconds']:.0f} s.", ""]
        cols = [r["stat"]]
        if t.kind == "binary":
            cols += ["balanced accuracy", "threshold"]
        if t.kind == "graded":
            cols += ["Pearson"]
        out.append("| scorer | " + " | ".join(cols) + " | Δ best baseline |")
        out.append("|---|" + "---|" * (len(cols) + 1))
        for e in r["table"]:
            cells = [ci(e["headline"])]
            if t.kind == "binary":
                cells += [ci(e["balanced_accuracy"]) if "balanced_accuracy" in e else "",
                          "" if e["threshold"] is None else f"{e['threshold']:.3g}"]
            if t.kind == "graded":
                cells += [ci(e["pearson"])]
            name = f"**{e['name']}** (RAGScope)" if e["ours"] else e["name"]
            out.append(f"| {name} | " + " | ".join(cells) + f" | {ci(e['vs_best']) if e['ours'] else ''} |")
        if r["confusion"] is not None:
            out += ["", "Confusion of RAGScope's verdict (rows: people, columns: RAGScope):", "",
                    markdown_table(r["confusion"])]
    return "\n".join(out) + "\n"


def agreement(results: list[dict], command: str) -> dict:
    """The figures the app's "How scores are computed" panels quote: per RAGScope scorer and label,
    its statistic with CI beside the best baseline's."""
    rows = []
    for r in results:
        base = next(e for e in r["table"] if e["name"] == r["best"])
        for e in r["table"]:
            if e["ours"]:
                rows.append({"metric": e["metric_id"], "scorer": e["name"], "set": r["task"].set,
                             "label": r["task"].label, "n": r["n"], "statistic": r["stat"],
                             "value": _round(e["headline"]), "baseline": base["name"],
                             "baseline_value": _round(base["headline"]), "difference": _round(e["vs_best"])})
    return {"command": command, "date": dt.date.today().isoformat(), "source": "bench/results/judge_quality.md",
            "rows": rows}


def _round(t) -> list:
    return [None if np.isnan(x) else round(float(x), 3) for x in t]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-items", type=int, default=800, help="test items per set at most (hash-chosen)")
    parser.add_argument("--sets", default="", help="comma-separated set names (default: all)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    wanted = {s for s in args.sets.split(",") if s}
    started = time.perf_counter()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for task in TASKS:
            if wanted and task.set not in wanted:
                continue
            results.append(evaluate(task, args.max_items, Path(tmp) / str(len(results))))
            print(f"{task.set}: {task.label}: done", file=sys.stderr)
    command = "python bench/judge_quality.py" + (f" --max-items {args.max_items}" if args.max_items != 800 else "") + \
        (f" --sets {args.sets}" if args.sets else "")
    text = report(results, command, time.perf_counter() - started)
    print(text)
    if not args.no_write:
        RESULTS.write_text(text)
        AGREEMENT.write_text(json.dumps(agreement(results, command), indent=1) + "\n")


if __name__ == "__main__":
    main()
