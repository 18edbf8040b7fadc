"""The headline: a run's primary scores per method, and in plain words the differences that hold.

For people who will not read 34 metrics. `scores`: per method the seeds' primary scores (HEADLINE) with their 95%
CI and n, as Overview computes them: the overall 1-5 rating and the pass rate of seed 001 (the share of `pass`
verdicts), correctness, faithfulness, context precision and recall of seed 002, and the share of CORRECT answers
of seed 003 (Overview's `answer_class` table counts CORRECT / WRONG / DON'T KNOW). `findings`: every other method
against the leader (the best overall rating, else the best on the first headline score) on each headline metric,
by Compare's own comparison_table (paired questions, 95% CI, Holm over the pair's primary family of tests, the
headline metrics declared before looking: evaluators.queries.hypotheses; Compare shows the same p for the same
pair), one sentence per difference that holds, else one saying none does."""
from __future__ import annotations

import pandas as pd

from evaluators.judges import agreement, of_run
from evaluators.metrics.registry import SCALES, label_metrics, lookup
from evaluators.queries import OK
from evaluators.queries.calibrations import latest_calibration
from evaluators.queries.compare import comparison_table
from evaluators.queries.hypotheses import HEADLINE
from evaluators.maths.stats import t_half_widths
from evaluators.store import Store

PERCENT, LIKERT = SCALES["percent"], SCALES["likert"]
# Each headline item as people read it: its name, and how one method is better than another on it.
ITEMS = {
    "judge_overall": ("overall rating (1-5)", "is rated higher overall than"),
    "verdict": ("pass rate", "gets better pass / partial / fail verdicts than"),  # the item: the share of pass
    "answer_correctness_f1": ("correctness (claim F1)",
                              "states more of the reference's claims, and fewer others, than"),
    "faithfulness": ("faithfulness", "sticks closer to its retrieved chunks than"),
    "context_precision": ("context precision", "retrieves more relevant chunks than"),
    "context_recall": ("context recall", "retrieves more of what the reference says than"),
    "answer_class": ("correct answers", "answers correctly more often than"),
}
SCORE_COLUMNS = ["method", "metric", "item", "unit", "value", "ci_low", "ci_high", "n", "n_total"]
FINDING_COLUMNS = ["sentence", "better", "worse", "metric", "unit", "mean_better", "mean_worse", "difference",
                   "ci_low", "ci_high", "n", "p_holm"]


def unit(metric: str) -> str:
    """How a headline score is shown: 1-5 as rated, a mean verdict on its own 0-1, shares and ratios in percent."""
    return LIKERT.text if lookup(metric).range is LIKERT else ("0-1" if metric == "verdict" else "%")


def headline(store: Store, run_id: str, means: pd.DataFrame, *, baseline: str | None = None) -> dict[str, pd.DataFrame]:
    """`scores`, `findings` (module docstring), `judge` (who scored; `calibrated`: the headline of its latest
    `judge calibrate`, None if never), `agreement` (the offline judge's measured agreement with people) and
    `calibration` (the judge's latest calibration, label by label; empty if never calibrated), from Overview's
    `metric_means` of all questions (`means`). baseline: the method the others are compared with (default: the
    leader)."""
    if means.empty:  # nothing scored yet: nothing to head
        return {name: pd.DataFrame() for name in ("scores", "findings", "judge", "agreement", "calibration")}
    means = means[means["metric"].isin(HEADLINE)]
    scores = _scores(store, run_id, means)
    methods = sorted(means["method"].unique())
    chosen = baseline is not None
    if not chosen:  # the leader, else (no score at all) the first method
        baseline = leader(scores) or next(iter(methods), None)
    judge, calibration = _judge(store, run_id)
    return {"scores": scores,
            "findings": _findings(store, run_id, methods, baseline, scores, chosen), "judge": judge,
            # the offline judge's measured agreement with people (the panels' figures); an LLM judge's is not measured
            "agreement": _agreement() if judge["agreement measured"].iloc[0] else _agreement().iloc[:0],
            "calibration": calibration.table() if calibration else pd.DataFrame()}


