"""`python -m evaluators gate` on the issue-34 scenarios: a halving of correctness on 20 questions fails however
many metrics are gated, seeded regressions of several sizes at n = 20, 50, 200 get the expected verdict, identical
and flaky re-runs pass, and --margin / --require-mde decide as documented. Runs are written to a real DuckDB store."""
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from evaluators.maths.power import minimum_detectable_effect
from evaluators.metrics import REGISTRY
from evaluators.presentation.gate import NOT_NONINFERIOR, REGRESSION, gate
from evaluators.queries.headline import HEADLINE
from evaluators.store import close_store
from tests.helpers.cli import cli
from tests.helpers.gate_runs import gate_runs, halving


@pytest.fixture(scope="module")
def halved(tmp_path_factory):
    """v1, v2 (half of v1's right answers replaced by refusals) and a re-run of v1's files, every catalogue metric."""
    v1, v2 = halving()
    db, store, base, made = gate_runs(tmp_path_factory.mktemp("halving"), v1, {"v2": v2, "rerun": v1})
    close_store(db)  # the CLI opens the file itself
    yield {"db": db, "v1": base, **made}
    close_store(db)


def gate_cli(runs, candidate, *extra):
    return cli("gate", runs[candidate], "--baseline", runs["v1"], *extra, db=runs["db"])


def test_the_scenario_is_the_issues_halving(halved):
    v1, v2 = halving()
    assert np.mean(v1["answer_class"]) == pytest.approx(0.8) and np.mean(v2["answer_class"]) == pytest.approx(0.4)


@pytest.mark.parametrize("metrics", [None, HEADLINE, list(REGISTRY)], ids=["default", "7 headline", "all"])
def test_a_halving_of_correctness_fails_however_many_metrics_are_gated(halved, metrics, tmp_path):
    extra = () if metrics is None else ("--metrics", ",".join(metrics))
    xml = tmp_path / "gate.xml"
    out = gate_cli(halved, "v2", *extra, "--junit", str(xml))
    assert out.returncode == 1, out.stdout + out.stderr
    gated = list(HEADLINE) if metrics is None else list(metrics)
    directed = [m for m in gated if REGISTRY[m].direction]
    assert f"Westfall-Young max-T over the {len(directed)} gated metrics" in out.stdout
    regressions = {line.split()[1] for line in out.stdout.splitlines() if line.startswith("REGRESSION ")}
    assert {"answer_class", "verdict", "answer_correctness_f1", "judge_overall"} <= regressions
    rows = [line for line in out.stdout.splitlines() if "(m): delta" in line and not line.startswith("REGRESSION")]
    assert len(rows) == len(gated) and all(" MDE " in line for line in rows)  # each gated metric's MDE
    # 20 questions can barely see a halving: the verdict says so
    assert "cannot detect drops smaller than 0.33" in out.stdout.splitlines()[-1]
    cases = ET.parse(xml).getroot().findall("./testsuite/testcase")
    assert len(cases) == len(gated) and all(" MDE " in _said(c) for c in cases)


def _said(case) -> str:
    """A JUnit testcase's text: its failure's, its output's or its skip message."""
    if case.find("failure") is not None:
        return case.find("failure").text
    return case.find("system-out").text if case.find("system-out") is not None else case.find("skipped").get("message")


def test_an_identical_rerun_passes_and_says_what_it_cannot_see(halved, tmp_path):
    md = tmp_path / "gate.md"
    out = gate_cli(halved, "rerun", "--metrics", ",".join(REGISTRY), "--markdown", str(md))
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines()[-1].startswith("gate PASSED: no regression")
    report = md.read_text()
    assert "| p (family) |" in report and "| MDE |" in report
    assert "**Power**: cannot detect drops smaller than" in report
    directed = sum(m.direction != 0 for m in REGISTRY.values())  # every metric but those with no better direction
    assert f"Westfall-Young max-T over the {directed} gated metrics" in report


def test_require_mde_fails_when_the_golden_set_is_too_small(halved, tmp_path):
    xml = tmp_path / "gate.xml"
    out = gate_cli(halved, "rerun", "--require-mde", "answer_class=0.1", "--junit", str(xml))
    assert out.returncode == 1, out.stdout + out.stderr
    assert "MDE TOO LARGE answer_class (m): this golden set cannot detect a change of 0.100" in out.stdout
    assert "--require-mde answer_class=0.1 not met" in out.stdout and "1 required MDE(s) not met" in out.stdout
    failed = [c for c in ET.parse(xml).getroot().findall("./testsuite/testcase") if c.find("failure") is not None]
    assert [c.get("classname") for c in failed] == ["ragscope.gate.require-mde"]
    assert gate_cli(halved, "rerun", "--require-mde", "answer_class=0.5").returncode == 0


def test_a_margin_asks_the_interval_to_show_non_inferiority(halved):
    ok = gate_cli(halved, "rerun", "--margin", "answer_class=0.05")  # CI [0, 0]: not worse by 0.05
    assert ok.returncode == 0, ok.stdout + ok.stderr
    halving_ = gate_cli(halved, "v2", "--margin", "answer_class=0.5")  # CI [-0.6, -0.2] reaches below -0.5
    assert halving_.returncode == 1 and "NOT NON-INFERIOR answer_class (m)" in halving_.stdout
    assert "margin 0.500" in halving_.stdout


