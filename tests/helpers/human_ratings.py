"""People's ratings beside the judge's scores of the same cells, with the agreement they should give."""
from __future__ import annotations


FAITHFULNESS = {("q1", "local"): 0.9, ("q1", "basic"): 0.6, ("q2", "local"): 0.3, ("q2", "basic"): 0.8,
                ("q3", "local"): 0.5, ("q3", "basic"): None, ("q4", "local"): 0.1, ("q4", "basic"): 0.7}


ANSWER_CLASS = {("q1", "local"): "CORRECT", ("q1", "basic"): "WRONG", ("q2", "local"): "WRONG",
                ("q2", "basic"): "WRONG", ("q3", "local"): "DON'T KNOW", ("q3", "basic"): "WRONG",
                ("q4", "local"): "CORRECT", ("q4", "basic"): "CORRECT"}


RATINGS = {  # (question, method): {annotator: faithfulness 1-4}; q4/basic unrated
    ("q1", "local"): {"ann": 4, "bob": 4}, ("q1", "basic"): {"ann": 3, "bob": 2},
    ("q2", "local"): {"ann": 1, "bob": 2}, ("q2", "basic"): {"ann": 4, "bob": 3},
    ("q3", "local"): {"ann": 2}, ("q3", "basic"): {"ann": 1, "bob": 1}, ("q4", "local"): {"ann": 2, "bob": 1},
}


CORRECTNESS = {  # people's labels; q1/basic is a tie (no majority)
    ("q1", "local"): {"ann": "correct", "bob": "correct"}, ("q1", "basic"): {"ann": "correct", "bob": "wrong"},
    ("q2", "local"): {"ann": "wrong", "bob": "wrong"}, ("q2", "basic"): {"ann": "correct", "bob": "Correct"},
    ("q3", "local"): {"ann": "don't know", "bob": "don't know"}, ("q4", "local"): {"ann": "wrong"},
}


def rated_cells():
    for (qid, method), value in FAITHFULNESS.items():
        yield (qid, method, "faithfulness", value, "ok" if value is not None else "judge_error",
               None if value is not None else "the judge timed out twice")
    for (qid, method), label in ANSWER_CLASS.items():
        yield qid, method, "answer_class", float(label == "CORRECT"), "ok", f"{label} (offline: P(correct) 0.5)"
        yield qid, method, "judge_clarity", None, "not_applicable", "the offline judge has no signal for clarity"


def rating_records():
    for dimension, table in (("faithfulness", RATINGS), ("correctness", CORRECTNESS)):
        for (qid, method), by in table.items():
            for annotator, value in by.items():
                yield {"question_id": qid, "method": method, "annotator": annotator, "dimension": dimension,
                       "value": value}
    yield {"question_id": "q1", "method": "local", "annotator": "ann", "dimension": "Fluency", "value": 4}
    yield {"question_id": "q2", "method": "local", "annotator": "ann", "dimension": "Fluency", "value": 3}
    yield {"question_id": "q1", "method": "local", "annotator": "ann", "dimension": "overall", "value": 5}
