"""Each seed formula, tied to the score it produces in the store: a real engine run (evaluators.runs.engine, a DuckDB
file) over the seeds' worked examples, judged by the scripted OpenAI-compatible server on 127.0.0.1
(tests/helpers/openai_server.py) and, for the offline mapping, by the offline judge. Every stored value must be the
formula's result on the judge's counts and, where the seed prints one, the seed's number: a metric that stops
calling its formula, or a formula whose weight changes, fails here.
"""
from __future__ import annotations


import pytest

from evaluators.runs import engine, lifecycle
from evaluators.maths import formulas
from evaluators.runs.planning import plan
from evaluators.maths.formulas import half_up
from evaluators.judges import prompts
from evaluators.metrics import REGISTRY
from evaluators.metrics.semantic import bertscores
from evaluators.store import close_store, open_store
from tests.helpers.openai_server import Reply
from tests.helpers.seed_000 import (SEED_000_ANSWER, SEED_000_CHUNKS, SEED_000_EXTRACTION, SEED_000_HOLISTIC,
                                     SEED_000_QUESTION, SEED_000_REFERENCE)
from tests.helpers.llm_runs import C, N, S, verification, write_jsonl, holistic, judged_by_llm

ERICA_CHUNKS = [f"[Source {900 + i}]: book metadata, page {i}." for i in range(1, 17)]
ERICA_CHUNKS[1] = "On the cliffs grows the erica vagans--the lovely Cornish heath."
ERICA_CHUNKS[6] = "Erica vagans, which the people here call the Cornish heath, covers the downs."


