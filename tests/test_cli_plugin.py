"""`python -m evaluators run --plugin FILE`: a user's Python metrics computed with a run on a real DuckDB file, stored
with it, shown by `view` and gated by `gate`; a bad plug-in file refused (exit 2) before a database exists; a resumed
run loads its unchanged plug-in again and refuses a changed one; an installed package's entry point; `evaluate()`."""
from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET

import duckdb
import pytest

from evaluators import evaluate
from evaluators.store import close_store, open_store
from tests.helpers.cli import cli, cli_process
from tests.helpers.plugin_files import (METHODS, PLUGIN, QUESTIONS, expected, user_metrics_kept, write_dist,
                                        write_inputs, write_plugin)

PLUGGED = ("answer_has_citation", "answer_stars")


@pytest.fixture(autouse=True)
def _kept():
    with user_metrics_kept():
        yield


def run(tmp_path, db, *extra, plugin=None):
    golden, outputs = write_inputs(tmp_path)
    plugin = plugin or write_plugin(tmp_path)
    return cli("run", "--golden", golden, "--outputs", outputs, "--plugin", plugin, *extra, db=db)


def run_id(result) -> str:
    return next(line.split()[1] for line in result.stderr.splitlines() if line.startswith("run run-"))


def cells(db, run) -> dict:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT question_id, method, metric, value, status, detail FROM scores WHERE run_id = ?",
                           [run]).fetchall()
    finally:
        con.close()
    return {(q, m, metric): (value, status, detail) for q, m, metric, value, status, detail in rows}


def test_a_run_with_a_plugin_scores_stores_and_shows_its_metrics(tmp_path):
    db = tmp_path / "runs.duckdb"
    done = run(tmp_path, db, "--metrics", "exact_match,answer_has_citation,answer_stars")
    assert done.returncode == 0, done.stderr
    rid = run_id(done)
    got = cells(db, rid)
    for metric in PLUGGED:
        for q in QUESTIONS:
            for m in METHODS:
                value, status, detail = got[(q, m, metric)]
                assert (value, status) == expected(metric, q, m), (metric, q, m, detail)
    assert "RuntimeError: cannot read this answer" in got[("q2", "local", "answer_has_citation")][2]
    assert "returned 7" in got[("q3", "basic", "answer_stars")][2]
    assert "re-score the failed cells" in done.stdout  # the errors are said, and retryable

    store = open_store(db)
    stored = {r["metric"]: r for r in store.user_metrics(rid)}
    close_store(db)
    assert set(stored) == set(PLUGGED) and {r["kind"] for r in stored.values()} == {"plugin"}
    assert stored["answer_stars"]["definition"]["scale"] == "likert"
    assert stored["answer_has_citation"]["definition"]["source"] == str((tmp_path / "my_metrics.py").resolve())

    shown = cli("view", "overview", rid, "--json", db=db)
    assert shown.returncode == 0, shown.stderr
    rows = {r["metric"]: r for r in json.loads(shown.stdout)["metrics"]}
    assert (rows["answer_has_citation"]["scale"], rows["answer_stars"]["scale"]) == ("binary", "likert")
    assert rows["answer_stars"]["family"] == "plugins"

    # re-scoring the failed cells in a new process loads the plug-in again (its file unchanged): they fail again
    again = cli_process("run", "--retry-failed", rid, db=db)
    assert again.returncode == 0 and "loaded again, unchanged since the run" in again.stderr, again.stderr
    assert cells(db, rid) == got


def test_every_plugin_metric_by_default_and_only_those_named(tmp_path):
    db = tmp_path / "runs.duckdb"
    rid = run_id(run(tmp_path, db, "--metrics", "exact_match,answer_stars"))
    assert {k[2] for k in cells(db, rid)} == {"exact_match", "answer_stars"}
    everything = run(tmp_path, db)
    assert set(PLUGGED) <= {k[2] for k in cells(db, run_id(everything))}


