"""`judge calibrate` (runs/calibrate.py) end to end: the shipped labelled items, a stratified seeded sample, scored
through the run lifecycle in a private DuckDB file by the offline judge, and by the OpenAI judge against the scripted
server on 127.0.0.1 (a budget that stops it, calls that fail: counted, never read as 0); stored in the user's store."""
import math
from collections import Counter

import duckdb
import numpy as np
import pytest

from evaluators.judges import OfflineJudge, OpenAIJudge
from evaluators.loaders.calibration import labelled_items, labelled_sets
from evaluators.maths import stats
from evaluators.queries.calibrations import latest_calibration
from evaluators.records.run_status import RunStatus
from evaluators.runs import budget, calibrate
from evaluators.store import Store
from tests.helpers.calibration import KEY, responder
from tests.helpers.openai_server import start_server

N = 30


def test_allocate_shares_equally_and_gives_what_a_small_stratum_cannot_take_to_the_others():
    assert calibrate.allocate(10, [100, 100]) == [5, 5]
    assert calibrate.allocate(10, [2, 100, 100]) == [2, 4, 4]
    assert calibrate.allocate(7, [100, 100]) == [4, 3]
    assert calibrate.allocate(500, [3, 4]) == [3, 4]


def test_the_sample_is_stratified_by_set_and_label_and_the_same_seed_draws_the_same_items():
    items, sets = labelled_items(), labelled_sets()
    drawn = calibrate.draw(items, sets, 40)
    assert len(drawn) == 40
    per_set = Counter(i.set for i in drawn)
    assert set(per_set) == {s.name for s in sets} and set(per_set.values()) == {8}
    for s in sets:
        labels = [i.label for i in drawn if i.set == s.name]
        if s.kind == "binary":
            assert Counter(labels) == {True: 4, False: 4}  # a rare label is drawn as often as a common one
        else:
            assert len(set(labels)) >= 3
    assert calibrate.draw(items, sets, 40) == drawn
    assert calibrate.draw(items, sets, 40, seed=1) != drawn
    assert len(calibrate.draw(items, sets, 10_000)) == len(items)


@pytest.mark.parametrize("sample, seed", [(0, 0), (-3, 0), (2.5, 0), (10, -1)])
def test_a_bad_sample_or_seed_is_named_and_nothing_runs(sample, seed):
    p = calibrate.plan(OfflineJudge(), sample=sample, seed=seed)
    assert p.problems and p.prepared is None
    with pytest.raises(ValueError, match="sample|seed"):
        calibrate.execute(p)


def test_a_judge_through_the_batch_api_is_refused_with_the_reason():
    p = calibrate.plan(OpenAIJudge(model="gpt-5-mini", batch=True), sample=10)
    assert [problem.message for problem in p.problems] == [
        "a calibration calls the judge directly: turn the Batch API off"]


def test_the_offline_judge_calibrated_end_to_end_and_stored(tmp_path):
    store = Store(tmp_path / "user.duckdb")
    p = calibrate.plan(OfflineJudge(), sample=N, seed=3)
    calibration_id, outcome = calibrate.calibrate(store, p)
    assert outcome.status == RunStatus.FINISHED and outcome.n_items == N and outcome.n_failed == 0
    assert outcome.cost_usd is None  # the offline judge costs nothing
    c = latest_calibration(store.cursor(), "offline", None)
    assert c.calibration_id == calibration_id and c.n_items == N and c.seed == 3
    assert {r["label"] for r in c.rows} == {"correctness", "faithfulness", "relevance"}
    assert sum(r["n"] for r in c.rows if r["part"] != calibrate.ALL) == N  # every item counted once
    for r in c.rows:
        if not math.isnan(r["value"]):
            assert r["lo"] <= r["value"] <= r["hi"]
            assert r["value"] == r["offline_value"]  # the offline judge's column is itself
    assert c.headline.startswith("The offline judge agrees with people: correctness AUROC")
    # the run went to a private file: the user's store holds no run, dataset or score
    con = duckdb.connect(str(tmp_path / "user.duckdb"))
    try:
        assert con.execute("SELECT count(*) FROM runs").fetchall() == [(0,)]
        assert con.execute("SELECT count(*) FROM datasets").fetchall() == [(0,)]
    finally:
        store.close()
        con.close()


