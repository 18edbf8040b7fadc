"""Trace files as RAG outputs (issue 37): OTLP JSON of OpenInference spans read into answers with their chunks' ids
and scores and the system's usage, joined to the golden set, and every bad trace listed with file, line and trace id;
Phoenix's and Langfuse's exports (tests/fixtures/traces/SOURCE.md) read alike."""
import json

import pytest

from evaluators import loaders
from evaluators.loaders import traces
from evaluators.records import LoadError
from tests.helpers import FIXTURES
from tests.helpers.otlp import T0, rag_trace, request, span, write

TRACES = FIXTURES / "traces"


def golden(tmp_path, questions=("What is the capital of France?", "Who wrote Hamlet?")):
    path = tmp_path / "golden.jsonl"
    path.write_text("".join(json.dumps({"question_id": f"q{i}", "question": q, "reference": "r"}) + "\n"
                            for i, q in enumerate(questions, 1)), encoding="utf-8")
    return loaders.load(path, role="golden")


def read(path, gold, **options):
    return loaders.load(path, role="outputs", golden=gold, **options)


def problems(path, gold, **options):
    with pytest.raises(LoadError) as exc:
        read(path, gold, **options)
    return exc.value.problems


def test_otlp_traces_of_two_services_become_outputs_with_chunk_ids_scores_and_usage(tmp_path):
    gold = golden(tmp_path)
    path = write(tmp_path / "traces.jsonl", [
        request("svc_a", rag_trace("t1", "  what is the CAPITAL of   France? ", "Paris.",
                                   docs=[("doc-7", "Paris is the capital.", 3.5), ("doc-2", "France.", 1.25)])),
        request("svc_b", rag_trace("t2", "What is the capital of France?", "Lyon.", ms=80.0, tokens=(50, 5))),
    ])
    ds = read(path, gold)
    assert ds.format == "otlp" and ds.golden == ()
    by_method = {o.method: o for o in ds.outputs}
    assert set(by_method) == {"svc_a", "svc_b"}
    a = by_method["svc_a"]
    assert (a.question_id, a.answer) == ("q1", "Paris.")  # joined by the text: case and whitespace aside
    assert [(c.chunk_id, c.text, c.score) for c in a.contexts] == [("doc-7", "Paris is the capital.", 3.5),
                                                                   ("doc-2", "France.", 1.25)]
    assert (a.usage.latency_ms, a.usage.input_tokens, a.usage.output_tokens, a.usage.model) == (250.0, 100, 20, "gpt-x")
    assert by_method["svc_b"].usage.latency_ms == 80.0 and by_method["svc_b"].usage.input_tokens == 50
    assert ds.notes == ()


def test_unmatched_traces_are_listed_not_scored_and_the_latest_of_a_repeat_is_taken(tmp_path):
    gold = golden(tmp_path)
    path = write(tmp_path / "traces.jsonl", [
        request("svc", rag_trace("t1", "Who wrote Hamlet?", "Marlowe.", start=T0)),
        request("svc", rag_trace("t2", "Who wrote Hamlet?", "Shakespeare.", start=T0 + 10**9)),
        request("svc", rag_trace("t3", "Who painted the Mona Lisa?", "Leonardo.")),
    ])
    ds = read(path, gold)
    assert [(o.question_id, o.answer) for o in ds.outputs] == [("q2", "Shakespeare.")]
    assert any("1 trace match no golden question" in n and "Mona Lisa" in n for n in ds.notes), ds.notes
    assert any(n.startswith("1 earlier trace") for n in ds.notes), ds.notes


def test_method_and_question_id_attributes_named_by_the_user(tmp_path):
    gold = golden(tmp_path)
    path = write(tmp_path / "traces.jsonl", [request("svc", rag_trace(
        "t1", "a rephrased question", "Paris.", extra={"rag.variant": "hybrid", "golden.id": "q1"}))])
    [out] = read(path, gold, method_attribute="rag.variant", question_id_attribute="golden.id").outputs
    assert (out.question_id, out.method) == ("q1", "hybrid")
    [problem] = problems(path, gold, question_id_attribute="dataset.qid")
    assert problem.row == 1 and "t1" in problem.message and "dataset.qid" in problem.message


def test_a_trace_without_a_retriever_has_no_chunks(tmp_path):
    gold = golden(tmp_path)
    path = write(tmp_path / "t.jsonl", [request("svc", rag_trace("t1", "Who wrote Hamlet?", "Shakespeare.",
                                                                  retriever=False))])
    [out] = read(path, gold).outputs
    assert out.contexts == () and out.answer == "Shakespeare."


