"""The Claims screen (AppTest; its tables are tested in tests/queries/test_claims.py): the view's tables shown with
uploaded HTML/markdown staying inert, drill-down, stepping and search, an LLM-judged run's raw calls, and a
run with repeats (Overview's spread, each reply in the view)."""
from __future__ import annotations

import html

from streamlit.testing.v1 import AppTest

from evaluators.judges import OpenAIJudge
from evaluators.queries import claims as q
from evaluators.judges import prompts
from evaluators.store import open_store
from tests.helpers.screens import assert_inert
from tests.helpers.screens import keep_run
from tests.helpers.claims_runs import EVIL_METHOD, PAYLOADS, build_llm_run, build_run
from tests.helpers.screens import assert_page_is_inert, assert_shown


def _demo_questions(db) -> list[str]:
    store = open_store(db)
    run_id = store.cursor().execute("SELECT run_id FROM runs").fetchall()[0][0]
    return run_id, [r for r, in store.cursor().execute(
        "SELECT DISTINCT question_id FROM claims WHERE run_id = ? ORDER BY question_id", [run_id]).fetchall()]


def _tables(at: AppTest, column: str) -> list:
    """The tables with `column`, in page order (per section: one per method, methods sorted)."""
    return [d.value for d in at.dataframe if column in d.value.columns]


def _per_method(frame):
    """A view's table as the page shows it: one table per method, in method order, without the method."""
    return [part.drop(columns="method").reset_index(drop=True) for _, part in frame.groupby("method", sort=True)]


def test_drill_down_stepping_and_search(app_at, monkeypatch):
    """A question asked by another screen (beyond the listed ones) is shown and survives a visit elsewhere;
    Previous and Next step by id; the search is case-insensitive and says when nothing matches."""
    monkeypatch.setattr(q, "OPTIONS_LIMIT", 10)
    at = app_at()
    run_id, questions = _demo_questions(app_at.db)
    keep_run(at, run_id)
    at.switch_page("pages/claims.py").run()
    assert at.title[0].value == "Claims"
    assert at.selectbox(key="claims-question").value == questions[0]  # no drill-down: the first question by id
    assert at.button[0].label == "Previous" and at.button[0].disabled
    at.text_input(key="claims-search").set_value("novel").run()  # a search that matches every question
    at.session_state["question_id"] = questions[50]  # what ui.common.open_question sets before switching pages
    at.switch_page("pages/overview.py").run()
    at.switch_page("pages/claims.py").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="claims-question").value == questions[50]
    assert len(at.selectbox(key="claims-question").options) == 11  # the 10 listed, and the one asked for
    assert any("first 10 of 103 questions" in c.value for c in at.caption)
    question = open_store(app_at.db).cursor().execute(
        "SELECT question FROM golden_items WHERE question_id = ?", [questions[50]]).fetchall()[0][0]
    assert any(question in h.value for h in at.html)
    assert any(h.value.startswith("<h3") and "basic_search" in h.value for h in at.html)
    assert any(h.value.startswith("<h3") and "local_search" in h.value for h in at.html)
    at.button[1].click().run()  # Next steps on by id
    assert at.selectbox(key="claims-question").value == questions[51]
    at.button[0].click().run()
    assert at.selectbox(key="claims-question").value == questions[50]
    at.text_input(key="claims-search").set_value(questions[40][-6:].upper()).run()  # case-insensitive
    options = at.selectbox(key="claims-question").options
    assert len(options) == 1 and options[0].startswith(f"{questions[40]} · ")
    assert at.selectbox(key="claims-question").value == questions[40]  # a new search shows its first match
    at.text_input(key="claims-search").set_value("no question has this text").run()
    assert not at.exception and "No question of this run matches" in at.warning[0].value


def test_the_screen_shows_the_views_tables_and_uploaded_text_stays_inert(tmp_path, app_on):
    db = tmp_path / "payload.duckdb"
    run_id = build_run(db, tmp_path)
    at = app_on(db, "pages/claims.py")
    for question_id in ("q1", "q2", "q3"):
        at.selectbox(key="claims-question").set_value(question_id).run()
        assert_page_is_inert(at)
        shown = "".join(h.value for h in at.html)
        assert "&lt;b&gt;bold&lt;/b&gt;" in shown  # the method name, escaped in its header
        expected = q.view(open_store(db), run_id, question_id=question_id)
        for column, name in (("matched reference claims", "answer_claims"), ("shared with", "chunks"),
                             ("covered by the answer", "reference_claims")):
            on_page = _tables(at, column)
            assert len(on_page) == len(_per_method(expected[name])), name
            for table, part in zip(on_page, _per_method(expected[name])):
                assert_shown(table, part)
        for _, row in expected["tp_fp_fn"].iterrows():
            if row["status"] == "ok":
                assert f"TP</span> <b>{row['TP']}</b>" in shown and f"F1</span> <b>{row['F1']:.3f}</b>" in shown
        for _, row in expected["key_scores"].iterrows():
            assert all(f"<b>{html.escape(value)}</b>" in shown for value in row.drop("method").dropna())
    at.selectbox(key="claims-question").set_value("q1").run()
    shown = "".join(h.value for h in at.html)
    assert_inert(shown, *PAYLOADS)  # displayed as text, in the answer and the chunk cards
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in shown and "&lt;img src=x onerror=alert(1)&gt;" in shown
    assert "<mark" in shown  # the offline judge's claims are spans of the answer: highlighted inline
    assert '<a href="#rs-chunk-0-0"' in shown  # a claim links to the chunk card that supports it
    assert _tables(at, "shared with")[0]["shared with"].iloc[0] == EVIL_METHOD  # raw text in a cell, never HTML
    assert any("generates no questions" in c.value for c in at.caption)
    assert any("makes no calls" in c.value for c in at.caption)


