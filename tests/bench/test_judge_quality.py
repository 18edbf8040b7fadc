"""bench/judge_quality.py's plumbing: items through the real engine (today's and the previous release's), and the
pieces of its tables (units, parts, pairwise accuracy, paired differences, targets)."""
import json

import numpy as np
import pandas as pd
import pytest

from bench import previous_release
from calibration.engine_scores import Scored, score_items
from bench.judge_quality import best_threshold, subsample_groups, three_way
from bench.quality_report import targets
from bench.quality_stats import Scorer, pair_accuracy, pairs_within, part_rows, units_of
from bench.quality_tasks import label_is, response_verdict
from calibration.sets import (CONTRADICTED, LONG, NO_REFERENCE, NOT_FOUND, SHORT, SUPPORTED, Item, reference_part,
                              subsample)


def item(item_id: str, answer: str, passage: str = "", *, question: str = "", reference: str = "", label=None,
         group: str = "", set_name: str = "t", extra=()) -> Item:
    return Item(set_name, item_id, group or item_id, question, reference, answer, (passage,) if passage else (),
                label, "", tuple(extra))


def test_items_are_scored_through_the_engine_and_read_back_per_item(tmp_path):
    items = [item("a", "The museum is open on Sundays.", "The museum is open on Sundays."),
             item("b", "Einstein was born in 1879.", "Einstein was born in 1897 in Ulm."),
             item("c", "Paris is the capital of France.", "Bananas grow in the tropics.")]
    scored = score_items(items, ["faithfulness"], tmp_path / "q.duckdb")
    assert list(scored.scores["faithfulness"].reindex(["a", "b", "c"])) == [1.0, 0.0, 0.0]
    assert set(scored.statuses["faithfulness"]) == {"ok"}
    assert list(response_verdict(scored, items)) == [SUPPORTED, CONTRADICTED, NOT_FOUND]
    assert set(scored.chunks["item_id"]) == {"a", "b", "c"}
    assert scored.details["faithfulness"].notna().all()  # the detail is read back: it explains a cell left out


def test_response_verdict_any_contradiction_then_all_supported():
    claims = pd.DataFrame({"item_id": ["x", "x", "y", "y"], "source": "answer", "claim_idx": [0, 1, 0, 1],
                           "text": "", "verdict": [SUPPORTED, CONTRADICTED, SUPPORTED, NOT_FOUND]})
    empty = pd.DataFrame()
    scored = Scored(empty, empty, empty, claims, empty)
    got = response_verdict(scored, [item("x", ""), item("y", ""), item("z", "")])
    assert list(got) == [CONTRADICTED, NOT_FOUND, NOT_FOUND]  # z has no claim: not_found


def test_a_label_metric_cell_that_is_not_ok_is_missing_not_a_no():
    frame = pd.DataFrame({"answer_class": ["CORRECT", "WRONG", None]}, index=["a", "b", "c"])
    statuses = pd.DataFrame({"answer_class": ["ok", "ok", "not_applicable"]}, index=["a", "b", "c"])
    scored = Scored(pd.DataFrame(), frame, statuses, pd.DataFrame(), pd.DataFrame())
    got = label_is("answer_class", "CORRECT")(scored, [item("a", ""), item("b", ""), item("c", "")])
    assert got[:2].tolist() == [1.0, 0.0] and np.isnan(got[2])


def test_baseline_rules_and_the_fixed_subsamples():
    assert list(three_way(np.array([0.1, 0.5, 0.9]), 0.3, 0.8)) == [NOT_FOUND, CONTRADICTED, SUPPORTED]
    scores, truth = np.array([0.1, 0.2, 0.7, 0.9]), np.array([False, False, True, True])
    assert 0.2 < best_threshold(scores, truth) <= 0.7
    many = [item(str(i), "") for i in range(50)]
    assert subsample(many, 10) == subsample(list(reversed(many)), 10) and len(subsample(many, 10)) == 10
    grouped = [item(f"{g}:{k}", "", group=f"q{g}") for g in range(20) for k in range(3)]
    chosen = subsample_groups(grouped, 20)
    assert len(chosen) == 18 and all(sum(i.group == c.group for i in chosen) == 3 for c in chosen)
    assert chosen == subsample_groups(grouped, 20) and chosen == [i for i in grouped if i in chosen]  # set order


