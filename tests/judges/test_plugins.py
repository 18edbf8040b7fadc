"""Judges as plug-ins (evaluators/judges/protocol.py, registry.py): a judge kind registered from outside the package
runs through `evaluate()` end to end, and nothing outside judges/ asks which judge it has."""
from __future__ import annotations

import ast
import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest

from evaluators import evaluate
from evaluators.judges import JUDGES, Judge, Judged, Lent, named, of_run, register
from evaluators.records import Sample
from evaluators.records.judgments import NOT_FOUND, SUPPORTED, ChunkRelevance, ClaimMatrix, Holistic
from evaluators.store import close_store
from tests.helpers import ROOT

JUDGE_PACKAGE = ROOT / "evaluators" / "judges"
# Everything that uses a judge: the engine's other layers, the screens and their helpers, the benchmarks, calibration.
OUTSIDE = [p for pattern in ("evaluators/**/*.py", "pages/*.py", "ui/*.py", "app.py", "bench/*.py", "calibration/*.py")
           for p in ROOT.glob(pattern) if JUDGE_PACKAGE not in p.parents]


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=\.)\s+", text) if s.strip()]


@dataclass(frozen=True)
class EchoJudge(Judge):
    """A judge for tests: a claim per sentence, supported where another text holds the sentence word for word;
    every answer rated `overall` (a setting, so the run's config must bring it back)."""

    overall: int = 2

    name = "echo"
    label = "Echo (tests)"
    rates_holistically = True

    def config(self) -> dict:
        return {"overall": self.overall}

    @classmethod
    def of_config(cls, model: str | None, config: Mapping) -> EchoJudge:
        return cls(overall=config["overall"])

    def judge(self, samples: Sequence[Sample], parts: Collection[str], lent: Lent) -> list[Judged]:
        return [Judged(matrix=self.matrix(s), holistic=self.rating(s)) for s in samples]

    @staticmethod
    def matrix(sample: Sample) -> ClaimMatrix:
        answer, reference = _sentences(sample.output.answer), _sentences(sample.golden.reference)
        chunks = [c.text for c in sample.output.contexts]

        def held(claim: str, text: str) -> str:
            return SUPPORTED if claim in text else NOT_FOUND

        return ClaimMatrix(
            answer_claims=tuple(answer), reference_claims=tuple(reference),
            chunk_ids=tuple(c.chunk_id for c in sample.output.contexts),
            answer_vs_chunks=tuple(tuple(held(a, c) for c in chunks) for a in answer),
            reference_vs_chunks=tuple(tuple(held(r, c) for c in chunks) for r in reference),
            answer_vs_reference=tuple(held(a, sample.golden.reference) for a in answer),
            reference_vs_answer=tuple(held(r, sample.output.answer) for r in reference),
            chunk_relevance=tuple(ChunkRelevance(any(a in c for a in answer), None, None) for c in chunks))

    def rating(self, sample: Sample) -> Holistic:
        reasoned = {"reasoning": "echo", "score": self.overall}
        return Holistic(correctness=self.overall, completeness=self.overall, faithfulness=self.overall,
                        relevance=self.overall, clarity=self.overall, overall_score=self.overall,
                        alignment=reasoned, question_relevance=reasoned,
                        step1_correctness={"score": 50}, step2_completeness={"score": 50},
                        step3_consistency={"score": 50}, classification="CORRECT")


@pytest.fixture
def echo():
    register(EchoJudge)
    yield EchoJudge
    del JUDGES[EchoJudge.name]  # the CLI and the Evaluate screen offer every registered judge


GOLDEN = [
    {"question_id": "q1", "question": "What is the capital of France?",
     "reference": "Paris is the capital of France. It has 2 million people."},
    {"question_id": "q2", "question": "How long is the Thames?", "reference": "The Thames is 346 km long."},
]
OUTPUTS = [
    {"question_id": "q1", "method": "rag", "answer": "Paris is the capital of France. It has 9 million people.",
     "contexts": ["Paris is the capital of France.", "Lyon is a city."]},
    {"question_id": "q2", "method": "rag", "answer": "The Thames is 346 km long. It flows through London.",
     "contexts": ["The Thames is 346 km long. It flows through London."]},
]
METRICS = ["faithfulness", "context_recall", "answer_correctness_f1", "judge_overall", "verdict", "exact_match"]


