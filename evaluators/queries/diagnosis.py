"""Diagnosis queries: why a method wins. Every (question, method) attributed to retrieval or generation
(queries/attribution.py has the rule), per method the share of each label with its 95% Wilson interval, for a pair
of methods the questions one loses that the other answers and why, in sentences with the question ids behind each
number, and the rank metrics (any `id_*` metric stored) by question type.

One DuckDB pass per run: the cells of the deciding metrics and of the rank metrics, beside every sample (a sample
without any of them is `unknown`, never dropped); the rest is pandas.
"""
from __future__ import annotations

import pandas as pd

from evaluators.maths.abstention import abstains
from evaluators.maths.stats import t_half_widths, wilson_interval
from evaluators.queries import ALL_TYPES, one_of
from evaluators.queries.attribution import ANSWER_METRICS, LABELS, RETRIEVAL_METRICS, UNANSWERABLE, Cell, attribute
from evaluators.queries.remember import remembered
from evaluators.queries.sides import default_methods
from evaluators.records import OK
from evaluators.store import Store

RANK_PREFIX = "id_"  # the rank metrics from document ids (id_recall, id_ndcg@10, ...), whoever registered them
DECIDING = (*RETRIEVAL_METRICS, *ANSWER_METRICS)
UNDECIDED_METRIC = "undecided"  # the `rules` row of samples no metric decided

# Why a method lost a question the other answered: its retrieval missed the evidence the other found, or that
# neither retrieved; it retrieved the evidence and its answer went wrong; it answered an unanswerable question the
# other abstained on; its retrieval is undecided.
MISSED_FOUND, MISSED_NEITHER, IGNORED, UNDECIDED = ("retrieval missed (other found it)", "retrieval missed (neither found it)",
                                                    "answer ignored retrieved evidence", "retrieval undecided")
ANSWERED = "answered the unanswerable"  # its answer claimed what the reference says is not there to find
REASONS = (MISSED_FOUND, MISSED_NEITHER, IGNORED, ANSWERED, UNDECIDED)

TABLES = ("rules", "shares", "sentences", "lost_questions", "attribution", "rank_by_type")
ATTRIBUTION_COLUMNS = ["question_id", "question_type", "question", "method", "label", "retrieval missed",
                       "retrieval decided by", "retrieval value", "answer wrong", "answer decided by", "answer value",
                       "answer label", "reason"]
LOST_COLUMNS = ["loser", "winner", "reason", "question_id", "question_type", "question", "loser label",
                "winner label", "loser evidence", "winner evidence"]


def cells(store: Store, run_id: str) -> pd.DataFrame:
    """Every sample (question, method) of the run with its deciding and rank cells, long format (a sample without
    any has one row with metric NULL)."""
    return store.cursor().execute(
        """
        WITH samples AS (SELECT DISTINCT question_id, method FROM scores WHERE run_id = $run),
        wanted AS (SELECT question_id, method, metric, value, status, label FROM scores
                   WHERE run_id = $run AND (metric IN (SELECT unnest($deciding)) OR starts_with(metric, $rank)))
        SELECT s.question_id, coalesce(g.question_type, '') AS question_type, coalesce(g.question, '') AS question,
               coalesce(g.reference, '') AS reference, s.method, w.metric, w.value, w.status, w.label
        FROM samples s JOIN runs r ON r.run_id = $run
        LEFT JOIN golden_items g ON g.dataset_id = r.golden_dataset_id AND g.question_id = s.question_id
        LEFT JOIN wanted w ON w.question_id = s.question_id AND w.method = s.method
        ORDER BY s.method, s.question_id, w.metric
        """, {"run": run_id, "deciding": list(DECIDING), "rank": RANK_PREFIX}).df()


