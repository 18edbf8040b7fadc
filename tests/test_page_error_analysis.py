"""The Error analysis screen (AppTest): worst-first list and filters against SQL, the side panel,
saving annotations beside the judge's output, Cohen's kappa on known labels, drill-down to Claims,
and uploaded HTML staying inert."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from evaluators.stats import cohen_kappa
from evaluators.store import open_store
from tests.test_page_claims import _assert_page_is_inert, app_on, keep_run  # noqa: F401 (app_on: a fixture)
from tests.test_queries_claims import build_run

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


def test_worst_samples_first_with_the_count_of_all(app_at):
    at, run_id = _open(app_at)
    assert at.title[0].value == "Error analysis"
    assert any(c.value.startswith("206 samples match; showing 100, lowest judge_overall first") for c in at.caption)
    table, _ = _list(at)
    expected = _sql(app_at.db, "SELECT question_id, method, value FROM scores WHERE run_id = ? AND "
                               "metric = 'judge_overall' ORDER BY norm, question_id, method LIMIT 100", run_id)
    assert list(zip(table["question_id"], table["method"], table["judge_overall"])) == \
        [(qid, m, round(v, 3)) for qid, m, v in expected]
    assert list(table.columns[:3]) == ["question_id", "method", "judge_overall"]  # scores in the first columns
    assert {"CSV", "Parquet", "JSON"} <= {b.label for b in at.get("download_button")}


def test_filters_narrow_the_list_like_sql(app_at):
    at, run_id = _open(app_at)
    at.multiselect(key="ea-methods").set_value(["local_search"])
    at.multiselect(key="ea-verdicts").set_value(["fail"])
    at.selectbox(key="ea-filter-metric").set_value("faithfulness").run()
    at.slider(key="ea-range-faithfulness").set_value((0.0, 0.9)).run()
    assert not at.exception, at.exception
    expected = _sql(app_at.db, """
        SELECT count(*) FROM scores f JOIN scores v USING (run_id, question_id, method)
        WHERE f.run_id = ? AND f.method = 'local_search' AND f.metric = 'faithfulness' AND f.status = 'ok'
          AND f.value <= 0.9 AND v.metric = 'verdict' AND v.detail LIKE 'fail%'""", run_id)[0][0]
    assert expected > 0
    assert any(c.value.startswith(f"{expected} samples match") for c in at.caption)
    table, _ = _list(at)
    assert set(table["method"]) == {"local_search"} and (table["faithfulness"] <= 0.9).all()
    assert set(table["verdict"]) == {"fail"}
    at.selectbox(key="ea-sort").set_value("hallucination_rate").run()
    table, _ = _list(at)
    assert table["hallucination_rate"].is_monotonic_decreasing  # lower is better: highest first


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


def test_kappa_over_known_annotations(app_at):
    at, run_id = _open(app_at)
    store = open_store(app_at.db)
    rows = _sql(app_at.db, "SELECT question_id, method, claim_idx, text FROM claims WHERE run_id = ? AND "
                           "source = 'answer' ORDER BY question_id, method, claim_idx LIMIT 5", run_id)
    # judge vs human: (s, s), (s, n), (n, n), (n, n) -> observed 3/4, chance (2x1 + 2x3)/16 = 1/2, kappa 0.5
    pairs = [("supported", "supported"), ("supported", "not_found"), ("not_found", "not_found"),
             ("not_found", "not_found")]
    for (qid, method, idx, text), (judge, human) in zip(rows, pairs):
        store.add_annotation(run_id=run_id, question_id=qid, method=method, author="Bo", claim_source="answer",
                             claim_idx=idx, label=human, judge_label=judge, claim_text=text)
    qid, method, idx, text = rows[0]  # an earlier label of the same claim by the same author does not count twice
    store.add_annotation(run_id=run_id, question_id=qid, method=method, author="Bo", claim_source="answer",
                         claim_idx=idx, label="contradicted", judge_label="supported", claim_text=text)
    store.add_annotation(run_id=run_id, question_id=qid, method=method, author="Bo", claim_source="answer",
                         claim_idx=idx, label="supported", judge_label="supported", claim_text=text)
    store.add_annotation(run_id=run_id, question_id=qid, method=method, author="Bo", metric="verdict", label="pass",
                         override_value=1.0, judge_label="fail", judge_value=0.0)
    at.run()
    assert not at.exception, at.exception
    assert cohen_kappa([j for j, _ in pairs], [h for _, h in pairs]).kappa == pytest.approx(0.5)
    shown = [{m.label: m.value for m in at.metric[i:i + 4]} for i in range(0, len(at.metric), 4)]
    assert shown[0] == {"Cohen's kappa": "0.50", "Observed agreement": "75%", "Chance agreement": "50%", "n": "4"}
    assert shown[1]["n"] == "1"  # the verdict label override
    confusion = [d.value for d in at.dataframe if d.value.index.name == "judge"][0]
    assert confusion.loc["supported", "supported"] == 1 and confusion.loc["supported", "not_found"] == 1
    assert confusion.loc["not_found", "not_found"] == 2 and confusion.loc["not_found", "supported"] == 0
    every = [d.value for d in at.dataframe if "judge_label_now" in d.value.columns][-1]
    assert len(every) == 7 and set(every["author"]) == {"Bo"}


def test_open_on_claims_drills_down(app_at):
    at, _ = _open(app_at)
    _select(at, 3)
    qid = _list(at)[0]["question_id"].iloc[3]
    at.button(key="ea-open").click().run()
    assert not at.exception, at.exception
    assert at.session_state["question_id"] == qid  # ui.common.open_question, then st.switch_page
    assert "Error analysis" not in [t.value for t in at.title]  # the script left this page
    # AppTest re-requests the page of its last switch_page() on every run; follow the switch as a browser does
    at.switch_page("pages/claims.py").run()
    assert at.title[0].value == "Claims"
    assert at.selectbox(key="claims-question").value == qid


def test_uploaded_html_stays_inert_on_error_analysis(tmp_path, app_on):
    db = tmp_path / "payload.duckdb"
    build_run(db, tmp_path)
    at = app_on(db, PAGE)
    _assert_page_is_inert(at)
    for row in range(len(_list(at)[0])):
        _select(at, row)
        _assert_page_is_inert(at)


def test_judge_vs_humans_table_and_a_disagreement_one_click_from_claims(tmp_path, app_on):
    from evaluators import labels
    from evaluators.queries import humans as qh
    from evaluators.store import close_store
    from tests.test_labels import tiny_run
    from tests.test_queries_humans import _cells, _records

    db = tmp_path / "humans.duckdb"
    run_id = tiny_run(db, tmp_path, list(_cells()), metrics=("faithfulness", "answer_class", "judge_clarity"))
    labels.import_ratings(open_store(db), run_id, _records(), source="people.csv")
    expected = qh.judge_vs_humans(open_store(db), run_id)
    close_store(db)
    at = app_on(db, PAGE)
    assert "Judge vs humans" in [s.value for s in at.subheader]
    table = next(d.value for d in at.dataframe if "human_alpha" in d.value.columns).set_index(["dimension", "metric"])
    assert list(table.index) == list(zip(expected["agreement"]["dimension"], expected["agreement"]["metric"]))
    faith = table.loc[("faithfulness", "faithfulness")]
    assert faith["n"] == 6 and faith["spearman"] == round(
        expected["agreement"].set_index(["dimension", "metric"]).loc[("faithfulness", "faithfulness"), "spearman"], 3)
    assert table.loc[("correctness", "answer_class"), "kappa"] == round((3 / 5 - 9 / 25) / (1 - 9 / 25), 3)
    assert table.loc[("Fluency", "judge_clarity"), "note"].startswith("judge_clarity is not ok for every rated item")

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
