"""The Error analysis screen (AppTest; its tables are tested in tests/queries/test_errors.py and
tests/queries/test_humans.py): the view's tables shown, drill-down to Claims from a sample and from a
judge-human disagreement, saving annotations beside the judge's output, and uploaded HTML staying inert."""
from __future__ import annotations

from streamlit.testing.v1 import AppTest

from evaluators.store import open_store
from tests.helpers.screens import keep_run
from tests.helpers.screens import assert_page_is_inert, assert_shown
from tests.helpers.claims_runs import build_run

PAGE = "pages/error_analysis.py"


def _open(app_at) -> tuple[AppTest, str]:
    at = app_at(PAGE)
    store = open_store(app_at.db)
    run_id = store.cursor().execute("SELECT run_id FROM runs").fetchall()[0][0]
    return keep_run(at, run_id), run_id


def _sql(db, sql, *params):
    return open_store(db).cursor().execute(sql, list(params)).fetchall()


def _list(at: AppTest):
    """The sample table (the selectable one) and its key."""
    tables = [d for d in at.dataframe if d.key and d.key.startswith("errors-table-")]
    assert len(tables) == 1, [d.key for d in at.dataframe]
    return tables[0].value, tables[0].key


def _select(at: AppTest, row: int) -> AppTest:
    _, key = _list(at)
    at.session_state[key] = {"selection": {"rows": [row], "columns": [], "cells": []}}
    at.run()
    assert not at.exception, at.exception
    return at


def test_the_screen_shows_the_views_tables_and_opens_a_sample_or_a_disagreement_on_claims(tmp_path, app_on):
    from evaluators.store import ratings
    from evaluators.queries import errors as q
    from evaluators.store import close_store
    from tests.helpers.tiny_run import tiny_run
    from tests.helpers.human_ratings import rated_cells, rating_records

    db = tmp_path / "humans.duckdb"
    run_id = tiny_run(db, tmp_path, list(rated_cells()), metrics=("faithfulness", "answer_class", "judge_clarity"))
    ratings.import_ratings(open_store(db), run_id, rating_records(), source="people.csv")
    expected = q.view(open_store(db), run_id)
    close_store(db)
    at = app_on(db, PAGE)
    assert at.title[0].value == "Error analysis"
    matches = expected["matches"].iloc[0]
    assert any(c.value.startswith(f"{matches['matched']} samples match; showing {matches['shown']}, "
                                  f"{matches['worst first']} {matches['sort metric']} first") for c in at.caption)
    table, _ = _list(at)
    assert_shown(table, expected["samples"])
    assert {"CSV", "Parquet", "JSON"} <= {b.label for b in at.get("download_button")}
    assert_shown(next(d.value for d in at.dataframe if "human_alpha" in d.value.columns), expected["humans"])

    pair = at.selectbox(key="ea-humans-pair")
    assert pair.options[0] == "correctness vs answer_class"  # shown as "dimension vs metric"
    pair.set_value(pair.options.index("faithfulness vs faithfulness")).run()
    gaps = at.dataframe(key=f"ea-humans-gaps-{pair.value}").value
    assert list(gaps["question_id"][:2]) == ["q2", "q4"] and list(gaps["method"][:2]) == ["local", "local"]
    at.session_state[f"ea-humans-gaps-{pair.value}"] = {"selection": {"rows": [1], "columns": [], "cells": []}}
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["question_id"] == "q4"  # ui.common.open_question, then st.switch_page
    assert "Error analysis" not in [t.value for t in at.title]
    at.switch_page("pages/claims.py").run()  # AppTest re-requests its last page: follow the switch
    assert at.title[0].value == "Claims" and at.selectbox(key="claims-question").value == "q4"

    at.switch_page(PAGE).run()  # a sample of the list: its side panel, and Open on Claims
    _select(at, 3)
    qid, method = table["question_id"].iloc[3], table["method"].iloc[3]
    assert any(qid in h.value and method in h.value for h in at.html)  # the side panel's heading
    at.button(key="ea-open").click().run()
    assert not at.exception, at.exception
    assert at.session_state["question_id"] == qid
    at.switch_page("pages/claims.py").run()
    assert at.title[0].value == "Claims" and at.selectbox(key="claims-question").value == qid


