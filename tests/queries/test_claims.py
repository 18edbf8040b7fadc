"""evaluators/queries/claims.py against real DuckDB files: a small run built with the real loaders
and engine (offline judge; answers and chunks carrying HTML/markdown payloads), an LLM-judged run
(the scripted OpenAI-compatible server), and the demo database."""
from __future__ import annotations

import json

import pytest

from evaluators.judges import prompts
from evaluators.queries import claims as q
from evaluators.store import close_store, open_store
from tests.helpers.claims_runs import CHUNKS, EVIL_METHOD, GOLDEN, METRICS, OUTPUTS, TOWER, build_llm_run, build_run


@pytest.fixture(scope="module")
def payload_db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("payload")
    db = tmp / "payload.duckdb"
    run_id = build_run(db, tmp)
    store = open_store(db)
    yield store, run_id
    close_store(db)


def test_question_options_search_and_neighbours(payload_db):
    store, run_id = payload_db
    options, total = q.question_options(store, run_id)
    assert list(options["question_id"]) == ["q1", "q2", "q3"] and total == 3
    assert options.set_index("question_id").loc["q3", "question_type"] == ""
    found, total = q.question_options(store, run_id, "SCRIPT>")  # case-insensitive, literal (no LIKE wildcards)
    assert list(found["question_id"]) == ["q1", "q2"] and total == 2  # q2's question, and q1's answer of basic
    assert list(q.question_options(store, run_id, "GREY STONE")[0]["question_id"]) == ["q1"]  # an answer only
    assert list(q.question_options(store, run_id, "don't know")[0]["question_id"]) == ["q3"]
    assert q.question_options(store, run_id, "%")[1] == 0
    limited, total = q.question_options(store, run_id, "", limit=2)
    assert len(limited) == 2 and total == 3
    assert q.neighbours(store, run_id, "q2") == ("q1", "q3")
    assert q.neighbours(store, run_id, "q1") == (None, "q2")
    assert q.neighbours(store, run_id, "q1", "door") == (None, "q3")
    # a set another screen opened (Diagnosis): only its questions, searched and stepped through among themselves
    only = ["q3", "q1", "q9"]  # q9: not a question of the run
    options, total = q.question_options(store, run_id, only=only)
    assert list(options["question_id"]) == ["q1", "q3"] and total == 2
    assert q.question_options(store, run_id, "GREY STONE", only=["q3"])[1] == 0
    assert q.neighbours(store, run_id, "q1", only=only) == (None, "q3")
    assert q.neighbours(store, run_id, "q3", only=only) == ("q1", None)


def test_question_and_answers(payload_db):
    store, run_id = payload_db
    item = q.question(store, run_id, "q2")
    assert item["question"] == GOLDEN[1]["question"] and item["question_type"] == "Complex Reasoning"
    assert q.question(store, run_id, "nope") is None
    answers = q.answers(store, run_id, "q1")
    assert list(answers["method"]) == ["basic", EVIL_METHOD] and list(answers["n_chunks"]) == [3, 3]
    assert answers.loc[0, "answer"] == OUTPUTS[0]["answer"]  # stored as uploaded, escaped only when shown


def test_claims_match_the_claims_table(payload_db):
    store, run_id = payload_db
    frame = q.claims(store, run_id, "q1")
    stored = store.cursor().execute(
        "SELECT method, source, claim_idx, text, verdict, chunk_ids FROM claims WHERE run_id = ? AND question_id = 'q1' "
        "ORDER BY method, source, claim_idx", [run_id]).fetchall()
    assert [(m, s, i, t, v, list(c)) for m, s, i, t, v, c in
            frame[["method", "source", "claim_idx", "text", "verdict", "chunk_ids"]].itertuples(index=False)] == \
        [(m, s, i, t, v, list(c)) for m, s, i, t, v, c in stored]
    assert frame["human_verdict"].isna().all()
    assert {"answer", "reference"} == set(frame["source"])
    assert frame[(frame["method"] == "basic") & (frame["source"] == "answer")]["text"].str.contains(TOWER, regex=False).any()


