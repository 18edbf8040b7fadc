"""A run with known per-question scores written to the store, for the Overview's headline findings."""
import json

import pandas as pd

from evaluators import loaders
from evaluators.store import open_store


N = 40


# m1 is rated higher, passes and answers correctly more often; m3 answers as m2 does; faithfulness is equal
OVERALL = {"m1": [4.0 + i % 2 for i in range(N)], "m2": [2.0 + i % 2 for i in range(N)]}


CORRECT = {"m1": [i % 10 != 0 for i in range(N)], "m2": [i % 4 == 0 for i in range(N)]}


VERDICTS = {"m1": ["pass" if i % 4 else "partial" for i in range(N)], "m2": ["pass" if i % 4 == 0 else "fail"
                                                                            for i in range(N)]}


FAITHFUL = [(i % 5) / 4 for i in range(N)]


def headline_run(tmp_path, methods=("m1", "m2", "m3"), status="ok", metrics=("judge_overall", "verdict", "answer_class",
                                                                      "faithfulness"), judge=("offline", None)):
    """The run, scored as if by `judge` (its name and model)."""
    store, run_id = unscored_run(tmp_path / "h.duckdb", N, methods, metrics, judge)
    rows = []
    for method in methods:
        own = "m2" if method == "m3" else method
        for i in range(N):
            cells = {"judge_overall": (OVERALL[own][i], (OVERALL[own][i] - 1) / 4, None),
                     "verdict": ({"pass": 1.0, "partial": 0.5, "fail": 0.0}[VERDICTS[own][i]],) * 2
                     + (VERDICTS[own][i],),
                     "answer_class": (float(CORRECT[own][i]),) * 2 + ("CORRECT" if CORRECT[own][i] else "WRONG",),
                     "faithfulness": (FAITHFUL[i], FAITHFUL[i], None), "rouge_l": (0.5, 0.5, None)}
            for metric in metrics:
                value, norm, label = cells[metric]
                ok = status == "ok"
                rows.append({"run_id": run_id, "question_id": f"q{i}", "method": method, "metric": metric,
                             "value": value if ok else None, "norm": norm if ok else None, "status": status,
                             "judge": judge[0], "detail": None, "label": label if ok else None})
    store.write_scores(pd.DataFrame(rows))
    store.finish_run(run_id, "finished")
    return store, run_id


def unscored_run(db, n, methods, metrics, judge=("offline", None), types=None):
    """(store, run_id) of a run named after the file `db` (created) on n questions q0... (of question type types[i],
    when given) and methods' answers, with no score yet: the run's cells are the caller's to write."""
    golden, outputs = db.parent / "golden.jsonl", db.parent / "outputs.jsonl"
    golden.write_text("\n".join(json.dumps({"question_id": f"q{i}", "question": f"Question {i}?", "reference": "r",
                                             **({"question_type": types[i]} if types else {})})
                                for i in range(n)))
    outputs.write_text("\n".join(json.dumps({"question_id": f"q{i}", "method": m, "answer": "a", "contexts": ["c"]})
                                 for i in range(n) for m in methods))
    store = open_store(db)
    golden_id = store.save_dataset(loaders.load(golden, role="golden")).dataset_id
    outputs_id = store.save_dataset(loaders.load(outputs, role="outputs")).dataset_id
    run_id = store.create_run(name=db.stem, golden_dataset_id=golden_id, outputs_dataset_ids=[outputs_id],
                              judge=judge[0], judge_model=judge[1], metrics=list(metrics), config={},
                              n_samples=n * len(methods))
    return store, run_id
