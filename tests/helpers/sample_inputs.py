"""A golden set and outputs large enough to sample from."""
import json

import pandas as pd


TYPES = {"A": 15, "B": 10, None: 5}  # 30 questions; those of None have no question type


METRICS = "exact_match,rouge_l"


def write_files(folder):
    """A golden set of TYPES and two methods' answers to every question in `folder`: their paths and the questions."""
    golden = [{"question_id": f"{t or 'x'}{i:02d}", "question": f"What is item {i} of {t}?",
               "reference": f"item {i}", "question_type": t} for t, k in TYPES.items() for i in range(k)]
    pd.DataFrame(golden).to_csv(folder / "golden.csv", index=False)
    outputs = [{"question_id": g["question_id"], "method": method, "answer": f"{g['reference']} by {method}",
                "contexts": json.dumps([g["reference"]])} for g in golden for method in ("local", "basic")]
    pd.DataFrame(outputs).to_json(folder / "outputs.jsonl", orient="records", lines=True)
    return folder / "golden.csv", folder / "outputs.jsonl", [(g["question_id"], g["question_type"]) for g in golden]