def attribution(long: pd.DataFrame) -> pd.DataFrame:
    """One row per (question, method): its label, the cells that decided it and why (ATTRIBUTION_COLUMNS)."""
    cells: dict[tuple[str, str], dict[str, Cell]] = {}
    decided = long[long["metric"].isin(DECIDING)]
    # plain lists, not itertuples: iterating pandas' arrow strings row by row is most of the time at 50,000 samples
    for q, m, metric, value, status, label in zip(*(_listed(decided[c]) for c in ("question_id", "method", "metric",
                                                                                  "value", "status", "label"))):
        cells.setdefault((q, m), {})[metric] = Cell(status, None if value is None else float(value), label)
    rows = []
    samples = long.drop_duplicates(["question_id", "method"])
    for q, qtype, text, reference, m in zip(*(_listed(samples[c]) for c in ("question_id", "question_type", "question",
                                                                             "reference", "method"))):
        mine = cells.get((q, m), {})
        found = attribute(mine, unanswerable=bool(reference) and abstains(reference) is not None)
        answer_class = mine.get("answer_class")
        rows.append({"question_id": q, "question_type": qtype, "question": text, "method": m, "label": found.label,
                     "retrieval missed": found.retrieval.yes, "answer wrong": found.answer.yes,
                     "retrieval decided by": found.retrieval.metric, "retrieval value": found.retrieval.value,
                     "answer decided by": found.answer.metric, "answer value": found.answer.value,
                     "answer label": answer_class.label if answer_class and answer_class.status == OK else None,
                     "reason": found.reason})
    frame = pd.DataFrame(rows, columns=ATTRIBUTION_COLUMNS)
    return frame.sort_values(["method", "question_id"]).reset_index(drop=True)


def _listed(column: pd.Series) -> list:
    """A column's values as a list, missing ones (NaN, NA) as None."""
    return column.astype(object).where(column.notna(), None).tolist()


def shares(frame: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Per method and label: n, the share of the method's samples and its Wilson interval (every label listed,
    0 included, so a table always has the same rows)."""
    methods = sorted(frame["method"].unique())
    counts = frame.groupby(["method", "label"]).size()
    index = pd.MultiIndex.from_product([methods, list(LABELS)], names=["method", "label"])
    table = counts.reindex(index, fill_value=0).rename("n").reset_index()
    table["of"] = table.groupby("method")["n"].transform("sum")
    table["share"] = (table["n"] / table["of"].where(table["of"] > 0)).round(4)
    low, high = wilson_interval(table["n"], table["of"], confidence)
    table["ci_low"], table["ci_high"] = pd.Series(low).round(4), pd.Series(high).round(4)
    return table


def rules(frame: pd.DataFrame) -> pd.DataFrame:
    """Per method, how many samples each metric decided (retrieval and answer), so the screen says which rule
    it used (the GraphRAG demo: context_recall throughout, as it has no document ids)."""
    parts = []
    for side in ("retrieval", "answer"):
        column = f"{side} decided by"
        counted = frame.assign(metric=frame[column].fillna(UNDECIDED_METRIC)).groupby(["method", "metric"]).size()
        parts.append(counted.rename("n").reset_index().assign(question=side))
    return pd.concat(parts)[["method", "question", "metric", "n"]].reset_index(drop=True) if parts else pd.DataFrame(
        columns=["method", "question", "metric", "n"])


def losses(frame: pd.DataFrame, loser: str, winner: str) -> pd.DataFrame:
    """The questions `loser` answers wrong that `winner` answers right, each with its reason (REASONS)."""
    pairs = frame[frame["method"] == loser].merge(frame[frame["method"] == winner], on="question_id",
                                                   suffixes=("_l", "_w"))
    # decided answers only: a question the loser got wrong and the winner right (its retrieval may be undecided)
    lost = pairs[(pairs["answer wrong_l"] == True) & (pairs["answer wrong_w"] == False)].copy()  # noqa: E712
    lost["reason"] = [ANSWERED if by == UNANSWERABLE else UNDECIDED if missed is None or pd.isna(missed) else
                      IGNORED if not missed else MISSED_NEITHER if other_missed == True else MISSED_FOUND  # noqa: E712
                      for missed, other_missed, by in zip(lost["retrieval missed_l"], lost["retrieval missed_w"],
                                                          lost["retrieval decided by_l"])]
    out = pd.DataFrame({
        "loser": loser, "winner": winner, "reason": lost["reason"], "question_id": lost["question_id"],
        "question_type": lost["question_type_l"], "question": lost["question_l"], "loser label": lost["label_l"],
        "winner label": lost["label_w"], "loser evidence": lost["reason_l"], "winner evidence": lost["reason_w"]})
    order = {r: i for i, r in enumerate(REASONS)}
    return out.sort_values(["reason", "question_id"], key=lambda c: c.map(order) if c.name == "reason" else c
                           ).reset_index(drop=True)[LOST_COLUMNS]


def sentence(loser: str, winner: str, counts: dict[str, int]) -> str:
    """"basic_search loses 14 questions that local_search answers: 9 because its retrieval missed the evidence
    local_search found, 5 because its answer ignored retrieved evidence"."""
    total = sum(counts.values())
    if not total:
        return f"{loser} loses no question that {winner} answers."
    parts = {MISSED_FOUND: f"because its retrieval missed the evidence {winner} found",
             MISSED_NEITHER: f"because its retrieval missed the evidence ({winner} answered without retrieving it)",
             IGNORED: "because its answer ignored retrieved evidence",
             ANSWERED: f"because it answered where the reference says there is no answer ({winner} abstained)",
             UNDECIDED: "where its retrieval is undecided (a cell failed or is not applicable)"}
    said = ", ".join(f"{counts[r]} {parts[r]}" for r in REASONS if counts.get(r))
    return f"{loser} loses {total} question{'s' if total != 1 else ''} that {winner} answers: {said}."


