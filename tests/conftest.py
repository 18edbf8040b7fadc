"""Fixtures every folder of tests/ may use (the demo databases, the app in AppTest, a hostile run), and the marker of
tests that build every demo. Helpers that are not fixtures live in tests/helpers."""
from pathlib import Path

import pytest

from tests.helpers import ROOT, SHARED_DATA
from tests.helpers.hostile import A_LINK, HOSTILE_METHOD, IMG, JS_LINK
from tests.helpers.screens import keep_run


def pytest_collection_modifyitems(items):
    """A test on the database of every demo waits minutes for it the first time: `demos`, which `make test-fast`
    leaves out."""
    for item in items:
        if "all_demos_db_file" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.demos)


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"the shared sample data is missing: {SHARED_DATA}")
    return SHARED_DATA


def _demo_db(path: Path, demos=None) -> Path:
    from evaluators.demo import ensure_demo
    from evaluators.store import close_store, open_store

    ensure_demo(open_store(path), demos)
    close_store(path)
    return path


@pytest.fixture(scope="session")
def demo_db_file(tmp_path_factory) -> Path:
    """A database with the evaluated GraphRAG-Bench demo run only, built once per test session (about a minute):
    the screens' tests know its numbers (103 questions, basic_search vs local_search)."""
    from evaluators.demo import GRAPHRAG

    return _demo_db(tmp_path_factory.mktemp("demo") / "demo.duckdb", [GRAPHRAG])


@pytest.fixture(scope="session")
def all_demos_db_file(tmp_path_factory) -> Path:
    """A database with every demo run evaluated, as `make app` opens it (the ARAGOG run in view): the browser
    test walks it. Built once per session, it takes minutes (python -m evaluators demo prints each run's time)."""
    return _demo_db(tmp_path_factory.mktemp("demos") / "demos.duckdb")


@pytest.fixture
def demo(demo_db_file, tmp_path):
    """(store, run id): a private copy of the evaluated GraphRAG-Bench demo (two methods, four question types,
    claims), for tests that write to it or hold it."""
    import shutil

    from evaluators.store import close_store, open_store

    db = tmp_path / "demo.duckdb"
    shutil.copy(demo_db_file, db)
    store = open_store(db)
    yield store, store.cursor().execute("SELECT run_id FROM runs WHERE status = 'finished'").fetchall()[0][0]
    close_store(db)


@pytest.fixture(scope="module")
def demo_read(demo_db_file):
    """(store, run id) of the session's evaluated demo database itself, for tests that only read it."""
    from evaluators.store import close_store, open_store

    store = open_store(demo_db_file)
    yield store, store.cursor().execute("SELECT run_id FROM runs WHERE status = 'finished'").fetchall()[0][0]
    close_store(demo_db_file)


@pytest.fixture
def app_at(tmp_path, monkeypatch, demo_db_file):
    """`make(page=None)` -> an AppTest of app.py on a private copy of the demo database, run once
    (on `page`, a path such as "pages/compare.py", when given). A fresh AppTest per scenario: a
    second run() of one instance has lost sidebar widgets before."""
    import shutil

    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from evaluators.store import close_store

    db = tmp_path / "app.duckdb"
    shutil.copy(demo_db_file, db)
    monkeypatch.setenv("RAGSCOPE_DB", str(db))
    monkeypatch.chdir(ROOT)

    def make(page: str | None = None) -> AppTest:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.run()
        if page:
            at.switch_page(page)
            at.run()
        assert not at.exception, at.exception
        return at

    make.db = db
    yield make
    st.cache_resource.clear()
    close_store(db)


@pytest.fixture
def app_on(monkeypatch):
    """`make(db, page, run_id=None)` -> an AppTest of app.py on the database `db`, switched to `page` and run, with
    `run_id` in view (default: the sidebar's first run), pinned for every later run of the AppTest (keep_run)."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from evaluators.store import close_store

    opened = []
    monkeypatch.chdir(ROOT)

    def make(db: Path, page: str, run_id: str | None = None) -> AppTest:
        monkeypatch.setenv("RAGSCOPE_DB", str(db))
        opened.append(db)
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        if run_id is not None:
            at.session_state["run_id"] = run_id
        at.run()
        keep_run(at, at.session_state["run_id"])
        at.switch_page(page)
        at.run()
        assert not at.exception, at.exception
        return at

    yield make
    st.cache_resource.clear()
    for db in opened:
        close_store(db)


@pytest.fixture
def navigation_pages(monkeypatch):
    """AppTest decides again on every run whether the app is a v1 `pages/` directory app (it has a
    pages/ folder), and then runs a switched-to page without app.py, losing the sidebar and the run.
    app.py uses st.navigation, which in a real session turns that mode off after its first run."""
    from streamlit.runtime.pages_manager import PagesManager

    original = PagesManager.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    monkeypatch.setattr(PagesManager, "__init__", init)


@pytest.fixture(scope="session")
def hostile_db_file(tmp_path_factory) -> tuple[Path, str]:
    """(database, run id): a small run evaluated by the offline judge through the loaders and the engine, whose
    question, question type, method name, answers and chunks hold the payloads above; the two methods differ on
    every question."""
    from evaluators import evaluate
    from evaluators.store import close_store

    facts = [("Who wrote the ARAGOG paper?", "Matouš Eibich wrote the ARAGOG paper.", "Gemma Hart wrote it."),
             ("When was ARAGOG published?", "ARAGOG was published in 2024.", "It was published in 1999."),
             ("What does ARAGOG evaluate?", "ARAGOG evaluates retrieval-augmented generation.",
              "It evaluates image classifiers.")]
    golden = [{"question_id": f"q{i}", "question": (f"{IMG} " if i == 0 else "") + q, "reference": ref,
               "question_type": "<script>alert(5)</script>Fact" if i % 2 == 0 else "Summary"}
              for i, (q, ref, _) in enumerate(facts)]
    outputs = {
        "plain": [{"question_id": f"q{i}", "answer": f"{ref} See {JS_LINK} and {A_LINK}.",
                   "contexts": [f"{ref} {A_LINK}", "An unrelated passage about the weather."]}
                  for i, (_, ref, _) in enumerate(facts)],
        HOSTILE_METHOD: [{"question_id": f"q{i}", "answer": f"{wrong} {JS_LINK}", "contexts": [f"{wrong} {IMG}"]}
                         for i, (_, _, wrong) in enumerate(facts)],
    }
    db = tmp_path_factory.mktemp("hostile") / "hostile.duckdb"
    run = evaluate(golden, outputs, db=db, name=f"Hostile {IMG}",
                   metrics=["judge_overall", "verdict", "answer_class", "answer_correctness_f1", "faithfulness",
                            "context_precision"])
    close_store(db)
    return db, run.run_id