def test_the_gate_on_two_runs_with_the_plugin(tmp_path):
    db = tmp_path / "runs.duckdb"
    first, second = (run_id(run(tmp_path, db, "--metrics", "exact_match,answer_has_citation")) for _ in range(2))
    junit = tmp_path / "gate.xml"
    gated = cli("gate", second, "--baseline", first, "--metrics", "answer_has_citation", "--junit", junit, db=db)
    assert gated.returncode == 0, gated.stdout + gated.stderr
    assert "answer_has_citation" in gated.stdout
    names = {case.get("name") for case in ET.parse(junit).iter("testcase")}
    assert any("answer_has_citation" in n for n in names)


BAD = {
    "syntax error": ("def f(:\n", "SyntaxError"),
    "raises at import": ("raise RuntimeError('no licence')\n", "RuntimeError: no licence"),
    "no metric": ("VALUE = 1\n", "declares no metric"),
    "colliding id": ("from evaluators.metrics.plugins import plugin_metric\n"
                     "@plugin_metric('faithfulness', scale='ratio')\ndef f(s):\n    return 1\n", "built-in metric"),
    "unknown scale": ("from evaluators.metrics.plugins import plugin_metric\n"
                      "@plugin_metric('mine', scale='0-10')\ndef f(s):\n    return 1\n", "unknown scale '0-10'"),
}


@pytest.mark.parametrize("case", BAD)
def test_a_bad_plugin_file_exits_2_naming_it_before_the_database_exists(tmp_path, case):
    text, says = BAD[case]
    db = tmp_path / "never.duckdb"
    refused = run(tmp_path, db, plugin=write_plugin(tmp_path, text, "bad_metrics.py"))
    assert refused.returncode == 2
    assert "bad_metrics.py" in refused.stderr and says in refused.stderr
    assert not db.exists()


def test_a_missing_plugin_file_exits_2(tmp_path):
    refused = run(tmp_path, tmp_path / "never.duckdb", plugin=tmp_path / "absent.py")
    assert refused.returncode == 2 and "absent.py: no such file" in refused.stderr
    assert not (tmp_path / "never.duckdb").exists()


def test_a_resumed_run_refuses_a_changed_plugin_file(tmp_path):
    db = tmp_path / "runs.duckdb"
    rid = run_id(run(tmp_path, db, "--metrics", "answer_stars"))
    write_plugin(tmp_path, PLUGIN.replace("return 7", "return 5"))
    refused = cli_process("run", "--resume", rid, db=db)  # a new process: the run's version is not loaded in it
    assert refused.returncode == 2, refused.stderr
    assert "plug-in file changed since the run" in refused.stderr and "pass --plugin" in refused.stderr
    assert cli("run", "--resume", rid, "--plugin", tmp_path / "my_metrics.py", db=db).returncode == 2


def test_evaluate_with_plugins(tmp_path):
    golden, outputs = write_inputs(tmp_path)
    result = evaluate(golden, outputs, metrics=["exact_match", "answer_stars"], db=tmp_path / "api.duckdb",
                      plugins=[write_plugin(tmp_path)])
    scores = result.scores.set_index(["question_id", "method", "metric"])
    for q in QUESTIONS:
        for m in METHODS:
            value, status = expected("answer_stars", q, m)
            row = scores.loc[(q, m, "answer_stars")]
            assert row["status"] == status and (value is None or row["value"] == value)
    close_store(result.store.path)


ENTRY_MODULE = ("from evaluators.metrics.plugins import plugin_metric\n"
                "@plugin_metric('acme_words', scale='percent', higher_is_better=None)\n"
                "def acme_words(sample):\n    return min(100, len(sample.output.answer.split()))\n")


