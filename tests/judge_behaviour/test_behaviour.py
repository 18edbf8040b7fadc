"""The judge's behaviour suite through the real engine (one run, the offline judge, a DuckDB file), held to the ratchet
in floor.json: no capability may pass fewer cases than its floor and no case listed as passing may fail. Issue 20's
targets (>= 95% of cases, >= 90% in every capability) are reported in the terminal summary, not asserted yet.
"""
from __future__ import annotations

import json
import time

import pandas as pd
import pytest

from tests.judge_behaviour import suite


def test_case_files_are_well_formed():
    cases = suite.load_cases()
    capabilities = {c.capability for c in cases}
    assert len(cases) >= suite.MIN_CASES, f"{len(cases)} cases, the issue asks for at least {suite.MIN_CASES}"
    assert len(capabilities) >= suite.MIN_CAPABILITIES, f"{len(capabilities)} capabilities: {sorted(capabilities)}"
    floor = suite.read_floor()
    assert set(floor["capabilities"]) == capabilities, "floor.json and the case files name other capabilities"


GOOD = {"id": "cap-001", "question": "Q?", "reference": "R", "answers": [{"text": "A", "expected": "CORRECT"},
                                                                         {"text": "B", "expected": "WRONG"}],
        "higher": [[0, 1]]}


@pytest.mark.parametrize("change, message", [
    (lambda c: c.update(id="other-001"), "must start with the capability"),
    (lambda c: c["answers"][1].update(expected="INCORRECT"), "expected 'INCORRECT' is not one of"),
    (lambda c: c.update(higher=[[0, 2]]), "'higher' pair [0, 2]"),
    (lambda c: c.update(higher=[[1, 1]]), "'higher' pair [1, 1]"),
    (lambda c: c.pop("reference"), "'reference' must be a non-empty string"),
    (lambda c: c["answers"][0].update(expect="CORRECT"), "unknown keys ['expect']"),
    (lambda c: c["answers"][0].update(text="I'm not sure, maybe R."), "holds seed 003's phrase 'not sure'"),
])
def test_a_malformed_case_fails_with_its_file_and_line(tmp_path, change, message):
    bad = json.loads(json.dumps(GOOD))
    change(bad)
    (tmp_path / "cap.jsonl").write_text(json.dumps(GOOD | {"id": "cap-000"}) + "\n\n" + json.dumps(bad) + "\n")
    with pytest.raises(suite.CaseError) as e:
        suite.load_cases(tmp_path)
    assert str(e.value).startswith("cap.jsonl:3: ") and message in str(e.value)


def test_duplicate_ids_and_bad_json_name_the_line(tmp_path):
    (tmp_path / "cap.jsonl").write_text(json.dumps(GOOD) + "\n" + json.dumps(GOOD) + "\n")
    with pytest.raises(suite.CaseError, match=r"^cap.jsonl:2: id 'cap-001' is already used at cap.jsonl:1"):
        suite.load_cases(tmp_path)
    (tmp_path / "cap.jsonl").write_text(json.dumps(GOOD)[:-1] + "\n")
    with pytest.raises(suite.CaseError, match=r"^cap.jsonl:1: not valid JSON"):
        suite.load_cases(tmp_path)


def test_the_floor_catches_a_lost_case_a_lower_count_and_a_dropped_case():
    results = pd.DataFrame(dict(id=["cap-001", "cap-002", "cap-003"], capability="cap", passed=[True, False, False],
                                why=["", "[1] expected WRONG, got CORRECT (judge_correctness 4.40)", "x"]))
    assert suite.below_floor(results, suite.floor_of(results)) == []
    floor = {"capabilities": {"cap": {"cases": 4, "passing": 2, "passing_ids": ["cap-001", "cap-002", "cap-009"]}}}
    assert suite.below_floor(results, floor) == [
        "cap: 1 cases pass, floor 2",
        "cap-002 passed before, now fails: [1] expected WRONG, got CORRECT (judge_correctness 4.40)",
        "cap-009: in the floor but no such case (cases are never dropped)"]


def test_the_judge_keeps_its_floor(tmp_path, behaviour_summary):
    cases = suite.load_cases()
    start = time.perf_counter()
    with suite.one_torch_thread():
        answers = suite.run_cases(tmp_path / "behaviour.duckdb", cases)
    seconds = time.perf_counter() - start
    results = suite.judge_cases(answers, cases)
    floor = suite.read_floor()
    behaviour_summary(f"{len(cases)} cases, {len(answers)} answers, one engine run of the offline judge in "
                      f"{seconds:.0f} s\n{suite.report(results, floor)}")
    problems = suite.below_floor(results, floor)
    assert not problems, "the judge fell below floor.json:\n" + "\n".join(problems)