def test_an_llm_runs_judge_calls_show_their_request_and_response(tmp_path, monkeypatch, app_on):
    from tests.helpers.seed_000 import SEED_000_EXTRACTION

    db = tmp_path / "llm.duckdb"
    build_llm_run(db, tmp_path, monkeypatch)
    at = app_on(db, "pages/claims.py")
    assert [e.label for e in at.expander if e.label.startswith("Call")] == ["Call 1: extraction · ok",
                                                                           "Call 2: verification · ok"]
    assert all('"messages"' in at.code[i].value for i in (0, 2))  # requests; responses follow each
    assert "generated_questions" in at.code[1].value
    generated = [d.value for d in at.dataframe if "idx" in d.value.columns]
    assert list(generated[0]["text"]) == SEED_000_EXTRACTION["generated_questions"]
    shown = "".join(h.value for h in at.html)
    for claim in SEED_000_EXTRACTION["answer_claims"]:  # rewritten claims: listed with badges, and as TP
        assert shown.count(claim) >= 2
    assert not any("older version" in c.value for c in at.caption)  # the lists match the counts


def test_a_run_with_repeats_stores_every_reply_and_both_screens_show_the_spread(tmp_path, monkeypatch, app_on):
    """repeats 3 through the engine (the loopback server gives 3 choices per holistic request): the score
    is the mean, every reply's value is stored, Overview shows the spread and Claims each reply."""
    from evaluators.queries import overview
    from tests.helpers.openai_server import Reply, start_server
    from tests.helpers.seed_000 import (SEED_000_ANSWER, SEED_000_CHUNKS, SEED_000_EXTRACTION, SEED_000_HOLISTIC,
                                         SEED_000_QUESTION, SEED_000_REFERENCE, SEED_000_VERIFICATION)

    def reply(body):
        name = prompts.task_of(body["messages"])
        if name == "holistic":
            return Reply.choices(*(Reply.json({**SEED_000_HOLISTIC, "overall_score": o}) for o in (3, 4, 5)))
        return Reply.json(SEED_000_EXTRACTION if name == "extraction" else SEED_000_VERIFICATION)

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    db = tmp_path / "repeats.duckdb"
    golden = [{"question_id": "s1", "question": SEED_000_QUESTION, "reference": SEED_000_REFERENCE}]
    outputs = [{"question_id": "s1", "method": "local", "answer": SEED_000_ANSWER, "contexts": list(SEED_000_CHUNKS)}]
    with start_server() as server:
        server.responder = reply
        run_id = build_run(db, tmp_path, golden=golden, outputs=outputs, 
                           judge=OpenAIJudge("judge-model", server.base_url, repeats=3),
                           metrics=["judge_overall", "verdict"],
                           name="Repeats run")
        assert [r.body.get("n") for r in server.requests if prompts.task_of(r.body["messages"]) == "holistic"] == [3]
    store = open_store(db)
    stored = dict(store.cursor().execute("SELECT metric, (value, repeats) FROM scores WHERE run_id = ?",
                                         [run_id]).fetchall())
    assert stored["judge_overall"] == (4.0, [3.0, 4.0, 5.0]) and stored["verdict"] == (1.0, [0.5, 1.0, 1.0])
    spread = overview.repeatability(store, run_id).set_index("metric")
    assert spread.loc["judge_overall", "replies"] == 3 and spread.loc["judge_overall", "mean_sd"] == 1.0
    assert spread.loc["verdict", "share_disagreeing"] == 1.0

    at = app_on(db, "pages/overview.py")
    assert any(s.value == "Judge repeatability" for s in at.subheader)
    table = next(d.value for d in at.dataframe if "mean SD within a sample" in d.value.columns)
    assert table.set_index("metric").loc["judge_overall", "mean SD within a sample"] == 1.0
    scores = q.view(store, run_id)["scores"].set_index("metric")
    assert scores.loc["judge_overall", "judge replies"] == "3, 4, 5"
    assert scores.loc["verdict", "value"] == "pass"  # the label of the mean overall 4, read back from the store


def test_the_search_finds_questions_by_their_answers_too(app_at):
    """Text found only in an answer (not in any question's id or text) finds that answer's question."""
    at = app_at()
    run_id, questions = _demo_questions(app_at.db)
    keep_run(at, run_id)
    at.switch_page("pages/claims.py").run()
    cur = open_store(app_at.db).cursor()
    answer = cur.execute("SELECT answer FROM rag_outputs WHERE question_id = ? AND length(answer) > 60 LIMIT 1",
                         [questions[60]]).fetchall()[0][0]
    phrase = answer[20:50]
    expected = sorted(r for r, in cur.execute(
        """SELECT DISTINCT g.question_id FROM golden_items g JOIN rag_outputs o USING (question_id)
           WHERE contains(lower(o.answer), lower(?)) OR contains(lower(g.question), lower(?))""",
        [phrase, phrase]).fetchall())
    assert questions[60] in expected
    at.text_input(key="claims-search").set_value(phrase.upper()).run()  # case-insensitive
    assert not at.exception, at.exception
    options = at.selectbox(key="claims-question").options
    assert [o.split(" · ")[0] for o in options] == expected