def test_genai_conventions_where_openinference_is_absent(tmp_path):
    gold = golden(tmp_path)
    spans = [span("g1", "r", None, "rag", {"input.value": "Who wrote Hamlet?", "output.value": "Shakespeare."}),
             span("g1", "c", "r", "chat", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m-req",
                                           "gen_ai.response.model": "m-resp", "gen_ai.usage.input_tokens": 11,
                                           "gen_ai.usage.output_tokens": 3}, T0 + 10)]
    [out] = read(write(tmp_path / "g.jsonl", [request("svc", spans)]), gold).outputs
    assert (out.usage.input_tokens, out.usage.output_tokens, out.usage.model) == (11, 3, "m-resp")


def test_every_bad_trace_is_listed_with_line_and_trace_id_and_nothing_is_loaded(tmp_path):
    gold = golden(tmp_path)
    loop = [span("loop", "a", "b", "x", {"input.value": "Who wrote Hamlet?", "output.value": "S."}),
            span("loop", "b", "a", "y", {})]
    lines = [json.dumps(request("svc", rag_trace("ok", "Who wrote Hamlet?", "Shakespeare."))),
             json.dumps(request("svc", rag_trace("noanswer", "Who wrote Hamlet?", None))),
             '{"resourceSpans": [ broken',
             json.dumps(request("svc", loop)),
             json.dumps(request("svc", [span("orphan", "c", "missing", "x",
                                             {"input.value": "Q", "output.value": "A"})])),
             json.dumps(request("svc", [span("badtype", "r", None, "rag", {"input.value": "Who wrote Hamlet?",
                                                                           "output.value": "A"},
                                             raw={"llm.token_count.prompt": {"intValue": "many"}})])),
             json.dumps(request("svc", [span("badscore", "r", None, "rag", {
                 "input.value": "Who wrote Hamlet?", "output.value": "A", "openinference.span.kind": "RETRIEVER",
                 "retrieval.documents.0.document.content": "text", "retrieval.documents.0.document.score": "high"})]))]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    found = problems(path, gold)
    where = {(p.row, next((t for t in ("noanswer", "loop", "orphan", "badtype", "badscore") if t in p.message),
                          None)) for p in found}
    assert where == {(2, "noanswer"), (3, None), (4, "loop"), (5, "orphan"), (6, "badtype"), (7, "badscore")}, found
    assert all(p.file == "bad.jsonl" for p in found)
    by_row = {p.row: p.message for p in found}
    assert "no answer" in by_row[2] and "not valid JSON" in by_row[3] and "loop" in by_row[4]
    assert "not in the file" in by_row[5] and "whole number" in by_row[6] and "not a number" in by_row[7]


def test_ten_thousand_documents_on_one_retriever_are_read_in_order(tmp_path):
    """Read as any list of chunks: the judges' own per-answer limit (judges.MAX_CHUNKS) decides what is judged."""
    gold = golden(tmp_path)
    docs = [(f"d{i}", f"chunk {i}", float(-i)) for i in range(10_000)]
    [out] = read(write(tmp_path / "big.jsonl", [request("svc", rag_trace("t", "Who wrote Hamlet?", "S.", docs))]),
                 gold).outputs
    assert len(out.contexts) == 10_000 and out.contexts[9_999].chunk_id == "d9999" and out.contexts[10].score == -10.0


def test_a_pretty_printed_export_request_is_one_object_held_to_the_memory_bound(tmp_path, monkeypatch):
    gold = golden(tmp_path)
    path = tmp_path / "one.json"
    path.write_text(json.dumps(request("svc", rag_trace("t", "Who wrote Hamlet?", "S.")), indent=2), encoding="utf-8")
    [out] = read(path, gold).outputs
    assert (out.method, out.question_id) == ("svc", "q2")
    monkeypatch.setenv("RAGSCOPE_INPUT_MEMORY_MB", str(path.stat().st_size / 2**20))  # under what it would take
    (problem,) = problems(path, gold)
    assert "too big" in problem.message and "one request a line" in problem.message, problem.message
    lines = tmp_path / "lines.jsonl"  # the same request on one line: read by line, whatever the bound
    lines.write_text(json.dumps(request("svc", rag_trace("t", "Who wrote Hamlet?", "S."))) + "\n", encoding="utf-8")
    assert len(read(lines, gold).outputs) == 1


def test_a_trace_file_is_not_a_golden_set(tmp_path):
    path = write(tmp_path / "t.jsonl", [request("svc", rag_trace("t", "Q?", "A."))])
    with pytest.raises(LoadError, match="trace file"):
        loaders.load(path, role="golden")


