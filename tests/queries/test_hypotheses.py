"""One family of tests per comparison (evaluators.queries.hypotheses, issue 34): Overview's headline and Compare
correct the same pair, metric and questions over the same declared family, so they agree on what holds, and each
says which family and which correction."""
import pytest

from evaluators.queries import compare, hypotheses
from evaluators.queries import overview as q
from evaluators.store import close_store
from tests.helpers.compare_runs import holm_of
from tests.helpers.family_run import A, B, PRIMARY_EQUAL, SECONDARY, family_run


@pytest.fixture
def run(tmp_path):
    yield family_run(tmp_path)
    close_store(tmp_path / "f.duckdb")


def _verdict(rows, method=A):
    return rows[(rows["method"] == method) & (rows["metric"] == "verdict")].iloc[0]


def test_overview_and_compare_agree_on_the_verdict_of_the_same_pair(run):
    store, run_id = run
    findings = q.view(store, run_id, baseline=B)["findings"]
    held = findings.dropna(subset=["metric"])
    # Overview: local_search gets better verdicts (the one difference of the run)
    assert held[["better", "worse", "metric"]].values.tolist() == [[A, B, "verdict"]]
    shown = compare.view(store, run_id, methods=[A, B], baseline=B)
    row = shown["metrics"].set_index("metric").loc["verdict"]
    # Compare: the same p, significant too, and said to be of the primary family
    assert row["p (Holm)"] == pytest.approx(held["p_holm"].iloc[0]) and row["p (Holm)"] < compare.ALPHA
    assert row["tests family"] == hypotheses.PRIMARY
    assert shown["summary"].iloc[0]["better on"] == ["verdict"]
    # The correction counted the headline's 4 scored metrics, not the run's 15
    table = compare.comparison_table(store, run_id, B, [A])
    primary = table[table["tests_family"] == hypotheses.PRIMARY].set_index("metric")
    assert set(primary.index) == {"verdict", *PRIMARY_EQUAL} and set(primary["family_tests"]) == {4}
    assert primary["p_holm"].to_numpy() == pytest.approx(holm_of(primary["p_value"].to_numpy()))
    secondary = table[table["tests_family"] == hypotheses.SECONDARY].set_index("metric")
    assert set(secondary.index) == set(SECONDARY) and set(secondary["family_tests"]) == {len(SECONDARY)}
    # Over every metric at once (the rule before issue 34) the verdict's difference would not hold
    assert holm_of(table["p_value"].to_numpy())[table.index[table["metric"] == "verdict"][0]] > compare.ALPHA


def test_a_pairs_adjusted_p_does_not_depend_on_what_else_is_shown(tmp_path):
    store, run_id = family_run(tmp_path, methods=(A, B, "llm"))
    try:
        alone = _verdict(compare.comparison_table(store, run_id, B, [A]))
        for table in (compare.comparison_table(store, run_id, B, [A, "llm"]),  # another method beside
                      compare.comparison_table(store, run_id, B, [A], metrics=["verdict"]),  # one metric asked
                      compare.comparison_table(store, run_id, B, [A], metrics=["verdict", "rouge_l"])):
            assert _verdict(table)["p_holm"] == pytest.approx(alone["p_holm"])
            assert _verdict(table)["family_tests"] == 4
        one = compare.comparison_table(store, run_id, B, [A], metrics=["rouge_l"]).set_index("metric")
        assert list(one.index) == ["rouge_l"] and one.loc["rouge_l", "family_tests"] == len(SECONDARY)
        rubric = compare.view(store, run_id, methods=[A, B], baseline=B, families=["rubric"])["metrics"]
        assert _verdict(rubric.assign(method=A))["p (Holm)"] == pytest.approx(alone["p_holm"])
        findings = q.view(store, run_id, baseline=B)["findings"].dropna(subset=["metric"])
        assert findings["p_holm"].tolist() == pytest.approx([alone["p_holm"]])
    finally:
        close_store(tmp_path / "f.duckdb")


def test_the_families_are_declared_and_said():
    assert [hypotheses.family_of(m) for m in ("verdict", "rouge_l")] == [hypotheses.PRIMARY, hypotheses.SECONDARY]
    assert hypotheses.whole_families(["verdict"]) == list(hypotheses.HEADLINE)
    assert hypotheses.whole_families(["verdict", "rouge_l"]) is None and hypotheses.whole_families(None) is None
    assert hypotheses.whole_families([]) == []
    said = hypotheses.caption(secondary=True)
    assert "Primary family: the 7 headline metrics" in said and "Holm" in said and "secondary (exploratory)" in said
    assert "secondary" not in hypotheses.caption(secondary=False)
