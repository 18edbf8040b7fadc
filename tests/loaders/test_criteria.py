"""A criteria file (JSON, TOML or YAML) read into the analyst's criteria, and every bad file refused at once, each
problem naming the file, the criterion (its number, its id) and the field; nothing half loaded."""
from __future__ import annotations

import json

import pytest

from evaluators.api import read_criteria
from evaluators.loaders import criteria as loader
from evaluators.metrics import REGISTRY
from evaluators.records import LoadError
from evaluators.records.criteria import MAX_CRITERIA, MAX_TEXT
from tests.helpers.criteria_files import CRITERIA, IDS, criteria_file, good_files


def _problems(path) -> list:
    with pytest.raises(LoadError) as exc:
        read_criteria(path)
    return exc.value.problems


def _one(**changes) -> dict:
    return {**CRITERIA[0], **changes}


def test_the_three_formats_give_the_same_criteria_at_the_same_versions(tmp_path):
    read = {fmt: read_criteria(path) for fmt, path in good_files(tmp_path).items()}
    assert [c.id for c in read["json"]] == IDS
    assert [c.scale for c in read["json"]] == ["pass/fail", "1-5", "0-1"]
    versions = {fmt: [c.version for c in cs] for fmt, cs in read.items()}
    assert versions["json"] == versions["toml"] == versions["yaml"]
    assert read["toml"] == read["json"] == read["yaml"]
    plain = read["yaml"][1]
    assert plain.levels == {1: "jargon throughout", 5: "plain throughout"} and plain.examples[0].score == 1
    assert read["json"][0].inputs == ("question", "answer", "contexts")


def test_a_bare_list_and_an_upload_told_by_its_content(tmp_path):
    files = good_files(tmp_path)
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(CRITERIA))
    assert read_criteria(bare) == read_criteria(files["json"])
    for fmt, path in files.items():  # bytes without a known extension: the first parser that reads them
        assert read_criteria(path.read_bytes(), name="upload") == read_criteria(files["json"]), fmt


def test_a_changed_text_is_a_new_version(tmp_path):
    same = read_criteria(criteria_file(tmp_path / "a.json", [_one(name="Another name")]))[0]
    changed = read_criteria(criteria_file(tmp_path / "b.json", [_one(criterion="The answer cites a passage.")]))[0]
    original = read_criteria(good_files(tmp_path)["json"])[0]
    assert same.version == original.version  # the display name is not judged
    assert changed.version != original.version


@pytest.mark.parametrize("change, field, words", [
    (dict(scale="1-10"), "scale", "unknown scale '1-10'"),
    (dict(criterion="  "), "criterion", "empty"),
    (dict(inputs=["question", "answer", "title"]), "inputs", "unknown input(s) 'title'"),
    (dict(criterion="x" * 100_000), "criterion", f"100,000 characters, over the limit of {MAX_TEXT:,}"),
    (dict(id="faithfulness"), "id", "id of a built-in metric"),
    (dict(id="Bad Id"), "id", "is not a metric id"),
    (dict(levels={"1": "bad"}), "levels", "1-5 scale only"),
    (dict(examples=[{"inputs": {"answer": "a"}, "score": 3}]), "examples[1].score", "pass/fail scale"),
])
def test_each_bad_field_names_file_criterion_and_field(tmp_path, change, field, words):
    problems = _problems(criteria_file(tmp_path / "mine.json", [CRITERIA[1], _one(**change)]))
    assert len(problems) == 1, problems
    p = problems[0]
    assert (p.file, p.row, p.field) == ("mine.json", 2, field)
    assert words in p.message and repr(change.get("id", "names_the_source")) in p.message
    assert str(p).startswith("mine.json, row 2, field ")


def test_every_problem_at_once_and_a_duplicate_id_named_with_both_rows(tmp_path):
    path = criteria_file(tmp_path / "c.json", [CRITERIA[0], _one(scale="stars"), "a text", {"criterion": "no id"}])
    found = [(p.row, p.field) for p in _problems(path)]
    assert (2, "id") in found and (2, "scale") in found and (3, None) in found and (4, "id") in found
    twice = next(p for p in _problems(path) if p.row == 2 and p.field == "id")
    assert "given twice (criteria 1 and 2)" in twice.message
    assert "criterion 4 (no id)" in next(p.message for p in _problems(path) if p.row == 4)


def test_a_thousand_criteria_are_one_message(tmp_path):
    many = [_one(id=f"c{i}") for i in range(1000)]
    problems = _problems(criteria_file(tmp_path / "many.json", many))
    assert len(problems) == 1 and f"1,000 criteria, over the limit of {MAX_CRITERIA}" in problems[0].message
    assert problems[0].field == "criteria"


@pytest.mark.parametrize("name, text, words", [
    ("c.json", '{"criteria": [{"id": "a",', "not valid JSON: line 1"),
    ("c.toml", "[[criteria]\nid = 1", "not valid TOML"),
    ("c.yaml", "criteria:\n  - id: [a\n", "not valid YAML: line"),
    ("c.yaml", "criteria:\n  - id: a\n    id: b\n", "line 3, column 5: key 'id' appears twice"),
    ("c.yaml", "x: &a [1]\ncriteria: *a\n", "an alias (*name)"),
    ("c.toml", "[[criteria]]\nid = 'a'\nid = 'b'\n", "not valid TOML"),
    ("c.txt", "{not: [valid", "neither JSON, TOML nor YAML"),
    ("c.json", '{"criteria": [], "criteria": []}', "appears twice"),
    ("c.json", "", "empty"),
    ("c.json", '{"criteria": []}', "empty: give at least one"),
    ("c.json", '{"criterion": "x"}', "no 'criteria' list"),
    ("c.json", '"just a text"', "not a list"),
])
def test_a_file_that_cannot_be_read_says_why(tmp_path, name, text, words):
    path = tmp_path / name
    path.write_text(text)
    problems = _problems(path)
    assert any(words in p.message for p in problems), problems
    assert all(p.file == name for p in problems)


def test_not_utf8_and_too_big(tmp_path):
    latin = tmp_path / "latin.json"
    latin.write_bytes('{"criteria": [{"id": "caf\xe9"}]}'.encode("latin-1"))
    assert "not UTF-8" in _problems(latin)[0].message
    big = tmp_path / "big.json"
    big.write_text(" " * (loader.MAX_BYTES + 1))
    assert "over the limit of 1,000,000" in _problems(big)[0].message
    assert "cannot read" in _problems(tmp_path / "missing.json")[0].message


def test_a_long_id_is_named_by_its_beginning(tmp_path):
    problems = _problems(criteria_file(tmp_path / "c.json", [CRITERIA[1], _one(id="x" * 50_000, scale="1-10")]))
    scale = next(p for p in problems if p.field == "scale")
    assert len(scale.message) < 200 and scale.message.startswith("criterion 'xxx")


def test_the_catalogue_ids_are_the_callers_to_give():
    data = json.dumps([_one(id="faithfulness")]).encode()
    assert loader.read_criteria(data, "c.json")[0].id == "faithfulness"  # loaders know no metric
    with pytest.raises(LoadError, match="built-in"):
        loader.read_criteria(data, "c.json", builtin=REGISTRY)
