"""`run --qrels FILE --k K,...` as a user calls it (in-process, tests/helpers/cli.py), a real DuckDB file: the qrels'
relevant documents reach the stored rank metrics at the cut-offs asked for; bad cut-offs and a qrels file naming
unknown questions are refused before anything is stored."""
import json

import duckdb

from tests.helpers.cli import cli

GOLDEN = [{"question_id": "q1", "question": "Who built it?", "reference": "Ann."},
          {"question_id": "q2", "question": "When?", "reference": "In 1999."}]
OUTPUTS = [{"question_id": "q1", "method": "dense", "answer": "Ann.",
            "contexts": [{"id": "d4", "text": "Bob."}, {"id": "d1", "text": "Ann built it."}]},
           {"question_id": "q2", "method": "dense", "answer": "1999.", "contexts": [{"id": "d7", "text": "1999."}]}]


def _files(tmp_path, qrels: str):
    golden, outputs, path = tmp_path / "golden.json", tmp_path / "out.jsonl", tmp_path / "qrels.tsv"
    golden.write_text(json.dumps(GOLDEN), encoding="utf-8")
    outputs.write_text("".join(json.dumps(o) + "\n" for o in OUTPUTS), encoding="utf-8")
    path.write_text(qrels, encoding="utf-8")
    return ["run", "--golden", golden, "--outputs", outputs, "--qrels", path]


def test_qrels_and_cutoffs_reach_the_stored_scores(tmp_path):
    db = tmp_path / "r.duckdb"
    args = _files(tmp_path, "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t1\nq2\td7\t2\n")
    out = cli(*args, "--metrics", "id_recall,id_mrr", "--k", "1,2", db=db)
    assert out.returncode == 0, out.stderr
    assert "2 samples x 6 metrics" in out.stderr
    with duckdb.connect(str(db), read_only=True) as con:
        rows = dict(((q, m), v) for q, m, v in con.execute("SELECT question_id, metric, value FROM scores").fetchall())
    assert rows == {("q1", "id_recall"): 0.5, ("q1", "id_recall@1"): 0.0, ("q1", "id_recall@2"): 0.5,
                    ("q1", "id_mrr"): 0.5, ("q1", "id_mrr@1"): 0.0, ("q1", "id_mrr@2"): 0.5,
                    ("q2", "id_recall"): 1.0, ("q2", "id_recall@1"): 1.0, ("q2", "id_recall@2"): 1.0,
                    ("q2", "id_mrr"): 1.0, ("q2", "id_mrr@1"): 1.0, ("q2", "id_mrr@2"): 1.0}


def test_bad_cutoffs_and_unknown_qrels_queries_are_refused_and_nothing_stored(tmp_path):
    db = tmp_path / "r.duckdb"
    args = _files(tmp_path, "q1 0 d1 1\nq9 0 d2 1\n")
    out = cli(*args, "--k", "3,top", db=db)
    assert out.returncode == 2 and "cut-offs must be whole ranks from 1 to 9999, like 1,3,5,10; got 'top'" in out.stderr
    out = cli(*args, db=db)
    assert out.returncode == 2 and "qrels.tsv, field 'query-id': 1 query id(s) are not in the golden set" in out.stderr
    assert not db.exists()
