"""Two (or n) CPU-bound processes beside a benchmark: the busy machine users have. Busy loops that end by themselves
after `seconds`, and are stopped as soon as the benchmark is done."""
from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator

LOOP = "import sys, time\nend = time.time() + float(sys.argv[1])\nwhile time.time() < end:\n    pass\n"


@contextlib.contextmanager
def cpu_bound(n: int = 2, seconds: float = 3600) -> Iterator[None]:
    hogs = [subprocess.Popen([sys.executable, "-c", LOOP, str(seconds)]) for _ in range(n)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
