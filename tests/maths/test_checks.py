"""Per-question checks (evaluators/maths/checks.py): each check type, validation messages, run_checks."""
from __future__ import annotations


import pytest

from evaluators.maths import checks as ck
from tests.helpers import ROOT


ANSWER = "Yes. Territory 118 has a rate change of -0.133%; the premium is $6,650. Rules: Rule C-1, Rule C-2."


@pytest.mark.parametrize("check, passed", [
    ({"type": "contains", "value": "territory  118"}, True),
    ({"type": "contains", "value": "Territory 117"}, False),
    ({"type": "not_contains", "value": "cannot calculate"}, True),
    ({"type": "not_contains", "value": "RATE CHANGE"}, False),
    ({"type": "regex", "pattern": r"^yes\b"}, True),
    ({"type": "regex", "pattern": r"grg\s*51"}, False),
    ({"type": "number", "value": -0.133}, True),
    ({"type": "number", "value": 6650}, True),
    ({"type": "number", "value": 0.133}, False),
    ({"type": "list_items", "items": ["Rule C-1", "rule c-2"]}, True),
    ({"type": "list_items", "items": ["Rule C-1", "Rule C-2", "Rule C-3"]}, False),
    ({"type": "list_items", "items": ["Rule C-1", "Rule C-2", "Rule C-3"], "min_share": 0.6}, True),
    ({"type": "list_items", "items": ["Rule C-1", "Rule C-2", "Rule C-3"], "min_share": 0.7}, False),
])
def test_each_check_type_passes_and_fails(check, passed):
    assert ck.validate_check(check) is None
    [(name, ok)] = ck.run_checks(ANSWER, [check])
    assert ok is passed


def test_number_check_relative_tolerance():
    assert ck.run_checks("rate 0.30500000000001", [{"type": "number", "value": 0.305}])[0][1] is True
    assert ck.run_checks("rate 0.3051", [{"type": "number", "value": 0.305}])[0][1] is False


@pytest.mark.parametrize("check, message", [
    ("contains x", "a check must be an object with a 'type', got str"),
    ({"value": "x"}, "the check has no 'type'"),
    ({"type": "similar", "value": "x"}, "unknown check type 'similar'; expected one of contains, "
                                        "not_contains, regex, number, list_items"),
    ({"type": "contains"}, "a contains check needs 'value'"),
    ({"type": "regex", "value": "x"}, "unknown key(s) 'value' in a regex check"),
    ({"type": "contains", "value": 604}, "'value' of a contains check must be a string, got int"),
    ({"type": "not_contains", "value": "  "}, "'value' of a not_contains check is empty"),
    ({"type": "number", "value": "$604"}, "'value' of a number check must be a finite number, got str "
                                          "'$604' (write it without $, % or quotes)"),
    ({"type": "number", "value": True}, "'value' of a number check must be a finite number, got bool True"),
    ({"type": "number", "value": float("nan")}, "'value' of a number check must be a finite number, got float nan"),
    ({"type": "list_items", "items": []}, "'items' of a list_items check must be a non-empty list of strings"),
    ({"type": "list_items", "items": "Rule C-1"}, "'items' of a list_items check must be a non-empty list of strings"),
    ({"type": "list_items", "items": ["a", 3]}, "'items' of a list_items check must be non-empty strings; item 2 is 3"),
    ({"type": "list_items", "items": ["a"], "min_share": 1.5},
     "'min_share' of a list_items check must be a number in [0, 1], got 1.5"),
    ({"type": "contains", "value": "x", "name": 3}, "'name' must be a string, got int"),
])
def test_validate_check_errors(check, message):
    assert ck.validate_check(check) == message


def test_validate_check_bad_regex_and_run_checks_raises():
    msg = ck.validate_check({"type": "regex", "pattern": "(unclosed"})
    assert msg.startswith("'pattern' '(unclosed' is not a valid regular expression: missing )")
    with pytest.raises(ValueError, match=r"^check 2: the check has no 'type'$"):
        ck.run_checks("x", [{"type": "contains", "value": "x"}, {}])


def test_a_regex_check_that_backtracks_without_end_is_skipped_with_the_reason_not_a_hang():
    """A pattern from an uploaded file, such as "(a|aa)+$", backtracks for ~1.6^n steps on "aaa...a!": the cell ends
    `skipped` within REGEX_SECONDS instead of the run hanging (a subprocess, so the old code fails, not hangs)."""
    import subprocess
    import sys
    code = ("from evaluators.metrics.lexical import checks_pass_rate\n"
            "from evaluators.records import GoldenItem, RagOutput, Sample\n"
            "checks = ({'type': 'regex', 'pattern': '(a|aa)+$'}, {'type': 'contains', 'value': 'a'})\n"
            "s = Sample(GoldenItem('q', 'Q?', 'R', checks=checks), RagOutput('q', 'm', 'a' * 40 + '!'))\n"
            "r, = checks_pass_rate([s])\n"
            "print(r.status, '|', r.detail)\n")
    try:
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the regex check ran for over a minute on one answer")
    status, detail = out.stdout.strip().split(" | ")
    assert status == "skipped" and "/(a|aa)+$/ did not finish within 1 s" in detail, out.stderr
