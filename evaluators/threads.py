"""How many threads the numeric libraries use: chosen by RAGScope, once per process, for every entry point.

torch, OpenBLAS or MKL under numpy, and DuckDB start one thread per core they see. That is wrong here twice:
- The offline judge's models (judges/nli.py, embeddings.py) run one short text per forward pass, and the numpy
  around them multiplies small matrices (a sample's claims by its sentences). Split over threads, each step waits
  for its slowest thread, and on a busy machine that thread waits for a core (OpenBLAS's threads spin meanwhile):
  beside two CPU-bound processes on 2 cores, MiniLM took 484-655 ms a text with 2 threads and 20-24 ms with 1,
  and an offline run 2.6-3.3 times as long. So one thread for torch and for BLAS, which is also the fastest on
  idle cores (bench/results/threads.md has both, and torch's default beside them).
- In a container, the cores seen (os.cpu_count) are the host's, not the CPU quota the container may use (cgroup
  cpu.max): DuckDB, whose scans and aggregates do gain from threads, gets the quota's cores (store.py).

An explicit choice wins: RAGSCOPE_TORCH_THREADS for the models, and the libraries' own variables
(OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS) for BLAS.
"""
from __future__ import annotations

import math
import os
import sys
from pathlib import Path

TORCH_THREADS = "RAGSCOPE_TORCH_THREADS"
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
    chosen = os.environ.get(TORCH_THREADS, "").strip()
    return max(1, int(chosen)) if chosen.isdigit() else 1


def limit_torch() -> None:
    """torch set to `torch_threads()` threads; called as the models load (torch is imported only then)."""
    import torch

    torch.set_num_threads(torch_threads())
