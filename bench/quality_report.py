"""bench/results/judge_quality.md and evaluators/judges/agreement.json from bench/judge_quality.py's results.

A result is one human label of one set: {"task", "n_items", "n_units", "parts": {part name: quality_stats.part_rows},
"confusion", "seconds", "previous"}; the targets are issue 20's.
"""
from __future__ import annotations

import datetime as dt
import platform

import numpy as np

from bench.quality_stats import N_BOOT
from bench.quality_tasks import PAIRS

ALL = "all"


def ci(t) -> str:
    est, lo, hi = t
    return "n/a" if est is None or np.isnan(est) else f"{est:.3f} [{lo:.3f}, {hi:.3f}]"


def _round(t) -> list:
    return [None if x is None or np.isnan(x) else round(float(x), 3) for x in t]


def figure(row: dict) -> str:
    """The headline with its CI, or why there is none."""
    return ci(row["figures"][0]) if "why" not in row else f"n/a ({row['why']})"


def yes_no(condition: bool | None) -> str:
    return "n/a" if condition is None else ("yes" if condition else "**no**")


def _upper_ok(d) -> bool | None:
    return None if d is None or np.isnan(d[0]) else d[2] >= 0


def _lower_ok(d) -> bool | None:
    return None if d is None or np.isnan(d[0]) else d[1] > 0


def measurable(figure) -> bool:
    return figure is not None and not np.isnan(figure[0])


def targets(row: dict) -> dict[str, bool | None]:
    """Issue 20's targets for one RAGScope metric in one part: not worse than the best baseline and than the
    previous release (upper bound >= 0), and better than each named baseline (lower bound > 0). None (n/a, not
    counted) where a difference has no value, except that a metric with no figure misses the baselines it must
    beat, and misses the previous release when that release had a figure: a user sees it lose either way."""
    ours = measurable(row["figures"][0])
    out = {"not worse than the best baseline": _upper_ok(row.get("vs_best")),
           "not worse than the previous release": _upper_ok(row.get("vs_previous"))}
    if not ours and measurable(row.get("previous_figure")):
        out["not worse than the previous release"] = False
    for name, d in row.get("vs_beat", {}).items():
        out[f"beats {name}"] = _lower_ok(d) if ours else False
    return out


def _label(result: dict, part: str) -> str:
    return result["task"].label if part.startswith(ALL) else f"{result['task'].label} [{part}]"


def _previous_short(results: list[dict]) -> str:
    return next((r["previous"][:7] for r in results if r.get("previous")), "")


