"""The statistics of bench/judge_quality.py, per human label and part of the test items.

Units: what one human label is about. Usually an item; on SQuALITY a response, whose items (the response
against each of its question's 3 references) are averaged, for RAGScope's metrics and the baselines alike.
Parts: the units by their reference's length (at most 5 words, longer, none), so that short and long answers
are seen apart. Pairwise accuracy: over every pair of units sharing a key (a question, a HaluQuestQA pair) whose
human labels differ, the share the scorer orders the same way, a tie of the scorer counting 0.5.
Every figure has a 95% bootstrap CI over groups (the answers to one question move together); a difference
between two scorers is paired (the same resamples) and taken over the units where both have a value.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from calibration.sets import Item, reference_part
from evaluators.maths import stats

N_BOOT = 1000


# -- units ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Units:
    """The units of one label over a list of items, in first-seen order."""

    keys: tuple[str, ...]
    members: tuple[np.ndarray, ...]  # each unit's item indices
    truth: np.ndarray
    groups: np.ndarray  # the bootstrap cluster of each unit
    within: np.ndarray | None  # the key pairs are compared within, or None
    part: np.ndarray  # reference_part of the unit's first item

    def values(self, per_item: np.ndarray) -> np.ndarray:
        """Per unit: the mean of its items' values, NaN ones left out (NaN if all are); labels pass through."""
        if all(len(m) == 1 for m in self.members):
            return per_item[np.concatenate(self.members)] if self.members else per_item[:0]
        per_item = per_item.astype(float)
        out = np.full(len(self.members), np.nan)
        for k, m in enumerate(self.members):
            kept = per_item[m][~np.isnan(per_item[m])]
            if kept.size:
                out[k] = kept.mean()
        return out

    def items(self, mask: np.ndarray) -> np.ndarray:
        """The item indices of the units in `mask`."""
        chosen = [self.members[k] for k in np.flatnonzero(mask)]
        return np.concatenate(chosen) if chosen else np.array([], dtype=int)


def units_of(items: Sequence[Item], truth: Callable[[Item], object], unit: Callable[[Item], str] | None = None,
             within: Callable[[Item], str] | None = None, classes: bool = False) -> Units:
    keys: dict[str, list[int]] = {}
    for n, i in enumerate(items):
        keys.setdefault(unit(i) if unit else i.item_id, []).append(n)
    firsts = [items[m[0]] for m in keys.values()]
    for m in keys.values():  # a unit's items share their human label (a response's, not a reference's)
        assert len({repr(truth(items[n])) for n in m}) == 1, f"unit {items[m[0]].item_id}: labels differ"
    return Units(tuple(keys), tuple(np.array(m) for m in keys.values()),
                 np.array([truth(i) for i in firsts], dtype=object if classes else float),
                 np.array([i.group for i in firsts], dtype=object),
                 None if within is None else np.array([within(i) for i in firsts], dtype=object),
                 np.array([reference_part(i) for i in firsts], dtype=object))


