"""Criteria files as an analyst writes them (the same three criteria in JSON, TOML and YAML: pass/fail, 1-5 with
levels and an example, 0-1), and a writer for bad ones."""
import json
from pathlib import Path

CRITERIA = [
    {"id": "names_the_source", "criterion": "The answer says which passage its main claim comes from.",
     "scale": "pass/fail", "inputs": ["question", "answer", "contexts"]},
    {"id": "plain_language", "name": "Plain language",
     "criterion": "The answer is in plain language a customer understands.", "scale": "1-5",
     "levels": {"1": "jargon throughout", "5": "plain throughout"},
     "examples": [{"inputs": {"answer": "Per clause 4.2(b)..."}, "score": 1, "reason": "legalese"}]},
    {"id": "no_legal_advice", "criterion": "The answer gives no legal advice.", "scale": "0-1",
     "inputs": ["question", "answer", "reference"], "higher_is_better": True},
]
IDS = [c["id"] for c in CRITERIA]

TOML = '''
[[criteria]]
id = "names_the_source"
criterion = "The answer says which passage its main claim comes from."
scale = "pass/fail"
inputs = ["question", "answer", "contexts"]

[[criteria]]
id = "plain_language"
name = "Plain language"
criterion = "The answer is in plain language a customer understands."
scale = "1-5"
levels = {1 = "jargon throughout", 5 = "plain throughout"}
[[criteria.examples]]
inputs = {answer = "Per clause 4.2(b)..."}
score = 1
reason = "legalese"

[[criteria]]
id = "no_legal_advice"
criterion = "The answer gives no legal advice."
scale = "0-1"
inputs = ["question", "answer", "reference"]
higher_is_better = true
'''

YAML = '''
criteria:
  - id: names_the_source
    criterion: The answer says which passage its main claim comes from.
    scale: pass/fail
    inputs: [question, answer, contexts]
  - id: plain_language
    name: Plain language
    criterion: The answer is in plain language a customer understands.
    scale: 1-5
    levels:
      1: jargon throughout
      5: plain throughout
    examples:
      - inputs: {answer: "Per clause 4.2(b)..."}
        score: 1
        reason: legalese
  - id: no_legal_advice
    criterion: The answer gives no legal advice.
    scale: 0-1
    inputs: [question, answer, reference]
    higher_is_better: true
'''


def good_files(folder: Path) -> dict[str, Path]:
    """The three criteria in each format, by format."""
    files = {"json": folder / "criteria.json", "toml": folder / "criteria.toml", "yaml": folder / "criteria.yaml"}
    files["json"].write_text(json.dumps({"criteria": CRITERIA}, indent=1), encoding="utf-8")
    files["toml"].write_text(TOML, encoding="utf-8")
    files["yaml"].write_text(YAML, encoding="utf-8")
    return files


def criteria_file(path: Path, criteria: list) -> Path:
    """A JSON criteria file of `criteria` (dicts, written as they are)."""
    path.write_text(json.dumps({"criteria": criteria}), encoding="utf-8")
    return path
