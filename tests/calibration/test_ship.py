"""data/calibration (calibration/ship.py): every shipped item is on the test side of the fixed split, is the item of
../shared/data it names, and every set carries its licence files and SOURCE.md; rebuilding gives the same files."""
import json

import pytest

from calibration import sets, ship

SETS = {spec.name: spec for spec in ship.SHIPPED}


def shipped_rows(name):
    return [json.loads(line) for line in (ship.OUT / name / "items.jsonl").read_text(encoding="utf-8").splitlines()]


def test_the_manifest_names_every_shipped_set_and_covers_the_labels():
    manifest = json.loads((ship.OUT / "sets.json").read_text())
    assert set(manifest) == set(SETS)
    assert {m["label"] for m in manifest.values()} == {"correctness", "faithfulness", "relevance"}
    assert not any("SA" in m["licence"] for m in manifest.values())  # never a share-alike set
    parts = {r["part"] for r in shipped_rows("evouna") + shipped_rows("squality")}
    assert {sets.SHORT, sets.LONG} <= parts  # correctness on short and on long answers


@pytest.mark.parametrize("name", sorted(SETS))
def test_every_shipped_item_is_a_test_item_and_the_licence_is_there(name):
    rows = shipped_rows(name)
    assert 50 <= len(rows) <= ship.CAP
    assert all(sets.split_of(name, r["group"]) == sets.TEST for r in rows)
    assert len({r["item_id"] for r in rows}) == len(rows)
    for licence in SETS[name].licence_files:
        assert (ship.OUT / name / licence).stat().st_size > 500
    source = (ship.OUT / name / "SOURCE.md").read_text()
    assert "never used to fit anything" in source and SETS[name].commit in source and ship.COMMAND in source


@pytest.mark.skipif(not sets.DATA.is_dir(), reason="the shared data is missing")
@pytest.mark.parametrize("name", sorted(SETS))
def test_the_shipped_items_are_the_sets_items_and_rebuild_the_same(name, tmp_path):
    items = {i.item_id: i for i in sets.load(name)}
    for r in shipped_rows(name):
        item = items[r["item_id"]]
        assert item.split == sets.TEST and (r["answer"], r["reference"]) == (item.answer, item.reference)
    ship.ship(tmp_path)
    assert (tmp_path / name / "items.jsonl").read_bytes() == (ship.OUT / name / "items.jsonl").read_bytes()
