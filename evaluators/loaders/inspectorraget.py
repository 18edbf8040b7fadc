"""InspectorRAGet's experiment JSON (IBM/InspectorRAGet, schema_version 2) -> loader records and
human ratings.

The file is one object: `models`, `metrics`, `documents`, `tasks` (question, retrieved passages,
reference) and `results` (one per task and model: the model's answer and every score, human
ratings per annotator id). `loaders.load` recognises it by those keys, whatever the file is called,
and reads it through `records`: one record per result, so a row number in a message is the
1-based position in `results`. Record keys are the file's own names (`task_id`, `input`,
`targets`, `answerability`, `model`, `output`, `contexts`), which `loaders.ALIASES` maps to
RAGScope's fields, so a message names what the user sees in their file.

Choices, each because the file says so:
- Only tasks with results are read (the ClapNQ file holds 600 tasks, 100 of them evaluated):
  a question no method answered cannot be compared.
- `model_id` "target" is the reference shown as a row of InspectorRAGet's model table, not a
  method; the reference comes from the task's `targets` (identical in the ClapNQ file), else from
  that result.
- Methods are named by `models[].name` ("GPT-3.5 (Turbo)"), which says which model and size a
  chart shows; by `model_id` where a name is missing or shared by two models.
- An UNANSWERABLE task's reference is empty in the file; it becomes `UNANSWERABLE_REFERENCE`, the
  answer people expect (an abstention), and the task's `answerability` becomes its question type.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from evaluators.records import LoadError, Problem

REFERENCE_MODEL = "target"
UNANSWERABLE = "UNANSWERABLE"
UNANSWERABLE_REFERENCE = "The passage does not contain the answer to this question."
# Head-to-head preference counts depend on the other models' answers: not a rating of one answer.
PAIRWISE_METRICS = frozenset({"win-rate"})
REASON_SUFFIX = "_reason"
RECORD_KEYS = ("task_id", "input", "targets", "answerability", "model", "output", "contexts")


class _Unreadable(ValueError):
    """One field of a result or task that cannot be read; `field` names it as the file does."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class HumanRating:
    """One annotator's rating of one method's answer on one dimension (for `annotations`)."""

    question_id: str
    method: str
    annotator: str
    dimension: str
    value: float
    reason: str | None


# --------------------------------------------------------------------------- detection


def is_inspectorraget(top: Any) -> bool:
    """The parsed JSON has InspectorRAGet's shape: tasks and results lists beside models."""
    return (isinstance(top, dict) and isinstance(top.get("tasks"), list)
            and isinstance(top.get("results"), list) and "models" in top)


# --------------------------------------------------------------------------- loader records


def records(top: dict, problems) -> tuple[list[str], list[tuple[int, dict]]]:
    """(keys, [(row, record)]) for `loaders`: one record per model result, its task's question,
    reference and passages copied in. Unreadable results go to `problems` (anything with
    `.add(row, field, message)`) and are left out; the loader then refuses the whole file."""
    if not isinstance(top["models"], list):
        problems.add(None, "models", f"models is {_kind(top['models'])}; expected a list of "
                     "{model_id, name} objects, which name the methods")
    names = method_names(top["models"])
    tasks = _tasks_by_id(top["tasks"])
    references = _target_outputs(top["results"])
    task_fields: dict[str, dict | None] = {}  # read once per task, reported at its first result
    out = []
    for row, result in enumerate(top["results"], 1):
        if _model_id(result) == REFERENCE_MODEL:
            continue
        try:
            task_id = _task_id(result)
            if task_id not in task_fields:
                task_fields[task_id] = _read_task(row, task_id, tasks, references, problems)
            record = _read_result(result, names)
        except _Unreadable as bad:
            problems.add(row, bad.field, str(bad))
            continue
        if task_fields[task_id] is not None:
            out.append((row, {"task_id": task_id, **task_fields[task_id], **record}))
    return list(RECORD_KEYS), out


def method_names(models: Any) -> dict[str, str]:
    """model_id -> method name: the model's `name`, or its id where the name is blank or taken."""
    if not isinstance(models, list):
        return {}
    pairs = [(str(m["model_id"]), str(m.get("name") or "").strip()) for m in models
             if isinstance(m, dict) and m.get("model_id") not in (None, "")]
    taken = [name for _, name in pairs]
    return {model_id: name if name and taken.count(name) == 1 else model_id
            for model_id, name in pairs}


