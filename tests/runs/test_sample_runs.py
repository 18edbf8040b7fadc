"""`run --sample N`: a run that judges a stratified sample of the questions, end to end on real DuckDB files (the CLI
as a user runs it, evaluate(), the screens in AppTest): only the sample is scored, every method on the same
questions, the seed reproduces it, a later `--resume RUN_ID --sample N2` grows it, and everything shown says so."""
import json
import re
from collections import Counter

import duckdb
import pandas as pd
import pytest

from evaluators import evaluate
from evaluators.runs import sampling
from tests.helpers.cli import cli
from tests.helpers.sample_inputs import METRICS, TYPES, write_files


@pytest.fixture
def files(tmp_path):
    return write_files(tmp_path)


def _read(db, sql, *params):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, list(params)).df()
    finally:
        con.close()


def _scored(db, run_id) -> pd.DataFrame:
    return _read(db, "SELECT * FROM scores WHERE run_id = ? ORDER BY ALL", run_id)


def _run(db, run_id) -> dict:
    return _read(db, "SELECT * FROM runs WHERE run_id = ?", run_id).iloc[0].to_dict()


def test_a_sampled_run_scores_the_stratified_sample_of_its_seed_for_every_method_and_grows(tmp_path, files):
    golden, outputs, questions = files
    db = tmp_path / "s.duckdb"
    out = cli("run", "--golden", str(golden), "--outputs", str(outputs), "--metrics", METRICS, "--sample", "10", db=db)
    assert out.returncode == 0, out.stderr
    run_id = re.search(r"^run (run-\S+)$", out.stderr, re.MULTILINE).group(1)
    sample = json.loads(_run(db, run_id)["config"])["sample"]
    seed = sample["seed"]  # a random one, printed and stored
    assert sample == {"n": 10, "of": 30, "seed": seed} and f"sample of 10 of 30 questions (seed {seed})" in out.stderr
    assert "sample of 10 of 30 questions" in out.stdout and "20 samples x 2 metrics" in out.stderr

    scores = _scored(db, run_id)
    chosen = set(sampling.choose(questions, 10, seed))  # the stored seed reproduces the sample
    by_method = scores.groupby("method")["question_id"].apply(set).to_dict()
    assert by_method == {"local": chosen, "basic": chosen} and len(scores) == 10 * 2 * 2
    assert _run(db, run_id)["n_samples"] == 20
    kinds = Counter(dict(questions)[q] for q in chosen)  # 15:10:5 of 30 -> 5:3.3:1.7 of 10, each within one
    assert all(abs(kinds[t] - 10 * k / 30) < 1 for t, k in TYPES.items())

    # grown: only the new questions are scored, the old cells stay as they were, byte for byte
    grown = cli("run", "--resume", run_id, "--sample", "16", db=db)
    assert grown.returncode == 0, grown.stderr
    after = _scored(db, run_id)
    assert set(after["question_id"]) == set(sampling.choose(questions, 16, seed)) and len(after) == 16 * 2 * 2
    pd.testing.assert_frame_equal(after[after["question_id"].isin(chosen)].reset_index(drop=True), scores)
    assert json.loads(_run(db, run_id)["config"])["sample"] == {"n": 16, "of": 30, "seed": seed}
    assert _run(db, run_id)["n_samples"] == 32

    smaller = cli("run", "--resume", run_id, "--sample", "5", db=db)
    assert smaller.returncode == 2 and "a sample only grows" in smaller.stderr
    assert cli("run", "--retry-failed", run_id, "--sample", "20", db=db).returncode == 2

    # a new run with the same seed draws the same questions
    again = cli("run", "--golden", str(golden), "--outputs", str(outputs), "--metrics", METRICS, "--sample", "16",
                "--seed", str(seed), db=db)
    assert again.returncode == 0, again.stderr
    other = re.search(r"^run (run-\S+)$", again.stderr, re.MULTILINE).group(1)
    assert set(_scored(db, other)["question_id"]) == set(after["question_id"])


def test_a_sample_of_every_question_is_a_whole_run(tmp_path, files):
    golden, outputs, _ = files
    db = tmp_path / "all.duckdb"
    out = cli("run", "--golden", str(golden), "--outputs", str(outputs), "--metrics", METRICS, "--sample", "99",
              "--seed", "1", db=db)
    assert out.returncode == 0, out.stderr
    assert "every one is judged" in out.stderr and "sample of" not in out.stdout
    run = _read(db, "SELECT config, n_samples FROM runs").iloc[0]
    assert "sample" not in json.loads(run["config"]) and run["n_samples"] == 60


def test_the_views_exports_and_report_of_a_sampled_run_say_it_is_a_sample(tmp_path, files):
    golden, outputs, questions = files
    db = tmp_path / "e.duckdb"
    result = evaluate(golden, outputs, metrics=METRICS.split(","), db=db, sample=12, seed=7)
    run_id = result.run_id
    assert json.loads(result.run["config"])["sample"] == {"n": 12, "of": 30, "seed": 7}
    assert set(result.scores["question_id"]) == set(sampling.choose(questions, 12, 7))
    result.store.close()
    note = "sample of 12 of 30 questions (seed 7)"

    view = json.loads(cli("view", "overview", run_id, "--json", db=db).stdout)
    assert list(view)[0] == "sample" and view["sample"] == [{"n": 12, "of": 30, "seed": 7, "note": note}]
    history = json.loads(cli("view", "history", run_id, "--json", db=db).stdout)
    assert [r["sample"] for r in history["runs"]] == [note]  # beside the other runs of its golden set
    for fmt in ("csv", "parquet", "json"):
        path = tmp_path / f"scores.{fmt}"
        assert cli("export", run_id, "--out", str(path), db=db).returncode == 0
        frame = {"csv": pd.read_csv, "parquet": pd.read_parquet, "json": pd.read_json}[fmt](path)
        assert set(frame["sample"]) == {note} and len(frame) == 12 * 2 * 2
    report = tmp_path / "report.html"
    assert cli("report", run_id, "--out", str(report), db=db).returncode == 0
    assert note in report.read_text()


def test_an_unsampled_run_says_nothing_of_a_sample(tmp_path, files):
    golden, outputs, _ = files
    db = tmp_path / "u.duckdb"
    result = evaluate(golden, outputs, metrics=["exact_match"], db=db)
    result.store.close()
    assert "sample" not in json.loads(cli("view", "overview", result.run_id, "--json", db=db).stdout)
    assert [r["sample"] for r in json.loads(cli("view", "history", result.run_id, "--json", db=db).stdout)["runs"]] \
        == [None]
    assert cli("export", result.run_id, "--out", str(tmp_path / "x.csv"), db=db).returncode == 0
    assert "sample" not in pd.read_csv(tmp_path / "x.csv").columns


def test_bad_sample_options_are_refused_before_anything_is_stored(tmp_path, files):
    golden, outputs, _ = files
    db = tmp_path / "bad.duckdb"
    out = cli("run", "--golden", str(golden), "--outputs", str(outputs), "--sample", "0", db=db)
    assert out.returncode == 2 and "sample must be a whole number of 1 or more" in out.stderr and not db.exists()
    with pytest.raises(ValueError, match="seed must be"):
        evaluate(golden, outputs, db=db, sample=3, seed=-2)
