"""evaluators/presentation/highlight.py: claims located in the answer, coloured by verdict, and every piece of uploaded
text escaped (the HTML goes to st.html)."""
from __future__ import annotations


import pytest

from evaluators.records.judgments import VERDICTS
from evaluators.presentation import highlight as hl
from tests.helpers.screens import assert_inert

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"
MD_LINK = "[click](javascript:alert(1))"
BARE = "javascript:alert(1)"
PAYLOADS = (SCRIPT, IMG, MD_LINK, BARE)
EVIL = f"Alice built it. {SCRIPT} See {MD_LINK} or {BARE} {IMG} Done."


def test_spans_are_found_verbatim_in_order_and_across_whitespace():
    answer = "Alice built the tower.  It is\nmade of stone. Alice built the tower."
    spans = hl.find_spans(answer, ["Alice built the tower.", "It is made of stone.", "Alice built the tower.",
                                   "Bob painted it.", "   "])
    assert spans[0] == (0, 22)
    assert answer[slice(*spans[1])] == "It is\nmade of stone."  # whitespace runs may differ
    assert spans[2] == (answer.rindex("Alice"), len(answer))  # the second occurrence: no overlap
    assert spans[3] is None and spans[4] is None


def test_overlapping_claims_are_not_nested():
    spans = hl.find_spans("the old castle burned", ["the old castle", "old castle burned"])
    assert spans == [(0, 14), None]


def test_claims_are_marked_inline_with_their_verdict_colour_and_chunk_links():
    claims = [hl.ClaimMark("A1", "Alice built the tower.", "supported", (0, 2), ("c1", "c3")),
              hl.ClaimMark("A2", "It was built in 1897.", "contradicted"),
              hl.ClaimMark("A3", "It is purple.", "not_found"),
              hl.ClaimMark("A4", "A rewritten claim.", "unknown")]
    markup = hl.highlight("Alice built the tower. It was built in 1897. It is purple.", claims, column=1)
    parsed = assert_inert(markup, "Alice built the tower.", "A rewritten claim.")
    marks = [attrs for tag, attrs in parsed.tags if tag == "mark"]
    assert len(marks) == 3
    for attrs, verdict in zip(marks, ("supported", "contradicted", "not_found")):
        assert hl.COLOURS[verdict][0] in attrs["style"]
    assert marks[0]["title"] == "A1: supported by chunks c1, c3"
    assert [a["href"] for t, a in parsed.tags if t == "a"] == ["#rs-chunk-1-0", "#rs-chunk-1-2"]
    assert "not found verbatim" in parsed.text  # the rewritten claim is listed with a badge
    assert hl.COLOURS["unknown"][0] in markup.split("A rewritten claim.")[0].rsplit("<li", 1)[1]


def test_every_verdict_has_a_colour():
    assert set(hl.COLOURS) == set(VERDICTS)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_payloads_in_answers_and_claims_come_out_escaped(payload):
    claim = f"Alice said {payload}"
    answer = f"Intro. {claim} End."
    for markup in (hl.highlight(answer, [hl.ClaimMark("A1", claim, "supported", (0,), (payload,))], column=0),
                   hl.highlight("unrelated answer", [hl.ClaimMark(payload, claim, payload)], column=0)):
        assert_inert(markup, payload)
        if "<" in payload:  # markdown and bare URLs have nothing to escape: st.html shows them as text
            assert payload not in markup and hl.esc(payload) in markup


def test_whole_evil_answer_chunk_and_names_are_inert():
    markup = "".join([
        hl.highlight(EVIL, [hl.ClaimMark("A1", "Alice built it.", "supported", (0,), ("c1",)),
                            hl.ClaimMark("A2", f"{SCRIPT} See {MD_LINK}", "not_found")], column=0),
        hl.chunk_cards([hl.ChunkCard(0, IMG, EVIL, True, 90.0, True, ("A1",), (SCRIPT,))], column=0),
        hl.heading(SCRIPT), hl.caption(MD_LINK), hl.text_box(EVIL, label=IMG),
        hl.score_chips([(SCRIPT, IMG)]), hl.claim_list([hl.ClaimMark(IMG, EVIL, "unknown")]), hl.text_list([EVIL]),
    ])
    parsed = assert_inert(markup, *PAYLOADS)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in markup and "&lt;img src=x onerror=alert(1)&gt;" in markup
    assert not any(t in ("script", "img") for t, _ in parsed.tags)


def test_chunk_cards_say_what_the_judge_said():
    markup = hl.chunk_cards([hl.ChunkCard(0, "c1", "text one", True, 72.0, True, ("A1", "R2"), ("local",)),
                             hl.ChunkCard(1, "c2", "text two", None, None, None)], column=3)
    parsed = assert_inert(markup, "text one", "text two")
    assert "#1 · c1 · relevant (72) · used by the answer · supports A1, R2" in parsed.text
    assert "shared with local" in parsed.text
    assert "#2 · c2 · not judged · not judged" in parsed.text
    assert [a["id"] for t, a in parsed.tags if "id" in a] == ["rs-chunk-3-0", "rs-chunk-3-1"]
