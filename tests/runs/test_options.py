"""A run's options are checked by its specification (`lifecycle.RunSpec.problems`, which every caller's run goes
through: `lifecycle.start` refuses a run with a problem) before anything is stored, every problem at once, and by the
openai judge itself: a real DuckDB file, nothing mocked."""
import math

import pytest

from evaluators import loaders
from evaluators.runs import lifecycle
from evaluators.judges import OpenAIJudge
from evaluators.judges.openai_protocol import JudgeClient
from evaluators.metrics import resolve
from evaluators.metrics.ranking import RANK_METRICS
from evaluators.store import close_store, open_store
from tests.helpers.cli import tiny_files

BAD = [({"concurrency": 0}, "concurrency must be a whole number of 1 or more"),
       ({"concurrency": -3}, "concurrency must be"), ({"concurrency": 2.5}, "concurrency must be"),
       ({"concurrency": True}, "concurrency must be"), ({"repeats": 0}, "repeats must be"),
       ({"max_attempts": 0}, "max_attempts must be"), ({"timeout": 0}, "timeout must be a number above 0"),
       ({"timeout": -1.0}, "timeout must be"), ({"timeout": math.nan}, "timeout must be"),
       ({"timeout": "60"}, "timeout must be")]


@pytest.fixture
def stored(tmp_path):
    golden, outputs = tiny_files(tmp_path)
    path = tmp_path / "options.duckdb"
    store = open_store(path)
    ids = (store.save_dataset(loaders.load(golden, role="golden")).dataset_id,
           store.save_dataset(loaders.load(outputs, role="outputs")).dataset_id)
    yield store, ids
    close_store(path)


def _runs(store) -> int:
    return store.cursor().execute("SELECT count(*) FROM runs").fetchall()[0][0]


@pytest.mark.parametrize("config, message", BAD)
def test_a_run_with_numbers_no_run_can_use_is_refused_and_nothing_is_stored(stored, config, message):
    store, (golden_id, outputs_id) = stored
    with pytest.raises(ValueError, match=message):
        lifecycle.start_stored(store, golden_id, [outputs_id],
                               lifecycle.RunSpec(OpenAIJudge("m", **config), metrics=["faithfulness"]))
    assert _runs(store) == 0


def test_an_empty_metric_list_and_unknown_ids_are_refused(stored):
    store, (golden_id, outputs_id) = stored
    with pytest.raises(ValueError, match="no metric chosen"):
        lifecycle.start_stored(store, golden_id, [outputs_id], lifecycle.RunSpec(metrics=[]))
    with pytest.raises(KeyError, match="bogus"):
        lifecycle.start_stored(store, golden_id, [outputs_id], lifecycle.RunSpec(metrics=["bogus"]))
    assert _runs(store) == 0
    lifecycle.start_stored(store, golden_id, [outputs_id],
                           lifecycle.RunSpec(OpenAIJudge("m", concurrency=1, repeats=1, timeout=0.5, max_attempts=1),
                                             metrics=["exact_match"]))
    assert _runs(store) == 1


def test_every_problem_is_listed_at_once(stored):
    """Not the first only: each bad setting is named, and the refusal lists them all (one line each)."""
    store, (golden_id, outputs_id) = stored
    spec = lifecycle.RunSpec(OpenAIJudge("m", concurrency=0, repeats=0, timeout=-1.0), metrics=["bogus"], sample=0,
                             seed=-1)
    problems = spec.problems()
    assert [p.about for p in problems] == ["metrics", "concurrency", "repeats", "timeout", "sample", "seed"]
    with pytest.raises(KeyError) as refused:  # the first problem's kind: an unknown metric id
        lifecycle.start_stored(store, golden_id, [outputs_id], spec)
    assert refused.value.args[0].splitlines() == [p.message for p in problems]
    assert _runs(store) == 0
    assert lifecycle.RunSpec().problems() == []  # None: every metric, with the offline judge
    run_id = lifecycle.start_stored(store, golden_id, [outputs_id], lifecycle.RunSpec())
    # the default catalogue: every metric but the rank metrics, as no question here names a relevant document
    assert list(store.run(run_id)["metrics"]) == [m.id for m in resolve(None) if m.id not in RANK_METRICS]


def test_the_judge_refuses_the_same_numbers():
    for config, message in BAD:
        with pytest.raises(ValueError, match=message):
            JudgeClient("http://127.0.0.1:9/v1", "m", api_key="sk-test", **config)