def leader(scores: pd.DataFrame) -> str | None:
    """The method with the highest mean on the first headline item any method scored (overall rating first)."""
    scored = scores.dropna(subset=["value"])
    for metric in HEADLINE:
        rows = scored[scored["metric"] == metric]
        if len(rows):
            return str(rows.sort_values(["value", "method"], ascending=[False, True]).iloc[0]["method"])
    return None


def _scores(store: Store, run_id: str, means: pd.DataFrame) -> pd.DataFrame:
    rows = []
    passes = _pass_rates(store, run_id)
    for metric in [m for m in HEADLINE if m in set(means["metric"])]:
        for r in means[means["metric"] == metric].itertuples(index=False):
            if metric == "verdict":  # the share of pass verdicts, on the verdicts overview counts
                p = passes.get(r.method, (None, None, None))
                value, low, high = (None if x is None else PERCENT.value(x) for x in p)
            elif unit(metric) == "%":
                value, low, high = (PERCENT.value(x) for x in (r.mean_norm, r.ci_low_norm, r.ci_high_norm))
            else:
                value, low, high = r.mean, r.ci_low, r.ci_high
            rows.append([r.method, metric, ITEMS[metric][0], "%" if metric == "verdict" else unit(metric),
                         value, low, high, int(r.n_scored), int(r.n_total)])
    return pd.DataFrame(rows, columns=SCORE_COLUMNS).astype({"value": float, "ci_low": float, "ci_high": float})


def _pass_rates(store: Store, run_id: str) -> dict[str, tuple[float, float, float]]:
    """Per method: the share of `pass` among its scored verdicts, with the t interval Overview gives every mean."""
    frame = store.cursor().execute(
        f"""
        SELECT method, avg(CASE WHEN label = $best THEN 1.0 ELSE 0.0 END) AS share,
               stddev_samp(CASE WHEN label = $best THEN 1.0 ELSE 0.0 END) AS sd, count(*) AS n
        FROM scores WHERE run_id = $run AND metric = 'verdict' AND status = {OK} GROUP BY method
        """, {"run": run_id, "best": label_metrics()["verdict"][0]}).df()  # the verdict's first label
    half = t_half_widths(frame["sd"], frame["n"])  # as Overview's interval of every mean, clipped to [0, 1]
    low, high = (frame["share"] - half).clip(0.0, 1.0), (frame["share"] + half).clip(0.0, 1.0)
    return {m: (s, lo, hi) for m, s, lo, hi in zip(frame["method"], frame["share"], low, high)}


def _findings(store: Store, run_id: str, methods: list[str], baseline: str | None, scores: pd.DataFrame,
              chosen: bool) -> pd.DataFrame:
    """The lead (which method the others are compared with, and why), then per other method its differences
    that hold, else that none does."""
    metrics = [m for m in HEADLINE if m in set(scores["metric"])]
    if not metrics:
        return pd.DataFrame([_said("The run scored none of the headline metrics (" + ", ".join(HEADLINE) + ").")],
                            columns=FINDING_COLUMNS)
    others = [m for m in methods if m != baseline]
    if not others:
        return pd.DataFrame([_said(f"Only one method ({baseline}): there is nothing to compare it with.")],
                            columns=FINDING_COLUMNS)
    rows = [_said(_lead(scores, baseline, chosen))]
    table = comparison_table(store, run_id, baseline, others, metrics=metrics)
    for method in others:
        part = table[table["method"] == method]
        holding = part[part["significant"] & part["better"].notna()]
        for metric in metrics:
            for r in holding[holding["metric"] == metric].itertuples(index=False):
                rows.append(_finding(r))
        if holding.empty:
            n = int(part["n"].max()) if len(part) else 0
            rows.append(_said(f"No difference between {method} and {baseline} on the headline scores holds after "
                              f"Holm ({n} questions scored by both)." if n else
                              f"No question was scored by both {method} and {baseline}."))
    return pd.DataFrame(rows, columns=FINDING_COLUMNS)


