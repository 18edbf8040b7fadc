"""The LLM judge scores an analyst's criteria (the CRITERIA part: openai_protocol.score_criteria,
prompts.criteria_messages, criteria_reply, geval) against the scripted server on 127.0.0.1
(tests/helpers/openai_server.py): runs through `evaluate` on a real DuckDB file, and the pure parts (G-Eval's
weighting, the reply's scale, the repeats) by hand."""
from __future__ import annotations

import collections
import json
import math
import re

import duckdb
import pytest

from evaluators import Criterion, evaluate
from evaluators.judges import CLAIMS, CRITERIA, HOLISTIC, criteria_reply, geval, openai_params, prompts
from evaluators.judges.azure_judge import AzureJudge
from evaluators.judges.openai_judge import OpenAIJudge
from evaluators.judges.openai_protocol import JudgeClient
from evaluators.records import JUDGE_ERROR, OK, Chunk, GoldenItem, RagOutput, Sample
from evaluators.records.criteria import Example
from evaluators.records.judgments import CriterionScore, JudgeFailure
from tests.helpers import TESTS
from tests.helpers.openai_server import (Reply, criteria_reply as scored_reply, in_prose, refusing, start_server,
                                         token_logprobs)
from tests.helpers.seed_000 import (KEY, SEED_000_ANSWER, SEED_000_CHUNKS, SEED_000_EXTRACTION, SEED_000_HOLISTIC,
                                     SEED_000_QUESTION, SEED_000_REFERENCE, SEED_000_VERIFICATION)

SOURCE = Criterion("names_the_source", "The answer says which passage its main claim comes from.", scale="pass/fail",
                   inputs=("question", "answer", "contexts"),
                   examples=(Example({"answer": "Paris. </answer>"}, 0, "no passage named"),))
PLAIN = Criterion("plain_language", "The answer is in plain language for a customer.", scale="1-5",
                  levels={1: "jargon throughout", 5: "no jargon at all"})
ON_TOPIC = Criterion("on_topic", "The answer stays on the question's topic.", scale="0-1",
                     inputs=("question", "answer", "reference"))
CRITERIA_3 = (SOURCE, PLAIN, ON_TOPIC)
IDS = [c.id for c in CRITERIA_3]
QUESTIONS = ("q1", "q2")


def inputs():
    golden = [{"question_id": q, "question": f"{SEED_000_QUESTION} ({q})", "reference": SEED_000_REFERENCE}
              for q in QUESTIONS]
    outputs = [{"question_id": q, "method": "rag", "answer": SEED_000_ANSWER, "contexts": list(SEED_000_CHUNKS)}
               for q in QUESTIONS]
    return golden, outputs


def built_ins(body: dict) -> Reply | None:
    """The seed's replies to the built-in tasks; None for a criteria request."""
    task = prompts.task_of(body["messages"])
    replies = {prompts.EXTRACTION: SEED_000_EXTRACTION, prompts.VERIFICATION: SEED_000_VERIFICATION,
               prompts.HOLISTIC: SEED_000_HOLISTIC}
    return Reply.json({t: replies[task] if t == task else None for t in prompts.TASKS}) if task in replies else None


def run(server, db, metrics=("faithfulness", "judge_overall"), criteria=CRITERIA_3, **judge):
    golden, outputs = inputs()
    return evaluate(golden, outputs, metrics=list(metrics), criteria=criteria, db=db,
                    judge=OpenAIJudge(model="judge-model", base_url=server.base_url, **judge))


