"""`python -m evaluators view SCREEN RUN_ID [options] [--json|--csv]` as a user runs it (in-process, on a
copy of the evaluated demo database): it prints exactly the tables of the screen's view for the same options."""
import io
import json
import math
import shutil

import numpy as np
import pandas as pd
import pytest

from evaluators.store import close_store, open_store
from tests.helpers.compare_runs import runs, small  # noqa: F401  (fixtures)
from tests.helpers.cli_view import tables, view


@pytest.fixture(scope="module")
def demo(demo_db_file, tmp_path_factory):
    db = tmp_path_factory.mktemp("view") / "demo.duckdb"
    shutil.copy(demo_db_file, db)
    run_id = open_store(db).cursor().execute("SELECT run_id FROM runs WHERE status = 'finished'").fetchall()[0][0]
    close_store(db)  # the CLI's process opens the file
    return db, run_id


def test_text_prints_each_table_under_its_name(demo):
    db, run_id = demo
    out = view(db, "overview", run_id, "--question-type", "Complex Reasoning", "--scale", "percent")
    assert out.returncode == 0, out.stderr
    expected = tables(db, "overview", run_id, question_type="Complex Reasoning", scale="percent")
    assert out.stdout == "\n\n".join(f"{name}\n" + (t.to_string(index=False) if len(t) else "(no rows)")
                                     for name, t in expected.items()) + "\n"
    assert out.stdout.startswith("progress\n")  # the screen's first table (a partial run's notice), then the rest
    metrics = out.stdout.split("\n\nmetrics\n", 1)[1]
    assert "basic_search 95% CI" in metrics.splitlines()[0]


def same(value, expected) -> bool:
    if isinstance(expected, list):
        return value == expected
    if expected is None or pd.isna(expected):
        return value is None
    if isinstance(expected, (float, np.floating)):
        return math.isclose(value, expected, rel_tol=1e-12)
    return value == expected


def test_json_is_one_object_of_tables_as_lists_of_rows(demo):
    db, run_id = demo
    out = view(db, "compare", run_id, "--methods", "basic_search,local_search", "--baseline", "local_search",
               "--families", "lexical,claims", "--metric", "rouge_l", "--json")
    assert out.returncode == 0, out.stderr
    printed = json.loads(out.stdout)
    expected = tables(db, "compare", run_id, methods=["basic_search", "local_search"], baseline="local_search",
                      families=["lexical", "claims"], metric="rouge_l")
    assert list(printed) == list(expected)
    for name, frame in expected.items():
        rows = printed[name]
        assert len(rows) == len(frame), name
        for row, want in zip(rows, frame.to_dict("records")):
            assert list(row) == list(want), name
            assert all(same(row[c], want[c]) for c in want), (name, row, want)
    assert printed["metrics"][0]["Δ basic_search − local_search"] is not None


def test_csv_prints_each_table_after_a_name_line(demo):
    db, run_id = demo
    out = view(db, "correlations", run_id, "--coefficient", "spearman", "--samples", "local_search", "--csv")
    assert out.returncode == 0, out.stderr
    expected = tables(db, "correlations", run_id, coefficient="spearman", samples="local_search")
    blocks = out.stdout.split("# ")[1:]
    assert [b.split("\n", 1)[0] for b in blocks] == list(expected)
    for block, (name, frame) in zip(blocks, expected.items()):
        printed = pd.read_csv(io.StringIO(block.split("\n", 1)[1]))
        pd.testing.assert_frame_equal(printed, frame, check_dtype=False, obj=name)
    assert len(expected["scatter"]) == 103


def test_help_unknown_runs_and_bad_options(demo):
    db, run_id = demo
    helped = view(db, "compare", "--help")
    assert helped.returncode == 0
    for text in ("--question-type", "(default: All question types)", "--scale", "(default: own scale)", "--methods",
                 "comma-separated", "--json", "--csv", "RUN_ID"):
        assert text in helped.stdout
    unknown = view(db, "overview", "run-nope")
    assert unknown.returncode == 2 and "no run 'run-nope'" in unknown.stderr
    bad = view(db, "compare", run_id, "--scale", "stars")
    assert bad.returncode == 2
    assert "scale 'stars' is not one of: 'own scale', '1-5 (white paper)', 'percent'" in bad.stderr
    missing = view(db, "overview")
    assert missing.returncode == 2 and "RUN_ID" in missing.stderr


def test_view_compare_across_runs_and_view_history_print_the_views_tables(runs):  # noqa: F811
    store, first, same_set, edited = runs
    db = store.path
    close_store(db)  # the CLI's process opens the file
    out = view(db, "compare", first, "--methods", f"m1,{edited}:m1", "--baseline", f"{edited}:m1", "--json")
    assert out.returncode == 0, out.stderr
    printed = json.loads(out.stdout)
    expected = tables(db, "compare", first, methods=["m1", f"{edited}:m1"], baseline=f"{edited}:m1")
    assert list(printed) == list(expected) and printed["summary"][0]["left out (reference differs)"] == 1
    assert [r["question_id"] for r in printed["left_out"]] == expected["left_out"]["question_id"].tolist() == ["q2"]
    assert printed["metrics"] == json.loads(expected["metrics"].to_json(orient="records", force_ascii=False))
    text = view(db, "history", first, "--metrics", "rouge_l,judge_overall")
    assert text.returncode == 0, text.stderr
    expected = tables(db, "history", first, metrics=["rouge_l", "judge_overall"])
    assert text.stdout == "\n\n".join(f"{name}\n" + (t.to_string(index=False) if len(t) else "(no rows)")
                                      for name, t in expected.items()) + "\n"
    assert same_set in text.stdout and edited not in text.stdout