# question_id -> the sample (question, reference, answer, chunks) and the judge's replies: its claims, each claim's
# verdicts by chunk index (not_found elsewhere) and against the other side, the relevant chunks, the holistic reply.
SAMPLES = {
    # seed 000's case study: faithfulness 2/2 -> 5.0, precision 2/3 -> 3.7, recall 2/2 -> 5.0, correctness 3,
    # relevance 4; GEval 85/70/95 -> 82.5, A
    "case": dict(question=SEED_000_QUESTION, reference=SEED_000_REFERENCE, answer=SEED_000_ANSWER,
                 chunks=list(SEED_000_CHUNKS), extraction=SEED_000_EXTRACTION,
                 answer_claims=[({0: S}, S), ({1: S}, S)], reference_claims=[({0: S}, S), ({1: S}, S)],
                 relevant={0, 1}, holistic=SEED_000_HOLISTIC),
    # seed 002's Einstein example: TP 2, FP 2, FN 1 -> F1 2/3.5 = 0.57; no retrieved context (seeds 000, 003)
    "einstein": dict(question="Tell me about Albert Einstein.",
                     reference="Einstein was born in 1879 in Germany and developed the theory of relativity.",
                     answer="Einstein was born in 1879 in Spain, developed the theory of relativity and won the "
                            "Nobel Prize in Physics in 1921.", chunks=[],
                     extraction={"answer_claims": ["Einstein was born in 1879.", "Einstein was born in Spain.",
                                                   "Einstein developed the theory of relativity.",
                                                   "Einstein won the Nobel Prize in Physics in 1921."],
                                 "reference_claims": ["Einstein was born in 1879.", "Einstein was born in Germany.",
                                                      "Einstein developed the theory of relativity."]},
                     answer_claims=[({}, S), ({}, C), ({}, S), ({}, N)], reference_claims=[({}, S), ({}, C), ({}, S)],
                     relevant=set(), holistic=holistic(3, (80, 60, 40), "WRONG")),
    # seed 002's faithfulness example: 4 of 4 facts of the response in the retrieved text -> 1
    "housing": dict(question="What are the legal obligations of landlords in Scotland under the Housing (Scotland) "
                             "Act 2006?",
                    reference="Landlords must meet the repairing standard: wind and watertight structure, working "
                              "installations, smoke detectors and carbon monoxide alarms.",
                    answer="Under the Housing (Scotland) Act 2006, landlords must make sure their properties meet the "
                           "repairing standard. This includes ensuring the structure is wind and watertight, and that "
                           "essential installations like water and heating are functional. The act also mandates "
                           "smoke detectors and carbon monoxide alarms.",
                    chunks=["Landlords are required to ensure that properties meet the repairing standard. This "
                            "includes ensuring the structure is wind and watertight, installations are in proper "
                            "working order, and the property has adequate smoke detectors and carbon monoxide "
                            "alarms."],
                    extraction={"answer_claims": ["Properties must meet the repairing standard.",
                                                  "The structure must be wind and watertight.",
                                                  "Installations like water and heating must be functional.",
                                                  "The property must have smoke detectors and carbon monoxide alarms."],
                                "reference_claims": ["Properties must meet the repairing standard."]},
                    answer_claims=[({0: S}, S)] * 4, reference_claims=[({0: S}, S)], relevant={0},
                    holistic=holistic(5, (100, 100, 100), "CORRECT")),
    # seed 002's context recall example: 3 of 3 ground-truth claims attributable (chunk 2; chunk 3 twice) -> 1.0
    "data_protection": dict(
        question="Under what conditions can personal data be processed according to the Data Protection Act 2018?",
        reference="Personal data can be processed with the data subject's consent, when processing is necessary for "
                  "the performance of a contract, or for compliance with a legal obligation.",
        answer="Personal data can be processed with the data subject's consent.",
        chunks=["Personal data can only be processed if necessary for the public interest.",
                "The Data Protection Act 2018 states that personal data can be processed with the data subject's "
                "consent.",
                "Processing is necessary for the performance of a contract or for compliance with legal obligations."],
        extraction={"answer_claims": ["Personal data can be processed with the data subject's consent."],
                    "reference_claims": ["Consent is required for processing.",
                                         "Contractual necessity is a condition.",
                                         "Legal obligation is another condition."]},
        answer_claims=[({1: S}, S)], reference_claims=[({1: S}, S), ({2: S}, N), ({2: S}, N)], relevant={1, 2},
        holistic=holistic(4, (50, 40, 60), "CORRECT")),
    # seed 002's context precision example: relevances 0, 1, 0 -> AP 0.5; the answer contradicts the reference
    # (no TP -> 0, as seed 002's marriage-age example) and chunk 3 (hallucination 1 of 2)
    "maternity": dict(
        question="What is the statutory maternity leave entitlement in the UK?",
        reference="In the UK, statutory maternity leave is 52 weeks, which consists of 26 weeks of ordinary maternity "
                  "leave and 26 weeks of additional maternity leave.",
        answer="Statutory maternity leave in the UK is 26 weeks, and it is unpaid.",
        chunks=["Statutory maternity leave in the UK is available for up to 26 weeks, and it can be extended under "
                "certain conditions.",
                "Employees are entitled to 52 weeks of maternity leave, with the first 26 weeks being ordinary "
                "maternity leave and the remaining 26 weeks being additional maternity leave.",
                "Statutory maternity pay is provided for up to 39 weeks, but only 90% of average weekly earnings are "
                "paid for the first six weeks."],
        extraction={"answer_claims": ["Statutory maternity leave in the UK is 26 weeks.", "Maternity leave is unpaid."],
                    "reference_claims": ["Statutory maternity leave in the UK is 52 weeks."]},
        answer_claims=[({0: S}, C), ({2: C}, N)], reference_claims=[({1: S}, C)], relevant={1},
        holistic=holistic(2, (10, 10, 50), "WRONG")),
    # seed 003's Erica vagans question: contexts 2 and 7 of 16 relevant; answer = reference ("Cornish heath")
    "erica": dict(question="In the narrative of 'An Unsentimental Journey through Cornwall', which plant known "
                           "scientifically as Erica vagans is also referred to by another common name?",
                  reference="Cornish heath", answer="Cornish heath", chunks=ERICA_CHUNKS,
                  extraction={"answer_claims": ["Erica vagans is also called Cornish heath."],
                              "reference_claims": ["Erica vagans is also called Cornish heath."]},
                  answer_claims=[({1: S, 6: S}, S)], reference_claims=[({1: S, 6: S}, S)], relevant={1, 6},
                  holistic=holistic(5, (95, 100, 100), "CORRECT")),
    # an answer that abstains: DON'T KNOW before any judging (seed 003); faithfulness and hallucination_rate are
    # not applicable (issue 34: no claim of its own to check), not seed 003's 1.0 for an answer with no claims
    "dont_know": dict(question="Within the account of the royal visit to St. Michael's Mount in Cornwall, who is "
                               "identified as the person who married Princess Frederica of Hanover?",
                      reference="Baron Alphonse", answer="I don't know.",
                      chunks=["St. Michael's Mount is a tidal island in Mount's Bay, Cornwall."],
                      extraction={"answer_claims": [],
                                  "reference_claims": ["Baron Alphonse married Princess Frederica of Hanover."]},
                      answer_claims=[], reference_claims=[({}, N)], relevant=set(),
                      holistic=holistic(1, (0, 0, 100), "WRONG")),
}
# The seed's generated questions for answer relevance: the question itself, so the cosines are 1 (seeds 002, 003).
QUESTIONS_ARE_THE_QUESTION = {"erica"}
# (question_id, method, chunks): erica also without context, seed 003's llm_with_context row.
CELLS = [(qid, "local_search", spec["chunks"]) for qid, spec in SAMPLES.items()] + [("erica", "llm_with_context", [])]


