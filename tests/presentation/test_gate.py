"""The regression gate as CI runs it: `python -m evaluators gate` on real DuckDB files made by `run`."""
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import duckdb
import pytest

from evaluators.presentation.gate import (BETTER, NO_DIRECTION, NOT_NONINFERIOR, OK, REGRESSION, check_tolerances, gate,
                                         verdict)
from evaluators.metrics import REGISTRY
from evaluators.queries.headline import HEADLINE
from evaluators.judges import prompts
from evaluators.store import close_store, open_store
from tests.helpers.cli import cli, tiny_files
from tests.helpers.shared_db import held_elsewhere
from tests.helpers import ROOT

DEMO = ROOT / "data" / "demo"
GOLDEN = DEMO / "novel_44557_golden.csv"
OUTPUTS = DEMO / "novel_44557_outputs.jsonl"
# Deterministic metrics keep the three runs to seconds (the offline claim judge takes minutes on 206 samples).
METRICS = ["exact_match", "keyword_coverage", "number_match", "answer_completeness", "rouge_l", "dont_know"]
# What a third of wrong answers must break: the metrics comparing the answer's words with the reference's.
# exact_match (0 everywhere: long answers) and number_match (one question has a number) cannot move; dont_know has
# no direction, so it never fails.
BROKEN = {"keyword_coverage", "answer_completeness", "rouge_l"}
METHODS = ("basic_search", "local_search")


def make_run(db: Path, outputs: Path, *extra) -> str:
    out = cli("run", "--golden", str(GOLDEN), "--outputs", str(outputs), "--db", str(db), *extra)
    assert out.returncode == 0, out.stderr
    return next(line.split()[1] for line in out.stderr.splitlines() if line.startswith("run "))


def third_wrong(path: Path) -> Path:
    """The demo outputs with every third answer of each method replaced by the next question's answer."""
    rows = [json.loads(line) for line in OUTPUTS.read_text().splitlines()]
    out = []
    for method in METHODS:
        mine = [r for r in rows if r["method"] == method]
        for i, r in enumerate(mine):
            out.append({**r, "answer": mine[(i + 1) % len(mine)]["answer"]} if i % 3 == 0 else r)
    assert sum(a["answer"] != b["answer"] for a, b in zip(sorted(rows, key=_key), sorted(out, key=_key))) >= 60
    path.write_text("".join(json.dumps(r) + "\n" for r in out))
    return path