def summary(results: list[dict], previous: str) -> list[str]:
    prev = previous or "previous release"
    out = [f"| set | label | part | n | RAGScope metric | statistic | RAGScope [95% CI] | best baseline [95% CI] | "
           f"Δ best baseline | {prev} [95% CI] | Δ {prev} | targets met |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    met = total = 0
    for r in results:
        for part, p in r["parts"].items():
            best = next(x for x in p["rows"] if x["scorer"].name == p["best"])
            previous_rows = {x["scorer"].name: x for x in p["rows"] if x["scorer"].source == "previous"}
            for row in (x for x in p["rows"] if x["scorer"].source == "ours"):
                checks = targets(row)
                known = [v for v in checks.values() if v is not None]
                met, total = met + sum(known), total + len(known)
                said = "; ".join(f"{k}: {yes_no(v)}" for k, v in checks.items())
                before = previous_rows.get(row["scorer"].name)
                out.append(f"| {r['task'].set} | {r['task'].label} | {part} | {row['n']} of {p['n']} | "
                           f"{row['scorer'].name} | {p['statistics'][0]} | {figure(row)} | {best['scorer'].name} "
                           f"{ci(best['figures'][0])} | {ci(row['vs_best'])} | {figure(before) if before else 'n/a'} | "
                           f"{ci(row['vs_previous']) if 'vs_previous' in row else 'n/a'} | {said} |")
    return [f"{met} of {total} measurable target checks met (a check whose difference has no value, e.g. a metric "
            "not computable on a set, is n/a and not counted).", "", *out]


def part_table(result: dict, part: str, p: dict, previous: str) -> list[str]:
    task = result["task"]
    columns = list(p["statistics"])
    if task.kind == "binary":
        columns += ["balanced accuracy", "threshold"]
    out = [f"### {part}: {p['n']} units in {p['n_groups']} groups"
           + (f", {p['n_pairs']} pairs whose human labels differ" if p["n_pairs"] is not None else ""), "",
           "| scorer | n | " + " | ".join(columns)
           + f" | Δ best baseline | Δ {previous or 'previous'} | cells left out |",
           "|---|---|" + "---|" * (len(columns) + 3)]
    for row in p["rows"]:
        s = row["scorer"]
        name = {"ours": f"**{s.name}** (RAGScope)", "previous": f"{s.name} ({previous})", "baseline": s.name}[s.source]
        cells = [figure(row) if k == 0 else ci(f) for k, f in enumerate(row["figures"])]
        if task.kind == "binary":
            cells += [ci(row["balanced_accuracy"]) if "balanced_accuracy" in row else "",
                      "" if s.threshold is None else f"{s.threshold:.3g}"]
        deltas = [ci(row[k]) if k in row else "" for k in ("vs_best", "vs_previous")]
        note = row["note"] if "why" not in row or row["why"] != row["note"] else ""
        out.append(f"| {name} | {row['n']} | " + " | ".join(cells + deltas) + f" | {note} |")
    return out


def markdown_table(frame) -> str:
    head = "| people \\ RAGScope | " + " | ".join(map(str, frame.columns)) + " |"
    rows = [f"| {idx} | " + " | ".join(str(v) for v in row) + " |" for idx, row in zip(frame.index, frame.to_numpy())]
    return "\n".join([head, "|---|" + "---|" * len(frame.columns), *rows])


def section(r: dict, previous: str) -> list[str]:
    task = r["task"]
    unit = (f"{r['n_items']} test items averaged into {r['n_units']} responses (each against its 3 references)"
            if r["n_units"] != r["n_items"] else f"{r['n_items']} test items")
    timing = f"engine {r['seconds']:.0f} s for the set"
    if r.get("previous"):
        timing += f", {previous} {r['previous_seconds']:.0f} s" + (" (cached)" if r["previous_cached"] else "")
    headline = next(iter(r["parts"].values()))["statistics"][0]
    out = ["", f"## {task.set}: {task.label}", "",
           f"{unit}; baselines: {PAIRS[task.pair]}; {timing}. Headline: {headline}."]
    for part, p in r["parts"].items():
        out += [""] + part_table(r, part, p, previous)
    if r["confusion"] is not None:
        out += ["", "Confusion of RAGScope's verdict (rows: people, columns: RAGScope):", "",
                markdown_table(r["confusion"])]
    return out


def report(results: list[dict], command: str, total_seconds: float, previous_seconds: float) -> str:
    prev = _previous_short(results)
    out = [
        "# Judge quality: the offline judge against people, beside simple baselines and the previous release",
        "",
        f"Command: `{command}` ({total_seconds / 60:.1f} min on {platform.machine()}, of which the previous release "
        f"{previous_seconds / 60:.1f} min; {dt.date.today().isoformat()}). Test parts only "
        "(calibration/sets.py's fixed hash split); anything fitted or tuned (the judge's scorers, baseline "
        "thresholds) saw dev items only. RAGScope's numbers come from the engine (`engine.execute_run`, offline "
        "judge, a DuckDB file); the previous release's from its own engine, run on the same items "
        "(bench/previous_release.py).",
        "",
        "How to read: for every human label, the metrics the screens present for that kind of label, good or bad. "
        "n counts the units with a value: cells that are not ok (not_applicable, failed) are left out, never "
        "counted as 0, and the last column says how many and why; a metric with no value, or a constant one, is "
        f"n/a with the reason. 95% CIs: bootstrap over groups (the answers to one question move together), {N_BOOT} "
        "resamples. Δ: the paired-bootstrap difference of the headline statistic (RAGScope minus the other) on the "
        "same resamples, over the units where both have a value; a lower bound above 0 means RAGScope is better, an "
        "upper bound below 0 that it is worse. Parts: the units by their reference's length (EVOUNA's alias lists "
        "by their shortest alias); a set with both short and long references has a row for each beside all. "
        "Binary labels: balanced accuracy at the product's threshold for RAGScope's metrics, at the dev-best "
        "threshold for the baselines. Token F1 / recall: SQuAD normalisation.",
        "",
        "## Targets (issue 20)",
        "",
        "Per set, label, part and headline metric: not worse than the best baseline (Δ upper bound >= 0), not worse "
        f"than the release before the judge work ({prev or 'not run'}; Δ upper bound >= 0); on SQuALITY "
        "judge_correctness and judge_overall beat token F1 and ROUGE-L, and on HaluQuestQA and ALCE the "
        "reference-free metrics (judge_relevance, answer_relevance, judge_overall) beat the length and "
        "question-overlap baselines (Δ lower bound > 0).",
        "",
        *summary(results, prev),
    ]
    for r in results:
        out += section(r, prev)
    return "\n".join(out) + "\n"


def agreement(results: list[dict], command: str) -> dict:
    """The figures the app's "How scores are computed" panels quote: per RAGScope metric, set, label and part
    (short and long references apart where a set has both), its statistic with CI beside the best baseline's and
    the previous release's."""
    rows = []
    for r in results:
        for part, p in r["parts"].items():
            base = next(e for e in p["rows"] if e["scorer"].name == p["best"])
            before = {e["scorer"].name: e for e in p["rows"] if e["scorer"].source == "previous"}
            for e in (x for x in p["rows"] if x["scorer"].source == "ours"):
                prev = before.get(e["scorer"].name)
                rows.append({"metric": e["scorer"].metric_id or e["scorer"].name, "scorer": e["scorer"].name,
                             "set": r["task"].set, "label": _label(r, part), "part": part, "n": e["n"],
                             "statistic": p["statistics"][0], "value": _round(e["figures"][0]),
                             "note": e.get("why", ""),
                             "baseline": base["scorer"].name, "baseline_value": _round(base["figures"][0]),
                             "difference": _round(e["vs_best"]), "previous": r.get("previous", "")[:7],
                             "previous_value": _round(prev["figures"][0]) if prev else None,
                             "previous_difference": _round(e["vs_previous"]) if "vs_previous" in e else None})
    return {"command": command, "date": dt.date.today().isoformat(), "source": "bench/results/judge_quality.md",
            "rows": rows}