def _responder(body: dict) -> Reply:
    user = body["messages"][1]["content"]
    qid, spec = next((q, s) for q, s in SAMPLES.items() if prompts.block("question", s["question"]) in user)
    name = prompts.task_of(body["messages"])
    if name == "holistic":
        return Reply.json(spec["holistic"])
    if name == "extraction":
        questions = [spec["question"]] * 3 if qid in QUESTIONS_ARE_THE_QUESTION else ["What is it?"] * 3
        return Reply.json({"generated_questions": questions, **spec["extraction"]})
    return Reply.json(verification(spec, user))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The cells of one run judged by the scripted LLM and of one judged offline, over the same samples:
    {(judge, question_id, method, metric): (value, status, label, detail)}, and the samples as planned."""
    tmp = tmp_path_factory.mktemp("stored")
    golden = write_jsonl(tmp / "g.jsonl", [{"question_id": q, "question": s["question"], "reference": s["reference"]}
                                            for q, s in SAMPLES.items()])
    outputs = write_jsonl(tmp / "o.jsonl", [{"question_id": q, "method": m, "answer": SAMPLES[q]["answer"],
                                              "contexts": chunks} for q, m, chunks in CELLS])
    path = tmp / "stored.duckdb"
    store = open_store(path)
    try:
        golden_id, outputs_id, llm = judged_by_llm(store, golden, outputs, _responder)
        offline = lifecycle.start_stored(store, golden_id, [outputs_id],
                                         lifecycle.RunSpec(metrics=[
            "completeness", "answer_relevance", "judge_completeness", "judge_relevance", "wp_relevance",
            "judge_overall", "verdict", "factual_accuracy", "accuracy_grade", "answer_class"]))
        assert engine.execute_run(store, offline) == "finished"
        rows = store.cursor().execute("SELECT judge, question_id, method, metric, value, status, label, detail "
                                      "FROM scores WHERE run_id IN (?, ?)", [llm, offline]).fetchall()
        samples = plan(store.golden_items(golden_id), store.rag_outputs([outputs_id])).samples
    finally:
        close_store(path)
    cells = {(j if j == "offline" else "llm", q, m, metric): tuple(rest) for j, q, m, metric, *rest in rows}
    return cells, samples


def value(runs, qid: str, metric: str, method: str = "local_search", judge: str = "llm") -> float:
    v, status, _, detail = runs[0][(judge, qid, method, metric)]
    assert status == "ok", (qid, metric, detail)
    return v


def abstained(runs, qid: str, metric: str, judge: str = "llm") -> bool:
    """The cell is not applicable because the answer abstains, whichever judge scored it."""
    v, status, _, detail = runs[0][(judge, qid, "local_search", metric)]
    return v is None and status == "not_applicable" and detail.startswith("the answer abstains")


def label(runs, qid: str, metric: str, judge: str = "llm") -> str:
    return runs[0][(judge, qid, "local_search", metric)][2]


# -- claims (seeds 000, 002, 003) ------------------------------------------------------------------------

def test_faithfulness(runs):
    assert value(runs, "case", "faithfulness") == formulas.faithfulness(2, 2) == 1.0  # seed 000: 2 / 2 = 1
    assert formulas.scale_to_likert(value(runs, "case", "faithfulness")) == 5.0  # "projected to 5.0"
    assert value(runs, "housing", "faithfulness") == formulas.faithfulness(4, 4) == 1  # seed 002: 4 / 4 = 1
    assert value(runs, "maternity", "faithfulness") == formulas.faithfulness(1, 2) == 0.5
    assert value(runs, "erica", "faithfulness") * 100 == 100.0  # seed 003, local_search
    assert formulas.faithfulness(0, 0) == 1.0  # seed 003: no claims, for an answer that answers
    assert abstained(runs, "dont_know", "faithfulness")  # not 1.0 (issue 34)
    # seed 000: no context -> 1.0 with its warning
    assert (value(runs, "einstein", "faithfulness"), runs[0][("llm", "einstein", "local_search", "faithfulness")][3]) \
        == tuple(formulas.wp_faithfulness(0, 4, has_context=False)) == (1.0, "No context to verify.")


def test_hallucination_rate(runs):
    assert value(runs, "case", "hallucination_rate") == formulas.hallucination_rate(0, 2) == 0.0  # seed 000: 0 facts
    assert value(runs, "maternity", "hallucination_rate") == formulas.hallucination_rate(1, 2) == 0.5
    assert abstained(runs, "dont_know", "hallucination_rate")


def test_context_recall(runs):
    assert value(runs, "data_protection", "context_recall") == formulas.context_recall(3, 3) == 1.0  # seed 002
    assert value(runs, "erica", "context_recall") * 100 == formulas.context_recall(1, 1) * 100 == 100.0  # seed 003
    assert value(runs, "einstein", "context_recall") == formulas.context_recall(0, 3) == 0.0  # seed 003: no context


def test_completeness(runs):
    assert value(runs, "einstein", "completeness") == formulas.completeness(2, 3)  # Germany missed
    assert value(runs, "data_protection", "completeness") == formulas.completeness(1, 3)
    assert value(runs, "dont_know", "completeness") == formulas.completeness(0, 1) == 0.0


def test_context_precision_mean_and_average_precision(runs):
    assert value(runs, "maternity", "context_precision_ap") == formulas.average_precision([0, 1, 0]) == 0.5  # seed 002
    assert value(runs, "maternity", "context_precision") == formulas.context_precision_mean([0, 1, 0])
    erica = [i in (1, 6) for i in range(16)]  # seed 003: contexts 2 and 7 of 16
    assert value(runs, "erica", "context_precision") == formulas.context_precision_mean(erica) == 2 / 16
    assert value(runs, "erica", "context_precision_ap") == formulas.average_precision(erica) == (1 / 2 + 2 / 7) / 2
    assert value(runs, "dont_know", "context_precision") * 100 == 0.0  # seed 003, basic_search


def test_claim_f1(runs):
    assert value(runs, "einstein", "answer_correctness_f1") == formulas.claim_f1(2, 2, 1) == 2 / 3.5
    assert round(value(runs, "einstein", "answer_correctness_f1"), 2) == 0.57  # seed 002
    assert value(runs, "maternity", "answer_correctness_f1") == formulas.claim_f1(0, 2, 1) == 0  # seed 002's "score": 0


# -- the white paper (seed 000) ----------------------------------------------------------------------------

def test_white_paper_precision_recall_and_no_context(runs):
    precision = value(runs, "case", "wp_precision")
    assert precision == formulas.wp_precision(2, 3).value and round(formulas.scale_to_likert(precision), 1) == 3.7
    assert value(runs, "case", "wp_recall") == formulas.wp_recall(2, 2, True).value == 1.0  # "projected to 5.0"
    assert value(runs, "einstein", "wp_recall") == formulas.wp_recall(0, 4, False).value == 1.0  # no context -> 1.0
    assert runs[0][("llm", "einstein", "local_search", "wp_precision")][1] == "not_applicable"  # no context -> NaN


def test_white_paper_overall(runs):
    parts = {"correctness": 3.0, "faithfulness": 5.0, "precision": formulas.scale_to_likert(2 / 3), "recall": 5.0,
             "relevance": 4.0}  # seed 000's case study table
    assert (value(runs, "case", "wp_correctness"), value(runs, "case", "wp_relevance")) == (3.0, 4.0)
    stored = value(runs, "case", "wp_overall")
    assert stored == half_up(formulas.white_paper_overall(parts), 2)
    assert stored == half_up(0.4 * 3 + 0.2 * 5 + 0.2 * (11 / 3) + 0.2 * 5 + 0 * 4, 2) == 3.93  # the seed's weights
    # without context precision is left out, the weights renormalised: (0.4 x 3 + 0.2 x 5 + 0.2 x 5) / 0.8
    assert value(runs, "einstein", "wp_overall") == half_up(formulas.white_paper_overall(
        {"correctness": 3.0, "faithfulness": 5.0, "recall": 5.0, "relevance": 3.0}), 2) == 4.0


# -- rubric (seeds 001, 003) --------------------------------------------------------------------------------

@pytest.mark.parametrize("qid, overall, seed_label", [("case", 4, "pass"), ("einstein", 3, "partial"),
                                                      ("maternity", 2, "fail")])
def test_verdict(runs, qid, overall, seed_label):
    assert value(runs, qid, "judge_overall") == overall
    assert label(runs, qid, "verdict") == formulas.verdict(overall) == seed_label  # seed 001's table
    assert value(runs, qid, "verdict") == formulas.verdict_value(seed_label)


@pytest.mark.parametrize("qid, steps, grade", [("case", (85, 70, 95), "A"), ("einstein", (80, 60, 40), "B"),
                                               ("data_protection", (50, 40, 60), "C"), ("dont_know", (0, 0, 100), "D"),
                                               ("maternity", (10, 10, 50), "E"),
                                               ("erica", (95, 100, 100), "A")])  # seed 003: Cornish heath -> A
def test_factual_accuracy_and_grade(runs, qid, steps, grade):
    c1, c2, c3 = steps
    stored = value(runs, qid, "factual_accuracy")
    assert stored == half_up(formulas.factual_accuracy(*steps), 2) == half_up(0.5 * c1 + 0.3 * c2 + 0.2 * c3, 2)
    assert label(runs, qid, "accuracy_grade") == formulas.accuracy_grade(stored) == grade
    assert value(runs, qid, "accuracy_grade") == formulas.grade_value(grade)


@pytest.mark.parametrize("qid, seed_label", [("case", "CORRECT"), ("maternity", "WRONG"), ("dont_know", "DON'T KNOW")])
def test_answer_class(runs, qid, seed_label):
    assert label(runs, qid, "answer_class") == seed_label
    assert value(runs, qid, "answer_class") == formulas.answer_class_value(seed_label)


def test_the_offline_mapping(runs):
    """The offline judge's rubric: seed 000's projection of its ratios, seed 001's verdict, seed 003's grade."""
    for qid in SAMPLES:
        relevance = REGISTRY["answer_relevance"].norm(value(runs, qid, "answer_relevance", judge="offline"))
        assert value(runs, qid, "judge_relevance", judge="offline") == half_up(formulas.scale_to_likert(relevance), 1)
        assert value(runs, qid, "wp_relevance", judge="offline") == half_up(formulas.scale_to_likert(relevance), 1)
        completeness = value(runs, qid, "completeness", judge="offline")
        assert value(runs, qid, "judge_completeness", judge="offline") == half_up(
            formulas.scale_to_likert(completeness), 1)
        verdict = formulas.verdict(value(runs, qid, "judge_overall", judge="offline"))
        assert (label(runs, qid, "verdict", "offline"), value(runs, qid, "verdict", judge="offline")) == (
            verdict, formulas.verdict_value(verdict))
        grade = formulas.accuracy_grade(value(runs, qid, "factual_accuracy", judge="offline"))
        assert (label(runs, qid, "accuracy_grade", "offline"), value(runs, qid, "accuracy_grade", judge="offline")) == (
            grade, formulas.grade_value(grade))
    assert label(runs, "dont_know", "answer_class", "offline") == "DON'T KNOW"
    assert value(runs, "dont_know", "answer_class", judge="offline") == formulas.answer_class_value("DON'T KNOW")


# -- semantic and composite (seeds 002, 003) -----------------------------------------------------------------

def test_semantic_similarity_percent(runs):
    # seed 003: "Cornish heath" against "Cornish heath": cosine 1.0 -> 100.0
    assert value(runs, "erica", "semantic_similarity") == formulas.semantic_similarity_percent(1.0) == 100.0
    # seeds 002, 003: answer relevance, the mean cosine of the generated questions (here the question itself)
    assert value(runs, "erica", "answer_relevance") == formulas.semantic_similarity_percent(
        formulas.mean_cosine([1.0, 1.0, 1.0])) == 100.0


def test_bert_score_f1_from_precision_and_recall(runs):
    cells, samples = runs
    percent = REGISTRY["bert_score_f1"].range.value
    for sample, prf in zip(samples, bertscores(samples)):  # the family's P and R of each pair, the run's batch
        p, r, _ = prf
        stored = cells[("llm", *sample.key, "bert_score_f1")][0]
        assert stored == percent(formulas.f1_from_precision_recall(p, r)), sample.key
    assert round(value(runs, "erica", "bert_score_f1"), 2) == 100.0  # identical texts (seed 003: 99.99-100.0)


def test_ragas_composite(runs):
    def stored(qid, method="local_search"):
        return {k: value(runs, qid, k, method) for k in ("faithfulness", "context_precision", "context_recall",
                                                         "answer_relevance")}

    for qid in ("case", "maternity", "data_protection"):
        inputs = stored(qid)
        on_100 = {k: (v if k == "answer_relevance" else 100 * v) for k, v in inputs.items()}
        assert value(runs, qid, "ragas_score") == round(formulas.ragas_composite(on_100), 2), qid
    # seed 003's weights: F 100, CP 2/16, CR 100, AR 100
    assert stored("erica") == {"faithfulness": 1.0, "context_precision": 0.125, "context_recall": 1.0,
                               "answer_relevance": 100.0}
    assert value(runs, "erica", "ragas_score") == round(0.30 * 100 + 0.20 * 12.5 + 0.20 * 100 + 0.30 * 100, 2) == 82.5
    # seed 003's llm_with_context row: F, CP and CR N/A -> RAGAS = AR
    assert value(runs, "erica", "ragas_score", "llm_with_context") == value(runs, "erica", "answer_relevance",
                                                                          "llm_with_context")
