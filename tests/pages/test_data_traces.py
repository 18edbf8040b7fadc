"""The Data screen with a trace file (issue 37): read by its content, its traces joined to the golden set uploaded
with it, the unmatched ones said, the answers with their chunks stored."""
from tests.helpers import FIXTURES, ROOT

GOLDEN = ROOT / "data" / "demo" / "novel_44557_golden.csv"
TRACES = FIXTURES / "traces" / "haystack_otlp.jsonl"


def test_a_trace_file_is_joined_to_the_golden_set_uploaded_with_it_and_stored(app_at):
    at = app_at("pages/data.py")
    at.file_uploader(key="data-uploads").set_value(
        [(p.name, p.read_bytes(), "application/octet-stream") for p in (GOLDEN, TRACES)])
    at.run()
    assert not at.exception, at.exception
    captions = [c.value for c in at.caption]
    assert any(c.startswith("Format: otlp (detected)") for c in captions), captions
    assert any(c.startswith("A trace file: one answer per trace") for c in captions)
    assert at.selectbox(key="data-check").value == ("upload", 0)
    infos = [i.value for i in at.info]
    assert any("2 traces match no golden question" in i for i in infos), infos
    assert not at.error, [e.value for e in at.error]
    save = at.button(key="data-save")
    assert save.label == "Store 2 files" and not save.disabled
    save.click()
    at.run()
    saved = at.session_state["data-saved"]
    assert [s["file"] for s in saved] == ["novel_44557_golden.csv", "haystack_otlp.jsonl"]
    _, output_ids = at.session_state["eval-next"]
    from evaluators.store import open_store

    store = open_store(app_at.db)
    with store.lease():
        outputs = store.rag_outputs(list(output_ids))
    assert {o.method for o in outputs} == {"bm25_top1", "bm25_top3"} and len(outputs) == 10
    assert all(o.question_id.startswith("Novel-") and o.contexts[0].chunk_id.startswith("c0") for o in outputs)
