import json

import pytest

from evaluators import loaders
from evaluators.runs import engine, lifecycle
from evaluators.records.judgments import CONTRADICTED as C, NOT_FOUND as N, SUPPORTED as S
from evaluators.records.judgments import ChunkRelevance, ClaimMatrix, Holistic, JudgeFailure, aggregate
from evaluators.metrics import REGISTRY
from evaluators.metrics.composite import ragas_from_results
from evaluators.metrics import rubric as rubric_module
from evaluators.metrics.rubric import (CONTRADICTED, GROUNDED, RUBRIC_IDS, answer_contradicted_by_reference,
                                       judged_rubric, offline_rubric, overall_weights)
from evaluators.records import JUDGE_ERROR, NOT_APPLICABLE, OK, TIMEOUT, Result, not_applicable
from evaluators.store import close_store, open_store
from tests.helpers.seed_000 import SEED_000_HOLISTIC


@pytest.fixture
def equal_weights(tmp_path, monkeypatch):
    """judge_overall as the plain mean of the dimensions that apply (every weight 1/4), for the mapping's arithmetic
    and the verdict's thresholds; the shipped weights are tested on their own."""
    path = tmp_path / "overall.json"
    path.write_text(json.dumps({"weights": dict.fromkeys(("correctness", "completeness", "faithfulness", "relevance"),
                                                         0.25)}))
    monkeypatch.setattr(rubric_module, "OVERALL_WEIGHTS", path)
    overall_weights.cache_clear()
    yield
    overall_weights.cache_clear()


def claims(**overrides):
    base = {
        "answer_correctness_f1": Result(0.8, detail="TP 4, FP 1, FN 1"),
        "completeness": Result(0.75),
        "faithfulness": Result(1.0),
        "wp_precision": Result(2 / 3),
        "wp_recall": Result(1.0),
        "context_precision": Result(0.5),
        "context_recall": Result(0.5),
        CONTRADICTED: Result(0.25),
    }
    base.update(overrides)
    return base


REL = Result(60.0, detail="offline: direct question-answer cosine")


def rubric(claims_: dict, relevance: Result, dont_know: str | None) -> dict:
    """offline_rubric, with the correctness scorer's P(correct) played by the claims'
    answer_correctness_f1 entry (the mapping treats both as a ratio in [0, 1]) and, unless given,
    the faithfulness rating's input by faithfulness."""
    claims_ = dict(claims_)
    claims_.setdefault(GROUNDED, claims_["faithfulness"])
    return offline_rubric(claims_, relevance, dont_know, claims_.pop("answer_correctness_f1"))


def label(r: Result) -> str:
    return r.detail.split(" (")[0]


# ----------------------------------------------------------------------------- pure mapping

def test_the_mapping_exactly_on_hand_built_claim_results(equal_weights):
    out = rubric(claims(), REL, None)
    assert list(out) == list(RUBRIC_IDS)
    assert out["judge_correctness"].value == 4.2  # 1 + 4 x 0.8
    assert out["wp_correctness"].value == 4.2
    assert out["judge_completeness"].value == 4.0  # 1 + 4 x 0.75
    assert out["judge_faithfulness"].value == 5.0
    assert out["judge_relevance"].value == 3.4  # 1 + 4 x 0.60
    assert out["wp_relevance"].value == 3.4
    assert out["judge_clarity"].status == NOT_APPLICABLE and "clarity" in out["judge_clarity"].detail
    # mean(4.2, 4.0, 5.0, 3.4) = 4.15 -> 4.2: rounded half up, not half to even
    assert out["judge_overall"].value == 4.2
    assert out["verdict"].value == 1.0 and label(out["verdict"]) == "pass"
    # seed 000: 0.4 x 4.2 + 0.2 x 5 + 0.2 x (1 + 8/3) + 0.2 x 5 + 0 x 3.4
    assert out["wp_overall"].value == round(0.4 * 4.2 + 0.2 * 5 + 0.2 * (1 + 8 / 3) + 0.2 * 5, 2) == 4.41
    # seed 003 GEval: 0.5 x 80 + 0.3 x 75 + 0.2 x (100 - 25) = 77.5
    assert out["factual_accuracy"].value == 77.5
    assert "consistency 75.0" in out["factual_accuracy"].detail
    assert out["accuracy_grade"].value == 0.75 and label(out["accuracy_grade"]) == "B"
    assert out["answer_class"].value == 1.0 and label(out["answer_class"]) == "CORRECT"
    assert all(r.status == OK for k, r in out.items() if k != "judge_clarity")
    assert out["judge_correctness"].detail.startswith("offline mapping: 1 + 4 x P(correct) 0.800")


