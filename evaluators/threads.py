"""How many threads the numeric libraries use: chosen by RAGScope, once per process, for every entry point.

torch, OpenBLAS or MKL under numpy, and DuckDB start one thread per core they see. That is wrong here twice:
- The offline judge's models (judges/nli.py, embeddings.py) run one short text per forward pass, and the numpy
  around them multiplies small matrices (a sample's claims by its sentences). Split over threads, each step waits
  for its slowest thread, and on a busy machine that thread waits for a core (OpenBLAS's threads spin meanwhile):
  beside two CPU-bound processes on 2 cores, MiniLM took 484-655 ms a text with 2 threads and 20-24 ms with 1,
  and an offline run 2.6-3.3 times as long. So one thread for torch and for BLAS, which is also the fastest on
  idle cores (bench/results/threads.md has both, and torch's default beside them).
- Yet the cores are worth using: two forward passes on two threads run side by side (torch releases the GIL in
  them and needs no barrier between them), where one pass split over two threads waits at every step. So the
  offline judge spreads its texts and samples over `workers()` threads (`parallel`), each running its passes on
  one torch thread: 1.8x on 2 idle cores, 1.3-1.6x beside two CPU-bound processes (NLI passes, bench/threads.py
  has whole runs).
- In a container, the cores seen (os.cpu_count) are the host's, not the CPU quota the container may use (cgroup
  cpu.max): DuckDB, whose scans and aggregates do gain from threads, gets the quota's cores (store.py).

- A big OTLP trace file is read in parts by `workers()` processes (loaders/traces/parts.py).

An explicit choice wins: RAGSCOPE_TORCH_THREADS for the models, RAGSCOPE_WORKERS for `parallel` and the trace
reading processes, and the libraries' own variables (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS) for
BLAS.
"""
from __future__ import annotations

import math
import os
import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

TORCH_THREADS = "RAGSCOPE_TORCH_THREADS"
WORKERS = "RAGSCOPE_WORKERS"
BLAS_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
CGROUP = Path("/sys/fs/cgroup")


def cpu_quota(cgroup: Path = CGROUP) -> float | None:
    """The cores' worth of CPU time this process's cgroup may use (cgroup v2 cpu.max, v1 cfs), None if unlimited."""
    try:
        quota, period = (cgroup / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota = int((cgroup / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((cgroup / "cpu" / "cpu.cfs_period_us").read_text())
        return None if quota <= 0 or period <= 0 else quota / period
    except (OSError, ValueError):
        return None


def usable_cpus(cgroup: Path = CGROUP) -> int:
    """Cores this process can use: those it may run on (affinity), at most its CPU quota rounded up, at least 1."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    quota = cpu_quota(cgroup)
    return max(1, min(cores, math.ceil(quota)) if quota else cores)


def limit_blas() -> None:
    """One thread for the BLAS pools (module doc), unless the user chose. `evaluators` calls it on import: a library
    loaded later reads the variables (numpy's OpenBLAS reads them once, as it loads); one loaded before (a notebook
    that imported pandas first) is resized in place."""
    if any(os.environ.get(v) for v in BLAS_VARIABLES):
        return
    for variable in BLAS_VARIABLES[1:]:  # not OMP_NUM_THREADS: torch would take it for the user's choice
        os.environ[variable] = "1"
    if "numpy" in sys.modules:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1, user_api="blas")


def torch_threads() -> int:
    """torch's intra-op threads for the small models: $RAGSCOPE_TORCH_THREADS when set, else 1 (module doc)."""
    return _chosen(TORCH_THREADS, 1)


def limit_torch() -> None:
    """torch set to `torch_threads()` threads; called as the models load (torch is imported only then)."""
    import torch

    torch.set_num_threads(torch_threads())


def _chosen(variable: str, default: int) -> int:
    chosen = os.environ.get(variable, "").strip()
    return max(1, int(chosen)) if chosen.isdigit() else default


def workers() -> int:
    """Threads `parallel` spreads work over: $RAGSCOPE_WORKERS when set, else the usable cores."""
    return _chosen(WORKERS, usable_cpus())


T = TypeVar("T")
R = TypeVar("R")
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_in_pool = threading.local()


def parallel(fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """`[fn(x) for x in items]`, spread over the process's `workers()` threads (module doc), results in order.

    One pool for the process, shared by every run the app computes at once. A call from inside the pool runs
    in line (the pool's threads are busy with its caller's other items; waiting on the pool would deadlock).
    `fn` must not hold a lock that another item needs while it waits on something else."""
    items = list(items)
    if len(items) < 2 or workers() < 2 or getattr(_in_pool, "active", False):
        return [fn(x) for x in items]
    return list(_executor().map(fn, items))


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(workers(), thread_name_prefix="ragscope-worker",
                                       initializer=_mark_pool_thread)
        return _pool


def _mark_pool_thread() -> None:
    _in_pool.active = True


class BackgroundJob:
    """Work in a daemon thread that a screen polls (a click there must not cancel it midway): `start(work, *args,
    secret=...)`, then `done` / `wait`, then `result` or `error`: the exception's text, never raised in a thread no one
    joins, with `secret` (an API key, passed to the thread only, never kept on the object) replaced."""

    name = "ragscope-job"

    def __init__(self):
        self.result = None
        self.error: str | None = None
        self._done = threading.Event()

    def start(self, work: Callable, *args, secret: str | None = None, **kwargs):
        threading.Thread(target=self._run, args=(work, args, kwargs, secret), name=self.name, daemon=True).start()
        return self

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, seconds: float | None = None) -> bool:
        return self._done.wait(seconds)

    def _run(self, work: Callable, args: tuple, kwargs: dict, secret: str | None) -> None:
        try:
            self.result = work(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - shown on the screen
            text = str(exc) or type(exc).__name__
            self.error = text.replace(secret, "[the API key]") if secret else text
        finally:
            self._done.set()
