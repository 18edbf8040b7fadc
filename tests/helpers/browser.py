"""The real app served by Streamlit on a free port of 127.0.0.1, and Debian's Chromium driven by playwright."""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, sync_playwright
from playwright.sync_api import Page

from tests.helpers import ROOT


SHOTS = ROOT / "tests" / "e2e" / "screenshots"


CHROMIUM = "/usr/bin/chromium"


# As the machine's probe starts it: no sandbox as root, and no background connections (the
# network is closed; Chromium would keep trying).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


TIMEOUT_MS = 90_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serving(db: Path, *args: str, address: str = "127.0.0.1", env: dict | None = None) -> Iterator[str]:
    """`streamlit run app.py` on `db`, listening on `address` (more options in `args`); yields its loopback URL."""
    port = _free_port()
    log = open(db.with_suffix(".log"), "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.address", address, "--server.port",
         str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false", *args],
        cwd=ROOT, env={**os.environ, "RAGSCOPE_DB": str(db), **(env or {})}, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/_stcore/health", timeout=2)
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"streamlit did not start: {db.with_suffix('.log').read_text()[-2000:]}")
            time.sleep(0.5)
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@contextlib.contextmanager
def chromium() -> Iterator[Page]:
    """A page of Debian's headless Chromium."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs Debian's chromium (apt-get install chromium)")
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        page.set_default_timeout(TIMEOUT_MS)
        yield page
        browser.close()


def settle(page: Page) -> None:
    """Wait until the script run is over (Streamlit shows a running indicator while it runs)."""
    page.wait_for_timeout(500)
    page.get_by_role("img", name="Running...").wait_for(state="hidden", timeout=TIMEOUT_MS)
    page.wait_for_timeout(300)


def open_page(page: Page, server: str, path: str = "") -> None:
    page.goto(f"{server}/{path}")
    page.wait_for_selector("[data-testid='stApp']")
    settle(page)
