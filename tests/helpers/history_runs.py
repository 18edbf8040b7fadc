"""A series of runs of one golden set over time, for the History screen (`runs` fixture)."""
import datetime as dt

import pytest

from evaluators.store import close_store, open_store
from tests.helpers.compare_runs import EDITED, LATER, VALUES, write_run


N = 30  # questions: enough pairs for a step to be significant after Holm


def at(store, run_id: str, day: int) -> str:
    """Dates the run (created_at orders History), so the test does not hang on the clock's resolution."""
    store.cursor().execute("UPDATE runs SET created_at = ? WHERE run_id = ?", [dt.datetime(2026, 11, day), run_id])
    return run_id


@pytest.fixture
def runs(tmp_path):
    """Runs on one golden set, out of creation order by date: first (VALUES), second (m1 scores as the first's m2),
    an unrelated run on an edited golden set, and three runs of 30 questions on another golden set."""
    path = tmp_path / "history.duckdb"
    store = open_store(path)
    second = at(store, write_run(store, tmp_path, "second", LATER), 5)
    first = at(store, write_run(store, tmp_path, "first", VALUES), 1)
    at(store, write_run(store, tmp_path, "edited", LATER, references=EDITED), 3)
    rising = [at(store, write_run(store, tmp_path, f"big {day}", {"judge_overall": {"m1": [score] * N}}), day)
              for day, score in ((2, 2), (4, 4), (6, 4))]
    yield store, first, second, rising
    close_store(path)