@pytest.mark.parametrize("f1, comp, faith, rel, overall, verdict, value", [
    (1.0, 1.0, 1.0, 75.0, 4.8, "pass", 1.0),
    (0.75, 0.75, 0.75, 75.0, 4.0, "pass", 1.0),    # overall exactly 4 -> pass (seed 001)
    (0.5, 0.5, 0.75, 50.0, 3.3, "partial", 0.5),   # 3.25 -> 3.3 (half up)
    (0.75, 0.75, 0.75, 72.5, 4.0, "pass", 1.0),     # 3.975 -> 4.0 -> pass: the verdict follows the shown score
    (0.5, 0.5, 0.5, 50.0, 3.0, "partial", 0.5),     # exactly 3 -> partial
    (0.25, 0.5, 0.5, 25.0, 2.5, "fail", 0.0),
    (0.0, 0.0, 0.0, 0.0, 1.0, "fail", 0.0),
])
def test_verdict_thresholds_from_the_overall_score(f1, comp, faith, rel, overall, verdict, value, equal_weights):
    out = rubric(claims(answer_correctness_f1=Result(f1), completeness=Result(comp),
                                faithfulness=Result(faith)), Result(rel), None)
    assert out["judge_overall"].value == overall
    assert label(out["verdict"]) == verdict and out["verdict"].value == value


@pytest.mark.parametrize("f1, comp, contradicted, accuracy, grade, value", [
    (1.0, 1.0, 0.0, 100.0, "A", 1.0),
    (0.6, 1.0, 0.0, 80.0, "A", 1.0),       # 30 + 30 + 20: exactly 80 -> A
    (0.6, 0.6, 0.0, 68.0, "B", 0.75),
    (0.4, 0.4, 0.5, 42.0, "C", 0.5),       # 20 + 12 + 10
    (0.2, 0.0, 0.0, 30.0, "D", 0.25),      # 10 + 0 + 20
    (0.0, 0.0, 1.0, 0.0, "E", 0.0),
])
def test_factual_accuracy_and_grades(f1, comp, contradicted, accuracy, grade, value):
    out = rubric(claims(answer_correctness_f1=Result(f1), completeness=Result(comp),
                                **{CONTRADICTED: Result(contradicted)}), REL, None)
    assert out["factual_accuracy"].value == pytest.approx(accuracy)
    assert label(out["accuracy_grade"]) == grade and out["accuracy_grade"].value == value


def test_overall_rates_the_dimensions_that_apply(equal_weights):
    # no retrieved chunks: seed 000's 'No context to verify.' 5.0 is a default, left out of the mean
    no_context = offline_rubric(dict(claims(), **{GROUNDED: Result(1.0)}), REL, None, Result(0.8), has_context=False)
    assert no_context["judge_overall"].value == 3.9  # mean(4.2, 4.0, 3.4) = 3.87
    assert "not rated: faithfulness" in no_context["judge_overall"].detail
    # no reference either: correctness and completeness do not apply, relevance alone rates the answer
    free = offline_rubric(dict(claims(completeness=not_applicable("no reference")), **{GROUNDED: Result(1.0)}), REL,
                          None, not_applicable("no reference"), has_context=False)
    assert free["judge_overall"].value == 3.4 and free["judge_overall"].status == OK
    assert free["verdict"].label == "partial" and free["judge_correctness"].status == NOT_APPLICABLE
    # nothing applies: not applicable, never a silent number
    none = offline_rubric(dict(claims(completeness=not_applicable("no reference")), **{GROUNDED: Result(1.0)}),
                          not_applicable("the question is empty"), None, not_applicable("no reference"),
                          has_context=False)
    assert none["judge_overall"].status == NOT_APPLICABLE


