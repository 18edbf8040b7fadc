"""`python -m evaluators view`: a screen's tables as the CLI prints them."""
import subprocess

import pandas as pd

from evaluators.queries.screens import SCREENS
from evaluators.store import close_store, open_store
from tests.helpers.cli import cli


def view(db, *args) -> subprocess.CompletedProcess:
    return cli("view", *args, db=db, env={"COLUMNS": "1000"})  # --help unwrapped, whatever the terminal


def tables(db, screen: str, run_id: str, **options) -> dict[str, pd.DataFrame]:
    """The view's tables in this process, row labels (metric, method) as a first column, as the CLI prints them."""
    try:
        found = SCREENS[screen](open_store(db), run_id, **options)
    finally:
        close_store(db)
    return {name: t.reset_index() if any(t.index.names) else t for name, t in found.items()}
