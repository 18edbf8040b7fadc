"""A criteria file -> the analyst's criteria (records/criteria.py), or `LoadError` naming every problem at once.

    {"criteria": [{"id": "names_the_source", "criterion": "The answer says which passage its main claim comes from.",
                   "scale": "pass/fail", "inputs": ["question", "answer", "contexts"]}]}

JSON (that object, or a bare list), TOML (`[[criteria]]` tables) or YAML (a `criteria:` list), told by the file's
extension, else by which parser reads it. Each problem is a `Problem(file, row=<1-based criterion number>,
field, message naming the criterion)`; nothing is half loaded. The ids of the catalogue's metrics are the caller's to
give (`builtin`: loaders sit below metrics; evaluators.api.read_criteria passes them).
"""
from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Collection, Mapping
from pathlib import Path

import yaml

from evaluators.loaders.jsontext import JsonRefused, loads
from evaluators.loaders.problems import Problems, kind, names, preview
from evaluators.records.criteria import MAX_CRITERIA, Criterion, check

MAX_BYTES = 1_000_000  # 25 criteria of 4,000 characters with their levels and examples fit ten times over
EXTENSIONS = {".json": "JSON", ".toml": "TOML", ".yaml": "YAML", ".yml": "YAML"}
TOP_KEY = "criteria"
_TOML_LINE = re.compile(r"at line (\d+)")


def read_criteria(source: str | Path | bytes, name: str | None = None, *,
                  builtin: Collection[str] = ()) -> tuple[Criterion, ...]:
    """The criteria of a file (a path, or an upload's bytes named `name`); `builtin`: the ids no criterion may take
    (the catalogue's). LoadError listing every problem, each naming the file, the criterion (its number: the row)
    and the field."""
    file = name or (Path(source).name if isinstance(source, (str, Path)) else "criteria")
    problems = Problems(file)
    data = _read_bytes(source, problems)
    if len(data) > MAX_BYTES:
        problems.stop(None, None, f"{len(data):,} bytes, over the limit of {MAX_BYTES:,} for a criteria file: a run "
                                  f"takes at most {MAX_CRITERIA} criteria")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        problems.stop(None, None, f"the criteria file is not UTF-8 text (byte {exc.start}); save it as UTF-8")
    items = _items(_parse(text, EXTENSIONS.get(Path(file).suffix.lower()), problems), problems)
    for row, item in enumerate(items, 1):
        _check_one(row, item, problems, builtin)
    _check_ids(items, problems)
    problems.raise_if_any()
    return tuple(Criterion.of_definition(item) for item in items)


def _read_bytes(source, problems: Problems) -> bytes:
    if isinstance(source, (bytes, bytearray)):
        return bytes(source)
    path = Path(source)
    try:
        if path.stat().st_size > MAX_BYTES:  # not read at all
            problems.stop(None, None, f"{path.stat().st_size:,} bytes, over the limit of {MAX_BYTES:,} for a "
                                      f"criteria file: a run takes at most {MAX_CRITERIA} criteria")
        return path.read_bytes()
    except OSError as exc:
        problems.stop(None, None, f"cannot read the criteria file: {exc.strerror or exc}")


def _parse(text: str, fmt: str | None, problems: Problems):
    """The file's data in its format (`fmt`), or in the first of JSON, TOML and YAML that reads it."""
    if not text.strip():
        problems.stop(None, None, f"the criteria file is empty; give {_SHAPE}")
    tried = []
    for name in [fmt] if fmt else PARSERS:
        try:
            return PARSERS[name](text)
        except JsonRefused as exc:
            problems.stop(None, None, f"{exc.message} (at {'/'.join(map(str, exc.path)) or 'the top'})")
        except (ValueError, yaml.YAMLError) as exc:  # JSONDecodeError and TOMLDecodeError are ValueErrors
            tried.append(f"{'' if fmt else f'as {name}, '}{_where(exc)}")
    what = f"not valid {fmt}" if fmt else "neither JSON, TOML nor YAML"
    problems.stop(None, None, f"the criteria file is {what}: {'; '.join(tried)}")


