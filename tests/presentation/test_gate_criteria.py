"""The gate on an analyst's criteria (issue 36, item 4): a criterion is gated across two runs that have it at the same
version; at another version (its text changed) it is not compared: named with --metrics, the gate refuses with
exit code 2 and says why; otherwise its report notes it."""
import pandas as pd
import pytest

from evaluators.presentation.gate import gate, text_report
from tests.helpers.cli import cli
from tests.helpers.criteria_runs import PLAIN, SOURCE, SOURCE_V2, criteria_runs, scored  # noqa: F401

CHANGED = (f"names_the_source: the criterion changed between the runs (version {SOURCE.version} -> "
           f"{SOURCE_V2.version}): not compared")


def deltas(store, candidate, baseline, metric) -> pd.Series:
    a = scored(store, candidate, metric).set_index(["method", "question_id"])["value"]
    b = scored(store, baseline, metric).set_index(["method", "question_id"])["value"]
    return (a - b).groupby("method").mean()


def test_a_criterion_at_the_same_version_is_gated(criteria_runs):
    _, store, runs = criteria_runs
    result = gate(store, runs["same"], runs["first"], metrics=[SOURCE.id, PLAIN.id])
    rows = result.rows.set_index(["method", "metric"])
    assert sorted(rows.index) == sorted((m, c) for m in ("basic", "local") for c in (SOURCE.id, PLAIN.id))
    for metric in (SOURCE.id, PLAIN.id):
        for method, delta in deltas(store, runs["same"], runs["first"], metric).items():
            assert rows.loc[(method, metric), "n"] == 20
            assert rows.loc[(method, metric), "delta"] == pytest.approx(delta)
            assert bool(rows.loc[(method, metric), "higher_is_better"])
    assert not any("changed between the runs" in n for n in result.notes)


def test_a_changed_criterion_named_is_refused_with_the_reason(criteria_runs):
    db, store, runs = criteria_runs
    with pytest.raises(ValueError) as refused:
        gate(store, runs["changed"], runs["same"], metrics=[SOURCE.id])
    assert str(refused.value).startswith(CHANGED)
    result = cli("gate", runs["changed"], "--baseline", runs["same"], "--metrics", SOURCE.id, db=db)
    assert result.returncode == 2
    assert CHANGED in result.stderr


def test_a_changed_criterion_not_named_is_left_out_and_noted(criteria_runs):
    _, store, runs = criteria_runs
    result = gate(store, runs["changed"], runs["same"], metrics=[PLAIN.id])
    assert set(result.rows["metric"]) == {PLAIN.id}
    assert CHANGED in result.notes
    assert f"note: {CHANGED}" in text_report(result)


def test_a_criterion_takes_a_tolerance_on_the_command_line(criteria_runs):
    db, _, runs = criteria_runs
    result = cli("gate", runs["same"], "--baseline", runs["first"], "--metrics", PLAIN.id, "--tolerance",
                 f"{PLAIN.id}=4", db=db)
    assert result.returncode == 0, result.stderr
    assert PLAIN.id in result.stdout