def test_chunks_carry_relevance_support_and_sharing(payload_db):
    store, run_id = payload_db
    chunks = q.chunks(store, run_id, "q1")
    assert len(chunks) == 6 and list(chunks["chunk_idx"]) == [0, 1, 2, 0, 1, 2]
    basic = chunks[chunks["method"] == "basic"].set_index("chunk_idx")
    assert basic.loc[0, "text"] == CHUNKS["basic"][0]
    assert list(basic.loc[0, "shared_with"]) == [EVIL_METHOD] and list(basic.loc[1, "shared_with"]) == []
    assert list(basic.loc[2, "shared_with"]) == [EVIL_METHOD]  # the same text at another rank
    verdicts = store.cursor().execute(
        "SELECT chunk_idx, relevant, used_by_answer FROM chunk_verdicts WHERE run_id = ? AND question_id = 'q1' "
        "AND method = 'basic' ORDER BY chunk_idx", [run_id]).fetchall()
    assert [(i, bool(r), bool(u)) for i, r, u in basic.reset_index()[["chunk_idx", "relevant", "used_by_answer"]]
            .itertuples(index=False)] == [(i, r, u) for i, r, u in verdicts]
    claims = q.claims(store, run_id, "q1")
    for idx, row in basic.iterrows():  # a chunk supports exactly the claims that list its id
        expected = sorted(int(c.claim_idx) for c in claims.itertuples()
                          if c.method == "basic" and c.source == "answer" and row["chunk_id"] in list(c.chunk_ids))
        assert list(row["supports_answer"]) == expected
    assert basic.loc[0, "used_by_answer"] and len(basic.loc[0, "supports_answer"]) >= 1


def test_scores_with_labels_and_human_overrides_beside(payload_db):
    store, run_id = payload_db
    scores = q.sample_scores(store, run_id, "q1")
    assert len(scores) == 2 * len(METRICS)
    stored = store.cursor().execute("SELECT value FROM scores WHERE run_id = ? AND question_id = 'q1' AND "
                                    "method = 'basic' AND metric = 'faithfulness'", [run_id]).fetchall()[0][0]
    row = scores[(scores["method"] == "basic") & (scores["metric"] == "faithfulness")].iloc[0]
    assert row["value"] == stored and row["human_value"] != row["human_value"]  # NaN: no override yet


def test_tp_fp_fn_counts_from_the_score_and_the_lists_from_each_claims_other_side_verdict(payload_db):
    store, run_id = payload_db
    frame = q.tp_fp_fn(store, run_id, "q1").set_index("method")
    detail = store.cursor().execute("SELECT detail FROM scores WHERE run_id = ? AND question_id = 'q1' AND "
                                    "method = 'basic' AND metric = 'answer_correctness_f1'", [run_id]).fetchall()[0][0]
    row = frame.loc["basic"]
    assert detail == f"TP {row['tp']}, FP {row['fp']}, FN {row['fn']}"
    assert (len(row["tp_claims"]), len(row["fp_claims"]), len(row["fn_claims"])) == (row["tp"], row["fp"], row["fn"])
    assert row["lists_match_counts"]


def test_the_counts_are_stored_as_data_not_read_back_from_the_detail(tmp_path):
    db = tmp_path / "counts.duckdb"
    run_id = build_run(db, tmp_path, metrics=["answer_correctness_f1"])
    store = open_store(db)
    try:
        before = q.tp_fp_fn(store, run_id, "q1").set_index("method")[["tp", "fp", "fn"]]
        assert before.notna().all().all()
        store.cursor().execute("UPDATE scores SET detail = 'reworded for people' WHERE run_id = ?", [run_id])
        after = q.tp_fp_fn(store, run_id, "q1").set_index("method")[["tp", "fp", "fn"]]
        assert after.equals(before)
    finally:
        close_store(db)


def test_offline_runs_have_no_generated_questions_nor_judge_calls(payload_db):
    store, run_id = payload_db
    assert q.generated_questions(store, run_id, "q1").empty and q.judge_calls(store, run_id, "q1").empty


