import json

import pytest

from evaluators import loaders
from evaluators.runs import engine, lifecycle, planning
from evaluators.metrics import REGISTRY
from evaluators.metrics.ranking import RANK_METRICS
from evaluators.store import close_store, open_store

GOLDEN = [
    {"question_id": f"q{i}", "question": f"What is fact {i}?", "reference": f"Fact {i} is {i * 7} apples."}
    for i in range(1, 8)
]
OUTPUTS = [
    {"question_id": g["question_id"], "method": method, "answer": f"It is {int(g['question_id'][1:]) * k} apples.",
     "contexts": [f"Fact {g['question_id'][1:]} is about apples."]}
    for g in GOLDEN for method, k in (("basic", 7), ("local", 3))
    if not (method == "local" and g["question_id"] == "q7")  # local leaves one question out
]

# The default catalogue: no question here names a relevant document, so it holds no rank metric.
DEFAULT_METRICS = len(REGISTRY) - len(RANK_METRICS)


def _write_jsonl(path, rows):
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "engine.duckdb"
    yield open_store(path)
    close_store(path)


@pytest.fixture
def run_id(store, tmp_path):
    golden = store.save_dataset(loaders.load(_write_jsonl(tmp_path / "g.jsonl", GOLDEN), role="golden"))
    outputs = store.save_dataset(loaders.load(_write_jsonl(tmp_path / "o.jsonl", OUTPUTS), role="outputs"))
    return lifecycle.start_stored(store, golden.dataset_id, [outputs.dataset_id], lifecycle.RunSpec())


def _cells(store, run_id):
    return store.cursor().execute(
        "SELECT question_id, method, metric, value, status, created_at FROM scores WHERE run_id = ?", [run_id]
    ).fetchall()


def test_plan_pairs_outputs_with_golden_and_reports_what_a_method_left_out(tmp_path):
    golden = loaders.load(_write_jsonl(tmp_path / "g.jsonl", GOLDEN), role="golden").golden
    outputs = loaders.load(_write_jsonl(tmp_path / "o.jsonl", OUTPUTS), role="outputs").outputs
    p = planning.plan(golden, outputs)
    assert len(p.samples) == 13
    assert p.missing == {"local": ["q7"]}


def test_plan_refuses_two_answers_for_one_cell(tmp_path):
    golden = loaders.load(_write_jsonl(tmp_path / "g.jsonl", GOLDEN), role="golden").golden
    outputs = loaders.load(_write_jsonl(tmp_path / "o.jsonl", OUTPUTS), role="outputs").outputs
    with pytest.raises(ValueError, match="more than one answer from method 'basic'"):
        planning.plan(golden, outputs + outputs[:1])


def test_a_run_scores_every_cell_once_with_a_status(store, run_id):
    engine.execute_run(store, run_id)
    cells = _cells(store, run_id)
    assert len(cells) == 13 * DEFAULT_METRICS
    assert len({c[:3] for c in cells}) == len(cells)
    assert all((status == "ok") == (value is not None) for *_, value, status, _ in cells)
    assert store.run(run_id)["status"] == "finished"
    number_match = {(q, m): v for q, m, metric, v, *_ in cells if metric == "number_match"}
    # reference "Fact 2 is 14 apples." has the numbers {2, 14}; basic says 14, local says 6
    assert number_match[("q2", "basic")] == 0.5 and number_match[("q2", "local")] == 0.0


def test_an_interrupted_run_resumes_without_redoing_finished_cells(store, run_id):
    calls = []

    def interrupt_after_two_batches(done, total):
        calls.append(done)
        if len(calls) == 3:  # the initial report, then two batches of 5 samples x every metric
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        engine.execute_run(store, run_id, batch_size=5, progress=interrupt_after_two_batches)
    assert store.run(run_id)["status"] == "interrupted"
    before = {c[:3]: c[5] for c in _cells(store, run_id)}
    assert len(before) == 10 * DEFAULT_METRICS

    engine.execute_run(store, run_id, batch_size=5)
    after = {c[:3]: c[5] for c in _cells(store, run_id)}
    assert len(after) == 13 * DEFAULT_METRICS
    assert all(after[key] == stamp for key, stamp in before.items())  # not recomputed
    assert store.run(run_id)["status"] == "finished"


def test_retry_recomputes_only_the_cells_that_failed(store, run_id):
    engine.execute_run(store, run_id)
    store.cursor().execute(
        "UPDATE scores SET status = 'judge_error', value = NULL, norm = NULL "
        "WHERE run_id = ? AND question_id = 'q3' AND method = 'basic' AND metric = 'exact_match'", [run_id]
    )
    before = {c[:3]: c[5] for c in _cells(store, run_id)}
    engine.execute_run(store, run_id)
    after = {c[:3]: (c[3], c[4], c[5]) for c in _cells(store, run_id)}
    failed = ("q3", "basic", "exact_match")
    assert after[failed][:2] == (0.0, "ok") and after[failed][2] > before[failed]
    assert all(after[k][2] == before[k] for k in before if k != failed)


