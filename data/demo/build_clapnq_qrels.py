"""Write data/demo/clapnq_qrels.tsv, the ClapNQ demo's relevant documents as a BEIR qrels file, from the ClapNQ file.

ClapNQ (Rosenthal et al. 2024) gives each question one Wikipedia passage: for an ANSWERABLE question it is the passage
its answer was written from (its gold passage), for an UNANSWERABLE one a passage that does not hold the answer. So
an answerable question's relevant document is its passage's `document_id` (grade 1), and an unanswerable one names
none (its rank metrics are not applicable). Only the tasks with results are written, as the demo reads only those.
Run from the repo root (tests/test_demo.py checks the file is what this writes):
    python data/demo/build_clapnq_qrels.py
"""
from __future__ import annotations

import json
from pathlib import Path

DEMO_DIR = Path(__file__).resolve().parent
CLAPNQ_FILE = DEMO_DIR / "clapnq" / "rag_model_performance.json"
QRELS_FILE = DEMO_DIR / "clapnq_qrels.tsv"


def qrels_text(experiment: dict) -> str:
    answered = {r["task_id"] for r in experiment["results"]}
    lines = ["query-id\tcorpus-id\tscore"]
    for task in experiment["tasks"]:
        if task["task_id"] in answered and task.get("answerability") == "ANSWERABLE":
            lines += [f"{task['task_id']}\t{passage['document_id']}\t1" for passage in task["contexts"]]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    QRELS_FILE.write_text(qrels_text(json.loads(CLAPNQ_FILE.read_text(encoding="utf-8"))), encoding="utf-8")
    print(f"wrote {QRELS_FILE}")
