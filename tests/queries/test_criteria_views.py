"""An analyst's criteria on every read of stored runs (issue 36, items 4 and 5): the screens' views, the JSON twins,
the exports and the report show them in their own scale and family, registered from the store (the process starts
without them); History and Compare across runs compare a criterion only at equal versions and say so otherwise.
Numbers are recomputed from the cells the helper wrote."""
import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from evaluators.metrics import registry
from evaluators.metrics.registry import find
from evaluators.presentation.report import report_html
from evaluators.queries import compare, correlations, errors, history, overview, versions
from evaluators.queries.humans import judge_vs_humans
from evaluators.store.ratings import import_file
from tests.helpers.cli import cli
from tests.helpers.criteria_runs import (CRITERIA, METHODS, N, PLAIN, POLICY, SOURCE, SOURCE_V2, criteria_run,
                                         criteria_runs, inputs, scored)  # noqa: F401 (criteria_runs: a fixture)

CRITERION_IDS = [c.id for c in CRITERIA]


def means(store, run_id, metric) -> dict[str, float]:
    cells = scored(store, run_id, metric)
    return cells.groupby("method")["value"].mean().to_dict()


def pairs(store, run_a, method_a, run_b, method_b, metric) -> tuple[np.ndarray, np.ndarray]:
    a = scored(store, run_a, metric).query("method == @method_a").set_index("question_id")["value"]
    b = scored(store, run_b, metric).query("method == @method_b").set_index("question_id")["value"]
    joined = pd.concat([a.rename("a"), b.rename("b")], axis=1).dropna()
    return joined["a"].to_numpy(), joined["b"].to_numpy()


def test_the_process_starts_without_the_criteria_and_know_registers_the_run_in_views_version(criteria_runs):
    _, store, runs = criteria_runs
    assert find(SOURCE.id) is None  # as in a new process: only the database knows them
    versions.know(store, runs["first"])
    assert registry.USER[SOURCE.id].user["version"] == SOURCE.version
    versions.know(store, runs["changed"])
    assert registry.USER[SOURCE.id].user["version"] == SOURCE_V2.version
    assert SOURCE_V2.version != SOURCE.version
    # as each run stored it, whichever version is registered: the text "How scores are computed" shows
    first = versions.as_stored(store, runs["first"])[SOURCE.id]
    assert SOURCE.criterion in first.formula and SOURCE.version in first.formula
    assert SOURCE_V2.criterion in versions.as_stored(store, runs["changed"])[SOURCE.id].formula
    plain = versions.as_stored(store, runs["first"])[PLAIN.id].formula
    assert all(text in plain for text in (PLAIN.criterion, "jargon throughout", "plain throughout", "question, answer"))
    assert versions.source(first) == f"yours (criterion, version {SOURCE.version})"


def test_overview_shows_each_criterion_in_its_scale_and_family(criteria_runs):
    _, store, runs = criteria_runs
    run = runs["first"]
    versions.know(store, run)
    table = overview.view(store, run)["metrics"]
    assert {m: (table.loc[m, "family"], table.loc[m, "scale"]) for m in CRITERION_IDS} == {
        "names_the_source": ("criteria", "binary"), "plain_language": ("criteria", "likert"),
        "policy_share": ("criteria", "ratio")}
    for c in CRITERIA:
        for method, mean in means(store, run, c.id).items():
            # the table shows 3 decimals; the two sums may round a .xxx5 mean apart
            assert table.loc[c.id, method] == pytest.approx(mean, abs=5e-4 + 1e-9)
            assert table.loc[c.id, f"{method} n"] == f"{N}/{N}"
    assert list(table.index[-3:]) == sorted(CRITERION_IDS)  # after the catalogue's metrics


def test_compare_within_a_run_tests_the_criteria(criteria_runs):
    _, store, runs = criteria_runs
    run = runs["first"]
    versions.know(store, run)
    table = compare.comparison_table(store, run, "basic", ["local"], metrics=CRITERION_IDS)
    assert sorted(table["metric"]) == sorted(CRITERION_IDS)
    for row in table.to_dict("records"):
        a, b = pairs(store, run, "local", run, "basic", row["metric"])
        assert row["n"] == N and row["family"] == "criteria"
        assert row["delta"] == pytest.approx((a - b).mean())
    assert compare.view(store, run, methods=["local", "basic"], baseline="basic")["not_compared"].empty


