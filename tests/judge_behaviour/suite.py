"""The judge's behaviour suite (issue 20 item 2): minimal-pair cases, one JSONL file per capability, run through the
real engine in one run.

A case is a question, a reference and answers, each with the answer_class a careful person expects, plus orderings
`higher: [[i, j], ...]` (answers[i] must score strictly higher judge_correctness than answers[j]). An answer may
carry its own `reference` (the reference_form capability judges one answer against a span and a sentence). A case
passes when every answer gets its class and every ordering holds. Cases are written from the capabilities, never
from the judge's outputs (README.md).
"""
from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
CASES_DIR = HERE / "cases"
FLOOR_FILE = HERE / "floor.json"
CLASSES = ("CORRECT", "WRONG", "DON'T KNOW")
METRICS = ("judge_correctness", "answer_class")
MIN_CASES, MIN_CAPABILITIES = 300, 10
TARGET_OVERALL, TARGET_CAPABILITY = 0.95, 0.90  # issue 20's targets, reported, not asserted (floor.json guards)

_CASE_KEYS, _ANSWER_KEYS = {"id", "question", "reference", "answers", "higher"}, {"text", "expected", "reference"}


class CaseError(ValueError):
    """A malformed case file; the message names the file and line."""


@dataclass(frozen=True)
class Answer:
    text: str
    expected: str
    reference: str  # the case's reference unless the answer gives its own


@dataclass(frozen=True)
class Case:
    id: str
    capability: str  # the file's stem
    question: str
    answers: tuple[Answer, ...]
    higher: tuple[tuple[int, int], ...]