def test_a_run_needs_samples_and_known_metrics(store, tmp_path):
    golden = store.save_dataset(loaders.load(_write_jsonl(tmp_path / "g.jsonl", GOLDEN), role="golden"))
    other = [dict(o, question_id="zz") for o in OUTPUTS[:1]]
    outputs = store.save_dataset(loaders.load(_write_jsonl(tmp_path / "o2.jsonl", other), role="outputs"))
    with pytest.raises(ValueError, match="nothing to evaluate"):
        lifecycle.start_stored(store, golden.dataset_id, [outputs.dataset_id], lifecycle.RunSpec())
    with pytest.raises(KeyError, match="unknown metric id"):
        lifecycle.start_stored(store, golden.dataset_id, [outputs.dataset_id],
                               lifecycle.RunSpec(metrics=["no_such_metric"]))


def test_judged_metrics_store_their_claims_and_chunk_verdicts(store, run_id):
    engine.execute_run(store, run_id)
    cur = store.cursor()
    claims = cur.execute(
        "SELECT question_id, method, source, count(*) FROM claims WHERE run_id = ? GROUP BY ALL", [run_id]
    ).fetchall()
    assert {(q, m) for q, m, source, _ in claims if source == "answer"} == {
        (o["question_id"], o["method"]) for o in OUTPUTS}
    assert cur.execute("SELECT count(*) FROM chunk_verdicts WHERE run_id = ?", [run_id]).fetchall() == [(13,)]
    judges = dict(cur.execute(
        "SELECT metric, any_value(judge) FROM scores WHERE run_id = ? GROUP BY metric", [run_id]).fetchall())
    assert judges["faithfulness"] == "offline" and judges["exact_match"] == "deterministic"
    # "It is 14 apples." vs the chunk "Fact 2 is about apples.": same topic, another number
    verdict = cur.execute(
        "SELECT verdict FROM claims WHERE run_id = ? AND question_id = 'q2' AND method = 'basic' AND source = 'answer'",
        [run_id]).fetchall()
    assert verdict == [("contradicted",)]


def test_a_label_metric_stores_its_label_beside_its_number(store, run_id):
    engine.execute_run(store, run_id)
    rows = store.cursor().execute(
        "SELECT metric, value, label, detail FROM scores WHERE run_id = ? AND metric IN ('verdict', 'answer_class', "
        "'accuracy_grade', 'judge_overall') AND status = 'ok'", [run_id]).fetchall()
    assert {m for m, *_ in rows} == {"verdict", "answer_class", "accuracy_grade", "judge_overall"}
    for metric, value, label, detail in rows:
        if metric == "judge_overall":
            assert label is None
        else:
            assert detail.startswith(label + " (") and label in {"pass", "partial", "fail", "CORRECT", "WRONG",
                                                                 "DON'T KNOW", "A", "B", "C", "D", "E"}


# -- the inputs a metric needs: absent -> not_applicable, said by the engine ------------------------------------

NEEDS_CONTEXT = {"context_precision": "no retrieved context", "context_precision_ap": "no retrieved context",
                 "wp_precision": "no retrieved context: precision is NaN (seed 000)",
                 "hallucination_rate": "no retrieved context to check the answer against"}
# RAGChecker's diagnostics need the reference too (both samples have one), and say the same of no chunks
NEEDS_CONTEXT_AND_REFERENCE = dict.fromkeys(
    ("context_utilization", "noise_sensitivity_relevant", "noise_sensitivity_irrelevant", "ragchecker_hallucination",
     "self_knowledge"), "no retrieved context: RAGChecker's diagnostics weigh the answer against its chunks")


def _no_context_run(judge=None):
    """q1 answered with chunks, q2 without; neither question has checks."""
    import pandas as pd

    from evaluators import evaluate
    golden = pd.DataFrame([{"question_id": "q1", "question": "Who wrote Hamlet?", "reference": "Shakespeare."},
                           {"question_id": "q2", "question": "What is the capital of France?", "reference": "Paris."}])
    outputs = pd.DataFrame([{"question_id": "q1", "answer": "Shakespeare wrote it.",
                             "contexts": ["Hamlet is a play by William Shakespeare."]},
                            {"question_id": "q2", "answer": "It is Paris.", "contexts": []}])
    ev = evaluate(golden, {"m": outputs}, judge=judge)
    return ev.scores.set_index(["question_id", "metric"])


