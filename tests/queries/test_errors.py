"""evaluators/queries/errors.py and Store.add_annotation against real DuckDB files (a copy of the
demo database): filters, worst-first order, counts, annotations beside the judge, agreement pairs."""
from __future__ import annotations


import pytest

from evaluators.metrics.registry import lookup
from evaluators.queries import errors as q


def _sql(store, sql, *params):
    return store.cursor().execute(sql, list(params)).fetchall()


def test_the_worst_samples_come_first_with_the_count_of_all_matches(demo):
    store, run_id = demo
    rows, total = q.samples(store, run_id, sort_metric="judge_overall", limit=10)
    assert total == 206 and len(rows) == 10
    expected = _sql(store, "SELECT question_id, method, value FROM scores WHERE run_id = ? AND metric = 'judge_overall' "
                           "ORDER BY norm, question_id, method LIMIT 10", run_id)
    assert [(r.question_id, r.method, r.sort_value) for r in rows.itertuples()] == expected
    every, total_again = q.samples(store, run_id, limit=None)
    assert len(every) == total_again == 206


def test_lower_is_better_metrics_sort_highest_first():
    assert not q.worst_is_lowest("hallucination_rate") and q.worst_is_lowest("faithfulness")
    assert q.worst_is_lowest("dont_know")  # no better direction: lowest first
    assert lookup("judge_overall").range.low == 1.0 and lookup("factual_accuracy").range.high == 100.0


def test_hallucination_rate_worst_first(demo):
    store, run_id = demo
    rows, _ = q.samples(store, run_id, sort_metric="hallucination_rate", limit=5)
    top = _sql(store, "SELECT max(value) FROM scores WHERE run_id = ? AND metric = 'hallucination_rate' AND status = 'ok'",
               run_id)[0][0]
    assert rows["sort_value"].iloc[0] == top and rows["sort_value"].is_monotonic_decreasing


def test_filters_match_sql_counts(demo):
    store, run_id = demo
    _, total = q.samples(store, run_id, methods=["local_search"], verdicts=["fail"])
    expected = _sql(store, "SELECT count(*) FROM scores WHERE run_id = ? AND method = 'local_search' AND "
                           "metric = 'verdict' AND status = 'ok' AND detail LIKE 'fail%'", run_id)[0][0]
    assert total == expected > 0
    rows, total = q.samples(store, run_id, metric="faithfulness", low=0.0, high=0.5, limit=None)
    expected = _sql(store, "SELECT count(*) FROM scores WHERE run_id = ? AND metric = 'faithfulness' AND status = 'ok' "
                           "AND value <= 0.5", run_id)[0][0]
    assert total == expected > 0 and (rows["filter_value"] <= 0.5).all()
    _, total = q.samples(store, run_id, question_types=["Fact Retrieval"], answer_classes=["CORRECT", "WRONG"])
    expected = _sql(store, """SELECT count(*) FROM scores s JOIN runs r USING (run_id) JOIN golden_items g
                              ON g.dataset_id = r.golden_dataset_id AND g.question_id = s.question_id
                              WHERE s.run_id = ? AND s.metric = 'answer_class' AND g.question_type = 'Fact Retrieval'
                              AND split_part(s.detail, ' (', 1) IN ('CORRECT', 'WRONG')""", run_id)[0][0]
    assert total == expected > 0
    _, total = q.samples(store, run_id, statuses=["not_applicable"])
    expected = _sql(store, "SELECT count(DISTINCT (question_id, method)) FROM scores WHERE run_id = ? AND "
                           "status = 'not_applicable'", run_id)[0][0]
    assert total == expected
    assert q.samples(store, run_id, statuses=["timeout"])[1] == 0


def test_facets_list_what_the_run_has(demo):
    store, run_id = demo
    facets = q.run_facets(store, run_id)
    assert facets["methods"] == ["basic_search", "local_search"]
    assert facets["metrics"][0] == "exact_match" and "judge_overall" in facets["metrics"]
    assert set(facets["verdict"]) <= {"pass", "partial", "fail"} and facets["verdict"]


