"""Hard inputs for the judge: text work linear in its length, and samples over the judge's limits stored `skipped`
with the reason instead of running for minutes (a chunk of a million characters; 10,000 chunks)."""
import json
import time

import pytest

from evaluators import judges
from evaluators.judges import OfflineJudge, OpenAIJudge, conflicts, offline
from evaluators.records import Chunk, GoldenItem, RagOutput, Sample
from tests.helpers.cli import cli

TEXT = "Dr. Smith met J. Doe in the U.S. on 3 May. They spoke of e.g. rivers, lakes and seas; it rained. "


def _seconds(work, text: str) -> float:
    """The best of three (a shared machine is noisy; the best is the work itself)."""
    best = float("inf")
    for i in range(3):
        varied = f"{text} {i}"  # a new text each time: these functions keep recent results
        start = time.perf_counter()
        work(varied)
        best = min(best, time.perf_counter() - start)
    return best


@pytest.mark.parametrize("work", [offline.sentences, offline.segment_claims, conflicts.clauses, conflicts.read],
                         ids=lambda f: f.__name__)
def test_text_work_grows_linearly_with_the_length(work):
    small = (TEXT * 300)[:20_000]
    large = (TEXT * 3_000)[:200_000]
    ratio = _seconds(work, large) / max(_seconds(work, small), 1e-4)
    # 10x the text: linear work takes ~10x; the old splitter, rescanning the prefix at each period, took ~100x
    assert ratio < 35, f"{work.__name__}: 10x the text took {ratio:.0f}x the time"


def _sample(chunks, answer="The Thames is 346 km long.") -> Sample:
    return Sample(GoldenItem("q1", "How long is the Thames?", "The Thames is 346 km long."),
                  RagOutput("q1", "rag", answer, tuple(Chunk(str(i + 1), t) for i, t in enumerate(chunks))))


def test_the_limits_apply_to_chunks_for_every_judge_and_to_characters_for_the_offline_judge():
    assert judges.too_big(OfflineJudge(), _sample(["The Thames is 346 km long."] * 3)) is None
    many = _sample(["a chunk"] * (judges.MAX_CHUNKS + 1))
    for judge in (OfflineJudge(), OpenAIJudge("m")):
        assert f"{judges.MAX_CHUNKS + 1:,} chunks, over the limit of {judges.MAX_CHUNKS:,}" in judges.too_big(judge, many)
    assert judges.too_big(OfflineJudge(), _sample(["a chunk"] * judges.MAX_CHUNKS)) is None
    long = _sample(["x" * OfflineJudge.max_chars])
    assert "over the offline judge's limit of 200,000" in judges.too_big(OfflineJudge(), long)
    assert judges.too_big(OpenAIJudge("m"), long) is None  # an LLM judge's server says what its context holds


def test_samples_over_the_limits_are_stored_skipped_with_the_reason_and_the_rest_is_scored(tmp_path):
    golden = [{"id": q, "question": "How long is the Thames?", "reference": "The Thames is 346 km long."}
              for q in ("long", "many")]
    outputs = [{"id": "long", "method": "rag", "answer": "The Thames is 346 km long.",
                "contexts": [(TEXT * 11_000)[:999_000]]},
               {"id": "many", "method": "rag", "answer": "The Thames is 346 km long.",
                "contexts": [f"{TEXT} Chunk {i}." for i in range(10_000)]}]
    (tmp_path / "golden.json").write_text(json.dumps(golden))
    (tmp_path / "outputs.json").write_text(json.dumps(outputs))
    db = tmp_path / "t.duckdb"
    out = cli("run", "--golden", str(tmp_path / "golden.json"), "--outputs", str(tmp_path / "outputs.json"),
              "--metrics", "exact_match,faithfulness,judge_correctness", db=db)
    assert out.returncode == 0, out.stderr
    assert "4 skipped (over the judge's limits" in out.stdout

    import duckdb
    with duckdb.connect(str(db), read_only=True) as con:
        cells = {(q, m): (status, detail) for q, m, status, detail in
                 con.execute("SELECT question_id, metric, status, detail FROM scores").fetchall()}
    assert cells[("long", "exact_match")][0] == cells[("many", "exact_match")][0] == "ok"
    for metric in ("faithfulness", "judge_correctness"):
        assert cells[("long", metric)] == ("skipped", judges.too_big(OfflineJudge(), _sample([(TEXT * 11_000)[:999_000]])))
        assert cells[("many", metric)][0] == "skipped" and "10,000 chunks" in cells[("many", metric)][1]
