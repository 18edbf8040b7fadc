"""Local unless shared on purpose, a password when shared (issue 12): the real app.py in AppTest on a copy of the
demo database, served "on 0.0.0.0" by setting Streamlit's server.address option as `make app HOST=0.0.0.0` does."""
from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time

import pytest
from streamlit import config
from streamlit.testing.v1 import AppTest

from ui import access
from ui.access import Throttle, is_shared, password_matches
from tests.helpers import ROOT

PASSWORD = "correct horse battery staple"


def test_loopback_addresses_are_local_everything_else_is_shared():
    assert not any(is_shared(a) for a in ("127.0.0.1", "127.0.1.1", "localhost", "::1", " 127.0.0.1 "))
    assert all(is_shared(a) for a in ("", "0.0.0.0", "::", "192.168.1.20", "10.0.0.5", "example.org"))


def test_the_password_must_match_exactly():
    assert password_matches(PASSWORD, PASSWORD)
    assert not any(password_matches(given, PASSWORD) for given in ("", PASSWORD[:-1], PASSWORD + " ", PASSWORD.upper()))


def test_failed_attempts_from_one_address_wait_longer_each_time_and_one_at_a_time():
    throttle = Throttle(max_delay=4)
    assert [throttle.delay("a")] == [0]
    for _ in range(4):
        throttle._failures["a"] += 1
    assert throttle.delay("a") == 4 and throttle.delay("b") == 0  # 1, 2, 4, then capped; per address
    throttle = Throttle(max_delay=0.2)
    inside, overlaps = [], []

    def check():
        overlaps.append(bool(inside))
        inside.append(1)
        time.sleep(0.05)
        inside.pop()
        return False

    threads = [threading.Thread(target=throttle.attempt, args=("a", check)) for _ in range(4)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == [False] * 4  # attempts of one address never run together
    assert time.monotonic() - started >= 0.05 * 4 + 0.2 * 3 * 0.9  # each after the wait its predecessors earned
    assert throttle.attempt("a", lambda: True) and throttle.delay("a") == 0  # a success resets the address


@pytest.fixture
def shared_app(tmp_path, monkeypatch, demo_db_file, navigation_pages):
    """make() -> an AppTest of app.py served to the network, run once, on a private copy of the demo database."""
    import streamlit as st

    from evaluators.store import close_store

    db = tmp_path / "app.duckdb"
    shutil.copy(demo_db_file, db)
    monkeypatch.setenv("RAGSCOPE_DB", str(db))
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(access, "THROTTLE", Throttle(max_delay=0.01))
    before = config.get_option("server.address")
    config.set_option("server.address", "0.0.0.0")

    def make() -> AppTest:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.run()
        assert not at.exception, at.exception
        return at

    yield make
    config.set_option("server.address", before)
    st.cache_resource.clear()
    close_store(db)


def _everything_shown(at: AppTest) -> str:
    """The text of every element the script run drew (main area and sidebar)."""
    return repr(at._tree)


def test_a_shared_app_without_a_password_shows_nothing_but_why(shared_app, monkeypatch):
    monkeypatch.delenv(access.PASSWORD_VARIABLE, raising=False)
    at = shared_app()
    assert "no password is set" in at.error[0].value and access.PASSWORD_VARIABLE in at.error[0].value
    assert not at.text_input and not at.sidebar.selectbox  # no sign-in field to guess at, no run picker
    assert "GraphRAG" not in _everything_shown(at) and "Overview" not in _everything_shown(at)


def test_a_shared_app_asks_for_the_password_before_any_page(shared_app, monkeypatch):
    monkeypatch.setenv(access.PASSWORD_VARIABLE, PASSWORD)
    at = shared_app()
    assert at.text_input[0].label == "Password" and not at.sidebar.selectbox
    assert "GraphRAG" not in _everything_shown(at)  # no run, question or score before sign-in

    at.text_input[0].input("wrong guess")
    at.button[0].click().run()
    assert at.error[0].value == "Wrong password." and "GraphRAG" not in _everything_shown(at)
    assert "wrong guess" not in _everything_shown(at)  # not echoed

    at.text_input[0].input(PASSWORD)
    at.button[0].click().run()
    assert not at.exception, at.exception
    shown = _everything_shown(at)
    assert at.title[0].value == "Overview" and "GraphRAG" in shown
    assert PASSWORD not in shown and PASSWORD not in repr(at.session_state.to_dict())  # never kept

    at.sidebar.button(key="sign-out").click().run()
    assert at.text_input[0].label == "Password" and "GraphRAG" not in _everything_shown(at)


def test_a_local_app_opens_without_a_password_and_asks_for_one_that_is_set(app_at, monkeypatch):
    assert config.get_option("server.address") == "127.0.0.1"  # .streamlit/config.toml: local by default
    monkeypatch.delenv(access.PASSWORD_VARIABLE, raising=False)
    at = app_at()
    assert at.title[0].value == "Overview" and not at.text_input
    monkeypatch.setenv(access.PASSWORD_VARIABLE, PASSWORD)  # e.g. behind a reverse proxy on this machine
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    assert at.text_input[0].label == "Password" and "GraphRAG" not in _everything_shown(at)


def _make_app(*args: str, env: dict) -> subprocess.CompletedProcess:
    """`make app ...` with the venv taken as built (-o: the stamp is not remade)."""
    return subprocess.run(["make", "-o", ".venv/.installed", "app", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env=env)


def test_make_app_serves_this_machine_only_and_will_not_share_without_a_password():
    env = {k: v for k, v in os.environ.items() if k != access.PASSWORD_VARIABLE} | {"HOST": "0.0.0.0"}
    dry = subprocess.run(["make", "-n", "-o", ".venv/.installed", "app"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60, env=env)  # a HOST in the environment (zsh sets one) does not share the app
    assert "streamlit run app.py --server.address 127.0.0.1" in dry.stdout, dry.stdout
    refused = _make_app("HOST=0.0.0.0", env=env)
    assert refused.returncode != 0 and "set RAGSCOPE_PASSWORD first" in refused.stdout + refused.stderr
    assert "streamlit run" not in refused.stdout  # nothing was started