def test_a_metric_that_needs_an_input_the_sample_lacks_is_not_applicable_and_one_that_uses_it_is_scored():
    cells = _no_context_run()
    for mid, why in NEEDS_CONTEXT.items():
        assert REGISTRY[mid].needs == ("judge", "contexts"), mid
        assert tuple(cells.loc[("q2", mid), ["status", "detail"]]) == ("not_applicable", why), mid
        assert cells.loc[("q1", mid), "status"] == "ok", mid
    for mid, why in NEEDS_CONTEXT_AND_REFERENCE.items():
        assert REGISTRY[mid].needs == ("judge", "contexts", "reference"), mid
        assert tuple(cells.loc[("q2", mid), ["status", "detail"]]) == ("not_applicable", why), mid
        assert cells.loc[("q1", mid), "status"] == "ok", mid
    for q in ("q1", "q2"):
        assert tuple(cells.loc[(q, "checks_pass_rate"), ["status", "detail"]]) == (
            "not_applicable", "no checks for this question")
    # the seeds' values without context: faithfulness and wp_recall 1.0, context_recall 0.0 (used, not needed)
    assert {mid: cells.loc[("q2", mid), "value"] for mid in ("faithfulness", "wp_recall", "context_recall")} == {
        "faithfulness": 1.0, "wp_recall": 1.0, "context_recall": 0.0}
    assert set(cells.xs("q2", level="question_id").query("status == 'not_applicable'").index) == {
        *NEEDS_CONTEXT, *NEEDS_CONTEXT_AND_REFERENCE, "checks_pass_rate", "number_match",
        "judge_clarity"}  # no numbers; no offline clarity
    # no question names a relevant document: the default catalogue leaves the rank metrics out
    assert not set(RANK_METRICS) & set(cells.index.get_level_values("metric"))


def test_the_engine_decides_inapplicable_before_the_judge_fails_it(monkeypatch):
    """A judge that answers every call with HTTP 500: the context-less sample's cells of the metrics that need
    chunks are not_applicable (nothing to retry), not the judge's error; those that use the judge's claims fail."""
    from evaluators.judges import OpenAIJudge
    from tests.helpers.openai_server import Reply, start_server

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with start_server() as server:
        server.responder = lambda body: Reply.status(500)
        cells = _no_context_run(OpenAIJudge(model="gpt-4o-mini", base_url=server.base_url, max_attempts=1))
    for mid, why in {**NEEDS_CONTEXT, **NEEDS_CONTEXT_AND_REFERENCE}.items():
        assert tuple(cells.loc[("q2", mid), ["status", "detail"]]) == ("not_applicable", why), mid
        assert cells.loc[("q1", mid), "status"] == "judge_error", mid
    assert cells.loc[("q2", "faithfulness"), "status"] == "judge_error"


def test_a_metric_computes_only_the_samples_that_have_what_it_needs():
    """`Metric.scored` hands `compute` the samples with a reference, in order, and fills in the others."""
    import dataclasses

    from evaluators.records import GoldenItem, RagOutput, Result, Sample
    seen = []

    def compute(samples, context):
        seen.extend(s.golden.question_id for s in samples)
        return [Result(1.0) for _ in samples]

    exact = dataclasses.replace(REGISTRY["exact_match"], compute=compute)
    samples = [Sample(GoldenItem(q, "Q?", ref), RagOutput(q, "m", "A.")) for q, ref in
               (("q1", "A."), ("q2", " \n"), ("q3", "B."), ("q4", ""))]
    results = exact.scored(samples)
    assert seen == ["q1", "q3"]
    assert [(r.status, r.detail) for r in results] == [("ok", None), ("not_applicable", "the reference is empty"),
                                                      ("ok", None), ("not_applicable", "the reference is empty")]


def test_batches_are_paced_to_commit_within_seconds(store, tmp_path):
    """The first batch is the judge's smallest; each next one holds as many samples as took BATCH_SECONDS at the
    last batch's pace, within the judge's bounds; the scores are those of one big batch, cell by cell."""
    from evaluators.judges import OfflineJudge, OpenAIJudge

    offline, llm = OfflineJudge(), OpenAIJudge("m", concurrency=4)
    assert engine.next_batch_size(16, 1.0, offline) == 16 * engine.BATCH_SECONDS  # 16 a second: 80 in 5 s
    assert engine.next_batch_size(16, 100.0, offline) == offline.min_batch_size  # a slow first batch (model loads)
    assert engine.next_batch_size(16, 0.001, offline) == offline.batch_size
    assert engine.next_batch_size(64, 1.0, llm) == engine.next_batch_size(64, 60.0, llm) == llm.batch_size == 32

    rows = [dict(g, question_id=f"{g['question_id']}-{k}") for k in range(5) for g in GOLDEN]  # 35 questions
    answers = [dict(o, question_id=f"{o['question_id']}-{k}") for k in range(5) for o in OUTPUTS]  # 65 samples
    golden = store.save_dataset(loaders.load(_write_jsonl(tmp_path / "g35.jsonl", rows), role="golden"))
    outputs = store.save_dataset(loaders.load(_write_jsonl(tmp_path / "o65.jsonl", answers), role="outputs"))
    metrics = ["exact_match", "rouge_l"]
    runs = [lifecycle.start_stored(store, golden.dataset_id, [outputs.dataset_id], lifecycle.RunSpec(metrics=metrics))
            for _ in range(2)]
    committed = []
    engine.execute_run(store, runs[0], progress=lambda done, total: committed.append(done))
    assert committed[:2] == [0, offline.min_batch_size * len(metrics)]  # the first batch: 16 samples
    assert committed[-1] == 65 * len(metrics) and len(committed) >= 3  # lexical metrics: the rest in one batch
    engine.execute_run(store, runs[1], batch_size=1000)
    cells = [sorted(row[:5] for row in _cells(store, run)) for run in runs]
    assert cells[0] == cells[1] and len(cells[0]) == 130