def _key(row):
    return row["method"], row["question_id"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A database with a baseline run, a re-run of the same outputs and a run of the outputs with a third wrong."""
    tmp = tmp_path_factory.mktemp("gate")
    db = tmp / "gate.duckdb"
    metrics = ("--metrics", ",".join(METRICS))
    made = {"db": db, "baseline": make_run(db, OUTPUTS, *metrics), "rerun": make_run(db, OUTPUTS, *metrics),
            "wrong": make_run(db, third_wrong(tmp / "wrong.jsonl"), *metrics)}
    yield made
    close_store(db)


def gate_cli(runs, candidate, baseline, *extra):
    return cli("gate", candidate, "--baseline", baseline, "--db", str(runs["db"]), "--metrics", ",".join(METRICS),
               *extra)


def regressions_named(stdout: str) -> set[tuple[str, str]]:
    """(metric, method) of every 'REGRESSION metric (method): ...' line."""
    return {(line.split()[1], line.split()[2].strip("():")) for line in stdout.splitlines()
            if line.startswith("REGRESSION ")}


def test_a_rerun_of_the_same_outputs_passes(runs, tmp_path):
    out = gate_cli(runs, runs["rerun"], runs["baseline"], "--junit", str(tmp_path / "gate.xml"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "gate PASSED: no regression" in out.stdout and not regressions_named(out.stdout)
    suite = ET.parse(tmp_path / "gate.xml").getroot()
    assert suite.get("tests") == str(len(METRICS) * len(METHODS)) and suite.get("failures") == "0"


def test_a_third_of_wrong_answers_fails_naming_each_broken_metric(runs, tmp_path):
    md, xml = tmp_path / "gate.md", tmp_path / "gate.xml"
    out = gate_cli(runs, runs["wrong"], runs["baseline"], "--markdown", str(md), "--junit", str(xml))
    assert out.returncode == 1, out.stdout + out.stderr
    expected = {(m, method) for m in BROKEN for method in METHODS}
    assert regressions_named(out.stdout) == expected
    assert f"gate FAILED: {len(expected)} regressions" in out.stdout
    for line in out.stdout.splitlines():
        if line.startswith("REGRESSION "):  # each named with its paired difference, CI, family-wise p and MDE
            assert "delta -0." in line and "95% CI [-0." in line and "p (family) " in line and "n 103" in line
            assert "MDE 0." in line
    assert "Westfall-Young max-T over the 10 gated metrics" in out.stdout  # 5 directed metrics x 2 methods

    report = md.read_text()
    assert report.startswith("### RAGScope gate: failed")
    failed_rows = [row for row in report.splitlines() if row.startswith("| ❌ regression")]
    assert {row.split("`")[1] for row in failed_rows} == BROKEN and len(failed_rows) == len(expected)
    assert "`dont_know` | basic_search" in report and "no direction" in report

    # JUnit XML: one testcase per (method, metric), a <failure> for each regression
    root = ET.parse(xml).getroot()
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == len(METRICS) * len(METHODS) == int(root.find("testsuite").get("tests"))
    failed = {(c.get("name"), c.get("classname").rsplit(".", 1)[1]) for c in cases if c.find("failure") is not None}
    assert failed == expected and root.get("failures") == str(len(expected))
    assert {c.get("name") for c in cases if c.find("skipped") is not None} == {"dont_know"}


def test_a_tolerance_wider_than_the_drop_lets_the_metric_pass(runs):
    # rouge_l dropped by about 0.03 (its CI reaches below -0.04): tolerated at 0.1, not at 0.001
    wide = gate_cli(runs, runs["wrong"], runs["baseline"], "--tolerance", "rouge_l=0.1")
    assert {m for m, _ in regressions_named(wide.stdout)} == BROKEN - {"rouge_l"}
    narrow = gate_cli(runs, runs["wrong"], runs["baseline"], "--tolerance", "rouge_l=0.001")
    assert {m for m, _ in regressions_named(narrow.stdout)} == BROKEN
    tolerated = gate_cli(runs, runs["wrong"], runs["baseline"], *[f"--tolerance={m}=0.5" for m in BROKEN])
    assert tolerated.returncode == 0, tolerated.stdout


def test_one_method_per_side(runs, tmp_path):
    xml = tmp_path / "gate.xml"
    out = gate_cli(runs, f"{runs['wrong']}:local_search", f"{runs['baseline']}:local_search", "--junit", str(xml))
    assert out.returncode == 1 and regressions_named(out.stdout) == {(m, "local_search") for m in BROKEN}
    assert len(ET.parse(xml).getroot().findall("./testsuite/testcase")) == len(METRICS)
    # a method against another one, in the same run: the wrong answers are better or worse for neither
    across = gate_cli(runs, f"{runs['rerun']}:local_search", f"{runs['baseline']}:basic_search")
    assert "rouge_l (local_search vs basic_search)" in across.stdout


def test_bad_arguments_and_inputs_exit_2_with_a_clear_message(runs, tmp_path):
    base, wrong = runs["baseline"], runs["wrong"]
    cases = [
        (("gate", "run-nope", "--baseline", base), "no run 'run-nope'"),
        (("gate", f"{wrong}:nope", "--baseline", base),
         "has no method 'nope'; its methods: basic_search, local_search"),
        (("gate", f"{wrong}:", "--baseline", base), "is not RUN_ID or RUN_ID:METHOD"),
        (("gate", wrong, "--baseline", f"{wrong}:basic_search"), "name two methods"),
        (("gate", wrong, "--baseline", base, "--metrics", "rouge_l,nope"), "unknown metric id(s): nope"),
        (("gate", wrong, "--baseline", base, "--metrics", "faithfulness"), "not scored in both runs: faithfulness"),
        (("gate", wrong, "--baseline", base), "none of the headline metrics"),  # lexical runs: no headline metric
        (("gate", wrong, "--baseline", base, "--metrics", "rouge_l", "--tolerance", "rouge_l"), "is not METRIC=DELTA"),
        (("gate", wrong, "--baseline", base, "--metrics", "rouge_l", "--tolerance", "rouge_l=-0.1"), "a number >= 0"),
        (("gate", wrong, "--baseline", base, "--metrics", "rouge_l", "--tolerance", "rouge_l=x"),
         "'x' is not a number"),
        (("gate", wrong, "--baseline", base, "--metrics", "rouge_l", "--tolerance", "nope=0.1"), "unknown metric"),
        (("gate", wrong, "--baseline", base, "--metrics", "rouge_l", "--tolerance", "exact_match=0.1"),
         "tolerance for exact_match, which is not gated"),
        (("gate", wrong, "--baseline", base, "--metrics", "rouge_l", "--alpha", "1.5"), "alpha must lie between"),
    ]
    for args, message in cases:
        out = cli(*args, "--db", str(runs["db"]))
        assert out.returncode == 2, (args, out.stdout, out.stderr)
        assert message in out.stderr, (args, out.stderr)
    missing = cli("gate", wrong, "--baseline", base, "--db", str(tmp_path / "none.duckdb"))
    assert missing.returncode == 2 and "no database at" in missing.stderr
    assert not (tmp_path / "none.duckdb").exists()  # a gate never creates a database
    assert cli("gate", wrong, "--db", str(runs["db"])).returncode == 2  # --baseline is required
    unwritable = gate_cli(runs, wrong, base, "--junit", str(tmp_path / "no-such-dir" / "gate.xml"))
    assert unwritable.returncode == 2 and "cannot write" in unwritable.stderr and "gate FAILED" in unwritable.stdout


def test_a_database_held_by_another_process_exits_3(runs, tmp_path):
    env = {"RAGSCOPE_DB_WAIT": "1"}
    close_store(runs["db"])
    with held_elsewhere(runs["db"]):
        out = cli("gate", runs["wrong"], "--baseline", runs["baseline"], "--db", str(runs["db"]), env=env)
    assert out.returncode == 3 and "in use by another process" in out.stderr


def test_questions_whose_reference_changed_are_left_out_and_counted(runs, tmp_path):
    lines = GOLDEN.read_text().splitlines(keepends=True)
    changed = [lines[0], lines[1].replace(",Cornish heath,", ",Cornish heath (Erica vagans),")] + lines[2:]
    assert changed[1] != lines[1]
    (tmp_path / "golden.csv").write_text("".join(changed))
    out = cli("run", "--golden", str(tmp_path / "golden.csv"), "--outputs", str(OUTPUTS), "--db", str(runs["db"]),
              "--metrics", ",".join(METRICS))
    assert out.returncode == 0, out.stderr
    edited = next(line.split()[1] for line in out.stderr.splitlines() if line.startswith("run "))
    md = tmp_path / "gate.md"
    gated = gate_cli(runs, f"{edited}:local_search", f"{runs['baseline']}:local_search", "--markdown", str(md))
    assert gated.returncode == 0, gated.stdout + gated.stderr
    left_out = "1 question(s) left out: their reference differs between the two golden sets"
    assert f"note: {left_out}" in gated.stdout and left_out in md.read_text()
    assert "n 102" in gated.stdout and "n 103" not in gated.stdout


def test_the_python_entry_point_returns_the_rows_the_cli_prints(runs):
    store = open_store(runs["db"])
    result = gate(store, runs["wrong"], runs["baseline"], metrics=METRICS, tolerances={"rouge_l": 0.1})
    assert not result.passed and result.dropped == 0 and result.notes == ()
    assert set(zip(result.regressions["metric"], result.regressions["method"])) == {
        (m, method) for m in BROKEN - {"rouge_l"} for method in METHODS}
    rouge = result.rows[result.rows["metric"] == "rouge_l"]
    assert (rouge["tolerance"] == 0.1).all() and (rouge["delta"] < 0).all() and (rouge["verdict"] == OK).all()
    directed = result.rows["higher_is_better"].notna()  # the family: the rows that can fail, not dont_know
    assert result.rows.loc[directed, "p_family"].ge(result.rows.loc[directed, "p_value"]).all()
    # and never above Bonferroni over the 10 rows (up to the Monte Carlo error of 10,000 flips)
    bonferroni = (10 * result.rows.loc[directed, "p_value"]).clip(upper=1)
    assert result.rows.loc[directed, "p_family"].le(bonferroni + 0.002).all()
    assert result.rows.loc[~directed, "p_family"].isna().all() and set(result.rows.loc[~directed, "metric"]) == {
        "dont_know"}
    # exact_match is 0 everywhere and number_match has one pair: no spread to state an MDE from
    assert set(result.rows.loc[result.rows["mde"].isna(), "metric"]) == {"exact_match", "number_match"}
    assert result.rows["mde"].dropna().gt(0).all() and result.rows.loc[result.rows["mde"].isna(), "large_mde"].all()
    assert result.family.endswith("over the 10 gated metrics")
    close_store(runs["db"])


# -- the rule on single rows ---------------------------------------------------------------------------------

def row(metric, delta, low, high, p_family=0.001, n=50):
    return {"metric": metric, "delta": delta, "ci_low": low, "ci_high": high, "p_family": p_family, "n": n}


@pytest.mark.parametrize("case, tolerance, expected", [
    (row("rouge_l", -0.10, -0.15, -0.05), 0.0, REGRESSION),
    (row("rouge_l", -0.10, -0.15, -0.05), 0.05, OK),  # the CI's best end reaches the tolerance: not proven
    (row("rouge_l", -0.10, -0.15, -0.05), 0.049, REGRESSION),
    (row("rouge_l", -0.10, -0.15, -0.05, p_family=0.2), 0.0, OK),  # not significant in the family
    (row("rouge_l", +0.10, +0.05, +0.15), 0.0, BETTER),
    (row("hallucination_rate", +0.10, +0.05, +0.15), 0.0, REGRESSION),  # lower is better: a rise is worse
    (row("hallucination_rate", -0.10, -0.15, -0.05), 0.0, BETTER),
    (row("judge_overall", -0.5, -0.8, -0.2), 0.25, OK),  # 1-5 scale: the tolerance is in points
    (row("judge_overall", -0.5, -0.8, -0.3), 0.25, REGRESSION),
    (row("dont_know", +0.5, +0.4, +0.6), 0.0, NO_DIRECTION),
])
def test_the_verdict_holds_the_whole_interval_against_the_tolerance(case, tolerance, expected):
    assert verdict(case, tolerance, 0.05) == expected


@pytest.mark.parametrize("case, margin, expected", [
    (row("rouge_l", -0.01, -0.04, +0.02, p_family=0.5), 0.05, OK),  # the CI shows the drop is below the margin
    (row("rouge_l", -0.01, -0.06, +0.04, p_family=0.5), 0.05, NOT_NONINFERIOR),  # too wide to show it
    (row("rouge_l", -0.01, -0.05, +0.03, p_family=0.5), 0.05, NOT_NONINFERIOR),  # touching -margin is not above
    (row("rouge_l", +0.10, +0.05, +0.15), 0.0, BETTER),
    (row("hallucination_rate", +0.01, -0.02, +0.04, p_family=0.5), 0.05, OK),  # lower is better: +0.04 < 0.05
    (row("hallucination_rate", +0.01, -0.02, +0.06, p_family=0.5), 0.05, NOT_NONINFERIOR),
    (row("rouge_l", -0.01, None, None, n=1), 0.05, NOT_NONINFERIOR),  # one pair: no interval, nothing shown
])
def test_a_margin_fails_unless_the_interval_shows_non_inferiority(case, margin, expected):
    assert verdict(case, 0.0, 0.05, margin) == expected


def test_headline_metrics_are_registered_and_tolerances_are_checked():
    assert set(HEADLINE) <= set(REGISTRY) and len(set(HEADLINE)) == len(HEADLINE)
    assert check_tolerances({"rouge_l": 0.1}, ["rouge_l"]) == {"rouge_l": 0.1}
    for bad in ({"rouge_l": float("nan")}, {"rouge_l": float("inf")}, {"rouge_l": "0.1"}, {"nope": 0.1}):
        with pytest.raises(ValueError):
            check_tolerances(bad)


# -- an LLM judge asked several times: samples whose replies disagree are listed ---------------------------------

def test_samples_whose_repeated_judge_replies_disagree_are_listed_as_unstable(tmp_path):
    from tests.helpers.openai_server import Reply, start_server
    from tests.helpers.seed_000 import SEED_000_EXTRACTION, SEED_000_HOLISTIC, SEED_000_VERIFICATION

    golden, outputs = tiny_files(tmp_path)  # q0, q1, q2: "What is 1 plus 1?"
    db = tmp_path / "llm.duckdb"

    def rated(overall):
        return Reply.json({**SEED_000_HOLISTIC, "overall_score": overall, "correctness": overall})

    def reply(body):
        schema = prompts.task_of(body["messages"])
        if schema == "holistic":  # q1's three replies disagree on the overall rating, the others agree
            unstable = "What is 1 plus 1?" in json.dumps(body["messages"])
            return Reply.choices(rated(4), rated(3 if unstable else 4), rated(4))
        return Reply.json(SEED_000_EXTRACTION if schema == "extraction" else SEED_000_VERIFICATION)

    def run():
        out = cli("run", "--golden", golden, "--outputs", outputs, "--judge", "openai", "--model", "gpt-4o-mini",
                  "--metrics", "judge_overall,rouge_l", "--repeats", "3", "--base-url", server.base_url, db=db,
                  env={"OPENAI_API_KEY": "sk-test"})
        assert out.returncode == 0, out.stderr
        return next(line.split()[1] for line in out.stderr.splitlines() if line.startswith("run "))

    with start_server() as server:
        server.responder = reply
        baseline, candidate = run(), run()
    con = duckdb.connect(str(db), read_only=True)
    try:
        stored = con.execute("SELECT question_id, repeats FROM scores WHERE run_id = ? AND metric = 'judge_overall' "
                             "ORDER BY question_id", [candidate]).fetchall()
    finally:
        con.close()
    assert [r for _, r in stored] == [[4.0, 4.0, 4.0], [4.0, 3.0, 4.0], [4.0, 4.0, 4.0]]

    md = tmp_path / "gate.md"
    out = cli("gate", candidate, "--baseline", baseline, "--db", str(db), "--markdown", str(md))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "judge_overall" in out.stdout and "rouge_l" not in out.stdout  # default: the headline metrics scored
    assert "2 unstable sample(s)" in out.stdout  # q1, on both sides
    report = md.read_text()
    assert "**Unstable samples** (2)" in report
    unstable = [line for line in report.splitlines() if "`q1`" in line]
    assert len(unstable) == 2 and all("4, 3, 4" in line and "`judge_overall`" in line for line in unstable)
    assert "`q0`" not in report and "`q2`" not in report
