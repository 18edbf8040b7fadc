"""evaluators.queries.overview against a real DuckDB file: a small run written through the Store API, its
Overview tables (the view) checked against sums and scipy on the values written."""
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from evaluators import loaders
from evaluators.queries import LIKERT, PERCENT
from evaluators.queries import overview as q
from evaluators.store import close_store, open_store
from tests.helpers.claims_runs import build_run

TYPES = ["A", "A", "B", None]
# metric -> method -> per-question values (None: a cell that failed)
VALUES = {
    "rouge_l": {"m1": [0.2, 0.4, 0.9, None], "m2": [0.1, 0.1, 0.3, 0.5]},
    "judge_overall": {"m1": [5.0, 4.0, 2.0, 3.0], "m2": [1.0, 2.0, 2.0, 3.0]},
}
VERDICTS = {"m1": ["pass", "pass", "fail", "partial"], "m2": ["fail", "fail", None, "pass"]}
VERDICT_VALUE = {"pass": 1.0, "partial": 0.5, "fail": 0.0}
REPEATS = {"m1": [[5.0, 5.0], [3.0, 5.0], [2.0, 2.0], [3.0, 3.0]]}  # m1's judge asked twice


def _cell(run_id, i, method, metric, value, norm, **extra):
    return {"run_id": run_id, "question_id": f"q{i}", "method": method, "metric": metric, "value": value,
            "norm": norm, "status": "ok" if value is not None else "judge_error", "judge": "offline", "detail": None,
            **extra}


def small_run(tmp_path, scored: bool = True):
    golden = tmp_path / "golden.jsonl"
    golden.write_text("\n".join(json.dumps({"question_id": f"q{i}", "question": f"Question {i}?", "reference": "r",
                                            **({"question_type": t} if t else {})}) for i, t in enumerate(TYPES)))
    outputs = tmp_path / "outputs.jsonl"
    outputs.write_text("\n".join(json.dumps({"question_id": f"q{i}", "method": m, "answer": "a", "contexts": ["c"]})
                                 for i in range(len(TYPES)) for m in ("m1", "m2")))
    store = open_store(tmp_path / "small.duckdb")
    golden_id = store.save_dataset(loaders.load(golden, role="golden")).dataset_id
    outputs_id = store.save_dataset(loaders.load(outputs, role="outputs")).dataset_id
    run_id = store.create_run(name="small", golden_dataset_id=golden_id, outputs_dataset_ids=[outputs_id],
                              judge="offline", judge_model=None, metrics=[*VALUES, "verdict"], config={}, n_samples=8)
    if not scored:
        return store, run_id
    rows = []
    for metric, by_method in VALUES.items():
        for method, values in by_method.items():
            for i, v in enumerate(values):
                norm = None if v is None else ((v - 1) / 4 if metric == "judge_overall" else v)
                repeats = REPEATS[method][i] if metric == "judge_overall" and method in REPEATS else None
                rows.append(_cell(run_id, i, method, metric, v, norm, repeats=repeats))
    for method, labels in VERDICTS.items():
        for i, label in enumerate(labels):
            value = None if label is None else VERDICT_VALUE[label]
            rows.append(_cell(run_id, i, method, "verdict", value, value, label=label))
    store.write_scores(pd.DataFrame(rows))
    store.finish_run(run_id, "finished")
    return store, run_id


@pytest.fixture
def small(tmp_path):
    yield small_run(tmp_path)
    close_store(tmp_path / "small.duckdb")


def t_interval(values, low=0.0, width=1.0) -> str:
    """The CI cell: Student's t on the norm values, clipped to [0, 1], shown on the metric's scale."""
    norm = (np.asarray(values) - low) / width
    half = sps.t.ppf(0.975, len(norm) - 1) * norm.std(ddof=1) / np.sqrt(len(norm))
    lo, hi = np.clip([norm.mean() - half, norm.mean() + half], 0, 1)
    return f"[{low + width * lo:.2f}, {low + width * hi:.2f}]"