@pytest.mark.parametrize("args, message", [
    (("--margin", "answer_class"), "--margin 'answer_class' is not METRIC=DELTA"),
    (("--margin", "answer_class=x"), "--margin 'answer_class=x': 'x' is not a number"),
    (("--margin", "answer_class=-0.1"), "--margin answer_class=-0.1: a margin is a number >= 0"),
    (("--margin", "nope=0.1"), "--margin: unknown metric id(s): nope"),
    (("--margin", "rouge_l=0.1"), "--margin: margin for rouge_l, which is not gated"),
    (("--margin", "verdict=0.1", "--tolerance", "verdict=0.1"), "--tolerance and --margin both given for verdict"),
    (("--require-mde", "answer_class=0"), "--require-mde answer_class=0.0: a required MDE is a number > 0"),
    (("--require-mde", "answer_class=nan"), "--require-mde answer_class=nan"),
    (("--require-mde", "answer_class=0.1", "--require-mde", "answer_class=0.2"),
     "--require-mde for answer_class is given twice"),
])
def test_bad_flag_values_exit_2_naming_the_flag_and_value(halved, args, message):
    out = gate_cli(halved, "v2", *args)
    assert out.returncode == 2 and message in out.stderr, out.stderr


# -- seeded regressions of several sizes ---------------------------------------------------------------------------

SEEDED = ("faithfulness", "context_recall", "judge_overall")


def _seeded(n, drop, seed):
    """n questions, each metric's quality uniform in [0.2, 1]; each run's judge sees it with its own noise (SD 0.15
    of the range, clipped to the range), the candidate's less `drop`: a real drop of `drop` (share of range) on
    every metric, and with drop 0 two runs of the same distribution."""
    rng = np.random.default_rng(seed)
    base, cand = {}, {}
    for metric in SEEDED:
        q = rng.uniform(0.2, 1, n)
        scale = REGISTRY[metric].range
        base[metric] = list(scale.value(np.clip(q + rng.normal(0, 0.15, n), 0, 1)))
        cand[metric] = list(scale.value(np.clip(q - drop + rng.normal(0, 0.15, n), 0, 1)))
    return base, cand


@pytest.mark.parametrize("n, drop, fails", [
    (20, 0.35, True), (20, 0.0, False), (20, 0.03, False),  # a small drop at n=20 is below what 20 can see
    (50, 0.2, True), (50, 0.0, False),
    (200, 0.1, True), (200, 0.0, False), (200, -0.1, False),  # a rise is not a regression
])
def test_seeded_regressions_get_the_expected_verdict(tmp_path, n, drop, fails):
    base, cand = _seeded(n, drop, seed=n)
    db, store, baseline, made = gate_runs(tmp_path, base, {"v2": cand})
    try:
        result = gate(store, made["v2"], baseline, metrics=list(SEEDED))
    finally:
        close_store(db)
    assert result.passed is not fails, result.rows[["metric", "delta", "ci_low", "ci_high", "p_family", "mde"]]
    if fails:
        assert set(result.regressions["metric"]) == set(SEEDED) and (result.regressions["verdict"] == REGRESSION).all()
    # the MDE is that of differences spreading by about 0.21 of the range (less where clipped at 0 or 1)
    mde = result.rows.set_index("metric")["mde"] / [REGISTRY[m].range.width for m in SEEDED]
    low, high = minimum_detectable_effect(n, 0.12), minimum_detectable_effect(n, 0.25)
    assert ((low < mde) & (mde < high)).all(), mde
    if n >= 50:  # the MDE is below a tenth of the range: nothing to warn of
        assert result.blind.empty
    elif drop < 0.1:  # 20 questions cannot see a tenth of the range, and the passing verdict says so
        assert set(result.blind["metric"]) == set(SEEDED)


# -- a judge whose repeated replies disagree -------------------------------------------------------------------------

def test_flaky_judge_repeats_do_not_flip_the_verdict(tmp_path):
    """Re-judging the same answers with a judge that wavers by one point on a third of the questions (in both
    directions): the re-run passes, the halving still fails, and the wavering samples are listed."""
    v1, v2 = halving()
    rng = np.random.default_rng(7)
    rounded = [float(round(v)) for v in v1["judge_overall"]]
    repeats, values = [], []
    for i, v in enumerate(rounded):
        if i % 3 == 0:
            wobble = [v, v + (1 if v < 5 else -1), v] if rng.random() < 0.5 else [v, v - (1 if v > 1 else -1), v]
        else:
            wobble = [v, v, v]
        repeats.append(wobble)
        values.append(float(np.median(wobble)))
    base = {**v1, "judge_overall": rounded}
    flaky = {**v1, "judge_overall": values}
    halved_flaky = {**v2, "judge_overall": [1.0 if i < 8 else values[i] for i in range(20)]}
    db, store, baseline, made = gate_runs(tmp_path, base, {"flaky": flaky, "v2": halved_flaky},
                                          repeats={"flaky": {"judge_overall": repeats},
                                                   "v2": {"judge_overall": [None] * 8 + repeats[8:]}})
    try:
        again = gate(store, made["flaky"], baseline, metrics=list(HEADLINE))
        halved_ = gate(store, made["v2"], baseline, metrics=list(HEADLINE))
    finally:
        close_store(db)
    assert again.passed and len(again.unstable) == 7  # q0, q3, ..., q18
    assert not halved_.passed and {"answer_class", "judge_overall"} <= set(halved_.regressions["metric"])
    assert NOT_NONINFERIOR not in set(again.rows["verdict"])
