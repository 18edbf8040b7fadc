"""The demo runs: what each holds, the order the app relies on, idempotence, and the copies of the sources.

The runs are built here with one cheap metric: what they hold (methods x questions) does not depend on the
metrics, and the real offline-judge build takes minutes (the browser test's database has it)."""
import filecmp
import json
from dataclasses import replace

import pytest

from evaluators import demo, loaders, queries
from evaluators.runs import engine, lifecycle
from evaluators.metrics import REGISTRY
from evaluators.store import open_store

CHEAP = ("exact_match",)


def cheap(demos=demo.DEMOS):
    return [replace(d, metrics=CHEAP) for d in demos]


def _samples(store, run_id) -> dict[str, set[str]]:
    """method -> the question ids it has scores for."""
    rows = store.cursor().execute("SELECT method, question_id FROM scores WHERE run_id = ?", [run_id]).fetchall()
    out: dict[str, set[str]] = {}
    for method, question_id in rows:
        out.setdefault(method, set()).add(question_id)
    return out


def _counts(store) -> dict[str, int]:
    return {t: store.cursor().execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
            for t in ("datasets", "runs", "scores")}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    store = open_store(tmp_path_factory.mktemp("demos") / "demos.duckdb")
    return store, {b.name: b for b in demo.build_demos(store, cheap())}


def test_aragog_has_four_retrieval_settings_x_107_questions_without_question_types(built):
    store, runs = built
    samples = _samples(store, runs[demo.ARAGOG.name].run_id)
    assert set(samples) == {"minilm_top1_chunk64", "minilm_top3_chunk128", "mpnet_top2_chunk128",
                            "msmarco-distilroberta_top3_chunk256"}
    assert {len(ids) for ids in samples.values()} == {107} and len(set.union(*samples.values())) == 107
    types = queries.run_scores(store, runs[demo.ARAGOG.name].run_id)["question_type"]
    assert types.isna().all()  # ARAGOG has none, and none are made up


def test_clapnq_has_three_llms_x_100_questions_20_of_them_unanswerable(built):
    store, runs = built
    run_id = runs[demo.CLAPNQ.name].run_id
    samples = _samples(store, run_id)
    assert set(samples) == {"GPT-3.5 (Turbo)", "Llama (13b-chat)", "Mistral"}
    assert {len(ids) for ids in samples.values()} == {100}
    scores = queries.run_scores(store, run_id)
    per_type = scores[scores["method"] == "Mistral"]["question_type"].value_counts().to_dict()
    assert per_type == {"ANSWERABLE": 80, "UNANSWERABLE": 20}


def test_clapnq_carries_its_2700_human_ratings_once(built):
    store, runs = built
    ratings = store.annotations(runs[demo.CLAPNQ.name].run_id)
    assert len(ratings) == 100 * 3 * 3 * 3  # questions x models x annotators x dimensions
    assert set(ratings["dimension"]) == {"faithfulness", "answer_relevance", "fluency"}
    per_item = ratings.groupby(["question_id", "method", "dimension"])["author"].nunique()
    assert (per_item == 3).all() and ratings["rating"].between(1, 4).all()


def test_graphrag_demo_says_its_outputs_are_simulated(built):
    store, runs = built
    run = store.run(runs[demo.GRAPHRAG.name].run_id)
    assert "simulated" in run["name"] and "no LLM" in run["name"]
    assert json.loads(run["config"])["description"].startswith("Simulated outputs: no LLM wrote these answers.")
    assert {m: len(q) for m, q in _samples(store, run["run_id"]).items()} == {"basic_search": 103, "local_search": 103}


def test_hyde_compares_two_pipelines_on_their_answers_alone(built):
    """The source keeps only the baseline's chunks: both methods are read without chunks and judged by the
    metrics that need none, so neither is scored against chunks it did not retrieve."""
    store, runs = built
    samples = _samples(store, runs[demo.ARAGOG_HYDE.name].run_id)
    assert {m: len(q) for m, q in samples.items()} == {"baseline_rag": 107, "hyde_rag": 107}
    outputs = [demo.read_source(source, "outputs") for source in demo.ARAGOG_HYDE.outputs]
    assert all(o.contexts == () for dataset in outputs for o in dataset.outputs)
    assert outputs[0].outputs[0].answer != outputs[1].outputs[0].answer
    assert {"judge_correctness", "semantic_similarity", "answer_class"} <= set(demo.ARAGOG_HYDE.metrics)
    assert not any("contexts" in REGISTRY[m].reads for m in demo.ARAGOG_HYDE.metrics)
    assert "faithfulness" not in demo.ARAGOG_HYDE.metrics