def test_the_shipped_overall_weights_are_applied():
    w = overall_weights()
    assert set(w) == {"correctness", "completeness", "faithfulness", "relevance"} and w["relevance"] > 0
    out = rubric(claims(), REL, None)  # correctness 4.2, completeness 4.0, faithfulness 5.0, relevance 3.4
    mean = (4.2 * w["correctness"] + 4.0 * w["completeness"] + 5.0 * w["faithfulness"] + 3.4 * w["relevance"]) / sum(
        w.values())
    assert out["judge_overall"].value == pytest.approx(mean, abs=0.05)
    assert f"correctness 4.20 x {w['correctness']:g}" in out["judge_overall"].detail
    # an answer with neither reference nor chunks is still rated, on relevance alone
    free = offline_rubric(dict(claims(completeness=not_applicable("no reference")), **{GROUNDED: Result(1.0)}), REL,
                          None, not_applicable("no reference"), has_context=False)
    assert free["judge_overall"].value == 3.4


def test_the_overall_weights_beat_the_best_baseline_on_every_set_left_out():
    fitted = json.loads(rubric_module.OVERALL_WEIGHTS.read_text())
    assert set(fitted["leave_one_set_out"]) == {"evouna", "squality"}
    for name, held_out in fitted["leave_one_set_out"].items():
        assert held_out["difference"] > 0, name  # fitted without the set, better than overlap on it
        assert fitted["fitted"][name]["statistic"] > fitted["plain_mean"][name]  # and better than the plain mean
    assert sum(fitted["weights"].values()) == pytest.approx(1.0)


def test_answer_class_threshold_and_dont_know_first():
    assert label(rubric(claims(answer_correctness_f1=Result(0.5)), REL, None)["answer_class"]) == "CORRECT"
    wrong = rubric(claims(answer_correctness_f1=Result(0.49)), REL, None)["answer_class"]
    assert label(wrong) == "WRONG" and wrong.value == 0.0
    # DON'T KNOW wins over a passing correctness and over a failed one
    dk = rubric(claims(answer_correctness_f1=Result(1.0)), REL, "i don't know")["answer_class"]
    assert label(dk) == "DON'T KNOW" and dk.value == 0.0 and "i don't know" in dk.detail
    failed = rubric(claims(answer_correctness_f1=Result(None, JUDGE_ERROR, "x")), REL, "not sure")
    assert failed["answer_class"].status == OK and label(failed["answer_class"]) == "DON'T KNOW"


def test_a_not_ok_input_propagates_its_status_and_names_the_input():
    out = rubric(claims(answer_correctness_f1=Result(None, JUDGE_ERROR, "no verdict for 2 of 3")), REL, None)
    for mid in ("judge_correctness", "wp_correctness", "judge_overall", "verdict", "factual_accuracy",
                "accuracy_grade", "answer_class", "wp_overall"):
        assert out[mid].status == JUDGE_ERROR and out[mid].value is None, mid
        assert "P(correct)" in out[mid].detail or "judge_overall" in out[mid].detail \
            or "factual_accuracy" in out[mid].detail, mid
    assert "input P(correct) is judge_error (no verdict for 2 of 3)" in out["judge_correctness"].detail
    # the others are untouched
    assert out["judge_completeness"].status == OK and out["judge_relevance"].status == OK

    na = rubric(claims(answer_correctness_f1=not_applicable("no claims on either side")), REL, None)
    assert na["judge_correctness"].status == NOT_APPLICABLE and na["answer_class"].status == NOT_APPLICABLE
    # an error beats not_applicable when several inputs are missing
    mixed = rubric(claims(answer_correctness_f1=not_applicable("none"),
                                  completeness=Result(None, TIMEOUT, "slow")), REL, None)
    assert mixed["judge_overall"].status == TIMEOUT and "completeness is timeout" in mixed["judge_overall"].detail
    # a missing relevance reaches relevance and overall only
    no_rel = rubric(claims(), Result(None, JUDGE_ERROR, "embedding failed"), None)
    assert no_rel["judge_relevance"].status == JUDGE_ERROR and no_rel["judge_overall"].status == JUDGE_ERROR
    assert no_rel["factual_accuracy"].status == OK
    # a missing key is skipped, never a silent 0
    partial = {k: v for k, v in claims().items() if k != CONTRADICTED}
    assert rubric(partial, REL, None)["factual_accuracy"].status == "skipped"


