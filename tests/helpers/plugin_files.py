"""A user's plug-in file and the inputs it scores (tests/metrics/test_plugins.py, tests/test_cli_plugin.py): two metrics,
a binary one that raises on one question and a 1-5 one that returns a value off its scale on another and says it
does not apply to a third; a golden set of six questions answered by two methods, some answers citing [1]."""
from __future__ import annotations

import contextlib
import json
from pathlib import Path

from evaluators.metrics.registry import USER

RAISES_ON, OFF_SCALE_ON, NOT_FOR = "q2", "q3", "q4"
PLUGIN = f'''
from evaluators.metrics.plugins import NotApplicable, plugin_metric


@plugin_metric("answer_has_citation", scale="binary", higher_is_better=True, needs=("contexts",),
               formula="1 when the answer cites a chunk as [1].")
def answer_has_citation(sample):
    if sample.golden.question_id == "{RAISES_ON}":
        raise RuntimeError("cannot read this answer")
    return 1.0 if "[1]" in sample.output.answer else 0.0


@plugin_metric("answer_stars", scale="likert")
def answer_stars(sample):
    if sample.golden.question_id == "{OFF_SCALE_ON}":
        return 7
    if sample.golden.question_id == "{NOT_FOR}":
        raise NotApplicable("no stars for this one")
    return 1 + len(sample.output.answer) % 5
'''
METHODS = ("local", "basic")
QUESTIONS = tuple(f"q{i}" for i in range(6))


def answer(question: str, method: str) -> str:
    i = int(question[1:])
    return f"It is {i * 7}" + (" [1]." if (i + len(method)) % 2 else ".")


def expected(metric: str, question: str, method: str) -> tuple[float | None, str]:
    """The cell the plug-in above should give: (value, status), worked out from the answer text."""
    text = answer(question, method)
    if metric == "answer_has_citation":
        return (None, "judge_error") if question == RAISES_ON else (float("[1]" in text), "ok")
    if question == OFF_SCALE_ON:
        return None, "judge_error"
    if question == NOT_FOR:
        return None, "not_applicable"
    return float(1 + len(text) % 5), "ok"


def write_plugin(folder: Path, text: str = PLUGIN, name: str = "my_metrics.py") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def write_inputs(folder: Path) -> tuple[Path, Path]:
    """golden.jsonl and outputs.jsonl (both methods) in `folder`."""
    golden, outputs = folder / "golden.jsonl", folder / "outputs.jsonl"
    golden.write_text("".join(json.dumps({"question_id": q, "question": f"What is {q}?", "reference": f"It is {q}."})
                              + "\n" for q in QUESTIONS))
    outputs.write_text("".join(json.dumps({"question_id": q, "method": m, "answer": answer(q, m),
                                           "contexts": [f"{q} is a number."]}) + "\n"
                               for m in METHODS for q in QUESTIONS))
    return golden, outputs


@contextlib.contextmanager
def user_metrics_kept():
    """The process's users' metrics as they were before: a test's plug-ins are not left registered."""
    before = dict(USER)
    try:
        yield
    finally:
        USER.clear()
        USER.update(before)


def write_dist(folder: Path, entry_points: dict[str, str], modules: dict[str, str], name: str = "acme_metrics"
               ) -> Path:
    """An installed distribution as a folder on sys.path holds it: `NAME-0.1.dist-info` (METADATA and
    entry_points.txt, group ragscope.metrics) beside its modules. No pip: `folder` goes on sys.path."""
    info = folder / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[ragscope.metrics]\n" + "".join(f"{k} = {v}\n"
                                                                            for k, v in entry_points.items()))
    for module, text in modules.items():
        (folder / f"{module}.py").write_text(text, encoding="utf-8")
    return folder