def test_saving_a_score_override_keeps_the_judge_row(app_at):
    at, run_id = _open(app_at)
    table, _ = _list(at)
    qid, method = table["question_id"].iloc[2], table["method"].iloc[2]
    judge_row = _sql(app_at.db, "SELECT * FROM scores WHERE run_id = ? AND question_id = ? AND method = ? AND "
                                "metric = 'judge_overall'", run_id, qid, method)
    _select(at, 2)
    assert any(qid in h.value and method in h.value for h in at.html)  # the side panel's heading
    at.button(key="ea-save-override").click().run()
    assert "Enter your name first" in at.error[0].value  # nothing saved without an author
    assert _sql(app_at.db, "SELECT count(*) FROM annotations")[0][0] == 0
    at.text_input(key="ea-author").set_value("Ada")
    at.selectbox(key="ea-override-metric").set_value("judge_overall").run()
    at.number_input(key="ea-override-value-judge_overall").set_value(4.5)
    at.text_input(key="ea-override-note").set_value("the answer is right")
    at.button(key="ea-save-override").click().run()
    assert not at.exception, at.exception
    saved = _sql(app_at.db, "SELECT question_id, method, metric, override_value, judge_value, note, author, created_at, "
                            "claim_idx FROM annotations")
    assert len(saved) == 1
    (s_qid, s_method, metric, value, judge_value, note, author, created_at, claim_idx), = saved
    assert (s_qid, s_method, metric, value, note, author, claim_idx) == (qid, method, "judge_overall", 4.5,
                                                                         "the answer is right", "Ada", None)
    assert judge_value == judge_row[0][4] and created_at is not None
    assert _sql(app_at.db, "SELECT * FROM scores WHERE run_id = ? AND question_id = ? AND method = ? AND "
                           "metric = 'judge_overall'", run_id, qid, method) == judge_row  # never overwritten
    assert "judge's value is kept" in at.success[0].value
    scores = [d.value for d in at.dataframe if "human" in d.value.columns][0].set_index("metric")
    assert scores.loc["judge_overall", "human"] == "4.5" and scores.loc["judge_overall", "by"] == "Ada"
    assert scores.loc["judge_overall", "judge"] == str(round(judge_row[0][4], 3))  # the judge's value beside
    assert at.session_state["annotator"] == "Ada"  # remembered for the session


def test_claim_verdicts_from_the_editor_and_kappa(app_at):
    at, run_id = _open(app_at)
    table, _ = _list(at)
    counts = dict(((q, m), n) for q, m, n in _sql(app_at.db, "SELECT question_id, method, count(*) FROM claims "
                                                             "WHERE run_id = ? GROUP BY ALL", run_id))
    row = next(i for i, key in enumerate(zip(table["question_id"], table["method"])) if counts.get(key, 0) >= 2)
    _select(at, row)
    qid, method = table["question_id"].iloc[row], table["method"].iloc[row]
    claims = _sql(app_at.db, "SELECT source, claim_idx, verdict, text FROM claims WHERE run_id = ? AND question_id = ? "
                             "AND method = ? ORDER BY source, claim_idx", run_id, qid, method)
    assert len(claims) >= 2
    editor_key = f"ea-claims-{qid}-{method}"
    flipped = "contradicted" if claims[1][2] != "contradicted" else "supported"
    at.session_state[editor_key] = {"edited_rows": {0: {"your verdict": claims[0][2]}, 1: {"your verdict": flipped}},
                                    "added_rows": [], "deleted_rows": []}
    at.text_input(key="ea-author").set_value("Ada")
    at.button(key="ea-save-claims").click().run()
    assert not at.exception, at.exception
    assert "Saved 2 claim verdicts (1 agree with the judge)" in at.success[0].value
    saved = _sql(app_at.db, "SELECT claim_source, claim_idx, label, judge_label, claim_text, author FROM annotations "
                            "ORDER BY claim_source, claim_idx")
    assert saved == [(claims[0][0], claims[0][1], claims[0][2], claims[0][2], claims[0][3], "Ada"),
                     (claims[1][0], claims[1][1], flipped, claims[1][2], claims[1][3], "Ada")]
    kappa = {m.label: m.value for m in at.metric}
    assert kappa["n"] == "2" and kappa["Observed agreement"] == "50%"