def test_an_installed_entry_point_is_computed_and_a_broken_one_said(tmp_path):
    site = write_dist(tmp_path / "site", {"acme": "acme_words_plugin", "broken": "acme_broken"},
                      {"acme_words_plugin": ENTRY_MODULE, "acme_broken": "raise RuntimeError('acme broke')\n"})
    golden, outputs = write_inputs(tmp_path)
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    db = tmp_path / "runs.duckdb"
    done = cli_process("run", "--golden", golden, "--outputs", outputs, "--metrics", "exact_match,acme_words",
                       db=db, env=env)
    assert done.returncode == 0, done.stderr
    assert "warning: plug-in not loaded: broken" in done.stderr and "acme broke" in done.stderr
    con = duckdb.connect(str(db), read_only=True)
    values = dict(con.execute("SELECT question_id || method, value FROM scores WHERE metric = 'acme_words'").fetchall())
    source = con.execute("SELECT definition FROM user_metrics WHERE metric = 'acme_words'").fetchall()[0][0]
    con.close()
    answers = {r["question_id"] + r["method"]: r["answer"] for r in map(json.loads, outputs.read_text().splitlines())}
    assert values == {k: float(len(a.split())) for k, a in answers.items()}
    assert json.loads(source)["source"] == "entry point acme"


def test_two_files_declaring_one_id_are_refused(tmp_path):
    other = write_plugin(tmp_path, PLUGIN, "other_metrics.py")
    db = tmp_path / "never.duckdb"
    refused = run(tmp_path, db, "--plugin", other)
    assert refused.returncode == 2 and "declared twice" in refused.stderr and "other_metrics.py" in refused.stderr
    assert not db.exists()


def test_a_plugin_metric_named_without_its_file_is_refused(tmp_path):
    db = tmp_path / "runs.duckdb"
    assert run(tmp_path, db, "--metrics", "answer_stars").returncode == 0  # loaded in this process now
    golden, outputs = write_inputs(tmp_path)
    refused = cli("run", "--golden", golden, "--outputs", outputs, "--metrics", "answer_stars", db=db)
    assert refused.returncode == 2 and "answer_stars" in refused.stderr and "--plugin FILE" in refused.stderr


def test_an_id_stored_with_another_scale_is_refused(tmp_path):
    db = tmp_path / "runs.duckdb"
    assert run(tmp_path, db, "--metrics", "answer_stars").returncode == 0
    percent = write_plugin(tmp_path, PLUGIN.replace('"answer_stars", scale="likert"', '"answer_stars", scale="percent"'),
                           "percent_metrics.py")
    refused = run(tmp_path, db, "--metrics", "answer_stars", plugin=percent)
    assert refused.returncode == 2 and "scale likert" in refused.stderr and "new id" in refused.stderr


def test_a_broken_entry_point_refuses_only_a_run_naming_its_metric(tmp_path, monkeypatch):
    site = write_dist(tmp_path / "site", {"acme": "acme_gone"}, {"acme_gone": "raise ImportError('acme broke')\n"})
    monkeypatch.syspath_prepend(str(site))
    golden, outputs = write_inputs(tmp_path)
    db = tmp_path / "runs.duckdb"
    named = cli("run", "--golden", golden, "--outputs", outputs, "--metrics", "exact_match,acme_words", db=db)
    assert named.returncode == 2 and "acme broke" in named.stderr and "acme_words" in named.stderr
    assert not db.exists()
    other = cli("run", "--golden", golden, "--outputs", outputs, "--metrics", "exact_match", db=db)
    assert other.returncode == 0 and "warning: plug-in not loaded: acme" in other.stderr


def test_metrics_lists_a_plugins_metrics_with_their_metadata(tmp_path):
    listed = cli("metrics", "--json", "--plugin", write_plugin(tmp_path))
    assert listed.returncode == 0, listed.stderr
    rows = {r["id"]: r for r in json.loads(listed.stdout)}
    assert (rows["answer_has_citation"]["scale"], rows["answer_has_citation"]["needs"]) == ("0 or 1", "contexts")
    assert rows["answer_stars"]["family"] == "plugins" and rows["answer_stars"]["scale"] == "1-5"
    assert "exact_match" in rows