def test_detection_by_content_not_name(tmp_path):
    head = (TRACES / "haystack_otlp.jsonl").read_bytes()[:traces.HEAD]
    assert traces.detect(head) == "otlp"
    assert traces.detect((TRACES / "phoenix_spans.jsonl").read_bytes()[:traces.HEAD]) == "phoenix"
    assert traces.detect((TRACES / "langfuse_traces.json").read_bytes()[:traces.HEAD]) == "langfuse"
    assert traces.detect(b'{"question_id": "q1", "answer": "a"}\n') is None
    quoting = json.dumps({"question_id": "q1", "answer": 'set "resourceSpans": [] and "context.trace_id": 1'})
    assert traces.detect(quoting.encode()) is None  # the keys' words inside a text


@pytest.mark.parametrize("name", ["phoenix_spans.jsonl", "phoenix_spans.parquet", "langfuse_traces.json"])
def test_phoenix_and_langfuse_exports_are_read(name, tmp_path):
    gold = golden(tmp_path, ("What is the capital of France?", "Who wrote Hamlet?"))
    ds = read(TRACES / name, gold, **({"method_attribute": "rag.variant"} if "phoenix" in name else {}))
    by_q = {(o.question_id, o.method): o for o in ds.outputs}
    assert set(by_q) == {("q1", "dense_top2"), ("q2", "dense_top2")}, by_q.keys()
    q1 = by_q["q1", "dense_top2"]
    assert q1.answer == "Paris is the capital of France."
    assert [(c.chunk_id, c.score) for c in q1.contexts] == [("wiki-paris-1", 0.92), ("wiki-france-3", 0.71)]
    assert (q1.usage.input_tokens, q1.usage.output_tokens, q1.usage.model) == (212, 9, "gpt-4o-mini")
    assert q1.usage.latency_ms == pytest.approx(1234.0)
    if "langfuse" in name:
        assert q1.usage.cost_usd == pytest.approx(0.000037)
    assert any("match no golden question" in n for n in ds.notes)


def test_the_fast_decoder_reads_every_span_as_the_general_path_does(tmp_path):
    """otlp.py decodes a line into typed records (msgspec) and falls back to json.loads for anything else: both must
    give the same spans, for the real pipeline's traces and for every kind of attribute value."""
    from evaluators.loaders.problems import Problems
    from evaluators.loaders.traces import otlp

    every_kind = {"s": "text", "i": 7, "f": 0.25, "b": True, "list": [1, "two", 3.5]}
    raw = {"nan": {"doubleValue": "NaN"}, "kv": {"kvlistValue": {"values": [{"key": "k", "value": {"intValue": "3"}}]}},
           "bytes": {"bytesValue": "AAE="}, "int_number": {"intValue": 12}, "double_whole": {"doubleValue": 2},
           "empty": {}, "none": None}
    made = [request("svc", [span("t1", "r", None, "rag", every_kind, raw=raw)]),
            request("svc", rag_trace("t2", "Who wrote Hamlet?", "S.")) | {"extra": {"ignored": [1, 2]}}]
    lines = [line for line in (TRACES / "haystack_otlp.jsonl").read_bytes().split(b"\n") if line.strip()]
    lines += [json.dumps(r).encode() for r in made]

    def keep(key):
        return True

    assert all(otlp._fast_spans(otlp._DECODER.decode(line), 1, keep) for line in lines)  # none falls back
    fast = list(otlp.spans(lines, Problems("f"), keep))
    general = [s for n, line in enumerate(lines, 1) for s in otlp._request(json.loads(line), n, Problems("g"), keep)]
    assert len(fast) == len(general) > 10
    for a, b in zip(fast, general):
        assert (a.trace_id, a.span_id, a.parent_id, a.name, a.start_ns, a.end_ns, a.line, a.resource) == \
               (b.trace_id, b.span_id, b.parent_id, b.name, b.start_ns, b.end_ns, b.line, b.resource)
        assert json.dumps(a.attributes, sort_keys=True) == json.dumps(b.attributes, sort_keys=True)
        assert [type(v) for v in a.attributes.values()] == [type(v) for v in b.attributes.values()]


def test_a_langfuse_export_whose_first_trace_fills_the_head_is_still_langfuse(tmp_path, monkeypatch):
    """Detection reads the head; a first trace whose input (~200 KB) comes before its observations key leaves the
    head without it, and detection looks further, a block at a time, within its bound."""
    export = json.loads((TRACES / "langfuse_traces.json").read_text(encoding="utf-8"))
    first = export["data"][0]
    first["input"] = {"question": first["input"]["question"], "history": "earlier turn. " * 15_000}
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export, indent=1), encoding="utf-8")
    head = path.read_bytes()[:traces.HEAD]
    assert b'"observations"' not in head and traces.detect(head) is None  # the head alone cannot tell
    ds = read(path, golden(tmp_path))
    assert ds.format == "langfuse"
    q1 = {o.question_id: o for o in ds.outputs}["q1"]
    assert [c.chunk_id for c in q1.contexts] == ["wiki-paris-1", "wiki-france-3"]
    monkeypatch.setattr(traces, "FURTHER", 100_000)  # the observations key past the bound: not looked for there
    assert read(path, golden(tmp_path)).format == "json"  # its {"data": [...]} read as plain JSON outputs


