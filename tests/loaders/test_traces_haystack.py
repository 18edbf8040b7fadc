"""The real traces (issue 37): a haystack pipeline traced by OpenInference and written by the OTLP JSON file exporter
(tests/fixtures/traces/make_haystack_traces.py) is re-created here and read like the committed file; and the
done-when: `run --golden G --outputs traces.jsonl` scores them, methods from service.name, unmatched traces said."""
import json
import subprocess
import sys

import duckdb
import pytest

from evaluators import loaders
from tests.helpers import FIXTURES, ROOT
from tests.helpers.cli import DEMO, cli

TRACES = FIXTURES / "traces"
GOLDEN = DEMO / "novel_44557_golden.csv"


def outputs(path):
    ds = loaders.load(path, role="outputs", golden=loaders.load(GOLDEN, role="golden"))
    return ds, {(o.question_id, o.method): o for o in ds.outputs}


@pytest.fixture(scope="module")
def recreated(tmp_path_factory):
    pytest.importorskip("haystack")
    out = tmp_path_factory.mktemp("haystack") / "traces.jsonl"
    done = subprocess.run([sys.executable, str(TRACES / "make_haystack_traces.py"), str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return out


def test_the_recreated_traces_read_as_the_committed_ones(recreated):
    committed, by_key = outputs(TRACES / "haystack_otlp.jsonl")
    again, by_key_again = outputs(recreated)
    assert set(by_key) == set(by_key_again)
    assert {m for _, m in by_key} == {"bm25_top3", "bm25_top1"} and len(by_key) == 10
    for key, out in by_key.items():
        new = by_key_again[key]
        assert new.answer == out.answer
        assert [(c.chunk_id, c.text, round(c.score, 6)) for c in new.contexts] == \
               [(c.chunk_id, c.text, round(c.score, 6)) for c in out.contexts]
        assert (new.usage.input_tokens, new.usage.output_tokens, new.usage.model) == \
               (out.usage.input_tokens, out.usage.output_tokens, out.usage.model)
        assert new.usage.latency_ms > 0  # timings differ from run to run
    assert committed.notes == again.notes


def test_the_haystack_traces_hold_the_pipeline_s_retrieval(recreated):
    _, by_key = outputs(recreated)
    top3 = [o for (_, m), o in by_key.items() if m == "bm25_top3"]
    top1 = [o for (_, m), o in by_key.items() if m == "bm25_top1"]
    assert all(len(o.contexts) == 3 for o in top3) and all(len(o.contexts) == 1 for o in top1)
    for out in top3:  # BM25's ranking: scores descending, the chunk ids the demo's
        scores = [c.score for c in out.contexts]
        assert scores == sorted(scores, reverse=True) and all(c.chunk_id.startswith("c0") for c in out.contexts)
        assert by_key[out.question_id, "bm25_top1"].contexts[0] == out.contexts[0]
        assert out.usage.input_tokens > 0 and out.usage.model == "test-model"


def test_run_scores_otlp_traces_of_two_services_and_reports_the_unmatched(tmp_path):
    db = tmp_path / "r.duckdb"
    done = cli("run", "--golden", GOLDEN, "--outputs", TRACES / "haystack_otlp.jsonl", "--metrics", "exact_match",
               db=db)
    assert done.returncode == 0, done.stderr
    assert "2 traces match no golden question and are not scored" in done.stderr
    assert "Which harbour did the author sail from" in done.stderr
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT method, count(*), min(len(contexts)), max(len(contexts)) FROM rag_outputs "
                           "GROUP BY method ORDER BY method").fetchall()
        ids = {r[0] for r in con.execute("SELECT unnest(contexts).chunk_id FROM rag_outputs").fetchall()}
    finally:
        con.close()
    assert rows == [("bm25_top1", 5, 1, 1), ("bm25_top3", 5, 3, 3)]
    assert ids and all(i.startswith("c0") for i in ids)  # the retriever spans' document ids
    # each answer's latency (its root span) stored, and Overview's twin shows them per method
    con = duckdb.connect(str(db), read_only=True)
    try:
        latencies = con.execute("SELECT method, latency_ms, input_tokens FROM rag_outputs").fetchall()
        run_id = con.execute("SELECT run_id FROM runs").fetchone()[0]
    finally:
        con.close()
    assert all(ms is not None and ms > 0 and tokens for _, ms, tokens in latencies)
    shown = cli("view", "overview", run_id, "--json", db=db)
    assert shown.returncode == 0, shown.stderr
    table = {r["method"]: r for r in json.loads(shown.stdout)["latency_cost"]}
    for method in ("bm25_top1", "bm25_top3"):
        ms = sorted(m for name, m, _ in latencies if name == method)
        assert table[method]["n latency"] == 5 and table[method]["median latency ms"] == pytest.approx(ms[2])


def test_run_with_a_named_method_attribute_and_a_missing_question_id_attribute(tmp_path):
    done = cli("run", "--golden", GOLDEN, "--outputs", TRACES / "haystack_otlp.jsonl", "--estimate",
               "--question-id-attribute", "rag.question_id", db=tmp_path / "r.duckdb")
    assert done.returncode != 0 and "carries no attribute 'rag.question_id'" in done.stderr
    done = cli("run", "--golden", GOLDEN, "--outputs", TRACES / "haystack_otlp.jsonl", "--estimate",
               "--method-attribute", "service.instance.id", db=tmp_path / "r.duckdb")
    assert done.returncode == 0, done.stderr


def test_trace_attributes_without_a_trace_file_are_refused(tmp_path):
    from evaluators import api

    with pytest.raises(ValueError, match="apply to trace files"):
        api.read_inputs(GOLDEN, DEMO / "novel_44557_outputs.jsonl", method_attribute="service.name")
    inputs = api.read_inputs(GOLDEN, [DEMO / "novel_44557_outputs.jsonl", TRACES / "haystack_otlp.jsonl"],
                             method_attribute="service.name")
    assert {o.method for o in inputs.rag_outputs} == {"basic_search", "local_search", "bm25_top1", "bm25_top3"}
    assert any(o.usage is not None and o.usage.latency_ms > 0 for o in inputs.rag_outputs)
