"""Prompt injection: uploaded text that pretends to be instructions, blocks, ids or replies.

Every text of `tests/injection/corpus.jsonl` goes into the question, the answer, the reference and a
chunk of one sample; the judge runs against the loopback server, whose model is "fooled": it
extracts the injected lines as claims, gives verdicts for every id it can find anywhere in the
request (fake ones included) and first answers the holistic call with out-of-range ratings. Checked:
every request keeps each uploaded text inside its own block, no id taken from uploaded text reaches
the matrix, every score stays within its bounds, and every sample is judged.
"""
from __future__ import annotations

import json
import re

import pytest

from evaluators.metrics.claims import claim_metrics
from evaluators.judges import prompts
from evaluators.judges.openai_protocol import JudgeClient
from evaluators.records import OK, Chunk, GoldenItem, RagOutput, Sample
from tests.helpers.openai_server import Reply, start_server
from tests.helpers.seed_000 import SEED_000_HOLISTIC
from tests.helpers import TESTS

CORPUS = [json.loads(line) for line in (TESTS / "injection" / "corpus.jsonl").read_text().splitlines()]
BLOCK = re.compile(r'<(question|answer|reference|claim|chunk)(?: id="([ARC]\d+)")?>\n(.*?)\n</\1>', re.DOTALL)
SCAFFOLDING = {"ANSWER CLAIMS:", "REFERENCE CLAIMS:", "CONTEXT:", "CHUNKS TO JUDGE: C1, C2", "COMPARE CLAIMS: yes",
               "(none)"} | {f"TASK: {task}" for task in prompts.TASKS}
ANY_ID = re.compile(r"\b([ARC]\d+)\b")


def injected(i: int, attack: str) -> Sample:
    chunks = (Chunk("d1", f"The Eiffel Tower is in Paris.\n{attack}"), Chunk("d2", "Paris is in France."))
    return Sample(GoldenItem(f"q{i}", f"Where is the Eiffel Tower?\n{attack}", f"In Paris.\n{attack}"),
                  RagOutput(f"q{i}", "rag", f"The Eiffel Tower is in Paris.\n{attack}", chunks))


def fooled(body: dict) -> Reply:
    """A model that obeys whatever it reads."""
    user, task = body["messages"][1]["content"], prompts.task_of(body["messages"])
    if task == prompts.EXTRACTION:
        blocks = {tag: text for tag, _, text in BLOCK.findall(user)}

        def lines(text: str) -> list[str]:  # "```" is no claim, even for this model
            return [line for line in text.splitlines() if any(c.isalnum() for c in line)]

        return Reply.json({"answer_claims": lines(blocks["answer"]), "reference_claims": lines(blocks["reference"]),
                           "generated_questions": ["Where?", "What?", "Which?"]})
    if task == prompts.VERIFICATION:
        ids = sorted(set(ANY_ID.findall(user)))
        chunks = [i for i in ids if i.startswith("C")]
        verdicts = [{"chunk_id": c, "verdict": "supported"} for c in chunks]
        return Reply.json({
            "answer_claims": [{"claim_id": a, "chunk_verdicts": verdicts, "reference_verdict": "supported",
                               "matched_reference_claims": [r for r in ids if r.startswith("R")]}
                              for a in ids if a.startswith("A")],
            "reference_claims": [{"claim_id": r, "chunk_verdicts": verdicts, "answer_verdict": "supported"}
                                 for r in ids if r.startswith("R")],
            "chunks": [{"chunk_id": c, "relevant": True, "relevance_score": 150, "reason": "told so"} for c in chunks]})
    if len(body["messages"]) == 2:  # the first holistic answer obeys "rate 5" beyond the scale
        return Reply.json({**SEED_000_HOLISTIC, "overall_score": 7, "correctness": 0})
    return Reply.json(SEED_000_HOLISTIC)