def test_wp_overall_leaves_out_a_not_applicable_precision_but_not_an_error():
    out = rubric(claims(wp_precision=not_applicable("no retrieved context")), REL, None)
    # (0.4 x 4.2 + 0.2 x 5 + 0.2 x 5) / 0.8
    assert out["wp_overall"].value == round((0.4 * 4.2 + 0.2 * 5 + 0.2 * 5) / 0.8, 2)
    assert "wp_precision" in out["wp_overall"].detail
    err = rubric(claims(wp_precision=Result(None, JUDGE_ERROR, "x")), REL, None)
    assert err["wp_overall"].status == JUDGE_ERROR


def test_contradicted_share_from_the_matrix():
    m = ClaimMatrix(("a", "b", "c", "d"), ("r",), ("1",), ((S,), (S,), (N,), (C,)), ((S,),),
                    (S, C, N, C), (S,), (ChunkRelevance(True),))
    assert answer_contradicted_by_reference(m).value == 0.5
    empty = ClaimMatrix((), ("r",), (), ((),) * 0, ((),), (), (N,), ())
    assert answer_contradicted_by_reference(empty).value == 0.0
    missing = ClaimMatrix(("a",), (), (), ((),), (), (None,), (), ())
    assert answer_contradicted_by_reference(missing).status == JUDGE_ERROR


# ----------------------------------------------------------------------------- ragas_score

def test_ragas_score_reproduces_seed_003():
    local = ragas_from_results({"faithfulness": Result(1.0), "context_precision": not_applicable("NaN"),
                                "context_recall": Result(1.0), "answer_relevance": Result(83.27)})
    assert local.value == 93.73
    assert "context_precision" in local.detail and "renormalised" in local.detail
    basic = ragas_from_results({"faithfulness": Result(0.0), "context_precision": Result(0.0),
                                "context_recall": Result(0.0), "answer_relevance": Result(83.27)})
    assert basic.value == 24.98
    llm = ragas_from_results({k: not_applicable("N/A") for k in ("faithfulness", "context_precision",
                                                                   "context_recall")}
                             | {"answer_relevance": Result(82.29)})
    assert llm.value == 82.29
    nothing = ragas_from_results({k: not_applicable("N/A") for k in ("faithfulness", "context_precision",
                                                                       "context_recall", "answer_relevance")})
    assert nothing.status == NOT_APPLICABLE and nothing.value is None
    failed = ragas_from_results({"faithfulness": Result(None, JUDGE_ERROR, "no verdict"),
                                 "context_precision": Result(1.0), "context_recall": Result(1.0),
                                 "answer_relevance": Result(80.0)})
    assert failed.status == JUDGE_ERROR and "faithfulness" in failed.detail


# ----------------------------------------------------------------------------- an LLM judge's ratings

def holistic(**overrides) -> Holistic:
    """The case study's holistic reply, parsed as the LLM judge parses it, with `overrides`."""
    return Holistic.model_validate({**SEED_000_HOLISTIC, **overrides})


def test_judged_rubric_takes_the_ratings_and_applies_the_seeds_formulas():
    # The white paper's case study: correctness 3.0 and relevance 4.0 rated; faithfulness 1.0, precision 2/3
    # and recall 1.0 from the claim matrix project onto 5.0, 3.67 and 5.0.
    out = judged_rubric(holistic(), claims(faithfulness=Result(1.0), wp_precision=Result(2 / 3),
                                           wp_recall=Result(1.0)), None)
    assert list(out) == list(RUBRIC_IDS) and all(r.status == OK for r in out.values())
    assert [out[i].value for i in ("judge_correctness", "judge_completeness", "judge_faithfulness",
                                   "judge_relevance", "judge_clarity", "judge_overall")] == [3, 3, 5, 4, 4, 4]
    assert out["judge_overall"].detail == "LLM judge: Both name benefits and risks; the answer is not fully aligned."
    assert (out["verdict"].value, label(out["verdict"])) == (1.0, "pass")
    assert (out["wp_correctness"].value, out["wp_relevance"].value) == (3.0, 4.0)
    assert out["wp_correctness"].detail == "LLM judge: The answer overlaps partially with the reference."
    # 0.4 x 3 + 0.2 x 5 + 0.2 x (1 + 8/3) + 0.2 x 5 + 0 x 4 = 3.9333 -> 3.93
    assert out["wp_overall"].value == 3.93
    assert "faithfulness 5.00, precision 3.67, recall 5.00" in out["wp_overall"].detail
    # GEval: 0.5 x 85 + 0.3 x 70 + 0.2 x 95 = 82.5 -> A
    assert out["factual_accuracy"].value == 82.5
    assert "completeness: Misses 'mostly exciting'." in out["factual_accuracy"].detail
    assert (out["accuracy_grade"].value, label(out["accuracy_grade"])) == (1.0, "A")
    assert (out["answer_class"].value, label(out["answer_class"])) == (1.0, "CORRECT")


