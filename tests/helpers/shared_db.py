"""A database file held by another process, as a running app holds it."""
import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path


def free_for_others(db: Path) -> bool:
    """Whether another process can open the file now."""
    code = f"import duckdb; duckdb.connect({str(db)!r}, read_only=True).close()"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60).returncode == 0


class Holder:
    """Another process holding a DuckDB file, as a running app or CLI job (or a DuckDB shell) does."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc

    def let_go(self) -> None:
        """Ask it to close the file (after its `delay`) and exit."""
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def closed(self, timeout: float) -> bool:
        """Whether it has closed the file and exited within `timeout` seconds."""
        return self.proc.wait(timeout) == 0


@contextlib.contextmanager
def held_elsewhere(db: Path, *, delay: float = 0.0) -> Iterator[Holder]:
    """Inside the block another process holds `db` until `let_go()` (then `delay` seconds more); killed on leaving."""
    code = (f"import duckdb, sys, time; c = duckdb.connect({str(db)!r}); print('ok', flush=True); "
            f"sys.stdin.readline(); time.sleep({delay}); c.close()")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ok"
        yield Holder(proc)
    finally:
        proc.kill()
        proc.wait()