def _text(obj: dict, key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value.strip():
        raise CaseError(f"{where}: {key!r} must be a non-empty string")
    return value


def _case(obj, capability: str, where: str) -> Case:
    from evaluators.maths.text import is_dont_know  # seed 003's phrases: the specification, not the judge

    if not isinstance(obj, dict):
        raise CaseError(f"{where}: a case must be a JSON object")
    if unknown := set(obj) - _CASE_KEYS:
        raise CaseError(f"{where}: unknown keys {sorted(unknown)}")
    case_id, question = _text(obj, "id", where), _text(obj, "question", where)
    if not case_id.startswith(capability + "-"):
        raise CaseError(f"{where}: id {case_id!r} must start with the capability {capability + '-'!r}")
    reference = _text(obj, "reference", where)
    raw = obj.get("answers")
    if not isinstance(raw, list) or not raw:
        raise CaseError(f"{where}: 'answers' must be a non-empty list")
    answers = []
    for i, a in enumerate(raw):
        at = f"{where}: answers[{i}]"
        if not isinstance(a, dict):
            raise CaseError(f"{at} must be a JSON object")
        if unknown := set(a) - _ANSWER_KEYS:
            raise CaseError(f"{at}: unknown keys {sorted(unknown)}")
        text, expected = _text(a, "text", at), a.get("expected")
        if expected not in CLASSES:
            raise CaseError(f"{at}: expected {expected!r} is not one of {list(CLASSES)}")
        # seed 003 makes any answer holding an uncertainty phrase DON'T KNOW: another label contradicts the spec
        if (phrase := is_dont_know(text)) and expected != "DON'T KNOW":
            raise CaseError(f"{at}: holds seed 003's phrase {phrase!r}, so it is DON'T KNOW, not {expected}")
        answers.append(Answer(text, expected, _text(a, "reference", at) if "reference" in a else reference))
    higher = obj.get("higher", [])
    pairs = []
    if not isinstance(higher, list):
        raise CaseError(f"{where}: 'higher' must be a list of [i, j] pairs")
    for pair in higher:
        if (not isinstance(pair, list) or len(pair) != 2 or not all(type(k) is int for k in pair)
                or not all(0 <= k < len(answers) for k in pair) or pair[0] == pair[1]):
            raise CaseError(f"{where}: 'higher' pair {pair!r} must be two different answer indices "
                            f"in 0..{len(answers) - 1}")
        pairs.append((pair[0], pair[1]))
    return Case(case_id, capability, question, tuple(answers), tuple(pairs))


def load_cases(cases_dir: Path = CASES_DIR) -> list[Case]:
    """Every case of every `<capability>.jsonl` in `cases_dir`; CaseError names the file and line of a bad one."""
    cases, seen = [], {}
    files = sorted(Path(cases_dir).glob("*.jsonl"))
    if not files:
        raise CaseError(f"{cases_dir}: no <capability>.jsonl files")
    for path in files:
        for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            where = f"{path.name}:{line_no}"
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise CaseError(f"{where}: not valid JSON ({e.msg}, column {e.colno})") from None
            case = _case(obj, path.stem, where)
            if case.id in seen:
                raise CaseError(f"{where}: id {case.id!r} is already used at {seen[case.id]}")
            seen[case.id] = where
            cases.append(case)
    return cases


def _item_id(case_id: str, index: int) -> str:
    return f"{case_id}#{index}"


def run_cases(db_path: Path | str, cases: Sequence[Case] | None = None) -> pd.DataFrame:
    """Every answer of `cases` (default: all) through one real engine run in the DuckDB file `db_path`.

    One row per answer: id, capability, answer (index), expected, got (answer_class label, or the cell's status when
    it is not ok), judge_correctness, passed (got == expected). Orderings are checked by `judge_cases`.
    """
    from calibration.engine_scores import score_items
    from calibration.sets import Item

    cases = load_cases() if cases is None else cases
    items = [Item("behaviour", _item_id(c.id, i), c.id, c.question, a.reference, a.text, (), a.expected, a.expected)
             for c in cases for i, a in enumerate(c.answers)]
    scored = score_items(items, METRICS, Path(db_path), name="judge behaviour suite")
    rows = []
    for c in cases:
        for i, a in enumerate(c.answers):
            key = _item_id(c.id, i)
            status = scored.statuses.at[key, "answer_class"]
            got = scored.labels.at[key, "answer_class"] if status == "ok" else f"({status})"
            rows.append(dict(id=c.id, capability=c.capability, answer=i, expected=a.expected, got=got,
                             judge_correctness=float(scored.scores.at[key, "judge_correctness"]),
                             passed=got == a.expected))
    return pd.DataFrame(rows)


def judge_cases(answers: pd.DataFrame, cases: Sequence[Case]) -> pd.DataFrame:
    """Per case: id, capability, passed, and why it failed (each wrong class and each broken ordering)."""
    by_id = {case_id: group.set_index("answer") for case_id, group in answers.groupby("id")}
    rows = []
    for c in cases:
        got = by_id[c.id]
        problems = [f"[{i}] expected {r.expected}, got {r.got} (judge_correctness {r.judge_correctness:.2f})"
                    for i, r in got.iterrows() if not r.passed]
        for i, j in c.higher:
            hi, lo = got.at[i, "judge_correctness"], got.at[j, "judge_correctness"]
            if not (hi > lo) or math.isnan(hi) or math.isnan(lo):  # a missing score holds no ordering
                problems.append(f"[{i}] {hi:.2f} not > [{j}] {lo:.2f}")
        rows.append(dict(id=c.id, capability=c.capability, passed=not problems, why="; ".join(problems)))
    return pd.DataFrame(rows)


def pass_rates(results: pd.DataFrame) -> pd.DataFrame:
    """Per capability (and 'overall' last): cases, passed, rate."""
    table = results.groupby("capability").agg(cases=("passed", "size"), passed=("passed", "sum"))
    table.loc["overall"] = [len(results), int(results.passed.sum())]
    table["rate"] = table.passed / table.cases
    return table


def targets_met(rates: pd.DataFrame) -> tuple[bool, str]:
    """Whether issue 20's targets hold, and a line saying which do not."""
    below = [cap for cap, r in rates.drop(index="overall").iterrows() if r.rate < TARGET_CAPABILITY]
    overall = rates.at["overall", "rate"]
    misses = ([f"overall {overall:.1%} < {TARGET_OVERALL:.0%}"] if overall < TARGET_OVERALL else []) + (
        [f"below {TARGET_CAPABILITY:.0%}: {', '.join(below)}"] if below else [])
    return not misses, "; ".join(misses) or "met"


def report(results: pd.DataFrame, floor: dict | None = None) -> str:
    """The per-capability pass rates, each beside its floor, and the issue's targets."""
    rates = pass_rates(results)
    floors = (floor or {}).get("capabilities", {})
    lines = [f"{'capability':<30} {'cases':>5} {'passed':>6} {'rate':>7} {'floor':>5}"]
    for cap, r in rates.iterrows():
        lines.append(f"{cap:<30} {int(r.cases):>5} {int(r.passed):>6} {r.rate:>7.1%} "
                     f"{floors.get(cap, {}).get('passing', ''):>5}")
    met, why = targets_met(rates)
    lines.append(f"issue 20 targets (>= {TARGET_OVERALL:.0%} of cases, >= {TARGET_CAPABILITY:.0%} in every "
                 f"capability): {'met' if met else 'NOT met: ' + why}")
    return "\n".join(lines)


def read_floor(path: Path = FLOOR_FILE) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def floor_of(results: pd.DataFrame) -> dict:
    """The ratchet: per capability, how many cases pass now and which."""
    caps = {cap: {"cases": len(g), "passing": int(g.passed.sum()), "passing_ids": sorted(g.id[g.passed])}
            for cap, g in results.groupby("capability")}
    return {"about": "Cases the offline judge passes; tests/judge_behaviour/README.md says how to update it.",
            "capabilities": caps}


def below_floor(results: pd.DataFrame, floor: dict) -> list[str]:
    """Every way `results` falls below `floor`: a capability passing fewer cases, a listed case failing or gone."""
    by_id = results.set_index("id")
    counts = results.groupby("capability").passed.sum()
    problems = []
    for cap, f in floor["capabilities"].items():
        if (now := int(counts.get(cap, 0))) < f["passing"]:
            problems.append(f"{cap}: {now} cases pass, floor {f['passing']}")
        for case_id in f["passing_ids"]:
            if case_id not in by_id.index:
                problems.append(f"{case_id}: in the floor but no such case (cases are never dropped)")
            elif not by_id.at[case_id, "passed"]:
                problems.append(f"{case_id} passed before, now fails: {by_id.at[case_id, 'why']}")
    return problems


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """torch on one intra-op thread, restored after. The offline judge runs one short text at a time; on 2 cores
    shared with other torch processes, two spinning OpenMP threads made the suite's run take 386-600 s instead of
    43-57 s, with the same scores."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def run_suite() -> pd.DataFrame:
    """Load, run (in a temporary DuckDB file) and judge every case: per-case results (id, capability, passed, why)."""
    cases = load_cases()
    with tempfile.TemporaryDirectory() as tmp, one_torch_thread():
        return judge_cases(run_cases(Path(tmp) / "behaviour.duckdb", cases), cases)
