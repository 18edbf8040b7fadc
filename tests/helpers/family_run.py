"""A 20-question run of two methods where the primary and the secondary family of tests differ in size (issue 34):
local_search gets better verdicts than basic_search on 8 questions, every other metric is scored the same for
both, so the one difference holds when corrected over the headline's few tests and not over every metric."""
import pandas as pd

from tests.helpers.headline_run import unscored_run

N = 20
A, B = "local_search", "basic_search"
# Headline metrics scored equal for both methods, beside the verdict that differs
PRIMARY_EQUAL = ("judge_overall", "faithfulness", "answer_class")
# Secondary metrics (0-1 ratios or shares), scored equal for both methods: many near-duplicate tests
SECONDARY = ("exact_match", "keyword_coverage", "number_match", "answer_completeness", "citation_quality",
             "checks_pass_rate", "rouge_l", "context_precision_ap", "wp_precision", "wp_recall", "completeness")


def family_run(tmp_path, methods=(A, B)):
    """(store, run_id) of the run; a third method, if named, answers as basic_search does."""
    metrics = ["verdict", *PRIMARY_EQUAL, *SECONDARY]
    store, run_id = unscored_run(tmp_path / "f.duckdb", N, methods, metrics)
    rows = []
    for method in methods:
        for i in range(N):
            passes = i % 4 == 0 or (method == A and i % 4 in (1, 2) and i < 16)  # A passes 8 more questions
            cells = {"verdict": (1.0 if passes else 0.0, "pass" if passes else "fail"),
                     "judge_overall": (3.0 + i % 3, None), "faithfulness": ((i % 5) / 4, None),
                     "answer_class": (float(i % 2), "CORRECT" if i % 2 else "WRONG")}
            for metric in metrics:
                value, label = cells.get(metric, ((i % 7) / 6, None))
                norm = (value - 1) / 4 if metric == "judge_overall" else value
                rows.append({"run_id": run_id, "question_id": f"q{i}", "method": method, "metric": metric,
                             "value": value, "norm": norm, "status": "ok", "judge": "offline", "detail": None,
                             "label": label})
    store.write_scores(pd.DataFrame(rows))
    store.finish_run(run_id, "finished")
    return store, run_id