class _YamlLoader(yaml.SafeLoader):
    """YAML's safe loader refusing what a criteria file never needs and would hide: a key twice in one mapping (the
    last would win, silently, as JSON's loader refuses too) and aliases (`*name`: a few lines can expand to
    gigabytes)."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            raise yaml.composer.ComposerError(None, None, "an alias (*name): write the value out instead",
                                              self.peek_event().start_mark)
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"key {key!r} appears twice in one mapping; "
                                                        "YAML would keep only the last value, silently",
                                                        key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def _yaml(text: str):
    return yaml.load(text, Loader=_YamlLoader)  # noqa: S506 (a SafeLoader)


PARSERS = {"JSON": loads, "TOML": tomllib.loads, "YAML": _yaml}
_SHAPE = ('{"criteria": [{"id": ..., "criterion": ..., "scale": ...}, ...]} (JSON; or a bare list), [[criteria]] '
          "tables (TOML) or a criteria: list (YAML)")


def _where(exc: Exception) -> str:
    """The parser's message, with the line it stopped at."""
    if isinstance(exc, json.JSONDecodeError):
        return f"line {exc.lineno}, column {exc.colno}: {exc.msg}"
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        return f"line {exc.problem_mark.line + 1}, column {exc.problem_mark.column + 1}: {exc.problem or exc}"
    return str(exc).splitlines()[0]  # TOMLDecodeError says "(at line N, column M)"


def _items(data, problems: Problems) -> list:
    """The file's list of criteria, or a problem saying what the top level should be."""
    if isinstance(data, Mapping):
        if extra := [k for k in data if k != TOP_KEY]:
            problems.add(None, str(extra[0]), f"unknown top-level key(s) {names(map(repr, extra))}: the file holds "
                                              f"{_SHAPE}")
        if TOP_KEY not in data:
            problems.stop(None, TOP_KEY, f"no '{TOP_KEY}' list: the file holds {_SHAPE}")
        data = data[TOP_KEY]
    if not isinstance(data, list):
        problems.stop(None, TOP_KEY, f"the criteria are {kind(data)}, not a list: the file holds {_SHAPE}")
    if not data:
        problems.stop(None, TOP_KEY, "the list of criteria is empty: give at least one")
    if len(data) > MAX_CRITERIA:  # one message, not one per criterion
        problems.stop(None, TOP_KEY, f"{len(data):,} criteria, over the limit of {MAX_CRITERIA} per run (all of a "
                                     "sample's criteria go in one judge call): keep the ones that matter most")
    return data


def _label(row: int, item) -> str:
    cid = item.get("id") if isinstance(item, Mapping) else None
    return f"criterion {preview(cid)}" if isinstance(cid, str) and cid.strip() else f"criterion {row} (no id)"


def _check_one(row: int, item, problems: Problems, builtin: Collection[str]) -> None:
    if not isinstance(item, Mapping):
        problems.add(row, None, f"criterion {row} is {kind(item)}, not an object with id, criterion and scale")
        return
    for field, message in criterion_problems(item, builtin, _label(row, item)):
        problems.add(row, field, message)


def criterion_problems(item: Mapping, builtin: Collection[str], label: str) -> list[tuple[str, str]]:
    """What is wrong with one criterion given as data (records.criteria.check, and an id of `builtin`), as (field,
    message naming it by `label`): a file's or a form's."""
    found = [(field, f"{label}: {message}") for field, message in check(item)]
    if isinstance(item.get("id"), str) and item["id"] in builtin:
        found.append(("id", f"{label}: {item['id']!r} is the id of a built-in metric (python -m evaluators "
                            "metrics): give yours another id"))
    return found


def _check_ids(items: list, problems: Problems) -> None:
    first: dict = {}
    for row, item in enumerate(items, 1):
        cid = item.get("id") if isinstance(item, Mapping) else None
        if not isinstance(cid, str):
            continue
        if cid in first:
            problems.add(row, "id", f"criterion {cid!r} is given twice (criteria {first[cid]} and {row}): each "
                                    "criterion needs its own id")
        else:
            first[cid] = row