def test_the_aragog_run_is_the_newest_so_the_app_opens_on_it(built):
    store, runs = built
    assert queries.runs(store)["name"].iloc[0] == demo.ARAGOG.name


def test_building_again_is_a_no_op(built):
    store, runs = built
    before = _counts(store)
    again = {b.name: b for b in demo.build_demos(store, cheap())}
    assert {n: b.run_id for n, b in again.items()} == {n: b.run_id for n, b in runs.items()}
    assert not any(b.computed for b in again.values()) and all(b.computed for b in runs.values())
    assert _counts(store) == before
    assert demo.ensure_demo(store, cheap()) == runs[demo.ARAGOG.name].run_id


def test_a_run_under_the_graphrag_demos_former_name_is_renamed_not_computed_again(tmp_path):
    store = open_store(tmp_path / "old.duckdb")
    golden = store.save_dataset(loaders.load(demo.DEMO_GOLDEN, role="golden")).dataset_id
    outputs = store.save_dataset(loaders.load(demo.DEMO_OUTPUTS, role="outputs")).dataset_id
    old = lifecycle.start_stored(store, golden, [outputs],
                                 lifecycle.RunSpec(metrics=CHEAP, name=demo.GRAPHRAG.legacy_names[0]))
    engine.execute_run(store, old)
    (built,) = demo.build_demos(store, cheap([demo.GRAPHRAG]))
    assert (built.run_id, built.computed) == (old, False)
    run = store.run(old)
    assert run["name"] == demo.DEMO_RUN_NAME and "Simulated" in json.loads(run["config"])["description"]


def test_the_demo_files_are_unchanged_copies_of_the_shared_data(shared_data):
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_demo_data", demo.DEMO_DIR / "build_demo_data.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    for folder, (source, files) in script.SOURCES.items():
        for name in files:
            assert filecmp.cmp(shared_data / source / name, demo.DEMO_DIR / folder / name, shallow=False), name
        assert (demo.DEMO_DIR / folder / "SOURCE.md").read_text().startswith(
            (shared_data / source / "SOURCE.md").read_text().rstrip("\n"))
    copied = set((demo.DEMO_DIR / "aragog").iterdir())
    assert {s.path for d in (demo.ARAGOG, demo.ARAGOG_HYDE) for s in d.outputs} <= copied
    assert demo.CLAPNQ_FILE.exists()


def test_the_demo_command_names_the_demos_it_knows(capsys):
    from evaluators.cli import main

    assert main(["demo", "aragog", "bogus", "--db", ":memory:"]) == 2
    assert "unknown demo bogus; the demos are aragog, clapnq, graphrag, hyde" in capsys.readouterr().err


def test_the_clapnq_demo_ranks_each_answerable_questions_passage():
    """data/demo/clapnq_qrels.tsv is what its script writes from the ClapNQ file, and through it every answerable
    question's passage is its relevant document: id_recall 1 where the passage was retrieved (every model was given
    it), not applicable on the 20 unanswerable questions."""
    import importlib.util

    from evaluators.metrics.registry import find
    from evaluators.records import NOT_APPLICABLE
    from evaluators.runs import planning

    spec = importlib.util.spec_from_file_location("build_clapnq_qrels", demo.DEMO_DIR / "build_clapnq_qrels.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert demo.CLAPNQ.qrels.read_text(encoding="utf-8") == script.qrels_text(json.loads(
        demo.CLAPNQ_FILE.read_text(encoding="utf-8")))
    golden = loaders.with_qrels(demo.read_source(demo.CLAPNQ.golden, "golden"), demo.CLAPNQ.qrels)
    outputs = demo.read_source(demo.CLAPNQ.outputs[0], "outputs")
    assert loaders.check_against_golden(outputs, golden) == []
    named = {g.question_id: g for g in golden.golden if g.relevant_ids}
    assert len(named) == 80 and {g.question_type for g in named.values()} == {"ANSWERABLE"}
    samples = planning.plan(golden.golden, outputs.outputs).samples
    results = find("id_recall").scored(samples)
    by_type = {}
    for s, r in zip(samples, results):
        by_type.setdefault(s.golden.question_type, set()).add(r.value if r.value is not None else r.status)
    assert by_type == {"ANSWERABLE": {1.0}, "UNANSWERABLE": {NOT_APPLICABLE}}
