"""The Overview's headline (evaluators.queries.headline) on a real DuckDB file: its scores are Overview's, its
sentences carry Compare's statistics, and a run it cannot compare says why."""

import numpy as np
import pytest
from scipy import stats as sps

from evaluators.queries import compare
from evaluators.queries import overview as q
from evaluators.queries.calibrations import latest_calibration
from evaluators.store import close_store
from tests.helpers.calibration import calibration_row
from tests.helpers.headline_run import N, VERDICTS, headline_run


@pytest.fixture
def run(tmp_path):
    yield headline_run(tmp_path)
    close_store(tmp_path / "h.duckdb")


def test_the_headline_scores_are_overviews_means_and_the_pass_rate_is_the_share_of_pass(run):
    store, run_id = run
    tables = q.view(store, run_id)
    scores, full = tables["headline"], tables["metrics"]
    assert list(scores["metric"].unique()) == ["judge_overall", "verdict", "faithfulness", "answer_class"]
    for r in scores.itertuples():
        n = f"{r.n}/{r.n_total}"
        assert full.loc[r.metric, f"{r.method} n"] == n == f"{N}/{N}"
        if r.metric == "verdict":  # the share of pass, as the verdict table counts it, with Student's t interval
            share = np.mean([v == "pass" for v in VERDICTS["m2" if r.method == "m3" else r.method]])
            assert r.value == pytest.approx(tables["verdict"].loc[r.method, "% pass"], abs=0.05)
            assert r.value == pytest.approx(100 * share)
            half = sps.t.ppf(0.975, N - 1) * np.sqrt(share * (1 - share) * N / (N - 1)) / np.sqrt(N)
            assert (r.ci_low, r.ci_high) == pytest.approx((100 * max(share - half, 0), 100 * min(share + half, 1)))
        else:
            factor = 1 if r.unit == "1-5" else 100  # shares and ratios in percent
            assert r.value == pytest.approx(factor * full.loc[r.metric, r.method])
            low, high = (float(x) for x in full.loc[r.metric, f"{r.method} 95% CI"].strip("[]").split(", "))
            assert (round(r.ci_low / factor, 2), round(r.ci_high / factor, 2)) == (low, high)


def test_the_leader_is_compared_with_every_method_and_each_sentence_carries_compares_numbers(run):
    store, run_id = run
    findings = q.view(store, run_id)["findings"]
    assert findings["sentence"].iloc[0] == ("m1 leads on overall rating (1-5): 4.50 [4.34, 4.66] on 1-5, 40 "
                                            "questions; each other method is compared with it.")
    held = findings.dropna(subset=["metric"])
    # m1, rated best overall, against m2 and m3 (same answers as m2): rated higher, better verdicts, more correct;
    # faithfulness is equal, so it holds for neither
    assert sorted(zip(held["worse"], held["metric"])) == sorted(
        (m, metric) for m in ("m2", "m3") for metric in ("judge_overall", "verdict", "answer_class"))
    assert set(held["better"]) == {"m1"}
    shown = compare.view(store, run_id, methods=["m1", "m2", "m3"], baseline="m1")["metrics"]
    family = compare.comparison_table(store, run_id, "m1", ["m2", "m3"],
                                      metrics=["judge_overall", "verdict", "faithfulness", "answer_class"])
    for f in held.itertuples():
        row = shown[(shown["method"] == f.worse) & (shown["metric"] == f.metric)].iloc[0]
        factor = 100 if f.unit == "%" else 1
        assert f.n == row["n"]
        assert (f.mean_better, f.mean_worse) == pytest.approx((factor * row["m1 mean"], factor * row["mean"]))
        assert f.difference == pytest.approx(-factor * row["Δ vs m1"], abs=factor * 5e-4)  # compare rounds to 3
        low, high = (float(x) for x in row["95% CI"].strip("[]").split(", "))
        assert (f.ci_low, f.ci_high) == pytest.approx((-factor * high, -factor * low), abs=factor * 5e-4)
        p = family[(family["method"] == f.worse) & (family["metric"] == f.metric)]["p_holm"].iloc[0]
        assert f.p_holm == p < 0.05
    correct = held[(held["worse"] == "m2") & (held["metric"] == "answer_class")].iloc[0]
    assert correct.sentence == (
        f"m1 answers correctly more often than m2: 90.0% vs 25.0%, +65.0 points [{correct.ci_low:.1f}, "
        f"{correct.ci_high:.1f}], 40 questions.")
    overall = held[(held["worse"] == "m2") & (held["metric"] == "judge_overall")].iloc[0]
    assert overall.sentence.startswith("m1 is rated higher overall than m2: 4.50 vs 2.50, +2.00 [")


