import json

import pytest

from evaluators import engine, loaders
from evaluators.metrics import REGISTRY
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
    return engine.create_run(store, golden_dataset_id=golden.dataset_id, outputs_dataset_ids=[outputs.dataset_id])


def _cells(store, run_id):
    return store.cursor().execute(
        "SELECT question_id, method, metric, value, status, created_at FROM scores WHERE run_id = ?", [run_id]
    ).fetchall()


def test_plan_pairs_outputs_with_golden_and_reports_what_a_method_left_out(tmp_path):
    golden = loaders.load(_write_jsonl(tmp_path / "g.jsonl", GOLDEN), role="golden").golden
    outputs = loaders.load(_write_jsonl(tmp_path / "o.jsonl", OUTPUTS), role="outputs").outputs
    p = engine.plan(golden, outputs)
    assert len(p.samples) == 13
    assert p.missing == {"local": ["q7"]}


def test_plan_refuses_two_answers_for_one_cell(tmp_path):
    golden = loaders.load(_write_jsonl(tmp_path / "g.jsonl", GOLDEN), role="golden").golden
    outputs = loaders.load(_write_jsonl(tmp_path / "o.jsonl", OUTPUTS), role="outputs").outputs
    with pytest.raises(ValueError, match="more than one answer from method 'basic'"):
        engine.plan(golden, outputs + outputs[:1])


def test_a_run_scores_every_cell_once_with_a_status(store, run_id):
    engine.execute_run(store, run_id)
    cells = _cells(store, run_id)
    assert len(cells) == 13 * len(REGISTRY)
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
    assert len(before) == 10 * len(REGISTRY)

    engine.execute_run(store, run_id, batch_size=5)
    after = {c[:3]: c[5] for c in _cells(store, run_id)}
    assert len(after) == 13 * len(REGISTRY)
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
        engine.create_run(store, golden_dataset_id=golden.dataset_id, outputs_dataset_ids=[outputs.dataset_id])
    with pytest.raises(KeyError, match="unknown metric id"):
        engine.create_run(store, golden_dataset_id=golden.dataset_id, outputs_dataset_ids=[outputs.dataset_id],
                          metrics=["no_such_metric"])


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