def test_a_langfuse_export_of_one_trace_a_line_is_read_by_line_and_a_whole_document_within_the_bound(tmp_path,
                                                                                                       monkeypatch):
    """JSON Lines are read a line at a time (whatever their size); one JSON document only whole, so it is held to the
    loaders' memory bound first, and the message says to export one trace a line."""
    export = json.loads((TRACES / "langfuse_traces.json").read_text(encoding="utf-8"))
    by_line = tmp_path / "by_line.jsonl"
    by_line.write_text("".join(json.dumps(t) + "\n" for t in export["data"]), encoding="utf-8")
    whole = tmp_path / "whole.json"
    whole.write_text(json.dumps(export, indent=1), encoding="utf-8")
    monkeypatch.setenv("RAGSCOPE_INPUT_MEMORY_MB", str(whole.stat().st_size * 3 / 2**20))  # half the whole's need
    gold = golden(tmp_path)
    ds = read(by_line, gold)
    assert ds.format == "langfuse" and {o.question_id for o in ds.outputs} == {"q1", "q2"}
    assert ds.output_rows == (1, 2)  # each trace's line
    (problem,) = problems(whole, gold)
    assert "too big" in problem.message and "one a line" in problem.message, problem.message
    broken = tmp_path / "broken.jsonl"
    broken.write_text(by_line.read_text(encoding="utf-8") + '{"id": "t9", "observations": [\n', encoding="utf-8")
    found = problems(broken, gold)
    assert [(p.row, "not valid JSON" in p.message) for p in found] == [(len(export["data"]) + 1, True)], found


def _genai_trace(trace_id: str, question: str, documents) -> list[dict]:
    """Spans as the GenAI conventions show them (semantic-conventions-genai, docs/gen-ai/gen-ai-spans.md): a workflow
    root, a retrieval span (gen_ai.operation.name "retrieval", the query, the documents) and a chat span."""
    answer = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": f"About {question}"}],
                          "finish_reason": "stop"}])
    return [span(trace_id, "w", None, "invoke_workflow rag", {"gen_ai.operation.name": "invoke_workflow"}, ms=900),
            span(trace_id, "r", "w", "retrieval kb-1", {"gen_ai.operation.name": "retrieval",
                                                        "gen_ai.data_source.id": "kb-1",
                                                        "gen_ai.retrieval.query.text": question,
                                                        "gen_ai.retrieval.documents": documents}, T0 + 5),
            span(trace_id, "c", "w", "chat gpt-x", {"gen_ai.operation.name": "chat", "gen_ai.response.model": "gpt-x",
                                                    "gen_ai.output.messages": answer}, T0 + 200)]


def test_genai_retrieval_spans_give_the_chunks_and_the_query_the_question(tmp_path):
    gold = golden(tmp_path)
    docs = [{"id": "doc_123", "score": 0.95, "content": "Paris is the capital."},
            {"id": "doc_456", "score": 0.87, "content": "France is in Europe."}]
    spans = (_genai_trace("g1", "What is the capital of France?", docs)  # structured: an OTLP array of kvlists
             + _genai_trace("g2", "Who wrote Hamlet?", json.dumps([{"id": "h1", "score": 0.5, "text": "Hamlet."}])))
    ds = read(write(tmp_path / "genai.jsonl", [request("svc", spans)]), gold)
    by_q = {o.question_id: o for o in ds.outputs}
    assert [(c.chunk_id, c.text, c.score) for c in by_q["q1"].contexts] == [
        ("doc_123", "Paris is the capital.", 0.95), ("doc_456", "France is in Europe.", 0.87)]
    assert [(c.chunk_id, c.score) for c in by_q["q2"].contexts] == [("h1", 0.5)]
    assert by_q["q1"].answer == "About What is the capital of France?"
    no_text = _genai_trace("g3", "Who wrote Hamlet?", [{"id": "doc_123", "score": 0.95}])  # the spec's own example
    (problem,) = problems(write(tmp_path / "ids.jsonl", [request("svc", no_text)]), gold)
    assert "g3" in problem.message and "no text" in problem.message and problem.row == 1, problem
