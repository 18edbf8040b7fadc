"""A run's options are checked by `engine.create_run` (the function the CLI, the app and the demo call)
before anything is stored, and by the openai judge itself: a real DuckDB file, nothing mocked."""
import math

import pytest

from evaluators import loaders
from evaluators.runs import engine, options
from evaluators.judges import OpenAIJudge
from evaluators.judges.openai_protocol import JudgeClient
from evaluators.store import close_store, open_store
from tests.test_cli import _tiny_files

BAD = [({"concurrency": 0}, "concurrency must be a whole number of 1 or more"),
       ({"concurrency": -3}, "concurrency must be"), ({"concurrency": 2.5}, "concurrency must be"),
       ({"concurrency": True}, "concurrency must be"), ({"repeats": 0}, "repeats must be"),
       ({"max_attempts": 0}, "max_attempts must be"), ({"timeout": 0}, "timeout must be a number above 0"),
       ({"timeout": -1.0}, "timeout must be"), ({"timeout": math.nan}, "timeout must be"),
       ({"timeout": "60"}, "timeout must be")]


@pytest.fixture
def stored(tmp_path):
    golden, outputs = _tiny_files(tmp_path)
    path = tmp_path / "options.duckdb"
    store = open_store(path)
    ids = (store.save_dataset(loaders.load(golden, role="golden")).dataset_id,
           store.save_dataset(loaders.load(outputs, role="outputs")).dataset_id)
    yield store, ids
    close_store(path)


def _runs(store) -> int:
    return store.cursor().execute("SELECT count(*) FROM runs").fetchall()[0][0]


@pytest.mark.parametrize("config, message", BAD)
def test_create_run_refuses_numbers_no_run_can_use_and_stores_nothing(stored, config, message):
    store, (golden_id, outputs_id) = stored
    with pytest.raises(ValueError, match=message):
        engine.create_run(store, golden_dataset_id=golden_id, outputs_dataset_ids=[outputs_id],
                          judge=OpenAIJudge("m", **config), metrics=["faithfulness"])
    assert _runs(store) == 0


def test_create_run_refuses_an_empty_metric_list_and_unknown_ids(stored):
    store, (golden_id, outputs_id) = stored
    with pytest.raises(ValueError, match="no metric chosen"):
        engine.create_run(store, golden_dataset_id=golden_id, outputs_dataset_ids=[outputs_id], metrics=[])
    with pytest.raises(KeyError, match="bogus"):
        engine.create_run(store, golden_dataset_id=golden_id, outputs_dataset_ids=[outputs_id], metrics=["bogus"])
    assert _runs(store) == 0
    engine.create_run(store, golden_dataset_id=golden_id, outputs_dataset_ids=[outputs_id], metrics=["exact_match"],
                      judge=OpenAIJudge("m", concurrency=1, repeats=1, timeout=0.5, max_attempts=1))
    assert _runs(store) == 1


def test_the_judge_refuses_the_same_numbers():
    for config, message in BAD:
        with pytest.raises(ValueError, match=message):
            JudgeClient("http://127.0.0.1:9/v1", "m", api_key="sk-test", **config)
    assert options.check(None, {}) == [m.id for m in engine.resolve(None)]  # None: every metric
