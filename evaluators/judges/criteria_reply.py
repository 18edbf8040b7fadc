"""What a criteria reply says (the LLM judge's CRITERIA part, prompts.criteria_messages): each criterion's score held
to its scale, and a sample's replies (`repeats`) made one score per criterion. Pure (no I/O); the calls are
openai_protocol's.

* A score is on its criterion's scale or the reply is invalid: "1-5" an integer 1 to 5; "pass/fail" 1 or 0, true or
  false, or the words "pass" / "fail"; "0-1" a number from 0 to 1 (a number may come quoted). A bool is no 1-5 or 0-1
  score.
* `read(criteria, content, strict=True)` (the first reply) raises ValueError, with what to tell the model in its
  repair, for an unknown id, an off-scale score or a criterion left out. `strict=False` (the repaired reply) keeps
  what is usable: an off-scale or missing criterion is that criterion's problem, not the reply's.
* `combined`: per criterion, the mean of the replies' scores (pass/fail: the majority, a tie going to the earlier
  reply), each reply's kept when there are several; a criterion some reply failed to score has no score (as the
  holistic part, whose failed reply fails the sample).
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, TypeAdapter

from evaluators.judges import prompts
from evaluators.records import JUDGE_ERROR
from evaluators.records.criteria import Criterion
from evaluators.records.judgments import CriterionScore, JudgeFailure

_WORDS = {"pass": 1, "fail": 0}


class _Item(BaseModel):
    id: str | int
    reasoning: str | None = ""
    score: bool | int | float | str | None = None


_ITEMS = TypeAdapter(list[_Item])


@dataclass(frozen=True)
class Scored:
    """One reply's score of one criterion: `at` is where its value is in the reply's JSON (geval's path)."""

    score: float
    reason: str
    at: tuple
    weighted: bool = False


@dataclass(frozen=True)
class CriteriaReply:
    """One reply: the criteria it scored on their scales, and why the others have no score."""

    scores: dict[str, Scored]
    problems: dict[str, str] = field(default_factory=dict)

    def described(self) -> str | None:
        """Its problems as one line (a call record's error), or None."""
        return "; ".join(self.problems.values()) or None


def on_scale(c: Criterion, raw) -> float | None:
    """`raw` as a score on `c`'s scale, or None."""
    if c.scale == "pass/fail":
        if isinstance(raw, str):
            raw = _WORDS.get(raw.strip().lower(), raw)
        return float(raw) if not isinstance(raw, str) and raw in (0, 1) else None
    if isinstance(raw, str):  # "4", as a model without a schema may quote it
        try:
            raw = float(raw.strip())
        except ValueError:
            return None
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw):
        return None
    low, high = c.bounds
    if not low <= raw <= high or (c.scale == "1-5" and raw != int(raw)):
        return None
    return float(raw)


def read(criteria: Sequence[Criterion], content: str, strict: bool = True) -> CriteriaReply:
    """The reply `content` (JSON text) to a criteria call asking for `criteria` (module doc)."""
    data = json.loads(content)
    items = _ITEMS.validate_python(prompts.part(data, prompts.CRITERIA))  # pydantic's ValidationError: invalid
    prefix = (prompts.CRITERIA,) if isinstance(data, dict) and prompts.CRITERIA in data else ()
    by_id = {c.id: c for c in criteria}
    scores: dict[str, Scored] = {}
    problems: dict[str, str] = {}
    unknown = []
    for i, item in enumerate(items):
        cid = str(item.id).strip()
        c = by_id.get(cid)
        if c is None:
            unknown.append(cid)
        elif cid not in scores and cid not in problems:  # the first of duplicates counts
            if (score := on_scale(c, item.score)) is None:
                problems[cid] = (f"criterion {cid}: the score {item.score!r} is not on its {c.scale} scale "
                                 f"({prompts.SCALE_WORDS[c.scale]})")
            else:
                scores[cid] = Scored(score, (item.reasoning or "").strip(), (*prefix, i, "score"))
    for c in criteria:
        if c.id not in scores and c.id not in problems:
            problems[c.id] = f"no score for criterion {c.id}"
    if strict and (unknown or problems):
        said = list(problems.values())
        if unknown:
            said.append(f"unknown criterion id(s) {', '.join(map(repr, unknown[:5]))}: score only the criteria "
                        f"given ({', '.join(by_id)})")
        raise ValueError("; ".join(said))
    return CriteriaReply(scores, problems)


def combined(criteria: Sequence[Criterion],
             replies: Sequence[CriteriaReply]) -> dict[str, CriterionScore | JudgeFailure]:
    """Each criterion's score over a sample's `replies` (module doc), or why it has none."""
    out: dict[str, CriterionScore | JudgeFailure] = {}
    for c in criteria:
        failed = next((r.problems[c.id] for r in replies if c.id in r.problems), None)
        if failed is not None or not replies:
            out[c.id] = JudgeFailure(JUDGE_ERROR, failed or f"no score for criterion {c.id}")
            continue
        scored = [r.scores[c.id] for r in replies]
        values = [s.score for s in scored]
        out[c.id] = CriterionScore(_majority(values) if c.scale == "pass/fail" else sum(values) / len(values),
                                   scored[0].reason, all(s.weighted for s in scored),
                                   tuple(values) if len(values) > 1 else ())
    return out


def _majority(values: Sequence[float]) -> float:
    passed = sum(v == 1 for v in values)
    failed = len(values) - passed
    return values[0] if passed == failed else float(passed > failed)


def weighted(reply: CriteriaReply, criteria: Mapping[str, Criterion], scores: Mapping[str, float]) -> CriteriaReply:
    """`reply` with the G-Eval weighted `scores` (geval.weighted_scores, by id) of its 1-5 criteria in place of the
    written ones."""
    out = dict(reply.scores)
    for cid, score in scores.items():
        if cid in out and criteria[cid].scale == "1-5":
            out[cid] = Scored(score, out[cid].reason, out[cid].at, weighted=True)
    return CriteriaReply(out, reply.problems)