def test_the_reference_length_parts():
    assert reference_part(item("a", "", reference="Canberra")) == SHORT
    assert reference_part(item("a", "", reference="one two three four five")) == SHORT
    assert reference_part(item("a", "", reference="one two three four five six")) == LONG
    assert reference_part(item("a", "", reference="  ")) == NO_REFERENCE
    # EVOUNA's alias lists are a short answer when one alias is; elsewhere a "/" is text
    aliases = "Losing your virginity/First sexual experience (human)/Deflower/Popping her cherry"
    assert reference_part(item("a", "", reference=aliases, set_name="evouna")) == SHORT
    assert reference_part(item("a", "", reference="PRINCE WILLIAM (accept DUKE OF CAMBRIDGE or the heir)",
                               set_name="evouna")) == SHORT
    logan = "Mount Logan / ˈloʊɡən / is the highest mountain in Canada."
    assert reference_part(item("a", "", reference=logan, set_name="inspectorraget")) == LONG


def squality_like() -> list[Item]:
    """Two questions x 3 responses x 2 references; a response's label is shared by its references."""
    out = []
    for q, labels in (("q1", (80.0, 50.0, 50.0)), ("q2", (10.0, 90.0, 40.0))):
        for s, label in zip(("bart", "dpr", "human"), labels):
            for ref in ("r1", "r2"):
                out.append(item(f"{q}:{s}:{ref}", "", reference="a long reference of many words here", label=label,
                                group=q, extra=(("response", f"{q}:{s}"), ("question_key", q))))
    return out


def by(key):
    return lambda i: dict(i.extra)[key]


def test_a_response_is_the_mean_of_its_items_over_its_references():
    items = squality_like()
    units = units_of(items, lambda i: i.label, by("response"), by("question_key"))
    assert units.keys == ("q1:bart", "q1:dpr", "q1:human", "q2:bart", "q2:dpr", "q2:human")
    assert units.truth.tolist() == [80, 50, 50, 10, 90, 40] and units.groups.tolist() == ["q1"] * 3 + ["q2"] * 3
    per_item = np.array([1, 3, 2, np.nan, np.nan, np.nan, 5, 5, 0, 1, 4, 8], dtype=float)
    got = units.values(per_item)
    assert got[[0, 1, 3, 4, 5]].tolist() == [2.0, 2.0, 5.0, 0.5, 6.0] and np.isnan(got[2])  # NaN items left out
    with pytest.raises(AssertionError, match="labels differ"):
        units_of(items, lambda i: i.item_id, by("response"))


def test_pairwise_accuracy_within_a_question_ties_count_half():
    units = units_of(squality_like(), lambda i: i.label, by("response"), by("question_key"))
    i, j, sign = pairs_within(units.truth, units.within, np.arange(6))
    # q1: (bart, dpr), (bart, human) (dpr and human are tied by people: no pair); q2: all 3 pairs; never across
    assert list(zip(i.tolist(), j.tolist())) == [(0, 1), (0, 2), (3, 4), (3, 5), (4, 5)]
    assert sign.tolist() == [1, 1, -1, -1, 1]
    scores = np.array([3.0, 1.0, 3.0, 0.0, 1.0, 2.0])  # pairs: right, tie, right, right, wrong
    pairs = np.column_stack([scores[i], scores[j]])
    assert pair_accuracy(pairs, sign) == pytest.approx((1 + 0.5 + 1 + 1 + 0) / 5)
    pairs[0] = np.nan
    assert pair_accuracy(pairs, sign) == pytest.approx((0.5 + 1 + 1 + 0) / 4)  # a pair with no value left out


