"""A run for the Diagnosis screen whose cells are written through the store API, each (question, method) designed for
one case of the attribution rule (queries/attribution.py), with the label and the reason a reader of the rule
expects written beside it. `id_recall`, `id_hit` and `id_recall@5` are stored by id, as the rank metrics' helpers
store them: this branch does not need their code."""
import pandas as pd

from tests.helpers.headline_run import unscored_run

A, B = "local_search", "basic_search"
NA, ERR, TIMEOUT = "not_applicable", "judge_error", "timeout"
TYPES = ["Fact", "Fact", "Fact", "Fact", "Reasoning", "Reasoning", "Reasoning", "Reasoning"]
RIGHT, WRONG, DONT_KNOW = ("CORRECT", 1.0), ("WRONG", 0.0), ("DON'T KNOW", 0.0)

# question -> method -> (cells {metric: value | status | (label, value)}, expected label)
DESIGN = {
    "q0": {A: ({"id_recall": 1.0, "context_recall": 0.0, "answer_class": RIGHT}, "ok"),  # id_recall decides
           B: ({"id_recall": 0.0, "context_recall": 1.0, "answer_class": WRONG}, "both")},
    "q1": {A: ({"id_recall": 0.5, "answer_class": RIGHT}, "ok"),
           B: ({"id_recall": 1.0, "answer_class": WRONG}, "generation miss")},
    "q2": {A: ({"id_recall": NA, "context_recall": 0.0, "answer_class": RIGHT}, "retrieval miss"),  # no ids: claims
           B: ({"id_recall": NA, "context_recall": 0.0, "answer_class": DONT_KNOW}, "both")},
    "q3": {A: ({"id_recall": 1.0, "answer_class": ERR, "answer_correctness_f1": 0.8}, "ok"),  # f1 decides
           B: ({"id_recall": 1.0, "answer_class": ERR, "answer_correctness_f1": 0.2}, "generation miss")},
    "q4": {A: ({"context_recall": ERR, "answer_class": RIGHT}, "unknown"),
           B: ({"context_recall": 0.5, "answer_class": RIGHT}, "ok")},
    "q5": {A: ({"id_recall": 0.0, "answer_class": WRONG}, "both"),
           B: ({"id_recall": 1.0, "answer_class": RIGHT}, "ok")},
    "q6": {A: ({"context_recall": TIMEOUT, "answer_class": WRONG}, "unknown"),
           B: ({"id_recall": 1.0, "answer_class": RIGHT}, "ok")},
    "q7": {A: ({}, "unknown"),  # only rouge_l: nothing decides
           B: ({"context_recall": 1.0, "completeness": 0.4}, "generation miss")},  # completeness decides
}
# The questions each method loses that the other answers, by the reason the sentence gives.
LOST = {(B, A): {"retrieval missed (other found it)": ["q0"], "retrieval missed (neither found it)": ["q2"],
                 "answer ignored retrieved evidence": ["q1", "q3"]},
        (A, B): {"retrieval missed (other found it)": ["q5"], "retrieval undecided": ["q6"]}}
# Rank metrics beside the deciding cells: id_hit is 1 where id_recall > 0, id_recall@5 half of id_recall.
RANK = ("id_hit", "id_recall@5")


def _cells(metric, spec):
    if isinstance(spec, str):
        return {"value": None, "norm": None, "status": spec, "label": None}
    label, value = spec if isinstance(spec, tuple) else (None, spec)
    return {"value": value, "norm": value, "status": "ok", "label": label}


def diagnosis_run(tmp_path):
    """(store, run_id) of the designed run, finished."""
    metrics = ["id_recall", *RANK, "context_recall", "answer_class", "answer_correctness_f1", "completeness", "rouge_l"]
    store, run_id = unscored_run(tmp_path / "d.duckdb", len(DESIGN), (A, B), metrics, types=TYPES)
    rows = []
    for question_id, methods in DESIGN.items():
        for method, (cells, _) in methods.items():
            cells = dict(cells, rouge_l=0.5)
            if isinstance(cells.get("id_recall"), float):
                cells |= {"id_hit": float(cells["id_recall"] > 0), "id_recall@5": cells["id_recall"] / 2}
            elif "id_recall" in cells:
                cells |= {m: cells["id_recall"] for m in RANK}
            rows += [{"run_id": run_id, "question_id": question_id, "method": method, "metric": metric,
                      "judge": "offline", "detail": None, **_cells(metric, spec)} for metric, spec in cells.items()]
    store.write_scores(pd.DataFrame(rows))
    store.finish_run(run_id, "finished")
    return store, run_id