def test_compare_across_runs_only_at_equal_versions(criteria_runs):
    _, store, runs = criteria_runs
    same, changed = runs["same"], runs["changed"]
    versions.know(store, changed)
    tables = compare.view(store, changed, methods=["local", f"{same}:local"], baseline=f"{same}:local")
    compared = set(tables["metrics"]["metric"])
    assert {PLAIN.id, POLICY.id} <= compared and SOURCE.id not in compared
    row = tables["metrics"].set_index("metric").loc[PLAIN.id]
    a, b = pairs(store, changed, "local", same, "local", PLAIN.id)
    assert row["n"] == N
    assert [v for k, v in row.items() if str(k).startswith("Δ")][0] == pytest.approx((a - b).mean(), abs=1e-3)
    assert tables["not_compared"].to_dict("records") == [{
        "metric": SOURCE.id, "run_a": same, "run_b": changed, "version_a": SOURCE.version,
        "version_b": SOURCE_V2.version,
        "note": f"names_the_source: the criterion changed between the runs (version {SOURCE.version} -> "
                f"{SOURCE_V2.version}): not compared"}]
    # the same criterion text in two runs is compared
    first_vs_same = compare.view(store, same, methods=["local", f"{runs['first']}:local"],
                                 baseline=f"{runs['first']}:local")
    assert SOURCE.id in set(first_vs_same["metrics"]["metric"]) and first_vs_same["not_compared"].empty
    # no question pairs across the change, in every pairing
    assert compare.paired_scores(store, changed, "local", f"{same}:local", metrics=[SOURCE.id]).empty


def test_history_steps_only_between_equal_versions(criteria_runs):
    _, store, runs = criteria_runs
    tables = history.view(store, runs["changed"], metrics=[SOURCE.id, PLAIN.id])
    steps = tables["steps"]
    source_steps = steps[steps["metric"] == SOURCE.id]
    assert set(zip(source_steps["from_run"], source_steps["to_run"])) == {(runs["first"], runs["same"])}
    assert len(steps[steps["metric"] == PLAIN.id]) == 2 * len(METHODS)  # two steps a method
    for row in source_steps.to_dict("records"):
        a, b = pairs(store, runs["same"], row["method"], runs["first"], row["method"], SOURCE.id)
        assert row["delta"] == pytest.approx((a - b).mean())
    points = tables["points"]
    assert len(points[points["metric"] == SOURCE.id]) == 3 * len(METHODS)  # each run's mean still shows
    assert tables["not_compared"][["metric", "run_a", "run_b"]].to_dict("records") == [
        {"metric": SOURCE.id, "run_a": runs["same"], "run_b": runs["changed"]}]


def test_correlations_include_the_criteria(criteria_runs):
    _, store, runs = criteria_runs
    run = runs["first"]
    versions.know(store, run)
    matrix = correlations.view(store, run, families=["criteria"])["matrix"]
    assert set(matrix.index) == set(CRITERION_IDS)
    x = pd.concat([scored(store, run, m).set_index(["question_id", "method"])["value"].rename(m)
                   for m in (SOURCE.id, PLAIN.id)], axis=1)
    # norm values: pass/fail as stored, 1-5 as (v - 1) / 4: a linear map, so Pearson's r is the values'
    assert matrix.loc[SOURCE.id, PLAIN.id] == pytest.approx(x[SOURCE.id].corr(x[PLAIN.id]), abs=1e-9)


@pytest.mark.parametrize("criterion, high", [(SOURCE, 0), (PLAIN, 2)])
def test_error_analysis_filters_the_failed_criterion(criteria_runs, criterion, high):
    _, store, runs = criteria_runs
    run = runs["first"]
    versions.know(store, run)
    assert criterion.id in errors.run_facets(store, run)["metrics"]
    tables = errors.view(store, run, metric=criterion.id, high=high, limit=1000)
    cells = scored(store, run, criterion.id)
    failed = cells[cells["value"] <= high]
    assert 0 < len(failed) < len(cells)
    assert int(tables["matches"].iloc[0]["matched"]) == len(failed)
    assert set(zip(tables["samples"]["question_id"], tables["samples"]["method"])) == set(
        zip(failed["question_id"], failed["method"]))


def test_human_labels_of_a_criterion_are_compared_with_the_judge(criteria_runs, tmp_path):
    _, store, runs = criteria_runs
    run = runs["first"]
    versions.know(store, run)
    cells = scored(store, run, SOURCE.id)
    flipped = {("q0", "local"), ("q1", "basic")}  # two items where the person disagrees with the judge
    labels = tmp_path / "labels.csv"
    labels.write_text("question_id,method,annotator,names_the_source\n" + "".join(
        f"{q},{m},ann,{int(v) ^ ((q, m) in flipped)}\n" for q, m, v in cells.itertuples(index=False)))
    with store.lease():
        import_file(store, run, labels)
    agreement = judge_vs_humans(store, run)["agreement"]
    row = agreement[agreement["metric"] == SOURCE.id].iloc[0]
    assert row["dimension"] == SOURCE.id and row["n"] == len(cells)
    human = np.array([int(v) ^ ((q, m) in flipped) for q, m, v in cells.itertuples(index=False)])
    judge = cells["value"].to_numpy()
    assert (human != judge).sum() == 2
    assert row["spearman"] == pytest.approx(spearmanr(judge, human).statistic)  # 0/1 given as numbers: a rating
    assert 0 < row["spearman"] < 1