def test_the_metric_table_has_each_methods_mean_ci_and_n(small):
    store, run_id = small
    tables = q.view(store, run_id)
    assert list(tables) == ["progress", "headline", "findings", "judge", "agreement", "calibration", "metrics", "unscored", "verdict", "answer_class",
                            "accuracy_grade", "repeatability", "by_question_type_chart", "by_question_type",
                            "latency_cost", "quality_cost", "pareto"]  # the last three empty: no usage recorded
    table = tables["metrics"]
    assert list(table.index) == ["rouge_l", "judge_overall", "verdict"]  # catalogue order
    assert list(table.columns) == ["family", "scale", "m1", "m1 95% CI", "m1 n", "m2", "m2 95% CI", "m2 n", "judge"]
    rouge = table.loc["rouge_l"]
    assert rouge["m1"] == round(np.mean([0.2, 0.4, 0.9]), 3) and rouge["m1 n"] == "3/4"  # the failed cell: in n only
    assert rouge["m1 95% CI"] == t_interval([0.2, 0.4, 0.9]) and rouge["m2 n"] == "4/4"
    judge = table.loc["judge_overall"]
    assert judge["m1"] == 3.5 and judge["m1 95% CI"] == t_interval(VALUES["judge_overall"]["m1"], 1, 4)
    assert (judge["family"], judge["scale"], judge["judge"]) == ("rubric", "likert", "offline")


def test_scales_and_question_types(small):
    store, run_id = small
    percent = q.view(store, run_id, scale=PERCENT)["metrics"]
    assert percent.loc["judge_overall", "m1"] == 100 * (3.5 - 1) / 4
    assert percent.loc["judge_overall", "m1 95% CI"] == t_interval([100 * (v - 1) / 4 for v in [5, 4, 2, 3]], 0, 100)
    assert q.view(store, run_id, scale=LIKERT)["metrics"].loc["rouge_l", "m2"] == round(1 + 4 * 0.25, 3)
    typed = q.view(store, run_id, question_type="A")
    assert typed["metrics"].loc["rouge_l", "m1"] == 0.3 and typed["metrics"].loc["rouge_l", "m1 n"] == "2/2"
    assert typed["verdict"].loc["m2", "fail"] == 2 and typed["verdict"].loc["m2", "n"] == 2
    untyped = q.view(store, run_id, question_type="")["metrics"]  # questions without a type
    assert untyped.loc["rouge_l", "m1 n"] == "0/1" and pd.isna(untyped.loc["rouge_l", "m1"])


def test_label_tables_count_each_label_per_method(small):
    store, run_id = small
    tables = q.view(store, run_id)
    verdict = tables["verdict"]
    assert verdict.index.name == "method" and list(verdict.columns) == ["pass", "partial", "fail", "% pass", "n"]
    assert verdict.loc["m1"].tolist() == [2, 1, 1, 50.0, 4]
    assert verdict.loc["m2"].tolist() == [1, 0, 2, round(100 / 3, 1), 3]  # the failed cell has no label
    assert tables["answer_class"].empty and tables["accuracy_grade"].empty  # not scored in this run


def test_repeatability_and_the_by_type_chart_and_table(small):
    store, run_id = small
    tables = q.view(store, run_id)
    spread = tables["repeatability"].set_index("metric")
    assert spread.loc["judge_overall", "replies per sample"] == 2
    assert spread.loc["judge_overall", "mean SD within a sample"] == pytest.approx(np.std([3.0, 5.0], ddof=1) / 4)
    assert spread.loc["judge_overall", "samples whose replies disagree"] == 0.25
    table = tables["by_question_type"]  # judge_overall by default, in its own scale
    assert list(table.columns) == ["question_type", "method", "mean", "ci_low", "ci_high", "n_scored", "n_total"]
    row = table[(table["question_type"] == "A") & (table["method"] == "m1")].iloc[0]
    assert (row["mean"], row["n_scored"]) == (4.5, 2)
    chart = q.view(store, run_id, scale=PERCENT, metric="rouge_l")["by_question_type_chart"]
    bar = chart[(chart["question_type"] == "B") & (chart["method"] == "m1")].iloc[0]
    assert bar["mean"] == pytest.approx(90.0) and bar["n_total"] == 1
    assert set(chart["question_type"]) == {"A", "B", ""}


def test_bad_options_name_what_is_allowed(small):
    store, run_id = small
    with pytest.raises(ValueError, match="question type 'C' is not one of: 'All question types', 'A', '', 'B'"):
        q.view(store, run_id, question_type="C")
    with pytest.raises(ValueError, match="scale 'stars'"):
        q.view(store, run_id, scale="stars")
    with pytest.raises(ValueError, match="metric 'faithfulness'"):
        q.view(store, run_id, metric="faithfulness")


