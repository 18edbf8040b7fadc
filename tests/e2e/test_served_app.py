"""The app as `make app` serves it watches no file: Streamlit's watcher put an inotify watch on every folder under
the app's (.venv's thousands included, whatever folderWatchBlacklist says), overflowed its queue during runs and
took as much CPU as the evaluation. The watches are counted in /proc, where the kernel lists them per process."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.helpers.browser import open_page, chromium, serving

pytestmark = pytest.mark.e2e


def _streamlit_watches() -> int:
    """inotify watches held by the streamlit servers this test process started."""
    watches = 0
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid != os.getpid() or b"streamlit" not in (proc / "cmdline").read_bytes():
                continue
            for fd in (proc / "fd").iterdir():
                if os.readlink(fd) == "anon_inode:inotify":
                    watches += (proc / "fdinfo" / fd.name).read_text().count("inotify wd:")
        except (OSError, ValueError, IndexError):  # a process that ended meanwhile
            continue
    return watches


def test_the_served_app_watches_no_file(tmp_path, all_demos_db_file):
    db = tmp_path / "served.duckdb"
    shutil.copy(all_demos_db_file, db)
    with serving(db) as url, chromium() as page:  # .streamlit/config.toml, as `make app` starts it
        open_page(page, url)  # a session: the watcher, when on, starts with the first one
        assert _streamlit_watches() == 0
    with serving(db, "--server.fileWatcherType", "auto") as url, chromium() as page:  # `make app DEV=1`
        open_page(page, url)
        assert _streamlit_watches() > 100  # every folder under the app's: the count above would have seen them
