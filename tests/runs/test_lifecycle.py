"""One run lifecycle (evaluators.runs.lifecycle): a spec checked whole, a run prepared once (its sample drawn once),
started, resumed and grown by the same steps; the CLI refuses with the same problems. Real DuckDB files, nothing
mocked."""
import json

import pytest

from evaluators import loaders
from evaluators.runs import engine, lifecycle, planning, sampling
from evaluators.store import close_store, open_store
from tests.helpers.cli import cli
from tests.helpers.sample_inputs import write_files

METRICS = ("exact_match", "rouge_l")


@pytest.fixture
def stored(tmp_path):
    golden, outputs, questions = write_files(tmp_path)
    path = tmp_path / "lifecycle.duckdb"
    store = open_store(path)
    ids = (store.save_dataset(loaders.load(golden, role="golden")).dataset_id,
           store.save_dataset(loaders.load(outputs, role="outputs")).dataset_id)
    yield store, ids, questions
    close_store(path)


def test_the_sample_prepared_is_the_one_stored_judged_and_resumed(stored):
    """No seed given: prepare draws a random one, once; start stores that draw, the engine judges exactly its
    samples, and a resume plans the same ones from the stored config."""
    store, (golden_id, outputs_id), questions = stored
    prepared = lifecycle.prepare(lifecycle.Inputs.stored(store, golden_id, [outputs_id]),
                                 lifecycle.RunSpec(metrics=METRICS, sample=8))
    seed = prepared.drawn.seed
    assert prepared.problems == () and prepared.sample == {"n": 8, "of": 30, "seed": seed}
    chosen = set(sampling.choose(questions, 8, seed))
    assert {s.golden.question_id for s in prepared.samples} == chosen and len(prepared.samples) == 8 * 2

    run_id = lifecycle.start(store, prepared)
    run = store.run(run_id)
    assert json.loads(run["config"])["sample"] == prepared.sample and run["n_samples"] == len(prepared.samples)
    assert engine.execute_run(store, run_id, samples=prepared.samples) == "finished"
    cells = store.cursor().execute("SELECT DISTINCT question_id, method FROM scores WHERE run_id = ?",
                                   [run_id]).fetchall()
    assert set(cells) == {s.key for s in prepared.samples}
    assert [s.key for s in planning.of_stored_run(store, store.run(run_id))] == [s.key for s in prepared.samples]

    grown = lifecycle.resume(store, run_id, sample=12)  # the same seed: the old sample is part of the new one
    assert grown == {"n": 12, "of": 30, "seed": seed} and store.run(run_id)["n_samples"] == 12 * 2
    assert engine.execute_run(store, run_id) == "finished"
    keys = store.cursor().execute("SELECT DISTINCT question_id FROM scores WHERE run_id = ?", [run_id]).fetchall()
    assert {k for k, in keys} == set(sampling.choose(questions, 12, seed)) > chosen


def test_a_resume_that_cannot_grow_the_sample_writes_nothing(stored):
    """Every check before any write: a smaller sample is refused, and the budget given with it is not recorded."""
    store, (golden_id, outputs_id), _ = stored
    run_id = lifecycle.start_stored(store, golden_id, [outputs_id],
                                    lifecycle.RunSpec(metrics=METRICS, sample=8, seed=3))
    before = store.run(run_id)
    with pytest.raises(ValueError, match="a sample only grows"):
        lifecycle.resume(store, run_id, sample=4, max_cost=5.0)
    after = store.run(run_id)
    assert (after["config"], after["n_samples"]) == (before["config"], before["n_samples"])
    with pytest.raises(KeyError, match="no run 'run-nope'"):
        lifecycle.resume(store, "run-nope")


def test_the_inputs_problems_are_listed_with_the_settings_ones(stored):
    store, (golden_id, outputs_id), _ = stored
    inputs = lifecycle.Inputs.stored(store, golden_id, [outputs_id])
    prepared = lifecycle.prepare(inputs, lifecycle.RunSpec(metrics=(), methods=("nobody",)))
    assert [p.about for p in prepared.problems] == ["metrics", "inputs"]
    assert not prepared.samples and prepared.drawn is None
    twice = lifecycle.Inputs(inputs.golden, inputs.outputs * 2, inputs.golden_items, inputs.rag_outputs * 2)
    assert [p.about for p in lifecycle.prepare(twice, lifecycle.RunSpec()).problems] == ["methods"]
    with pytest.raises(ValueError, match="more than one answer from method"):
        lifecycle.start(store, lifecycle.prepare(twice, lifecycle.RunSpec()))
    assert store.cursor().execute("SELECT count(*) FROM runs").fetchall()[0][0] == 0


def test_the_judge_lacks_its_model_and_key_for_a_run_not_for_an_estimate(monkeypatch):
    from evaluators.judges import OfflineJudge, OpenAIJudge

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert lifecycle.judge_problems(OfflineJudge()) == []
    assert [p.about for p in lifecycle.judge_problems(OpenAIJudge())] == ["model", "api_key"]
    assert lifecycle.judge_problems(OpenAIJudge("m"), api_key="sk-lent") == []


def test_the_cli_refuses_every_problem_at_once_before_reading_a_file(tmp_path):
    out = cli("run", "--golden", str(tmp_path / "missing.csv"), "--metrics", "exact_match,bogus", "--concurrency",
              "0", "--sample", "0", db=tmp_path / "none.duckdb")
    assert out.returncode == 2
    errors = [line for line in out.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 3 and "bogus" in errors[0] and "missing.csv" not in out.stderr
    assert any("concurrency must be" in e for e in errors) and any("sample must be" in e for e in errors)
    assert not (tmp_path / "none.duckdb").exists()