def test_the_verdict_is_recomputed_from_overall_and_a_disagreeing_judge_is_noted():
    out = judged_rubric(holistic(verdict="pass", overall_score=3), claims(), None)
    assert label(out["verdict"]) == "partial" and out["verdict"].value == 0.5
    assert "the judge said 'pass'" in out["verdict"].detail
    assert judged_rubric(holistic(overall_score=2), claims(), None)["verdict"].value == 0.0


def test_dont_know_comes_before_the_judges_class_and_survives_a_failed_call():
    out = judged_rubric(holistic(classification="CORRECT"), claims(), "i don't know")
    assert (out["answer_class"].value, label(out["answer_class"])) == (0.0, "DON'T KNOW")
    assert label(judged_rubric(holistic(classification="WRONG"), claims(), None)["answer_class"]) == "WRONG"

    failed = judged_rubric(JudgeFailure(TIMEOUT, "no reply within 60 s"), claims(), "not sure")
    assert label(failed["answer_class"]) == "DON'T KNOW"
    assert {r.status for k, r in failed.items() if k != "answer_class"} == {TIMEOUT}
    assert failed["judge_overall"].detail == "holistic call: no reply within 60 s"


def test_judged_wp_overall_leaves_out_precision_without_context_and_fails_with_a_failed_claim():
    no_context = judged_rubric(holistic(), claims(wp_precision=not_applicable("no retrieved context")), None)
    # (0.4 x 3 + 0.2 x 5 + 0.2 x 5) / 0.8 = 4.0
    assert no_context["wp_overall"].value == 4.0 and "left out" in no_context["wp_overall"].detail
    broken = judged_rubric(holistic(), claims(faithfulness=Result(None, JUDGE_ERROR, "no verdicts")), None)
    assert broken["wp_overall"].status == JUDGE_ERROR and broken["judge_overall"].status == OK


# ----------------------------------------------------------------------------- catalogue and engine

def test_catalogue_entries():
    for mid in RUBRIC_IDS:
        m = REGISTRY[mid]
        assert m.family == "rubric" and "judge" in m.needs, mid
        if mid not in ("verdict", "accuracy_grade"):  # derived the same way under every judge
            assert "LLM judge" in m.formula and "offline" in m.formula.lower(), mid  # both paths described
    assert {mid: REGISTRY[mid].scale for mid in ("verdict", "accuracy_grade", "answer_class")} == dict.fromkeys(
        ("verdict", "accuracy_grade", "answer_class"), "label")
    assert REGISTRY["factual_accuracy"].scale == "percent" and REGISTRY["judge_overall"].scale == "likert"
    r = REGISTRY["ragas_score"]
    assert (r.family, r.scale, r.seed, "judge" in r.needs) == ("composite", "percent", "003", True)


GOLDEN = [
    {"question_id": "q1", "question": "What is the capital of France?", "reference": "The capital of France is Paris."},
    {"question_id": "q2", "question": "How many moons does Mars have?", "reference": "Mars has two moons."},
]
OUTPUTS = [
    {"question_id": "q1", "method": "rag", "answer": "The capital of France is Paris.",
     "contexts": ["Paris is the capital of France.", "Bananas are yellow."]},
    {"question_id": "q2", "method": "rag", "answer": "I don't know.", "contexts": ["Mars has two moons."]},
    {"question_id": "q1", "method": "llm", "answer": "The capital of France is Paris.", "contexts": []},
]