def _tasks_by_id(tasks: list) -> dict[str, tuple[int, dict]]:
    """task_id -> (1-based position in `tasks`, task); the position is for messages."""
    return {str(task["task_id"]): (position, task) for position, task in enumerate(tasks, 1)
            if isinstance(task, dict) and task.get("task_id") not in (None, "")}


def _target_outputs(results: list) -> dict[str, Any]:
    """task_id -> the output of its `target` result, the reference where a task has no targets."""
    return {str(r["task_id"]): r.get("output") for r in results
            if _model_id(r) == REFERENCE_MODEL and r.get("task_id") not in (None, "")}


def _model_id(result: Any) -> str | None:
    return str(result["model_id"]) if isinstance(result, dict) and result.get("model_id") else None


def _task_id(result: Any) -> str:
    if not isinstance(result, dict):
        raise _Unreadable(None, f"this result is {_kind(result)}; each result must be an object "
                          "with task_id, model_id, output and scores")
    if result.get("task_id") in (None, ""):
        raise _Unreadable("task_id", "this result has no task_id; it must name the task it answers")
    return str(result["task_id"])


def _read_task(row: int, task_id: str, tasks: dict, references: dict, problems) -> dict | None:
    """The task's fields for its records, or None after reporting every unreadable one."""
    if task_id not in tasks:
        problems.add(row, "task_id", f"no task with task_id '{task_id}' in tasks; add the task "
                     "or remove its results")
        return None
    position, task = tasks[task_id]
    fields, ok = {}, True
    for key, read in (("input", _question), ("targets", _reference), ("contexts", _passages)):
        try:
            fields[key] = read(task, references.get(task_id))
        except _Unreadable as bad:
            problems.add(row, bad.field, f"task '{task_id}' (tasks entry {position}): {bad}")
            ok = False
    fields["answerability"] = task.get("answerability")
    return fields if ok else None


def _question(task: dict, _target=None) -> Any:
    """The last user turn: a multi-turn task asks its question last."""
    turns = task.get("input")
    if isinstance(turns, str):
        return turns
    if not isinstance(turns, list):
        raise _Unreadable("input", f"input is {_kind(turns)}; expected a list of turns like "
                          "[{\"speaker\": \"user\", \"text\": ...}]")
    user = [t for t in turns if isinstance(t, dict) and (t.get("speaker") or t.get("role")) == "user"]
    if not user:
        raise _Unreadable("input", "input has no turn with speaker 'user'; the question is the "
                          "user's turn")
    return _turn_text(user[-1], "input")


def _reference(task: dict, target_output: Any) -> Any:
    """The first non-empty target; for an unanswerable task, the abstention people expect."""
    targets = task.get("targets")
    if targets is not None and not isinstance(targets, list):
        raise _Unreadable("targets", f"targets is {_kind(targets)}; expected a list like "
                          "[{\"type\": \"text\", \"value\": ...}]")
    values = [t.get("value") if isinstance(t, dict) else t for t in targets or ()]
    if not values and target_output is not None:
        values = [_answer_text(target_output, "targets")]
    reference = next((v for v in values if v is not None and not (isinstance(v, str) and not v.strip())), "")
    if reference != "":
        return reference
    if task.get("answerability") == UNANSWERABLE:
        return UNANSWERABLE_REFERENCE
    raise _Unreadable("targets", "the reference answer is empty: the task's targets hold no text; "
                      "give it a target, or mark the task's answerability UNANSWERABLE")


def _passages(task: dict, _target=None) -> Any:
    """The task's retrieved passages as chunk objects ({document_id, text} is a chunk already)."""
    return task.get("contexts")


def _read_result(result: dict, names: dict) -> dict:
    model_id = _model_id(result)
    if model_id is None:
        raise _Unreadable("model_id", "this result has no model_id; it must name the model "
                          "that answered")
    return {"model": names.get(model_id, model_id), "output": _answer_text(result.get("output"), "output")}