def pairs_within(truth: np.ndarray, within: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, sign): every pair of the units `index` sharing a `within` key whose truths differ;
    sign = sign(t_i - t_j)."""
    by_key: dict[object, list[int]] = {}
    for k in index:
        by_key.setdefault(within[k], []).append(k)
    pairs = [(a, b) for members in by_key.values() for x, a in enumerate(members) for b in members[x + 1:]
             if truth[a] != truth[b]]
    i = np.array([a for a, _ in pairs], dtype=int)
    j = np.array([b for _, b in pairs], dtype=int)
    return i, j, np.sign(truth[i].astype(float) - truth[j].astype(float))


def pair_accuracy(pairs: np.ndarray, sign: np.ndarray) -> float:
    """Share of pairs (n x 2 scores) the scores order as `sign` says, a tie counting 0.5; NaN pairs left out."""
    pairs = np.asarray(pairs, dtype=float).reshape(-1, 2)
    d = pairs[:, 0] - pairs[:, 1]
    keep = ~np.isnan(d)
    if not keep.any():
        return np.nan
    hits = np.where(d == 0, 0.5, (np.sign(d) == sign).astype(float))
    return float(hits[keep].mean())


# -- statistics ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Statistic:
    """One statistic over the units `index` (a part): how scores are laid out for it, with CI and differences."""

    name: str
    fn: Callable
    labels: np.ndarray
    groups: np.ndarray
    index: np.ndarray  # unit indices of the part (statistics over units)
    pairs: tuple[np.ndarray, np.ndarray] | None = None  # unit indices (i, j) (statistics over pairs)

    def scores(self, values: np.ndarray) -> np.ndarray:
        if self.pairs is None:
            return values[self.index]
        i, j = self.pairs
        return np.column_stack([values[i].astype(float), values[j].astype(float)])

    def ci(self, values: np.ndarray) -> tuple[float, float, float]:
        return stats.bootstrap_ci(self.fn, self.scores(values), self.labels, n_boot=N_BOOT, groups=self.groups)

    def difference(self, a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
        """a's statistic minus b's, on the same resamples and on the units (pairs) where both have a value."""
        a, b = self.scores(a), self.scores(b)
        if a.dtype.kind == "f" and b.dtype.kind == "f":
            missing = np.isnan(a).reshape(len(a), -1).any(1) | np.isnan(b).reshape(len(b), -1).any(1)
            a, b = a.copy(), b.copy()
            a[missing], b[missing] = np.nan, np.nan
        return stats.paired_bootstrap_difference(self.fn, a, b, self.labels, n_boot=N_BOOT, groups=self.groups)


def _spearman(s, y) -> float:
    return stats.spearman(s, y)


def _pearson(s, y) -> float:
    return stats.pearson(s, y)


def statistics(kind: str, units: Units, mask: np.ndarray, lead: str = "", classes: Sequence = ()) -> list[Statistic]:
    """The statistics of a label kind over the units in `mask`, the headline first."""
    index = np.flatnonzero(mask)
    truth, groups = units.truth[index], units.groups[index]
    if kind == "binary":
        return [Statistic("AUROC", stats.auroc, truth.astype(float), groups, index)]
    if kind == "classes":
        return [Statistic("macro-F1", lambda s, y: stats.macro_f1(s, y, classes), truth, groups, index)]
    out = []
    if kind == "graded":
        correlations = [Statistic("Spearman", _spearman, truth.astype(float), groups, index),
                        Statistic("Pearson", _pearson, truth.astype(float), groups, index)]
        out = sorted(correlations, key=lambda s: s.name != (lead or "Spearman"))
    if units.within is not None:
        i, j, sign = pairs_within(units.truth, units.within, index)
        out.append(Statistic("pairwise accuracy", pair_accuracy, sign, units.within[i], index, (i, j)))
    return out


def balanced_accuracy_at(threshold: float) -> Callable:
    """Balanced accuracy of `score >= threshold` (a missing score stays missing, not a "no")."""
    def fn(s, y) -> float:
        s = np.asarray(s, dtype=float)
        return stats.balanced_accuracy(np.where(np.isnan(s), np.nan, s >= threshold), y)
    return fn


# -- per scorer ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scorer:
    """A column of values beside one label: one of RAGScope's metrics now, the same in the previous release, or a
    baseline; `note` says which cells were left out and why."""

    name: str
    source: str  # ours | previous | baseline
    values: np.ndarray  # per unit
    threshold: object = None  # binary: the product's (ours) or dev-best (baselines) cut; classes: (lo, hi)
    metric_id: str = ""
    note: Callable[[np.ndarray], str] = field(default=lambda items: "")  # item indices -> why cells are not ok


def n_values(values: np.ndarray) -> int:
    return int(len(values) if values.dtype == object else np.count_nonzero(~np.isnan(values.astype(float))))


def why_missing(values: np.ndarray, truth: np.ndarray, note: str) -> str:
    """Why a statistic is n/a: no value (the cells' statuses), a constant scorer, or a single class of people."""
    if n_values(values) == 0:
        return note or "no value"
    kept = values if values.dtype == object else values[~np.isnan(values.astype(float))]
    if len(set(kept.tolist())) == 1:
        return f"constant: every value {kept[0]:g}" if values.dtype != object else f"constant: every value {kept[0]}"
    if len(set(truth.tolist())) == 1:
        return "people gave one label only"
    return "too few values"


def part_rows(kind: str, units: Units, mask: np.ndarray, scorers: Sequence[Scorer], *, lead: str = "",
              classes: Sequence = (), beat: Sequence[str] = (), beat_metrics: Sequence[str] = ()) -> dict:
    """Every scorer's figures over the units in `mask`, and each RAGScope metric's paired differences to the best
    baseline, to its previous release and to the baselines it must beat."""
    figures = statistics(kind, units, mask, lead, classes)
    head = figures[0]
    items = units.items(mask)
    rows = []
    for s in scorers:
        part_values = s.values[np.flatnonzero(mask)]
        row = {"scorer": s, "n": n_values(part_values), "figures": [f.ci(s.values) for f in figures],
               "note": s.note(items) if s.source != "baseline" else ""}
        if kind == "binary" and s.threshold is not None:
            row["balanced_accuracy"] = stats.bootstrap_ci(balanced_accuracy_at(s.threshold), head.scores(s.values),
                                                          head.labels, n_boot=N_BOOT, groups=head.groups)
        if np.isnan(row["figures"][0][0]):
            row["why"] = why_missing(part_values, units.truth[np.flatnonzero(mask)], row["note"])
        rows.append(row)
    baselines = [r for r in rows if r["scorer"].source == "baseline"]
    best = max(baselines, key=lambda r: np.nan_to_num(r["figures"][0][0], nan=-np.inf))
    previous = {r["scorer"].name: r for r in rows if r["scorer"].source == "previous"}
    by_name = {r["scorer"].name: r for r in baselines}
    for r in rows:
        if r["scorer"].source != "ours":
            continue
        r["vs_best"] = head.difference(r["scorer"].values, best["scorer"].values)
        if r["scorer"].name in previous:
            before = previous[r["scorer"].name]
            r["vs_previous"] = head.difference(r["scorer"].values, before["scorer"].values)
            r["previous_figure"] = before["figures"][0]
        if r["scorer"].name in beat_metrics:
            r["vs_beat"] = {b: head.difference(r["scorer"].values, by_name[b]["scorer"].values) for b in beat}
    return {"n": int(mask.sum()), "n_groups": len(set(units.groups[mask].tolist())), "n_pairs": _n_pairs(figures),
            "statistics": [f.name for f in figures], "rows": rows, "best": best["scorer"].name}


def _n_pairs(figures: Sequence[Statistic]) -> int | None:
    paired = [f for f in figures if f.pairs is not None]
    return len(paired[0].labels) if paired else None


def status_note(statuses: np.ndarray, details: np.ndarray, missing: str = "", fate: str = "left out") -> str:
    """"k of n cells not ok, left out: counts by status (the commonest reason)", "" when all are ok; `missing` when
    the run had no such metric at all."""
    if missing:
        return missing
    bad = [(s, d) for s, d in zip(statuses, details) if s != "ok"]
    if not bad:
        return ""
    counts = ", ".join(f"{n} {s}" for s, n in Counter(str(s) for s, _ in bad).most_common())
    reasons = Counter(str(d) for _, d in bad if isinstance(d, str) and d)
    because = f" ({reasons.most_common(1)[0][0]})" if reasons else ""
    return f"{len(bad)} of {len(statuses)} cells not ok, {fate}: {counts}{because}"