def test_a_method_no_better_than_the_baseline_is_said_so(run):
    store, run_id = run
    findings = q.view(store, run_id, baseline="m2")["findings"]
    assert findings["sentence"].tolist()[0] == "Each method is compared with m2."
    assert "No difference between m3 and m2 on the headline scores holds after Holm (40 questions scored by both)." \
        in findings["sentence"].tolist()
    assert set(findings.dropna(subset=["metric"])["better"]) == {"m1"}
    with pytest.raises(ValueError, match="baseline 'm9' is not one of"):
        q.view(store, run_id, baseline="m9")


@pytest.mark.parametrize("case, sentence", [
    (dict(methods=("m1",)), "Only one method (m1): there is nothing to compare it with."),
    (dict(metrics=("rouge_l",)), "The run scored none of the headline metrics"),
    (dict(status="judge_error"), "No question was scored by both m2 and m1."),
])
def test_a_run_the_headline_cannot_compare_says_why(tmp_path, case, sentence):
    store, run_id = headline_run(tmp_path, **case)
    try:
        tables = q.view(store, run_id)
        assert any(said.startswith(sentence) for said in tables["findings"]["sentence"])
        if case.get("status") == "judge_error":
            assert tables["headline"]["n"].eq(0).all() and tables["headline"]["value"].isna().all()
    finally:
        close_store(tmp_path / "h.duckdb")


def test_the_judge_and_its_measured_agreement_stand_beside_the_headline(run):
    store, run_id = run
    tables = q.view(store, run_id)
    assert tables["judge"].iloc[0].to_dict() | {"label": None} == {
        "judge": "offline", "model": None, "label": None, "agreement measured": True, "calibrated": None}
    agreement = tables["agreement"]
    assert len(agreement) and agreement["metric"].str.contains("answer_class|faithfulness|judge_overall").any()
    assert not agreement["human label"].str.contains(r"\[").any()  # whole sets, not their subgroups



@pytest.mark.parametrize("judge", [("openai", "gpt-5-mini"), ("offline", None)])
def test_the_judges_latest_calibration_stands_beside_the_headline_and_only_its_own(tmp_path, judge):
    store, run_id = headline_run(tmp_path, judge=judge)
    try:
        before = q.view(store, run_id)
        assert before["judge"]["calibrated"].iloc[0] is None and before["calibration"].empty
        other = ("openai", "gpt-4o-mini") if judge[0] == "offline" else ("offline", None)
        for (name, model), value in ((judge, 0.5), (judge, 0.912), (other, 0.1)):  # the latest of this judge counts
            store.save_calibration(judge=name, judge_model=model, judge_config={}, n_items=200, seed=0, cost_usd=None,
                                   status="finished", note="", rows=[calibration_row(value=value),
                                                                     calibration_row("faithfulness", 0.7)])
        tables = q.view(store, run_id)
        latest = latest_calibration(store.cursor(), *judge)
        assert tables["judge"]["calibrated"].iloc[0] == latest.headline
        assert "correctness AUROC 0.91 [0.87, 0.94] on 200 labelled items" in latest.headline
        assert tables["calibration"].equals(latest.table()) and len(tables["calibration"]) == 2
    finally:
        close_store(tmp_path / "h.duckdb")