def _write_jsonl(path, rows):
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_engine_fills_rubric_and_composite_cells_as_offline(tmp_path):
    path = tmp_path / "r.duckdb"
    store = open_store(path)
    try:
        golden = store.save_dataset(loaders.load(_write_jsonl(tmp_path / "g.jsonl", GOLDEN), role="golden"))
        outputs = store.save_dataset(loaders.load(_write_jsonl(tmp_path / "o.jsonl", OUTPUTS), role="outputs"))
        ids = [*RUBRIC_IDS, "ragas_score"]
        run_id = lifecycle.start_stored(store, golden.dataset_id, [outputs.dataset_id], lifecycle.RunSpec(metrics=ids))
        engine.execute_run(store, run_id)
        rows = store.cursor().execute(
            "SELECT question_id, method, metric, value, norm, status, judge, detail FROM scores WHERE run_id = ?",
            [run_id]).fetchall()
    finally:
        close_store(path)
    cells = {(q, m, metric): (v, n, s, j, d) for q, m, metric, v, n, s, j, d in rows}
    assert len(cells) == 3 * len(ids)
    assert {j for *_, j, _ in cells.values()} == {"offline"}
    for (q, m, metric), (v, n, s, j, d) in cells.items():
        assert (s == "ok") == (v is not None), (q, m, metric)
        if metric == "judge_clarity":
            assert s == "not_applicable"
        elif not (q == "q2" and metric not in ("answer_class", "judge_relevance", "wp_relevance", "judge_faithfulness")):
            assert s == "ok", (q, m, metric, d)
    # identical answer and reference: correct, pass, grade A
    assert cells[("q1", "rag", "judge_correctness")][0] == 5.0
    assert cells[("q1", "rag", "answer_class")][4].startswith("CORRECT")
    assert cells[("q1", "rag", "accuracy_grade")][4].startswith("A")
    assert cells[("q1", "rag", "verdict")][4].split()[0] in ("pass", "partial", "fail")
    assert cells[("q1", "rag", "verdict")][1] == cells[("q1", "rag", "verdict")][0]  # label norm = value
    assert cells[("q2", "rag", "answer_class")][4].startswith("DON'T KNOW")
    assert cells[("q2", "rag", "answer_class")][0] == 0.0
    # no retrieved context: ragas_score is answer relevance alone (seed 003's llm_with_context row)
    ragas = cells[("q1", "llm", "ragas_score")]
    assert ragas[2] == "ok" and "answer_relevance" in ragas[4] and "faithfulness" not in ragas[4].split("; left")[0]
    assert 0 <= cells[("q1", "rag", "ragas_score")][0] <= 100


def test_several_replies_score_with_the_mean_and_the_majority_and_keep_every_value():
    replies = [holistic(overall_score=o, correctness=o, classification=c, step1_correctness={"score": g})
               for o, c, g in ((3, "WRONG", 60), (4, "CORRECT", 80), (4, "CORRECT", 91))]
    h = aggregate(replies)
    assert h.ratings["overall"] == 3.67 and h.ratings["faithfulness"] == 5  # half up to 2 digits
    assert h.classification == "CORRECT" and h.step1_correctness.score == 77.0 and h.repeats == tuple(replies)
    assert aggregate(replies[:1]) is replies[0]
    assert aggregate(replies[:2]).classification == "WRONG"  # a tie goes to the earlier reply

    cells = judged_rubric(h, claims(faithfulness=Result(1.0), wp_precision=Result(2 / 3), wp_recall=Result(1.0)), None)
    assert cells["judge_overall"].value == 3.67 and cells["judge_overall"].repeats == (3.0, 4.0, 4.0)
    assert cells["verdict"].value == 0.5 and cells["verdict"].repeats == (0.5, 1.0, 1.0)  # partial from 3.67
    assert cells["answer_class"].repeats == (0.0, 1.0, 1.0)
    assert cells["judge_overall"].detail.endswith("; mean or majority of 3 replies")
    assert label(cells["verdict"]) == "partial" and label(cells["answer_class"]) == "CORRECT"
    assert judged_rubric(replies[0], claims(faithfulness=Result(1.0), wp_precision=Result(2 / 3), wp_recall=Result(1.0)), None)["judge_overall"].repeats == ()