def test_a_registered_judge_runs_through_evaluate_and_its_answers_are_the_stored_scores(echo, tmp_path):
    db = tmp_path / "echo.duckdb"
    result = evaluate(GOLDEN, OUTPUTS, metrics=METRICS, judge=EchoJudge(overall=4), db=db)
    assert result.run["status"] == "finished"
    assert of_run(result.run) == EchoJudge(overall=4)  # its settings, back from the stored run
    close_store(db)

    con = duckdb.connect(str(db), read_only=True)
    try:
        run = con.execute("SELECT judge, judge_model, config FROM runs").fetchall()[0]
        cells = {(q, m): (v, s, j, label) for q, m, v, s, j, label in con.execute(
            "SELECT question_id, metric, value, status, judge, label FROM scores").fetchall()}
        claims = con.execute("SELECT question_id, source, claim_idx, text, verdict FROM claims "
                             "ORDER BY question_id, source, claim_idx").fetchall()
    finally:
        con.close()
    assert run[:2] == ("echo", None) and json.loads(run[2])["overall"] == 4
    # q1: of the answer's 2 claims the chunks hold 1, of the reference's 2 they hold 1; the answer and the
    # reference share 1 claim (TP 1, FP 1, FN 1)
    assert cells[("q1", "faithfulness")] == (0.5, "ok", "echo", None)
    assert cells[("q1", "context_recall")] == (0.5, "ok", "echo", None)
    assert cells[("q1", "answer_correctness_f1")] == (0.5, "ok", "echo", None)
    # q2: both answer claims in the chunk; the reference's one claim in the chunk and in the answer (TP 1, FP 1)
    assert cells[("q2", "faithfulness")] == (1.0, "ok", "echo", None)
    assert cells[("q2", "context_recall")] == (1.0, "ok", "echo", None)
    assert cells[("q2", "answer_correctness_f1")] == (pytest.approx(2 / 3), "ok", "echo", None)
    # its holistic rating, not the offline mapping: overall 4 is a pass (seed 001)
    for q in ("q1", "q2"):
        assert cells[(q, "judge_overall")] == (4.0, "ok", "echo", None)
        assert cells[(q, "verdict")] == (1.0, "ok", "echo", "pass")
        assert cells[(q, "exact_match")][2] == "deterministic"
    assert claims == [
        ("q1", "answer", 0, "Paris is the capital of France.", SUPPORTED),
        ("q1", "answer", 1, "It has 9 million people.", NOT_FOUND),
        ("q1", "reference", 0, "Paris is the capital of France.", SUPPORTED),
        ("q1", "reference", 1, "It has 2 million people.", NOT_FOUND),
        ("q2", "answer", 0, "The Thames is 346 km long.", SUPPORTED),
        ("q2", "answer", 1, "It flows through London.", SUPPORTED),
        ("q2", "reference", 0, "The Thames is 346 km long.", SUPPORTED),
    ]


def test_the_registry_knows_the_shipped_judges_and_refuses_a_second_kind_of_one_name(echo):
    assert list(JUDGES)[:3] == ["offline", "openai", "azure"] and named("echo") is EchoJudge
    with pytest.raises(ValueError, match="unknown judge 'nobody'; available: offline, openai, azure, echo"):
        named("nobody")

    @dataclass(frozen=True)
    class Impostor(EchoJudge):
        pass

    with pytest.raises(ValueError, match="a judge named 'echo' is registered already"):
        register(Impostor)


def _asks_which_judge(path: Path) -> list[str]:
    """`x.offline` (but plotly.offline) and `isinstance(x, <a Judge class>)` in the file."""
    judge_classes = {"Judge", *(kind.__name__ for kind in JUDGES.values())}
    where = path.relative_to(ROOT) if ROOT in path.parents else path.name
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if (isinstance(node, ast.Attribute) and node.attr == "offline"
                and not (isinstance(node.value, ast.Name) and node.value.id == "plotly")):
            found.append(f"{where}:{node.lineno}: .offline")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
            kinds = node.args[1:]
            names = [e for k in kinds for e in (k.elts if isinstance(k, ast.Tuple) else [k])]
            if any(isinstance(n, (ast.Name, ast.Attribute)) and (getattr(n, "id", None) or n.attr) in judge_classes
                   for n in names):
                found.append(f"{where}:{node.lineno}: isinstance of a judge class")
    return found


def test_nothing_outside_judges_asks_which_judge_it_has():
    assert len(OUTSIDE) > 50 and not any("judges" in p.parts for p in OUTSIDE)
    assert [line for path in OUTSIDE for line in _asks_which_judge(path)] == []


def test_the_check_finds_what_it_forbids(tmp_path):
    code = tmp_path / "bad.py"
    code.write_text("import plotly\nplotly.offline.plot\nif judge.offline: pass\nisinstance(j, (int, OpenAIJudge))\n"
                    "isinstance(j, judges.OfflineJudge)\nisinstance(j, JudgeFailure)\n")
    assert [line.split(": ", 1)[1] for line in _asks_which_judge(code)] == [
        ".offline", "isinstance of a judge class", "isinstance of a judge class"]