def test_llm_run_tp_lists_generated_questions_and_judge_calls(tmp_path, monkeypatch):
    from tests.helpers.seed_000 import SEED_000_EXTRACTION

    db = tmp_path / "llm.duckdb"
    run_id = build_llm_run(db, tmp_path, monkeypatch)
    store = open_store(db)
    try:
        counts = q.tp_fp_fn(store, run_id, "s1").iloc[0]
        assert (counts["tp"], counts["fp"], counts["fn"]) == (2, 0, 0)
        assert list(counts["tp_claims"]) == SEED_000_EXTRACTION["answer_claims"]
        assert list(counts["fp_claims"]) == [] and list(counts["fn_claims"]) == [] and counts["lists_match_counts"]
        generated = q.generated_questions(store, run_id, "s1")
        assert list(generated["text"]) == SEED_000_EXTRACTION["generated_questions"]
        calls = q.judge_calls(store, run_id, "s1")
        assert list(calls["purpose"]) == ["extraction", "verification"] and set(calls["status"]) == {"ok"}
        assert all('"messages"' in r for r in calls["request"])
        # stored packed (the system prompts and schemas by hash), read back whole: the judge's JSON text
        system = [json.loads(r)["messages"][0]["content"] for r in calls["request"]]
        assert system == [prompts.SYSTEM, prompts.SYSTEM]
        stored = store.cursor().execute("SELECT text FROM judge_texts").fetchall()
        assert (json.dumps(prompts.SYSTEM, ensure_ascii=False)[1:-1],) in stored
        assert json.loads(calls["response"].iloc[0])  # the raw response body, as received
        assert (calls["input_tokens"] > 0).all()
    finally:
        close_store(db)


def test_the_demo_question_reads_only_its_rows(demo):
    """On the demo run: one question's claims equal the table's rows for it, for both methods."""
    store, run_id = demo
    qid = q.question_options(store, run_id)[0]["question_id"].iloc[10]
    frame = q.claims(store, run_id, qid)
    n = store.cursor().execute("SELECT count(*), count(DISTINCT method) FROM claims WHERE run_id = ? AND "
                               "question_id = ?", [run_id, qid]).fetchall()[0]
    assert (len(frame), frame["method"].nunique()) == n and n[1] == 2
    assert set(q.sample_scores(store, run_id, qid)["method"]) == {"basic_search", "local_search"}


# --------------------------------------------------------------------------- the screen's view
# on a copy of the demo database (the fixture `demo`: store, run_id)


def test_the_view_opens_on_the_first_question_with_its_claims_chunks_and_counts(demo):
    store, run_id = demo
    tables = q.view(store, run_id)
    first = q.question_options(store, run_id)[0]["question_id"].iloc[0]
    assert tables["question"]["question_id"].tolist() == [first]  # no question asked: the first by id
    assert tables["answers"]["method"].tolist() == ["basic_search", "local_search"]
    claims = tables["answer_claims"]
    for method in ("basic_search", "local_search"):
        rows = store.cursor().execute(
            "SELECT claim_idx, text, verdict, chunk_ids, reason FROM claims WHERE run_id = ? AND question_id = ? "
            "AND method = ? AND source = 'answer' ORDER BY claim_idx", [run_id, first, method]).fetchall()
        mine = claims[claims["method"] == method]
        assert len(mine) == len(rows) > 0
        assert list(mine["claim"]) == [f"A{i + 1}" for i, *_ in rows]
        assert list(mine["text"]) == [t for _, t, *_ in rows]
        assert list(mine["verdict"]) == [v for _, _, v, *_ in rows]
        assert list(mine["supporting chunks"]) == [", ".join(c) for *_, c, _ in rows]
        assert list(mine["reason"]) == [r for *_, r in rows]
    assert list(claims.columns) == ["method", "claim", "verdict", "human verdict", "supporting chunks", "text",
                                    "matched reference claims", "reason"]
    chunks = tables["chunks"][tables["chunks"]["method"] == "basic_search"]
    assert list(chunks["rank"]) == list(range(1, len(chunks) + 1)) and chunks["relevance"].notna().all()
    # TP/FP/FN: the counts of the stored score's detail, the claims behind them as many
    counts = tables["tp_fp_fn"].set_index("method").loc["basic_search"]
    detail = store.cursor().execute(
        "SELECT detail FROM scores WHERE run_id = ? AND question_id = ? AND method = 'basic_search' "
        "AND metric = 'answer_correctness_f1'", [run_id, first]).fetchall()[0][0]
    assert detail == f"TP {counts['TP']}, FP {counts['FP']}, FN {counts['FN']}" and counts["lists match counts"]
    listed = tables["tp_fp_fn_claims"]
    listed = listed[listed["method"] == "basic_search"]["kind"].value_counts()
    assert [listed.get(k, 0) for k in ("TP", "FP", "FN")] == [counts["TP"], counts["FP"], counts["FN"]]
    assert tables["generated_questions"].empty and tables["judge_calls"].empty  # the offline judge


