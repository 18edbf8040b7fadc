"""The Diagnosis page (AppTest) on the designed run (tests/helpers/diagnosis_run.py) and on the GraphRAG demo: it draws
the tables of `queries.diagnosis.view` (tests/queries/test_diagnosis.py checks their numbers), each number lists its
questions and each listed question opens on Claims."""
import pytest

from evaluators.queries import compare
from evaluators.queries import diagnosis as q
from evaluators.queries.attribution import RULE
from evaluators.store import open_store
from tests.helpers.headline_run import headline_run
from tests.helpers.diagnosis_run import A, B, LOST, diagnosis_run
from ui.common import md_escape
from tests.helpers.screens import assert_page_is_inert, click, element, figure, page, points, rows, same

pytestmark = pytest.mark.usefixtures("navigation_pages")


def test_the_sentences_numbers_list_their_questions_and_a_row_opens_claims(tmp_path, app_on):
    store, run_id = diagnosis_run(tmp_path)
    tables = q.view(store, run_id)
    at = app_on(store.path, "pages/diagnosis.py", run_id)
    assert at.title[0].value == "Diagnosis"
    assert [at.selectbox(key="diag_a").value, at.selectbox(key=f"diag_b_{A}").value] == [A, B]
    shown = [m.value for m in at.markdown]
    for sentence in tables["sentences"]["sentence"]:
        assert any(sentence.replace(" ", "") in s.replace("\\", "").replace(" ", "") for s in shown), sentence
    lines = q.rule_lines(tables["rules"])
    assert any("id_recall (5)" in line for line in lines)
    assert {md_escape("Decided by " + line) for line in lines} <= {c.value for c in at.caption}
    same(element(at, "dataframe", "diag_shares_table").value, tables["shares"])
    assert any(RULE == t.value for t in at.text)  # How scores are computed states the rule

    # a number of the sentences: its questions on Claims, in one click, and only those until asked for every one
    reason = "answer ignored retrieved evidence"
    at.button(key=f"diag_lost_{B}_{reason}").click().run()
    lost = LOST[(B, A)][reason]
    assert page(at) == "claims.py" and at.session_state["question_id"] in lost
    assert sorted(o.split(" · ")[0] for o in at.selectbox(key="claims-question").options) == lost
    assert any(f"{len(lost)} questions: " + md_escape(f"{B} loses to {A}, {reason}") in i.value for i in at.info)
    at.switch_page("pages/claims.py")  # AppTest's later runs start from the page it was given: stay on Claims
    at.button(key="claims-every").click().run()
    assert len(at.selectbox(key="claims-question").options) > len(lost) and "claims-only" not in at.session_state


def test_a_bar_lists_the_questions_of_its_label(tmp_path, app_on):
    store, run_id = diagnosis_run(tmp_path)
    at = app_on(store.path, "pages/diagnosis.py", run_id)
    bars = figure(at, "diag_shares")["data"]
    unknown = next(b for b in bars if b["name"] == "unknown")
    point = next(c for c in unknown["customdata"] if c[0] == A)
    click(at, element(at, "plotly_chart", "diag_shares"), points(point))
    listed = element(at, "dataframe", f"diag_behind_{A}|unknown").value
    assert list(listed["question_id"]) == ["q4", "q6", "q7"]
    same(element(at, "dataframe", "diag_every").value, q.view(store, run_id)["attribution"])
    click(at, element(at, "dataframe", f"diag_behind_{A}|unknown"), rows(1))  # a row: that question on Claims
    assert page(at) == "claims.py" and at.session_state["question_id"] == "q6"


def test_open_on_claims_steps_through_the_listed_questions_only(tmp_path, app_on):
    store, run_id = diagnosis_run(tmp_path)
    at = app_on(store.path, "pages/diagnosis.py", run_id)
    unknown = next(b for b in figure(at, "diag_shares")["data"] if b["name"] == "unknown")
    click(at, element(at, "plotly_chart", "diag_shares"), points(next(c for c in unknown["customdata"] if c[0] == A)))
    at.button(key="diag_open_all").click().run()
    assert page(at) == "claims.py" and at.session_state["question_id"] == "q4"
    assert [o.split(" · ")[0] for o in at.selectbox(key="claims-question").options] == ["q4", "q6", "q7"]


def test_one_method_without_a_retrieval_metric_is_said_not_diagnosed(tmp_path, app_on):
    store, run_id = headline_run(tmp_path, methods=("m1",))
    at = app_on(store.path, "pages/diagnosis.py", run_id)
    assert [s.label for s in at.selectbox] == ["Run"] and not at.button  # no pair to choose, no sentence
    notes = q.undecided_notes(q.view(store, run_id)["rules"])
    assert [w.value for w in at.warning] == [md_escape(n) for n in notes] and len(notes) == 1


def test_compare_shows_the_attribution_and_opens_diagnosis_on_its_pair_of_the_demo(app_at):
    at = app_at("pages/compare.py")
    store, run_id = open_store(app_at.db), at.session_state["run_id"]
    expected = q.view(store, run_id, methods=[A, B])
    assert list(expected["sentences"]["sentence"]) == list(compare.view(store, run_id)["attribution"]["sentence"])
    assert {md_escape(sentence) for sentence in expected["sentences"]["sentence"]} <= {
        m.value.removeprefix("- ") for m in at.markdown}
    at.button(key="cmp_diagnosis").click().run()
    assert page(at) == "diagnosis.py" and not at.exception
    assert_page_is_inert(at)
    assert [at.selectbox(key="diag_a").value, at.selectbox(key=f"diag_b_{A}").value] == [A, B]
    lines = q.rule_lines(expected["rules"])
    assert all("retrieval by context_recall (103)" in line for line in lines)  # the rule it used: claims, no ids
    assert {md_escape("Decided by " + line) for line in lines} <= {c.value for c in at.caption}
    assert any("no rank metrics" in i.value for i in at.info)
    same(element(at, "dataframe", "diag_shares_table").value, expected["shares"])