def test_uploaded_html_stays_inert_on_error_analysis(tmp_path, app_on):
    db = tmp_path / "payload.duckdb"
    build_run(db, tmp_path)
    at = app_on(db, PAGE)
    assert_page_is_inert(at)
    for row in range(len(_list(at)[0])):
        _select(at, row)
        assert_page_is_inert(at)


def _plain(markup: str) -> str:
    """The text of st.html markup as written before it was marked up: tags dropped, entities read, and the claims'
    labels (<sup>A1</sup>) and chunk links (<sub>[1]</sub>) the highlighting adds left out."""
    import html
    import re

    markup = re.sub(r"<(sup|sub)\b.*?</\1>", "", markup, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def test_the_list_shows_the_questions_and_a_selected_sample_shows_its_answer_reference_and_chunks(app_at):
    at, run_id = _open(app_at)
    table, _ = _list(at)
    assert table.columns[0] == "question" and table.columns[1] == "method"  # the question's text first, not its id
    golden = dict(_sql(app_at.db, "SELECT question_id, question FROM golden_items"))
    assert list(table["question"]) == [golden[q] for q in table["question_id"]]

    _select(at, 1)
    qid, method = table["question_id"].iloc[1], table["method"].iloc[1]
    (answer, contexts), = _sql(app_at.db, "SELECT o.answer, o.contexts FROM rag_outputs o JOIN runs r ON "
                                          "list_contains(r.outputs_dataset_ids, o.dataset_id) WHERE r.run_id = ? AND "
                                          "o.question_id = ? AND o.method = ?", run_id, qid, method)
    (question, reference), = _sql(app_at.db, "SELECT question, reference FROM golden_items WHERE question_id = ?",
                                  qid)
    shown = [_plain(h.value) for h in at.html]
    assert any(question in s for s in shown) and any(reference in s for s in shown)
    assert any(answer in s for s in shown)  # whole, its claims marked inside it
    assert contexts and all(any(c["text"] in s for s in shown) for c in contexts)  # every retrieved chunk
    assert f"Retrieved chunks ({len(contexts)})" in [t.label for t in at.tabs]


def test_the_search_keeps_the_samples_whose_question_or_answer_holds_the_text(app_at):
    at, run_id = _open(app_at)
    (answer,), = _sql(app_at.db, "SELECT answer FROM rag_outputs WHERE length(answer) > 80 "
                                 "ORDER BY question_id, method LIMIT 1")
    phrase = answer[30:55]
    expected = set(_sql(app_at.db, """
        SELECT DISTINCT s.question_id, s.method FROM scores s JOIN runs r USING (run_id)
        JOIN golden_items g ON g.dataset_id = r.golden_dataset_id AND g.question_id = s.question_id
        JOIN rag_outputs o ON list_contains(r.outputs_dataset_ids, o.dataset_id) AND o.question_id = s.question_id
             AND o.method = s.method
        WHERE s.run_id = ? AND (contains(lower(o.answer), lower(?)) OR contains(lower(g.question), lower(?)))""",
                        run_id, phrase, phrase))
    assert expected
    at.text_input(key="ea-search").set_value(phrase.upper()).run()  # case-insensitive
    assert not at.exception, at.exception
    table, _ = _list(at)
    assert set(zip(table["question_id"], table["method"])) == expected
    assert any(c.value.startswith(f"{len(expected)} samples match") for c in at.caption)
    at.text_input(key="ea-search").set_value("no answer or question says this").run()
    assert any("No sample matches these filters and the search" in w.value for w in at.warning)