def _lead(scores: pd.DataFrame, baseline: str, chosen: bool) -> str:
    """Which method the others are compared with: the chosen one, or the leader with its score."""
    rows = scores.dropna(subset=["value"])
    rows = rows[rows["method"] == baseline]
    if chosen or rows.empty:
        return f"Each method is compared with {baseline}."
    top = rows.iloc[0]  # the leader's first headline item, the one it leads on (`leader`)
    digits, after = (1, "%") if top["unit"] == "%" else (2, f" on {top['unit']}")
    interval = f" [{top['ci_low']:.{digits}f}, {top['ci_high']:.{digits}f}]" if pd.notna(top["ci_low"]) else ""
    return (f"{baseline} leads on {top['item']}: {top['value']:.{digits}f}{interval}{after}, {top['n']} questions; "
            f"each other method is compared with it.")


def _finding(r) -> dict:
    """One comparison row as a sentence, the better method first, in the item's unit."""
    flip = r.better != r.method  # the baseline is the better one: read the difference from its side
    better, worse = (r.baseline, r.method) if flip else (r.method, r.baseline)
    mean_better, mean_worse = (r.mean_b, r.mean_a) if flip else (r.mean_a, r.mean_b)
    sign = -1 if flip else 1
    difference, low, high = sign * r.delta, *sorted((sign * r.ci_low, sign * r.ci_high))
    shown = unit(r.metric)
    if shown == "%":  # ratios and shares of the own scale in percent, their differences in points
        scale = lookup(r.metric).range
        mean_better, mean_worse = (PERCENT.value(scale.norm(x)) for x in (mean_better, mean_worse))
        difference, low, high = (PERCENT.difference(x / scale.width) for x in (difference, low, high))
        numbers = f"{mean_better:.1f}% vs {mean_worse:.1f}%, {difference:+.1f} points [{low:.1f}, {high:.1f}]"
    else:
        numbers = f"{mean_better:.2f} vs {mean_worse:.2f}, {difference:+.2f} [{low:.2f}, {high:.2f}] on {shown}"
    what = "mean verdict (pass 1, partial 0.5, fail 0) " if r.metric == "verdict" else ""
    sentence = f"{better} {ITEMS[r.metric][1]} {worse}: {what}{numbers}, {int(r.n)} questions."
    return dict(sentence=sentence, better=better, worse=worse, metric=r.metric, unit=shown, mean_better=mean_better,
                mean_worse=mean_worse, difference=difference, ci_low=low, ci_high=high, n=int(r.n), p_holm=r.p_holm)


def _said(sentence: str) -> dict:
    """A finding that is a sentence only (no difference to report)."""
    return {"sentence": sentence}


def _agreement() -> pd.DataFrame:
    """The offline judge's measured agreement on the headline metrics, over whole sets (the panels' figures,
    without their subgroups and the rows not measured)."""
    table = agreement.table(HEADLINE)
    whole = ~table["human label"].str.contains(r"\[", regex=True) & (table["offline judge [95% CI]"] != "n/a")
    return table[whole].reset_index(drop=True)


def _judge(store: Store, run_id: str):
    """Who scored the run: the judge, its model, whether the offline judge's figures of agreement with people apply,
    and the judge's latest calibration against people (`judge calibrate`) with its headline; None if never."""
    run = store.run(run_id)
    judge = of_run(run)
    calibration = latest_calibration(store.cursor(), judge.name, run["judge_model"])
    return pd.DataFrame([{"judge": judge.name, "model": run["judge_model"], "label": judge.label,
                          "agreement measured": judge.agreement_measured,
                          "calibrated": calibration.headline if calibration else None}]), calibration