def _answer_text(output: Any, field: str) -> Any:
    """A model's answer: a string, or the last message of a list of {role, content} (or
    {text}) messages; a missing output is an empty answer, which the scores show as a failure."""
    if output is None or isinstance(output, str):
        return output
    if not isinstance(output, list):
        raise _Unreadable(field, f"{field} is {_kind(output)}; expected a list of messages like "
                          "[{\"role\": \"assistant\", \"content\": ...}]")
    if not output:
        return None
    return _turn_text(output[-1], field)


def _turn_text(turn: Any, field: str) -> Any:
    if isinstance(turn, str):
        return turn
    if isinstance(turn, dict):
        for key in ("text", "content", "value"):
            if key in turn:
                return turn[key]
    raise _Unreadable(field, f"a message in {field} is {_kind(turn)} without text or content")


# --------------------------------------------------------------------------- human ratings


def human_ratings(top: dict, *, file: str = "InspectorRAGet JSON") -> list[HumanRating]:
    """Every human rating of a method's answer, flat, for the `annotations` table; LoadError
    naming file, row (position in `results`) and field for a rating that is not on its scale.

    Dimensions: the metrics with author "human" that rate one answer (not text, not pairwise);
    the reason is the same annotator's `<dimension>_reason`. The `target` results (people also
    rated the reference answers) are left out: the reference is not a method of a run. A blank
    rating (an annotator who skipped it) is no record."""
    if not is_inspectorraget(top):
        raise LoadError([Problem(file, None, None, "this is not an InspectorRAGet experiment file: "
                                 "it needs models, tasks and results at the top level")])
    metrics = {m["name"]: m for m in top.get("metrics") or () if isinstance(m, dict) and m.get("name")}
    dimensions = [name for name, m in metrics.items() if _is_rating(m)]
    names = method_names(top.get("models"))
    ratings, problems = [], []
    for row, result in enumerate(top.get("results") or (), 1):
        model_id = _model_id(result)
        if model_id is None or model_id == REFERENCE_MODEL or not result.get("task_id"):
            continue
        scores = result.get("scores") if isinstance(result.get("scores"), dict) else {}
        for dimension in dimensions:
            for annotator, value, reason in _annotations(scores, dimension):
                try:
                    number = _rating_value(value, metrics[dimension])
                except ValueError as bad:
                    problems.append(Problem(file, row, f"scores.{dimension}.{annotator}", str(bad)))
                    continue
                if number is not None:
                    ratings.append(HumanRating(str(result["task_id"]), names.get(model_id, model_id),
                                               annotator, dimension, number, reason))
    if problems:
        raise LoadError(problems)
    return ratings


def _is_rating(metric: Mapping) -> bool:
    return (metric.get("author") == "human" and metric.get("type") in ("categorical", "numerical")
            and metric["name"] not in PAIRWISE_METRICS)


def _annotations(scores: dict, dimension: str) -> Iterable[tuple[str, Any, str | None]]:
    """(annotator id, rating value, reason or None) for one dimension of one result."""
    by_annotator = scores.get(dimension) if isinstance(scores.get(dimension), dict) else {}
    reasons = scores.get(dimension + REASON_SUFFIX)
    reasons = reasons if isinstance(reasons, dict) else {}
    for annotator, entry in by_annotator.items():
        value = entry.get("value") if isinstance(entry, dict) else entry
        reason = reasons.get(annotator)
        reason = reason.get("value") if isinstance(reason, dict) else reason
        yield str(annotator), value, (reason.strip() or None) if isinstance(reason, str) else None


def _rating_value(value: Any, metric: Mapping) -> float | None:
    """A rating as a number: a categorical value's numeric_value, a numerical one as is; None
    when blank. ValueError, in the user's words, when it is off the metric's scale."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if metric.get("type") == "categorical":
        scale = {str(v.get("value")): v.get("numeric_value") for v in metric.get("values") or ()
                 if isinstance(v, dict)}
        if str(value) not in scale or isinstance(scale[str(value)], bool) or not isinstance(
                scale[str(value)], (int, float)):
            allowed = ", ".join(map(repr, scale)) or "none declared"
            raise ValueError(f"rating {value!r} is not on the scale of '{metric['name']}' "
                             f"(values: {allowed})")
        return float(scale[str(value)])
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"rating {value!r} of '{metric['name']}' is not a number") from None


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "null"
    return f"a {type(value).__name__} ({value!r:.40})"
