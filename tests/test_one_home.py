"""One home per concept (issue 11): statuses come from records.py, a metric's scale arithmetic and labels
from its `Metric` record (metrics/registry.py), seed math from formulas.py. These tests fail when the
old patterns come back: the Overview once counted 'skipped' cells as failed where the other screens did
not, and the 1-5 projection was written out in eight places."""
import re

import pytest

from evaluators import records
from evaluators.metrics import REGISTRY
from evaluators.metrics.registry import SCALES, in_catalogue_order, label_metrics, lookup
from evaluators.records.run_status import RunStatus
from evaluators.queries import FAILED, bounds_in_view, difference_in_view, in_view, LIKERT, OWN, PERCENT
from tests.helpers import ROOT

READ_SIDE = [*ROOT.glob("evaluators/queries/*.py"), *ROOT.glob("pages/*.py"), *ROOT.glob("ui/*.py"), ROOT / "app.py",
             ROOT / "evaluators/cli.py"]
# Everything but the homes: the scales (registry.py), the seeds' math (formulas.py), the migrations (store.py,
# frozen history) and the metric families, which declare their scale by name.
CODE = [p for p in ROOT.glob("evaluators/**/*.py")
        if p.name not in ("registry.py", "formulas.py", "store.py") and p.parent.name != "metrics"]
CODE += [p for p in READ_SIDE if p not in CODE]
CELL_AND_CALL_STATUSES = (*records.STATUSES, records.INVALID, records.INCOMPLETE, records.RATE_LIMITED,
                          records.SERVER_ERROR, records.CONNECTION_ERROR, records.BAD_RESPONSE, records.BAD_REQUEST,
                          records.SCHEMA_UNSUPPORTED)
SCALE_ARITHMETIC = re.compile(
    r"\b1(\.0)?\s*\+\s*4(\.0)?\s*\*"  # 1 + 4 x norm
    r"|\b(4|100)(\.0)?\s*\*\s*\w*norm|norm\w*\s*\*\s*(4|100)\b"  # norm onto 1-5 or 0-100
    r"|[/*]\s*100(\.0)?\b(?!\s*,)"  # a percent made by hand
    r"|(?<!SCALES\[)(?<!format=)[\"'](likert|percent)[\"']\s*[:)\],]|==\s*[\"'](likert|percent)[\"']"  # a scale by name
    r"|\((0|1)\.0,\s*(5|100)\.0\)")  # bounds written out


def _lines(paths, pattern):
    return [f"{p.relative_to(ROOT)}:{i}: {line.strip()}" for p in paths
            for i, line in enumerate(p.read_text().splitlines(), 1) if re.search(pattern, line)]


def test_statuses_are_spelled_only_in_schema():
    assert FAILED == "(" + ", ".join(f"'{s}'" for s in records.ERROR_STATUSES) + ")"
    quoted = "|".join(rf"(?<!: )['\"]{s}['\"]" for s in CELL_AND_CALL_STATUSES)  # (a column's title may say "ok")
    assert _lines(READ_SIDE, quoted) == []


def test_run_statuses_are_spelled_only_in_their_enum():
    """RunStatus (records/run_status.py) is the one list of a run's statuses (issue 32); judges/batch_api.py's are the
    Batch API's own. 'failed' is left out: it also names the count of failed cells."""
    code = [p for p in ROOT.glob("evaluators/**/*.py") if p.name not in ("run_status.py", "batch_api.py")]
    code += [p for p in READ_SIDE if p not in code]
    quoted = "|".join(rf"(?<!: )['\"]{s}['\"]" for s in RunStatus if s != RunStatus.FAILED)
    assert _lines(code, quoted) == []


def test_no_scale_arithmetic_outside_the_metric_record():
    assert _lines(CODE, SCALE_ARITHMETIC) == []


def test_labels_are_a_column_never_parsed_out_of_detail_nor_listed_again():
    assert _lines(READ_SIDE, r"split_part\(\s*\w*\.?detail") == []
    every_label = {label for labels in label_metrics().values() for label in labels if len(label) > 1}  # not A-E: claim ids
    assert _lines(READ_SIDE, "|".join(rf"[\"']{re.escape(label)}[\"']" for label in every_label)) == []


def test_the_metric_record_maps_values_to_norm_and_back():
    for m in REGISTRY.values():
        low, high = m.range.low, m.range.high
        assert (m.norm(low), m.norm(high)) == (0.0, 1.0), m.id
        assert m.range.value(m.norm((low + high) / 2)) == pytest.approx((low + high) / 2)
        assert bool(m.labels) == (m.scale == "label") and m.aggregation == ("label shares" if m.labels else "mean")
    assert REGISTRY["judge_overall"].norm(4.0) == 0.75 and REGISTRY["factual_accuracy"].norm(62.5) == 0.625
    assert REGISTRY["verdict"].labels == {"pass": 1.0, "partial": 0.5, "fail": 0.0}
    assert (REGISTRY["faithfulness"].direction, REGISTRY["hallucination_rate"].direction,
            REGISTRY["dont_know"].direction) == (1, -1, 0)
    gone = lookup("a_metric_from_an_older_version")
    assert (gone.scale, gone.direction, gone.family, gone.labels) == ("ratio", 0, "other", {})
    assert in_catalogue_order(["zz_gone", "judge_overall", "faithfulness"]) == ["faithfulness", "judge_overall", "zz_gone"]
    assert SCALES["likert"].difference(0.25) == 1.0


def test_views_project_norm_onto_the_white_paper_scale_or_percent():
    import pandas as pd
    norm, own = pd.Series([0.0, 0.5, 1.0]), pd.Series([1.0, 3.0, 5.0])
    assert list(in_view(norm, own, LIKERT)) == [1.0, 3.0, 5.0]
    assert list(in_view(norm, own, PERCENT)) == [0.0, 50.0, 100.0]
    assert in_view(norm, own, OWN) is own
    assert list(difference_in_view(pd.Series([0.25]), pd.Series([9.0]), LIKERT)) == [1.0]
    assert bounds_in_view("factual_accuracy", OWN) == (0.0, 100.0)
    assert bounds_in_view("factual_accuracy", LIKERT) == (1.0, 5.0)