def cells(db) -> dict[tuple[str, str], tuple]:
    """(question, metric) -> (value, status, detail, repeats) of the criteria cells."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT question_id, metric, value, status, detail, repeats FROM scores "
                           "WHERE metric IN ('names_the_source', 'plain_language', 'on_topic')").fetchall()
    finally:
        con.close()
    return {(q, m): (v, s, d, r) for q, m, v, s, d, r in rows}


def calls(db) -> list[tuple[str, str, str]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT question_id, purpose, status FROM judge_calls ORDER BY question_id").fetchall()
    finally:
        con.close()


def question_of(body: dict) -> str:
    return re.search(r"\((q\d)\)", body["messages"][1]["content"]).group(1)


def criteria_requests(server) -> list[dict]:
    return [r.body for r in server.requests if r.body and prompts.task_of(r.body["messages"]) == prompts.CRITERIA]


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with start_server() as s:
        s.responder = lambda body: built_ins(body) or s.default_reply(body)
        yield s


# -- a run ------------------------------------------------------------------------------------------------------------

def test_a_run_scores_every_criterion_in_its_scale_in_one_call_per_sample_and_two_rounds(server, tmp_path):
    slow_extraction = server.responder
    # the extractions answer late: a criteria call that waited for one would arrive after the verification calls
    server.responder = lambda body: (Reply.delay(1.0, slow_extraction(body)) if prompts.task_of(body["messages"])
                                     == prompts.EXTRACTION else slow_extraction(body))
    db = tmp_path / "run.duckdb"
    run(server, db)

    got = cells(db)
    assert set(got) == {(q, c) for q in QUESTIONS for c in IDS}
    for (q, metric), (value, status, detail, _) in got.items():
        assert status == OK, detail
        low, high = {"names_the_source": (0, 1), "plain_language": (1, 5), "on_topic": (0, 1)}[metric]
        assert low <= value <= high
    assert {m: v for (q, m), (v, *_) in got.items() if q == "q1"} == {"names_the_source": 1, "plain_language": 4,
                                                                       "on_topic": 0.8}
    per_sample = collections.Counter((question_of(r.body), prompts.task_of(r.body["messages"]))
                                     for r in server.requests if r.body)
    for q in QUESTIONS:  # extraction, holistic, criteria, one verification: 4 calls
        assert {t: per_sample[(q, t)] for t in prompts.TASKS} == dict.fromkeys(prompts.TASKS, 1)
    arrived = {(question_of(r.body), prompts.task_of(r.body["messages"])): r.arrived
               for r in server.requests if r.body}
    first_verification = min(arrived[(q, prompts.VERIFICATION)] for q in QUESTIONS)
    assert all(arrived[(q, prompts.CRITERIA)] < first_verification for q in QUESTIONS)  # in the first round
    assert sorted(p for q, p, s in calls(db) if q == "q1") == ["criteria", "extraction", "holistic", "verification"]


def test_the_criteria_call_shares_the_samples_prefix_and_says_each_criterions_inputs(server, tmp_path):
    run(server, tmp_path / "run.duckdb")
    bodies = [r.body for r in server.requests if r.body and question_of(r.body) == "q1"]
    by_task = {prompts.task_of(b["messages"]): b for b in bodies}
    criteria, extraction, holistic = (by_task[t] for t in (prompts.CRITERIA, prompts.EXTRACTION, prompts.HOLISTIC))
    assert criteria["response_format"]["json_schema"] == prompts.SCHEMA
    assert criteria["messages"][0] == extraction["messages"][0]  # the system message
    user = criteria["messages"][1]["content"]
    # a criterion reads the contexts: the whole sample, word for word as the holistic call quotes it
    assert user.startswith(holistic["messages"][1]["content"].partition("TASK: ")[0])
    task = user.partition("TASK: criteria")[2]
    assert '<criterion id="names_the_source" scale="pass/fail">\n' + SOURCE.criterion + "\n</criterion>" in task
    assert '<criterion_level id="plain_language" score="5">\nno jargon at all\n</criterion_level>' in task
    assert ('<criterion_example id="names_the_source" score="0">\n{"answer": "Paris. \u2039/answer>", "reason": '
            '"no passage named"}\n</criterion_example>') in task  # the example's text is data too
    blocks = {part.partition('"')[0]: part for part in task.split('<criterion id="')[1:]}
    source, plain, on_topic = (blocks[c.id] for c in CRITERIA_3)
    assert "INPUTS: the question, the answer, the context chunks (ignore the reference)" in source
    assert "(ignore the reference and the context chunks)" in plain and "SCORE: an integer from 1 to 5" in plain
    assert "(ignore the context chunks)" in on_topic and "SCORE: a number from 0 to 1" in on_topic
    # without a criterion reading the contexts, the head only (the extraction's)
    text = prompts.sample_text("Q?", "R.", "A.", ["chunk one"])
    messages = prompts.criteria_messages(text, [PLAIN])
    assert messages[1]["content"].startswith(text.head + "\n\nTASK: criteria") and "chunk one" not in str(messages)


def test_repeats_give_the_mean_and_the_majority_and_keep_each_reply(server, tmp_path):
    scores = [{"names_the_source": 1, "plain_language": 2, "on_topic": 0.25},
              {"names_the_source": 0, "plain_language": 4, "on_topic": 0.5},
              {"names_the_source": 0, "plain_language": 5, "on_topic": 1}]

    def respond(body):
        if prompts.task_of(body["messages"]) == prompts.CRITERIA:  # a server that gives n choices
            assert body["n"] == 3
            return Reply.choices(*(scored_reply(body, s) for s in scores))
        return built_ins(body)

    server.responder = respond
    db = tmp_path / "run.duckdb"
    run(server, db, metrics=("faithfulness",), repeats=3)
    got = cells(db)
    assert got[("q1", "names_the_source")][0] == 0 and got[("q1", "names_the_source")][3] == [1, 0, 0]
    assert got[("q1", "plain_language")][0] == pytest.approx(11 / 3) and got[("q1", "plain_language")][3] == [2, 4, 5]
    assert got[("q1", "on_topic")][0] == pytest.approx(1.75 / 3)
    assert len(criteria_requests(server)) == 2  # one request of 3 choices per sample


def test_a_pass_fail_tie_goes_to_the_earlier_reply():
    def reply(score):
        return criteria_reply.CriteriaReply({"names_the_source": criteria_reply.Scored(score, "r", ())})

    assert criteria_reply.combined([SOURCE], [reply(0), reply(1)])["names_the_source"] == CriterionScore(0, "r", False,
                                                                                                        (0, 1))
    assert criteria_reply.combined([SOURCE], [reply(1), reply(0)])["names_the_source"].score == 1
    assert criteria_reply.combined([SOURCE], [reply(1), reply(0), reply(0)])["names_the_source"].score == 0


def test_batch_api_mode_scores_the_criteria_alike(server, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGSCOPE_BATCH_POLL", "0.05")
    server.logprobs = {"4": 0.5, "5": 0.5}
    db = tmp_path / "run.duckdb"
    run(server, db, batch=True)
    assert server.batches_created == 2  # the first round (criteria with it), then the verification calls
    got = cells(db)
    assert {(m, v, s) for (q, m), (v, s, *_) in got.items() if q == "q1"} == {
        ("names_the_source", 1, OK), ("plain_language", 4.5, OK), ("on_topic", 0.8, OK)}
    assert AzureJudge.judges_criteria and OpenAIJudge.judges_criteria


# -- G-Eval's weighting -----------------------------------------------------------------------------------------------

def _token(text: str, alternatives: dict[str, float] | None = None) -> dict:
    alts = alternatives or {text: 1.0}
    return {"token": text, "logprob": 0.0, "bytes": list(text.encode()),
            "top_logprobs": [{"token": t, "logprob": math.log(p), "bytes": list(t.encode())} for t, p in alts.items()]}


def test_the_weighted_score_of_a_hand_made_token_list():
    reply = '{"r": "é", "score": 4}'
    # "é" is two bytes: a server may split it over two tokens, each holding one of its bytes
    tokens = [_token('{"'), _token("r"), _token('":'), _token(' "'), {**_token("\ufffd"), "bytes": [0xC3]},
              {**_token("\ufffd"), "bytes": [0xA9]}, _token('",'), _token(' "'), _token("score"), _token('":'),
              _token(" 4", {" 4": 0.5, " 5": 0.25, "3": 0.125, " four": 0.125}), _token("}")]
    offset = len(reply[:reply.index("4")].encode())
    # the digits' probabilities, renormalised over the digits: (4 * .5 + 5 * .25 + 3 * .125) / .875
    assert geval.weighted_score(tokens, offset) == pytest.approx(3.625 / 0.875, rel=1e-12)
    assert geval.weighted_score(tokens, offset + 1) is None  # not the digit's token
    assert geval.weighted_score([*tokens[:10], _token(" 4", {" four": 1.0}), tokens[-1]], offset) is None
    assert geval.value_offsets(reply) == {("score",): reply.index("4")}


def test_the_weighted_scores_of_a_reply_in_prose_are_found_in_its_json():
    reply = json.dumps({"criteria": [{"id": "a", "reasoning": "score: 2", "score": 3},
                                     {"id": "b", "reasoning": "", "score": 5}]})
    content = in_prose(reply)  # a server that ignores response_format: the JSON in a fenced block
    response = json.dumps({"choices": [{"message": {"content": content},
                                        "logprobs": {"content": token_logprobs(content, {"3": 0.75, "2": 0.25}, 5)}}]})
    paths = {"a": ("criteria", 0, "score"), "b": ("criteria", 1, "score"), "c": ("criteria", 2, "score")}
    assert geval.weighted_scores(response, 0, paths) == {"a": pytest.approx(2.75), "b": pytest.approx(2.75)}
    assert geval.weighted_scores(json.dumps({"choices": [{"message": {"content": reply}}]}), 0, paths) == {}


def test_log_probabilities_give_the_weighted_score_and_the_cell_says_so(server, tmp_path):
    server.logprobs = {"4": 0.6, "5": 0.3, "3": 0.1}
    db = tmp_path / "run.duckdb"
    run(server, db)
    value, status, detail, _ = cells(db)[("q1", "plain_language")]
    assert status == OK and value == pytest.approx(4 * 0.6 + 5 * 0.3 + 3 * 0.1, rel=1e-12)
    assert detail.startswith("G-Eval probability-weighted score")
    source = cells(db)[("q1", "names_the_source")]
    assert source[0] == 1 and source[2].startswith("the judge's score")  # pass/fail: as written
    assert all((b.get("logprobs"), b.get("top_logprobs")) == (True, 5) for b in criteria_requests(server))
    assert not any("logprobs" in r.body for r in server.requests
                   if r.body and prompts.task_of(r.body["messages"]) != prompts.CRITERIA)


def test_a_server_refusing_log_probabilities_is_asked_once_then_plain_scores(server, tmp_path):
    server.rules = refusing("logprobs")
    server.logprobs = {"5": 1.0}  # never given: the server refuses to be asked
    db = tmp_path / "run.duckdb"
    run(server, db)
    assert sum("logprobs" in b for b in criteria_requests(server)) == 1
    assert {(v, s) for (q, m), (v, s, d, r) in cells(db).items() if m == "plain_language"} == {(4, OK)}
    assert [(p, s) for q, p, s in calls(db) if s != OK] == [("criteria", "bad_request")]  # the one refusal
    assert openai_params.Params.of("gpt-5-mini").logprobs is False  # reasoning models refuse them: never sent


# -- replies that cannot be used --------------------------------------------------------------------------------------

def test_an_out_of_scale_score_gets_one_repair_then_that_cell_is_a_judge_error(server, tmp_path):
    def respond(body):
        if prompts.task_of(body["messages"]) == prompts.CRITERIA:
            return scored_reply(body, {"plain_language": 7, "names_the_source": "pass"})
        return built_ins(body)

    server.responder = respond
    db = tmp_path / "run.duckdb"
    run(server, db)
    got = cells(db)
    value, status, detail, _ = got[("q1", "plain_language")]
    assert (value, status) == (None, JUDGE_ERROR) and "7" in detail and "1-5" in detail
    assert got[("q1", "names_the_source")][:2] == (1, OK) and got[("q1", "on_topic")][:2] == (0.8, OK)
    assert sorted((p, s) for q, p, s in calls(db) if q == "q1" and p.startswith("criteria")) == [
        ("criteria", "invalid"), ("criteria_repair", "incomplete")]


def test_a_criterion_missing_from_the_reply_is_that_cells_judge_error(server, tmp_path):
    def respond(body):
        if prompts.task_of(body["messages"]) == prompts.CRITERIA:
            reply = json.loads(scored_reply(body).content)
            reply["criteria"] = [c for c in reply["criteria"] if c["id"] != "on_topic"]
            return Reply.json(reply)
        return built_ins(body)

    server.responder = respond
    db = tmp_path / "run.duckdb"
    run(server, db)
    got = cells(db)
    assert got[("q2", "on_topic")][:2] == (None, JUDGE_ERROR) and "no score for criterion on_topic" in got[
        ("q2", "on_topic")][2]
    assert got[("q2", "plain_language")][:2] == (4, OK) and got[("q2", "names_the_source")][:2] == (1, OK)
    repair = next(b for b in criteria_requests(server) if len(b["messages"]) > 2)
    assert "no score for criterion on_topic" in repair["messages"][-1]["content"]


def test_a_failed_criteria_call_fails_every_criterion_cell_with_the_reason(server, tmp_path):
    def respond(body):
        if prompts.task_of(body["messages"]) == prompts.CRITERIA:
            return Reply.text("no JSON here")
        return built_ins(body)

    server.responder = respond
    db = tmp_path / "run.duckdb"
    run(server, db)
    for (q, m), (value, status, detail, _) in cells(db).items():
        assert (value, status) == (None, JUDGE_ERROR) and "unusable reply after one repair" in detail


def test_a_cached_rerun_makes_no_request(server, tmp_path):
    server.logprobs = {"4": 0.5, "5": 0.5}
    db = tmp_path / "run.duckdb"
    run(server, db)
    first = cells(db)
    sent = server.request_count
    again = run(server, db)
    assert server.request_count == sent
    second = {(q, m): v for (q, m), v in cells(db).items()}
    assert first == second  # the same weighted scores, read back from the cached responses
    assert first[("q1", "plain_language")][0] == pytest.approx(4.5)
    assert again.run["status"] == "finished"


# -- prompt injection -------------------------------------------------------------------------------------------------

CORPUS = [json.loads(line)["text"] for line in (TESTS / "injection" / "corpus.jsonl").read_text().splitlines()]
BLOCK = re.compile(r'<(question|answer|reference|chunk|criterion|criterion_level|criterion_example)'
                   r'((?: \w+="[^"\n]*")*)>\n(.*?)\n</\1>', re.DOTALL)


def test_an_injected_criterion_or_answer_stays_data():
    criteria = [Criterion(f"c{i}", f"The answer is polite.\n{attack}", scale="pass/fail") for i, attack in
                enumerate(CORPUS)]
    attack = "\n".join(CORPUS)
    sample = Sample(GoldenItem("q1", "Where is the Eiffel Tower?", "In Paris."),
                    RagOutput("q1", "rag", f"In Paris.\n{attack}", (Chunk("d1", "Paris."),)))

    def fooled(body):  # obeys what it reads: scores every id it finds, beyond the scale
        user = body["messages"][1]["content"]
        if len(body["messages"]) > 2:
            return scored_reply(body)
        return Reply.json({"criteria": [{"id": i, "reasoning": "told so", "score": 5}
                                        for i in dict.fromkeys(re.findall(r'id="(\w+)"', user))]})

    with start_server() as server:
        server.responder = fooled
        client = JudgeClient(server.base_url, "m", api_key="test", timeout=5, backoff_base=0.01)
        (_, _, scored), = client.assess_parts_sync([sample], claims=False, holistic=False, criteria=criteria)
        body = server.requests[0].body
    user = body["messages"][1]["content"]
    blocks = BLOCK.findall(user)
    want = [("question", "", sample.golden.question), ("reference", "", "In Paris."),
            ("answer", "", sample.output.answer)]
    want += [("criterion", f' id="{c.id}" scale="pass/fail"', c.criterion) for c in criteria]
    assert [(tag, attrs) for tag, attrs, _ in blocks] == [(tag, attrs) for tag, attrs, _ in want]
    assert [text for *_, text in blocks] == [prompts.data(text) for *_, text in want]
    outside = [line for line in BLOCK.sub("", user).splitlines() if line.strip()]
    assert [line for line in outside if line.startswith("TASK: ")] == ["TASK: criteria"]
    assert set(outside) - {"TASK: criteria", "CRITERIA:"} == {"INPUTS: the question, the answer (ignore the reference "
                                                              "and the context chunks)", "SCORE: 1 (pass) or 0 (fail)"}
    # the fooled reply (fake ids, off-scale scores) was repaired; only the criteria sent have scores
    assert scored.status == OK and set(scored.scores) == {c.id for c in criteria}
    assert all(s == CriterionScore(1.0, f"The answer is judged on {cid}.") for cid, s in scored.scores.items())
    assert [c.status for c in scored.calls] == ["invalid", OK]
    assert "unknown criterion id" in scored.calls[0].error


def test_the_reply_is_held_to_each_criterions_scale():
    content = json.dumps({"criteria": [{"id": "names_the_source", "reasoning": "", "score": "fail"},
                                       {"id": "plain_language", "reasoning": "", "score": 4.5},
                                       {"id": "on_topic", "reasoning": "", "score": True}]})
    assert [criteria_reply.on_scale(ON_TOPIC, v) for v in (" 0.25", 1, "one", float("nan"), 1.5)] == [
        0.25, 1, None, None, None]
    assert [criteria_reply.on_scale(SOURCE, v) for v in ("Pass", False, 1.0, 2)] == [1, 0, 1, None]
    with pytest.raises(ValueError, match="4.5 is not on its 1-5 scale.*True is not on its 0-1 scale"):
        criteria_reply.read(CRITERIA_3, content)
    kept = criteria_reply.read(CRITERIA_3, content, strict=False)
    assert {k: s.score for k, s in kept.scores.items()} == {"names_the_source": 0}
    assert set(kept.problems) == {"plain_language", "on_topic"}
    failed = criteria_reply.combined(CRITERIA_3, [kept])["on_topic"]
    assert failed == JudgeFailure(JUDGE_ERROR, kept.problems["on_topic"])


# -- the estimate -----------------------------------------------------------------------------------------------------

def test_the_estimate_counts_one_criteria_call_per_sample_and_repeat():
    sample = Sample(GoldenItem("q1", SEED_000_QUESTION, SEED_000_REFERENCE),
                    RagOutput("q1", "rag", SEED_000_ANSWER, tuple(Chunk(str(i), t) for i, t in
                                                                  enumerate(SEED_000_CHUNKS))))
    judge = OpenAIJudge(model="gpt-4o-mini")
    every = judge.estimate([sample], {CLAIMS, HOLISTIC, CRITERIA}, CRITERIA_3)
    assert every.calls == {"extraction": 1, "verification": 1, "holistic": 1, "criteria": 1}
    alone = judge.estimate([sample], {CRITERIA}, CRITERIA_3)
    assert alone.calls == {"criteria": 1} and alone.input_tokens["criteria"] == every.input_tokens["criteria"] > 0
    assert OpenAIJudge(model="gpt-4o-mini", repeats=3).estimate([sample], {CRITERIA}, CRITERIA_3).calls == {
        "criteria": 3}
    assert judge.estimate([sample], {CRITERIA}, ()).calls == {}