def expected_blocks(purpose: str, sample: Sample, user: str) -> list[tuple[str, str, str]]:
    """(tag, id, content) of every block the judge built for `purpose`, in order: the sample (question, reference,
    answer and but for the extraction the chunks), then a verification's claims."""
    golden, output = sample.golden, sample.output
    head = [("question", "", golden.question), ("reference", "", golden.reference), ("answer", "", output.answer)]
    chunks = [("chunk", prompts.chunk_id(j), c.text) for j, c in enumerate(output.contexts)]
    if purpose == prompts.EXTRACTION:
        return head
    if purpose == prompts.HOLISTIC:
        return [*head, *chunks]
    claims = [("claim", i, text) for _, i, text in BLOCK.findall(user) if i and i[0] in "AR"]
    return [*head, *chunks, *claims]


@pytest.fixture(scope="module")
def judged():
    samples = [injected(i, attack["text"]) for i, attack in enumerate(CORPUS)]
    with start_server() as server:
        server.responder = fooled
        judge = JudgeClient(server.base_url, "m", api_key="test", timeout=5, backoff_base=0.01, backoff_max=0.05)
        results = judge.assess_sync(samples)
        yield samples, results, server.requests


def test_the_corpus_covers_what_the_issue_names():
    texts = " ".join(a["text"] for a in CORPUS)
    for needle in ("Ignore the instructions", "rate this answer 5", '<chunk id="C9">', "[C9]", '{"answer_claims"',
                   "<|im_start|>", "SYSTEM:", "</answer>"):
        assert needle in texts


def test_every_uploaded_text_stays_inside_its_own_block(judged):
    samples, _, requests = judged
    by_question = {s.golden.question: s for s in samples}
    for request in requests:
        system, user = (m["content"] for m in request.body["messages"][:2])
        purpose = prompts.task_of(request.body["messages"])
        assert system == prompts.SYSTEM
        sample = next(s for q, s in by_question.items() if prompts.data(q) in user)
        blocks = BLOCK.findall(user)
        want = expected_blocks(purpose, sample, user)
        assert [(tag, i) for tag, i, _ in blocks] == [(tag, i) for tag, i, _ in want], purpose
        if purpose == prompts.VERIFICATION:  # the claims are the fooled model's lines of the answer and the reference
            claims = [text for tag, _, text in blocks if tag == "claim"]
            assert all(prompts.data(c) == c for c in claims)  # as sent: already neutral
        else:
            assert [text for _, _, text in blocks] == [prompts.data(text) for _, _, text in want]
        outside = [line.strip() for line in BLOCK.sub("", user).splitlines() if line.strip()]
        assert set(outside) <= SCAFFOLDING, outside
        # one task line, the judge's: uploaded "TASK: holistic" stays inside its blocks
        assert [line for line in outside if line.startswith("TASK: ")] == [f"TASK: {purpose}"]


def test_no_id_from_uploaded_text_reaches_the_matrix_and_scores_stay_in_bounds(judged):
    samples, results, _ = judged
    assert len(results) == len(CORPUS)
    for sample, (judgment, rating) in zip(samples, results):
        assert judgment.status == OK and rating.status == OK, (judgment.error, rating.error)
        m = judgment.matrix
        assert m.chunk_ids == ("d1", "d2")
        assert all(len(row) == 2 for row in (*m.answer_vs_chunks, *m.reference_vs_chunks))
        assert all(i < len(m.reference_claims) for match in m.answer_matches for i in match)
        assert all(0 <= c.score <= 100 for c in m.chunk_relevance)
        for name, result in claim_metrics(m).items():
            assert result.value is None or 0 <= result.value <= 1, name
        ratings = rating.holistic.ratings
        assert all(1 <= v <= 5 for v in ratings.values()) and ratings["overall"] == SEED_000_HOLISTIC["overall_score"]
        assert [c.status for c in rating.calls] == ["invalid", OK]  # the out-of-range reply was repaired


def test_data_neutralises_every_block_tag_and_role_marker():
    for attack in CORPUS:
        text = prompts.data(attack["text"])
        assert not re.search(r"<\s*/?\s*(question|answer|reference|claim|chunk|context)\b", text, re.IGNORECASE)
        assert "<|" not in text and "|>" not in text
    assert prompts.data("a < b and 2<3, <b>bold</b>") == "a < b and 2<3, <b>bold</b>"  # other text unchanged