def test_part_rows_pair_the_differences_and_say_why_a_metric_is_missing():
    rng = np.random.default_rng(0)
    n = 80
    items = [item(str(k), "", reference="short" if k % 2 else "a reference of more than five words", label=float(k),
                  group=f"g{k // 2}") for k in range(n)]
    units = units_of(items, lambda i: i.label)
    truth = units.truth
    scorers = [Scorer("good", "ours", truth + rng.normal(0, 5, n)),
               Scorer("good", "previous", rng.normal(0, 1, n)),
               Scorer("gone", "ours", np.full(n, np.nan), note=lambda idx: f"{len(idx)} not_applicable"),
               Scorer("noise", "baseline", rng.normal(0, 1, n)),
               Scorer("token_f1", "baseline", truth + rng.normal(0, 40, n))]
    p = part_rows("graded", units, units.part == SHORT, scorers, lead="Pearson", beat=("token_f1",),
                  beat_metrics=("good", "gone"))
    assert p["n"] == 40 and p["statistics"] == ["Pearson", "Spearman"] and p["best"] == "token_f1"
    good, _, gone = p["rows"][:3]
    assert good["figures"][0][0] > 0.9 and good["vs_best"][1] > 0 and good["vs_previous"][1] > 0
    assert targets(good) == {"not worse than the best baseline": True, "not worse than the previous release": True,
                             "beats token_f1": True}
    assert gone["n"] == 0 and gone["why"] == "40 not_applicable" and np.isnan(gone["vs_best"][0])
    assert targets(gone)["beats token_f1"] is False  # a metric with no figure misses what it must beat
    assert targets(gone)["not worse than the previous release"] is None  # no previous row: n/a
    worse = part_rows("graded", units, units.part == SHORT, [scorers[3], Scorer("x", "baseline", truth)] + scorers[3:4])
    assert worse["best"] == "x"


def test_the_previous_release_scores_items_with_its_own_engine_and_is_cached(tmp_path):
    items = [item("right", "Paris", question="What is the capital\u2028of France?", reference="Paris"),  # a separator
             item("wrong", "Lyon", question="What is the capital of France?", reference="Paris")]
    metrics = ["judge_correctness", "answer_class", "no_such_metric"]
    first = previous_release.score(items, metrics, "e063c5b", "t", cache=tmp_path)
    assert first.commit.startswith("e063c5b") and not first.cached
    assert first.scored.missing == ("no_such_metric",)
    assert set(first.scored.statuses["judge_correctness"]) == {"ok"}
    assert first.scored.scores.loc["right", "judge_correctness"] > first.scored.scores.loc["wrong", "judge_correctness"]
    assert first.scored.labels.loc["right", "answer_class"] == "CORRECT"  # e063c5b kept the label in `detail`
    assert first.scored.labels.loc["wrong", "answer_class"] == "WRONG"
    # e063c5b's own offline judge: judge_correctness was 1 + 4 x answer_correctness_f1 then
    detail = first.scored.details.loc["right", "judge_correctness"]
    assert detail.startswith("offline mapping: 1 + 4 x answer_correctness_f1")
    tree = tmp_path / "trees" / first.commit
    assert "def execute_run(store: Store, run_id: str, *, batch_size: int = BATCH_SIZE, progress" in \
        (tree / "evaluators" / "engine.py").read_text()  # that release's engine, not this checkout's
    cached = list((tmp_path / "scores").glob(f"{first.commit[:12]}-t-*.json"))
    assert len(cached) == 1 and json.loads(cached[0].read_text())["missing_metrics"] == ["no_such_metric"]
    again = previous_release.score(items, metrics, "e063c5b", "t", cache=tmp_path)
    assert again.cached and again.scored.scores.equals(first.scored.scores)
    other = previous_release.items_key(items[:1], metrics)
    assert other != previous_release.items_key(items, metrics)  # other items, another cache entry