def test_the_report_lists_the_criteria_with_their_text(criteria_runs):
    _, store, runs = criteria_runs
    page = report_html(store, runs["changed"], methods=["local", f"{runs['same']}:local"],
                       baseline=f"{runs['same']}:local")
    assert 'id="criteria"' in page and "Your criteria" in page
    for c in (SOURCE_V2, PLAIN, POLICY):  # the run's own text: the changed one
        assert c.criterion.replace("'", "&#x27;") in page
    assert SOURCE.criterion not in page
    assert f"version {SOURCE.version} -&gt; {SOURCE_V2.version}): not compared" in page


def test_json_twins_and_exports_carry_the_criteria(criteria_runs, tmp_path):
    db, store, runs = criteria_runs
    run = runs["first"]
    registry.USER.clear()
    result = cli("view", "overview", run, "--json", db=db)
    assert result.returncode == 0, result.stderr
    rows = {r["metric"]: r for r in json.loads(result.stdout)["metrics"]}
    assert rows[PLAIN.id]["family"] == "criteria" and rows[PLAIN.id]["scale"] == "likert"
    assert rows[PLAIN.id]["local"] == pytest.approx(means(store, run, PLAIN.id)["local"], abs=5e-4 + 1e-9)
    registry.USER.clear()
    result = cli("view", "history", runs["changed"], "--metrics", f"{SOURCE.id},{PLAIN.id}", "--json", db=db)
    assert result.returncode == 0, result.stderr
    assert [r["metric"] for r in json.loads(result.stdout)["not_compared"]] == [SOURCE.id]
    out = tmp_path / "scores.csv"
    assert cli("export", run, "--out", out, db=db).returncode == 0
    exported = pd.read_csv(out)
    for c in CRITERIA:
        mine = exported[exported["metric"] == c.id]
        assert len(mine) == N * len(METHODS)
        assert mine["value"].mean() == pytest.approx(scored(store, run, c.id)["value"].mean())


def test_an_offline_run_says_why_its_criteria_have_no_score(criteria_runs, tmp_path):
    _, store, _ = criteria_runs
    run = criteria_run(store, *inputs(store, tmp_path), judged=False)
    registry.USER.clear()
    versions.know(store, run)
    reason = "needs an LLM judge: the offline judge cannot judge a free-text criterion"
    unscored = overview.unscored(store, run)
    assert unscored[["metric", "status", "reason", "n"]].to_dict("records") == [
        {"metric": c, "status": "not_applicable", "reason": reason, "n": N * len(METHODS)}
        for c in sorted(CRITERION_IDS)]
    shown = overview.view(store, run)
    assert shown["metrics"].loc[CRITERION_IDS, "local n"].tolist() == [f"0/{N}"] * 3
    assert shown["unscored"]["note"].tolist() == unscored["note"].tolist()  # the screen and its JSON twin say why
    page = report_html(store, run)
    assert f"names_the_source: no cell scored, {N * len(METHODS)} not_applicable ({reason})" in page


def _plugin_run(store, of_run: str, version: str, values: list[float]) -> str:
    """A run of a plug-in's metric (as a run stores one: kind "plugin", its definition) on `of_run`'s datasets."""
    run = store.run(of_run)
    definition = {"id": "short_answer", "family": "plugins", "scale": "ratio", "higher_is_better": True, "needs": [],
                  "formula": "1 when the answer has at most 12 words", "source": "my_metrics.py"}
    run_id = store.create_run(name="plugin", golden_dataset_id=run["golden_dataset_id"],
                              outputs_dataset_ids=list(run["outputs_dataset_ids"]), judge="offline", judge_model=None,
                              metrics=["short_answer"], config={}, n_samples=N,
                              user_metrics=[{"metric": "short_answer", "kind": "plugin", "version": version,
                                             "definition": definition}])
    store.write_scores(pd.DataFrame([{"run_id": run_id, "question_id": f"q{i}", "method": "local",
                                      "metric": "short_answer", "value": v, "norm": v, "status": "ok",
                                      "judge": "deterministic", "detail": None} for i, v in enumerate(values)]))
    store.finish_run(run_id, "finished")
    return run_id


def test_a_plugins_metric_is_shown_and_versioned_like_a_criterion(criteria_runs):
    _, store, runs = criteria_runs
    old = _plugin_run(store, runs["first"], "aaaaaaaaaaaa", [1.0, 0.0] * (N // 2))
    new = _plugin_run(store, runs["first"], "bbbbbbbbbbbb", [1.0] * N)
    registry.USER.clear()
    versions.know(store, old)
    row = overview.view(store, old)["metrics"].loc["short_answer"]
    assert (row["family"], row["scale"], row["local"]) == ("plugins", "ratio", 0.5)
    assert versions.source(versions.as_stored(store, old)["short_answer"]) == "yours (plugin, version aaaaaaaaaaaa)"
    assert versions.not_compared(store, [(old, new)])["note"].tolist() == [
        "short_answer: the plug-in metric changed between the runs (version aaaaaaaaaaaa -> bbbbbbbbbbbb): not compared"]
    assert compare.paired_scores(store, new, "local", f"{old}:local", metrics=["short_answer"]).empty
