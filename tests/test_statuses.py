"""One home per concept on the read side (issue 11): statuses come from evaluators/schema.py, names no failed status in SQL of its own,
(issue 11; the Overview once counted 'skipped' cells as failed where the other screens did not)."""
from pathlib import Path

from evaluators.queries import FAILED
from evaluators.schema import ERROR_STATUSES

ROOT = Path(__file__).resolve().parent.parent


def test_failed_cells_are_counted_by_one_definition_everywhere():
    assert FAILED == "(" + ", ".join(f"'{s}'" for s in ERROR_STATUSES) + ")"
    for path in [*ROOT.glob("evaluators/queries/*.py"), *ROOT.glob("pages/*.py"), *ROOT.glob("ui/*.py"), ROOT / "app.py"]:
        text = path.read_text()
        for status in ERROR_STATUSES:
            assert f"'{status}'" not in text, f"{path.relative_to(ROOT)} spells the status {status!r} in SQL"


def test_labels_are_read_from_their_column_never_parsed_out_of_detail():
    for path in [*ROOT.glob("evaluators/queries/*.py"), *ROOT.glob("pages/*.py"), *ROOT.glob("ui/*.py"), ROOT / "app.py"]:
        text = path.read_text().replace(" ", "")
        assert "split_part(detail" not in text and "split_part(s.detail" not in text, path.relative_to(ROOT)