def test_annotations_never_touch_the_judge_and_keep_the_latest_per_author(demo):
    store, run_id = demo
    qid, method, claim_idx, text, verdict = _sql(
        store, "SELECT question_id, method, claim_idx, text, verdict FROM claims WHERE run_id = ? AND source = 'answer' "
               "ORDER BY question_id, method, claim_idx LIMIT 1", run_id)[0]
    before = _sql(store, "SELECT * FROM scores WHERE run_id = ? ORDER BY ALL", run_id)
    claims_before = _sql(store, "SELECT * FROM claims WHERE run_id = ? ORDER BY ALL", run_id)
    other = "contradicted" if verdict != "contradicted" else "supported"
    store.add_annotation(run_id=run_id, question_id=qid, method=method, author="ann", claim_source="answer",
                         claim_idx=claim_idx, label=other, judge_label=verdict, claim_text=text)
    store.add_annotation(run_id=run_id, question_id=qid, method=method, author="ann", claim_source="answer",
                         claim_idx=claim_idx, label=verdict, judge_label=verdict, claim_text=text)  # changed her mind
    store.add_annotation(run_id=run_id, question_id=qid, method=method, author="bob", claim_source="answer",
                         claim_idx=claim_idx, label=other, judge_label=verdict, claim_text=text)
    judge_overall = _sql(store, "SELECT value FROM scores WHERE run_id = ? AND question_id = ? AND method = ? AND "
                                "metric = 'judge_overall'", run_id, qid, method)[0][0]
    store.add_annotation(run_id=run_id, question_id=qid, method=method, author="ann", metric="judge_overall",
                         override_value=5.0, judge_value=judge_overall, note="clearly right")
    store.add_annotation(run_id=run_id, question_id=qid, method=method, author="ann", metric="verdict", label="pass",
                         override_value=1.0, judge_label="fail")
    store.add_annotation(run_id=run_id, question_id=qid, method=method, author="ann", tags=["retrieval-miss"])
    assert _sql(store, "SELECT * FROM scores WHERE run_id = ? ORDER BY ALL", run_id) == before
    assert _sql(store, "SELECT * FROM claims WHERE run_id = ? ORDER BY ALL", run_id) == claims_before

    pairs = q.claim_agreement(store, run_id)
    assert sorted(zip(pairs["author"], pairs["judge_verdict"], pairs["human_verdict"])) == [
        ("ann", verdict, verdict), ("bob", verdict, other)]
    labels = q.label_agreement(store, run_id)
    assert list(zip(labels["metric"], labels["judge_label"], labels["human_label"])) == [("verdict", "fail", "pass")]
    summary = q.override_summary(store, run_id).set_index("metric")
    assert summary.loc["judge_overall", "n"] == 1
    assert summary.loc["judge_overall", "mean_difference"] == pytest.approx(5.0 - judge_overall)
    shown = q.annotations(store, run_id, qid, method)
    assert len(shown) == 6 and set(shown["author"]) == {"ann", "bob"} and shown["created_at"].notna().all()
    claim_rows = shown[shown["target"] == f"A{claim_idx + 1}"]
    assert (claim_rows["judge_label_now"] == verdict).all() and not claim_rows["stale"].any()
    override = shown[shown["target"] == "judge_overall"].iloc[0]
    assert override["judge_value_now"] == judge_overall and override["override_value"] == 5.0
    assert list(shown[shown["target"].isna()]["tags"].iloc[0]) == ["retrieval-miss"]
    rows, total = q.samples(store, run_id, annotated_only=True)
    assert total == 1 and rows["n_annotations"].iloc[0] == 6


def test_a_relabelled_claim_is_flagged_stale(demo):
    store, run_id = demo
    qid, method = _sql(store, "SELECT question_id, method FROM claims WHERE run_id = ? LIMIT 1", run_id)[0]
    store.add_annotation(run_id=run_id, question_id=qid, method=method, author="ann", claim_source="answer",
                         claim_idx=0, label="supported", claim_text="a claim text the judge no longer has")
    assert q.annotations(store, run_id)["stale"].tolist() == [True]


@pytest.mark.parametrize("kwargs, message", [
    ({"author": " "}, "author"),
    ({"author": "ann", "claim_idx": 0, "label": "supported"}, "claim_source"),
    ({"author": "ann", "claim_source": "chunk", "claim_idx": 0, "label": "supported"}, "claim_source"),
    ({"author": "ann", "note": "  "}, "label, an override value"),
])
def test_an_annotation_needs_an_author_a_target_and_content(demo, kwargs, message):
    store, run_id = demo
    with pytest.raises(ValueError, match=message):
        store.add_annotation(run_id=run_id, question_id="q", method="m", **kwargs)
    assert store.annotations(run_id).empty


# --------------------------------------------------------------------------- the screen's view


def test_the_view_lists_the_worst_samples_first_with_the_count_of_all(demo):
    store, run_id = demo
    tables = q.view(store, run_id)
    assert tables["matches"].to_dict("records") == [{"matched": 206, "shown": 100, "sort metric": "judge_overall",
                                                      "worst first": "lowest"}]
    table = tables["samples"]
    expected = _sql(store, "SELECT question_id, method, value FROM scores WHERE run_id = ? AND "
                           "metric = 'judge_overall' ORDER BY norm, question_id, method LIMIT 100", run_id)
    assert list(zip(table["question_id"], table["method"], table["judge_overall"])) == \
        [(qid, m, round(v, 3)) for qid, m, v in expected]
    # the question's text and the method first, then the scores; the question's id last
    assert list(table.columns[:3]) == ["question", "method", "judge_overall"]
    assert list(table.columns[-4:]) == ["failed cells", "labels", "question_type", "question_id"]
    assert len(q.sample_table(store, run_id, limit=None)[0]) == 206  # what "Export all" downloads
    assert list(tables)[:2] == ["matches", "samples"] and "sample_scores" not in tables  # no sample selected