def sentences(lost: pd.DataFrame, pair: list[str]) -> pd.DataFrame:
    """Each direction of the pair: the counts per reason and the sentence."""
    rows = []
    for loser, winner in ((pair[1], pair[0]), (pair[0], pair[1])):
        mine = lost[(lost["loser"] == loser) & (lost["winner"] == winner)]
        counts = {r: int((mine["reason"] == r).sum()) for r in REASONS}
        rows.append({"loser": loser, "winner": winner, "lost": len(mine), **counts,
                     "sentence": sentence(loser, winner, counts)})
    return pd.DataFrame(rows, columns=SENTENCE_COLUMNS)


def rank_by_type(long: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Per method, question type (and all of them) and rank metric: mean of the ok cells, its t interval, n."""
    columns = ["method", "question_type", "metric", "mean", "ci_low", "ci_high", "n_scored", "n_total"]
    rank = long[long["metric"].fillna("").str.startswith(RANK_PREFIX)]
    if rank.empty:
        return pd.DataFrame(columns=columns)
    rank = pd.concat([rank, rank.assign(question_type=ALL_TYPES)])
    ok = rank["status"] == OK
    grouped = rank.assign(v=rank["value"].where(ok)).groupby(["method", "question_type", "metric"])
    table = grouped.agg(mean=("v", "mean"), sd=("v", "std"), n_scored=("v", "count"), n_total=("v", "size"))
    half = t_half_widths(table["sd"], table["n_scored"], confidence)
    table["ci_low"], table["ci_high"] = (table["mean"] - half).clip(0, 1), (table["mean"] + half).clip(0, 1)
    return table.reset_index()[columns].round(4)


@remembered  # a few seconds at 50,000 samples: once per run and scores version, however often clicks rerun a screen
def attributed(store: Store, run_id: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(`cells`, `attribution`) of the run."""
    long = cells(store, run_id)
    return long, attribution(long)


def label_shares(store: Store, run_id: str) -> pd.DataFrame:
    """The `shares` of the Diagnosis screen (the report shows them)."""
    return shares(attributed(store, run_id)[1])


SENTENCE_COLUMNS = ["loser", "winner", "lost", *REASONS, "sentence"]


def pair_sentences(store: Store, run_id: str, pair: list[str]) -> pd.DataFrame:
    """The `sentences` of the Diagnosis screen for two methods of the run (Compare and the report show them)."""
    frame = attributed(store, run_id)[1]
    return sentences(pd.concat([losses(frame, pair[1], pair[0]), losses(frame, pair[0], pair[1])],
                               ignore_index=True), pair)


def view(store: Store, run_id: str, *, methods: list[str] | None = None) -> dict[str, pd.DataFrame]:
    """The Diagnosis screen's tables, as shown: `rules` (per method, how many samples each metric decided, for
    retrieval and for the answer: which rule was used), `shares` (per method and label: n, share and its 95% Wilson
    interval), `sentences` (for the pair, each direction: the questions one loses that the other answers, per
    reason, and the sentence), `lost_questions` (the question ids behind each number of the sentences, with both
    sides' labels and evidence), `attribution` (every question and method: its label and the cells that decided
    it) and `rank_by_type` (every `id_*` rank metric per method and question type: mean, 95% CI, n; empty without
    document ids).

    methods: the two methods the sentences compare (default: local_search, basic_search, else the first two)
    """
    long, frame = attributed(store, run_id)
    known = sorted(long["method"].unique())
    if methods is None:
        methods = default_methods(known)[0]
    else:
        if len(methods) != 2 or methods[0] == methods[1]:
            raise ValueError(f"methods: name two different methods of the run, not {methods!r}")
        for m in methods:
            one_of(m, known, "method")
    pair = list(methods) if len(methods) == 2 else []
    lost = (pd.concat([losses(frame, pair[1], pair[0]), losses(frame, pair[0], pair[1])], ignore_index=True)
            if pair else pd.DataFrame(columns=LOST_COLUMNS))
    return {
        "rules": rules(frame),
        "shares": shares(frame),
        "sentences": sentences(lost, pair) if pair else pd.DataFrame(columns=SENTENCE_COLUMNS),
        "lost_questions": lost,
        "attribution": frame,
        "rank_by_type": rank_by_type(long),
    }


def behind(tables: dict[str, pd.DataFrame], *, method: str, label: str | None = None,
           winner: str | None = None, reason: str | None = None) -> pd.DataFrame:
    """The questions behind a number of the screen: a method's label (`shares`), or a reason it lost to `winner`
    (`sentences`); rows of `attribution` or `lost_questions`."""
    if label is not None:
        frame = tables["attribution"]
        return frame[(frame["method"] == method) & (frame["label"] == label)].reset_index(drop=True)
    frame = tables["lost_questions"]
    return frame[(frame["loser"] == method) & (frame["winner"] == winner) & (frame["reason"] == reason)
                 ].reset_index(drop=True)


def rule_lines(rules: pd.DataFrame) -> list[str]:
    """Which metric decided, per method, in words: "basic_search: retrieval by context_recall (103); the answer by
    answer_class (103)"."""
    lines = []
    for method, part in rules.groupby("method", sort=True):
        said = []
        for question, words in (("retrieval", "retrieval"), ("answer", "the answer")):
            mine = part[part["question"] == question].sort_values("n", ascending=False)
            said.append(f"{words} by " + ", ".join(f"{m} ({n})" for m, n in zip(mine["metric"], mine["n"])))
        lines.append(f"{method}: " + "; ".join(said))
    return lines


def undecided_notes(rules: pd.DataFrame) -> list[str]:
    """What a method could not be diagnosed on at all: no question had an ok cell for retrieval (or the answer), so
    every question of it is unknown; with what would decide it."""
    notes = []
    for method, part in rules.groupby("method", sort=True):
        for question, metrics, how in (
                ("retrieval", RETRIEVAL_METRICS, "give the golden set relevant_ids, or score context_recall "
                                                 "(it needs the retrieved chunks)"),
                ("answer", ANSWER_METRICS, "score answer_class (or answer_correctness_f1, completeness)")):
            mine = part[part["question"] == question]
            if len(mine) and set(mine["metric"]) == {UNDECIDED_METRIC}:
                notes.append(f"{method}: no question has an ok cell of {', '.join(metrics)}, so its {question} is "
                             f"undecided and every question is unknown; to diagnose it, {how}.")
    return notes