def test_progress_says_how_much_of_a_stopped_run_is_scored(tmp_path):
    store, run_id = small_run(tmp_path)
    try:
        done = q.progress(store, run_id).iloc[0]
        assert not done["unfinished"] and done["status"] == "finished"
        assert (done["samples"], done["samples scored"], done["cells"]) == (8, 8, 8 * (len(VALUES) + 1))
        # the cells of q3 never computed, one cell of q0 m1 neither; stopped at its budget
        store.cursor().execute("DELETE FROM scores WHERE run_id = ? AND (question_id = 'q3' OR (question_id = 'q0' "
                               "AND method = 'm1' AND metric = 'verdict'))", [run_id])
        store.cursor().execute("UPDATE runs SET status = 'budget_reached' WHERE run_id = ?", [run_id])
        (stored,), = store.cursor().execute("SELECT count(*) FROM scores WHERE run_id = ?", [run_id]).fetchall()
        partial = q.view(store, run_id)["progress"].to_dict("records")
        assert partial == [{"status": "budget_reached", "unfinished": True,
                            "state": "stopped when its judge calls reached its budget", "samples": 8,
                            "samples scored": 8 - 2 - 1, "cells": 8 * (len(VALUES) + 1), "cells stored": stored}]
    finally:
        close_store(tmp_path / "small.duckdb")


def test_a_run_without_scores_has_empty_tables(tmp_path):
    store, run_id = small_run(tmp_path, scored=False)
    try:
        tables = q.view(store, run_id)
        assert list(tables) == ["progress", "headline", "findings", "judge", "agreement", "calibration", "metrics", "unscored", "verdict", "answer_class",
                                "accuracy_grade", "repeatability", "by_question_type_chart", "by_question_type",
                            "latency_cost", "quality_cost", "pareto"]  # the last three empty: no usage recorded
        assert all(t.empty for t in tables.values())
    finally:
        close_store(tmp_path / "small.duckdb")


def test_the_demo_run_against_the_stored_scores(demo_db_file):
    store = open_store(demo_db_file)
    try:
        run_id = store.cursor().execute("SELECT run_id FROM runs WHERE status = 'finished'").fetchall()[0][0]
        means = dict(store.cursor().execute(
            "SELECT method, avg(value) FROM scores WHERE run_id = ? AND metric = 'rouge_l' AND status = 'ok' "
            "GROUP BY method", [run_id]).fetchall())
        table = q.view(store, run_id)["metrics"]
        assert table.loc["rouge_l", "local_search"] == round(means["local_search"], 3)
        assert table.loc["rouge_l", "basic_search n"] == "103/103"
        by_type = q.view(store, run_id, metric="rouge_l")["by_question_type"]
        assert by_type["n_scored"].sum() == 206 and len(by_type) == 8  # 4 question types x 2 methods
    finally:
        close_store(demo_db_file)


def test_the_abstention_rate_is_beside_faithfulness_whose_mean_leaves_the_refusals_out(tmp_path):
    """Issue 34: version 2 is version 1 with half its answers refused. Faithfulness is the mean over the answers
    that answer (the same as version 1's, not raised by refusals scored 1.0), and its row says how many abstained."""
    chunks = ["The tower was built by Alice in 1879.", "It is made of grey stone."]
    golden = [{"question_id": f"q{i}", "question": "Who built the tower?", "reference": chunks[0]} for i in range(4)]
    outputs = [{"question_id": f"q{i}", "method": method, "contexts": chunks,
                "answer": "I don't know." if method == "v2" and i % 2 else "Alice built the tower. It was painted blue."}
               for i in range(4) for method in ("v1", "v2")]
    db = tmp_path / "refusals.duckdb"
    run_id = build_run(db, tmp_path, golden=golden, outputs=outputs, metrics=["rouge_l", "faithfulness", "dont_know"])
    store = open_store(db)
    try:
        table = q.view(store, run_id)["metrics"]
    finally:
        close_store(db)
    faith = table.loc["faithfulness"]
    assert faith["v2"] == faith["v1"] == 0.5 and (faith["v1 n"], faith["v2 n"]) == ("4/4", "2/4")
    assert (faith["v1 abstains"], faith["v2 abstains"]) == ("0/4 (0%)", "2/4 (50%)")
    assert table.loc["dont_know", "v2"] == 0.5  # the same answers, counted by the dont_know metric
    assert table.loc["rouge_l", "v2 abstains"] == ""  # a metric of the answer's words, not its claims