def test_the_view_filters_like_sql(demo):
    store, run_id = demo
    tables = q.view(store, run_id, methods=["local_search"], verdicts=["fail"], metric="faithfulness", high=0.9)
    expected = _sql(store, """
        SELECT count(*) FROM scores f JOIN scores v USING (run_id, question_id, method)
        WHERE f.run_id = ? AND f.method = 'local_search' AND f.metric = 'faithfulness' AND f.status = 'ok'
          AND f.value <= 0.9 AND v.metric = 'verdict' AND v.label = 'fail'""", run_id)[0][0]
    assert tables["matches"]["matched"].iloc[0] == expected > 0
    table = tables["samples"]
    assert set(table["method"]) == {"local_search"} and (table["faithfulness"] <= 0.9).all()
    assert set(table["verdict"]) == {"fail"}
    table = q.view(store, run_id, sort_metric="hallucination_rate")["samples"]
    assert table["hallucination_rate"].is_monotonic_decreasing  # lower is better: highest first
    with pytest.raises(ValueError, match="metric 'not_in_this_run' is not one of: 'exact_match'"):
        q.view(store, run_id, sort_metric="not_in_this_run")


def test_kappa_and_confusion_over_known_annotations(demo):
    store, run_id = demo
    rows = _sql(store, "SELECT question_id, method, claim_idx, text FROM claims WHERE run_id = ? AND "
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
    tables = q.view(store, run_id)
    assert tables["kappa"].to_dict("records") == [
        {"agreement on": "Claim verdicts", "Cohen's kappa": 0.5, "observed agreement": 0.75, "chance agreement": 0.5,
         "n": 4},
        {"agreement on": "verdict labels", "Cohen's kappa": 0.0, "observed agreement": 0.0, "chance agreement": 0.0,
         "n": 1}]
    confusion = tables["confusion: Claim verdicts"].set_index("judge")
    assert confusion.loc["supported", "supported"] == 1 and confusion.loc["supported", "not_found"] == 1
    assert confusion.loc["not_found", "not_found"] == 2 and confusion.loc["not_found", "supported"] == 0
    assert len(tables["labels"]) == 7 and set(tables["labels"]["author"]) == {"Bo"}
    assert "annotation_id" not in tables["labels"]
    assert tables["overrides"].set_index("metric").loc["verdict", "mean_difference"] == 1.0
    assert q.view(store, run_id, methods=["no such method"])["kappa"]["n"].tolist() == [0]  # over the picked methods


def test_the_selected_samples_panel(demo):
    store, run_id = demo
    qid, method = _sql(store, "SELECT question_id, method FROM claims WHERE run_id = ? ORDER BY ALL LIMIT 1", run_id)[0]
    judge = _sql(store, "SELECT value FROM scores WHERE run_id = ? AND question_id = ? AND method = ? AND "
                        "metric = 'judge_overall'", run_id, qid, method)[0][0]
    store.add_annotation(run_id=run_id, question_id=qid, method=method, author="Ada", metric="judge_overall",
                         override_value=4.5, judge_value=judge)
    tables = q.view(store, run_id, question_id=qid, method=method)
    assert list(tables)[:8] == ["matches", "samples", "sample_text", "sample_answer_claims", "sample_chunks",
                                "sample_scores", "sample_claims", "sample_labels"]
    text = tables["sample_text"].iloc[0]
    (question, reference), = _sql(store, "SELECT question, reference FROM golden_items WHERE question_id = ?", qid)
    (answer, contexts), = _sql(store, "SELECT o.answer, o.contexts FROM rag_outputs o JOIN runs r ON list_contains("
                                      "r.outputs_dataset_ids, o.dataset_id) WHERE r.run_id = ? AND o.question_id = ? "
                                      "AND o.method = ?", run_id, qid, method)
    assert (text["question"], text["reference"], text["answer"]) == (question, reference, answer)
    assert tables["sample_chunks"]["text"].tolist() == [c["text"] for c in contexts]  # in rank order
    assert tables["sample_answer_claims"]["claim"].iloc[0] == "A1"
    scores = tables["sample_scores"].set_index("metric")
    assert scores.loc["judge_overall", "human"] == "4.5" and scores.loc["judge_overall", "by"] == "Ada"
    assert scores.loc["judge_overall", "judge"] == str(round(judge, 3))  # the judge's value beside
    claims = tables["sample_claims"]
    assert list(claims.columns) == ["claim", "judge verdict", "your verdict", "text"] and len(claims) > 0
    assert claims["claim"].iloc[0] == "A1" and claims["your verdict"].isna().all()
    assert tables["sample_labels"]["target"].tolist() == ["judge_overall"]