def test_key_scores_are_the_scores_as_shown_with_the_humans_beside(demo):
    store, run_id = demo
    first = q.question_options(store, run_id)[0]["question_id"].iloc[0]
    store.add_annotation(run_id=run_id, question_id=first, method="local_search", author="ann", metric="faithfulness",
                         override_value=0.25)
    tables = q.view(store, run_id)
    scores = tables["scores"].set_index(["method", "metric"])
    assert list(tables["scores"].columns) == ["method", "metric", "value", "human", "judge", "detail"]  # no repeats
    raw = q.sample_scores(store, run_id, first).set_index(["method", "metric"])
    overall = raw.loc[("basic_search", "judge_overall")]
    assert scores.loc[("basic_search", "judge_overall"), "value"] == f"{overall['value']:.2f}"  # 1-5: 2 decimals
    assert scores.loc[("basic_search", "verdict"), "value"] == raw.loc[("basic_search", "verdict"), "label"]
    key = tables["key_scores"].set_index("method")
    assert list(key.columns) == list(q.KEY_METRICS)
    assert key.loc["basic_search", "judge_overall"] == scores.loc[("basic_search", "judge_overall"), "value"]
    faithfulness = scores.loc[("local_search", "faithfulness"), "value"]
    assert key.loc["local_search", "faithfulness"] == f"{faithfulness} (human 0.25)"
    assert scores.loc[("local_search", "faithfulness"), "human"] == "0.25"


def test_the_view_follows_its_options(payload_db):
    store, run_id = payload_db
    assert q.view(store, run_id, question_id="q2")["question"]["question"].tolist() == [GOLDEN[1]["question"]]
    assert q.view(store, run_id, search="door")["question"]["question_id"].tolist() == ["q3"]
    only = q.view(store, run_id, question_id="q1", methods=[EVIL_METHOD])
    assert {name: set(t["method"]) for name, t in only.items() if "method" in t and len(t)} == {
        name: {EVIL_METHOD} for name, t in only.items() if "method" in t and len(t)}
    assert set(only) >= {"answers", "answer_claims", "chunks", "reference_claims", "tp_fp_fn", "scores"}
    chunks = q.view(store, run_id, question_id="q1")["chunks"]
    assert chunks.set_index(["method", "rank"]).loc[("basic", 1), "shared with"] == EVIL_METHOD  # raw text, as uploaded
    with pytest.raises(ValueError, match="question 'nope' is not one of this run's questions"):
        q.view(store, run_id, question_id="nope")
    with pytest.raises(ValueError, match="method 'nope' is not one of: 'basic'"):
        q.view(store, run_id, methods=["nope"])


def test_an_llm_run_gives_its_judge_calls_generated_questions_and_tp_lists(tmp_path, monkeypatch):
    from tests.helpers.seed_000 import SEED_000_EXTRACTION

    db = tmp_path / "llm.duckdb"
    run_id = build_llm_run(db, tmp_path, monkeypatch)
    store = open_store(db)
    try:
        tables = q.view(store, run_id)
        calls = tables["judge_calls"]
        assert list(calls["purpose"]) == ["extraction", "verification"] and set(calls["status"]) == {"ok"}
        assert all('"messages"' in r for r in calls["request"]) and "generated_questions" in calls["response"].iloc[0]
        assert list(tables["generated_questions"]["text"]) == SEED_000_EXTRACTION["generated_questions"]
        listed = tables["tp_fp_fn_claims"]
        assert list(listed["kind"]) == ["TP", "TP"] and list(listed["claim"]) == SEED_000_EXTRACTION["answer_claims"]
        assert list(tables["reference_claims"]["covered by the answer"]) == ["supported", "supported"]
        assert tables["tp_fp_fn"]["lists match counts"].all()
    finally:
        close_store(db)