def test_agreement_computes_the_statistic_of_each_kind_on_the_items_judged_only():
    sets = labelled_sets()
    items = calibrate.draw(labelled_items(), sets, 40, seed=5)
    metric = {s.name: calibrate.LABELS[s.label].metric for s in sets}
    judged = {(i.key, metric[i.set]): float(i.label) + k % 3 for k, i in enumerate(items)}
    gone = [i for i in items if i.set == "begin"][:2]
    for i in gone:
        del judged[(i.key, metric[i.set])]
    offline = {(i.key, metric[i.set]): 1.0 for i in items}
    rows = {r.sets: r for r in calibrate.agreement(items, sets, judged, offline)}
    begin = [i for i in items if i.set == "begin" and i not in gone]
    assert rows["begin"].n == len(begin) and rows["begin"].n_failed == 2
    expected = stats.auroc([judged[(i.key, "judge_faithfulness")] for i in begin], [i.label for i in begin])
    assert rows["begin"].value == pytest.approx(expected)
    assert rows["begin"].offline_value == 0.5  # a constant scorer
    alce = [i for i in items if i.set == "alce_eli5"]
    assert rows["alce_eli5"].statistic == "Spearman"
    assert rows["alce_eli5"].value == pytest.approx(
        stats.spearman([judged[(i.key, "judge_relevance")] for i in alce], [i.label for i in alce]))
    assert np.isnan(rows["alce_eli5"].offline_value)  # a constant: no correlation, never a 0


def _openai(server, **extra):
    return OpenAIJudge(model="test-model", base_url=server.base_url, concurrency=2, price_in=1.0, price_out=1.0,
                       **extra)


def test_the_openai_judge_calibrated_failed_calls_counted_and_no_key_stored(tmp_path):
    p = calibrate.plan(OpenAIJudge(model="test-model", base_url="http://127.0.0.1:9/v1", price_in=1.0,
                                   price_out=1.0), sample=20)
    refused = [i.answer for i in p.items if i.set == "begin"][:3]
    with start_server() as server:
        server.responder = responder(refuse=refused)
        p = calibrate.plan(_openai(server), sample=20)
        assert p.estimate.total_calls > 0 and p.estimate.cost(p.judge.billed_price) > 0  # before anything is sent
        assert server.request_count == 0
        store = Store(tmp_path / "user.duckdb")
        _, outcome = calibrate.calibrate(store, p, api_key=KEY)
    assert outcome.status == RunStatus.FINISHED and outcome.n_failed == 3
    assert "17 of 20 items judged" in outcome.note
    c = latest_calibration(store.cursor(), "openai", "test-model")
    begin = next(r for r in c.rows if r["sets"] == "begin")
    assert (begin["n"], begin["n_failed"]) == (1, 3)  # 4 drawn, 3 refused: left out, not scored 0
    assert c.headline.startswith("test-model agrees with people: correctness AUROC") and "the offline judge" in \
        c.headline
    assert c.cost_usd > 0
    store.close()
    assert KEY.encode() not in (tmp_path / "user.duckdb").read_bytes()


def test_a_budget_below_the_estimate_refuses_and_one_reached_stops_the_calibration(tmp_path):
    with start_server() as server:
        server.responder = responder()
        p = calibrate.plan(_openai(server), sample=20, max_cost=0.0001)
        assert any(isinstance(e, budget.OverBudget) or "budget" in e.message for e in p.problems)
        with pytest.raises(budget.OverBudget):
            calibrate.execute(p, api_key=KEY)
        assert server.request_count == 0
        server.usage = (100_000, 0)  # each call costs $0.10: far above the estimate
        estimated = calibrate.plan(_openai(server), sample=20).estimate.cost(_openai(server).billed_price)
        p = calibrate.plan(_openai(server, ), sample=20, max_cost=estimated * 1.01)
        store = Store(tmp_path / "user.duckdb")
        _, outcome = calibrate.calibrate(store, p, api_key=KEY)
    assert outcome.status == RunStatus.BUDGET_REACHED and 0 < outcome.n_failed <= 20
    c = latest_calibration(store.cursor(), "openai", "test-model")
    assert c.status == RunStatus.BUDGET_REACHED and "stopped: budget reached" in c.headline
    store.close()
