"""The thread policy (evaluators/threads.py): the CPU quota read from cgroup files, one thread for torch's small
models and for BLAS, DuckDB on the usable cores, and a user's explicit choice winning. Each process-wide setting is checked in a fresh
process, as an entry point starts."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluators import threads
from tests.helpers import ROOT

CLEAN = {k: v for k, v in os.environ.items()
         if k not in (*threads.BLAS_VARIABLES, threads.TORCH_THREADS, threads.WORKERS)}


def _cgroup(folder: Path, cpu_max: str) -> Path:
    """A cgroup v2 folder whose cpu.max says `cpu_max` ("QUOTA PERIOD" in microseconds, or "max PERIOD")."""
    folder.mkdir(parents=True)
    (folder / "cpu.max").write_text(cpu_max)
    return folder


def test_the_cpu_quota_of_cgroup_v2_and_v1(tmp_path):
    assert threads.cpu_quota(_cgroup(tmp_path / "a", "150000 100000\n")) == 1.5
    assert threads.cpu_quota(_cgroup(tmp_path / "b", "max 100000\n")) is None  # unlimited
    v1 = tmp_path / "c" / "cpu"
    v1.mkdir(parents=True)
    (v1 / "cpu.cfs_quota_us").write_text("50000\n")
    (v1 / "cpu.cfs_period_us").write_text("100000\n")
    assert threads.cpu_quota(tmp_path / "c") == 0.5
    (v1 / "cpu.cfs_quota_us").write_text("-1\n")  # v1's unlimited
    assert threads.cpu_quota(tmp_path / "c") is None
    assert threads.cpu_quota(tmp_path / "none") is None  # no cgroup files at all


def test_usable_cpus_are_the_cores_it_may_run_on_held_to_the_quota(tmp_path):
    cores = len(os.sched_getaffinity(0))
    assert threads.usable_cpus(tmp_path / "none") == cores
    assert threads.usable_cpus(_cgroup(tmp_path / "half", "50000 100000")) == 1  # at least one
    assert threads.usable_cpus(_cgroup(tmp_path / "big", f"{100000 * (cores + 8)} 100000")) == cores
    if cores > 1:
        assert threads.usable_cpus(_cgroup(tmp_path / "one", "100000 100000")) == 1


def _fresh(code: str, **env: str) -> dict:
    """What `code` prints as JSON in a new process started from another folder, with `env` added."""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT / "tests", env={**CLEAN, "PYTHONPATH": str(ROOT),
                         **env}, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


TORCH = ("import json, torch\nfrom evaluators.judges import embeddings\nbefore = torch.get_num_threads()\n"
         "embeddings.encode(['one text'])\nprint(json.dumps([before, torch.get_num_threads()]))")


def test_the_small_models_run_on_one_thread_unless_the_user_chose():
    assert _fresh(TORCH)[1] == 1
    assert _fresh(TORCH, RAGSCOPE_TORCH_THREADS="2")[1] == 2  # the setting is applied, not torch's default kept


BLAS = ("import json, os\n{first}import evaluators\nimport numpy\nfrom threadpoolctl import threadpool_info\n"
        "print(json.dumps([os.environ.get('OPENBLAS_NUM_THREADS'), "
        "[p['num_threads'] for p in threadpool_info() if p['user_api'] == 'blas']]))")


@pytest.mark.parametrize("first", ["", "import numpy\n"], ids=["evaluators first", "numpy first"])
def test_blas_pools_run_on_one_thread(first):
    variable, pools = _fresh(BLAS.format(first=first))
    assert variable == "1" and pools and all(n == 1 for n in pools)


def test_a_users_blas_setting_wins():
    variable, pools = _fresh(BLAS.format(first=""), OPENBLAS_NUM_THREADS="2")
    assert variable == "2" and pools and all(n == 2 for n in pools)


def test_duckdb_gets_the_usable_cores(tmp_path):
    from evaluators.store import close_store, open_store

    store = open_store(tmp_path / "t.duckdb")
    try:
        assert store.cursor().execute("SELECT current_setting('threads')").fetchall() == [(threads.usable_cpus(),)]
    finally:
        close_store(tmp_path / "t.duckdb")


def test_workers_are_the_usable_cores_unless_the_user_chose(monkeypatch):
    monkeypatch.delenv(threads.WORKERS, raising=False)
    assert threads.workers() == threads.usable_cpus()
    monkeypatch.setenv(threads.WORKERS, "3")
    assert threads.workers() == 3
    monkeypatch.setenv(threads.WORKERS, "0")  # at least one
    assert threads.workers() == 1


def test_parallel_keeps_the_order_spreads_the_items_and_runs_nested_calls_in_line(monkeypatch):
    import threading
    import time

    monkeypatch.setenv(threads.WORKERS, "2")  # a pool made now has two workers; one made earlier had two or more

    def item(x: int) -> tuple[int, str, list[str]]:
        time.sleep(0.05)  # long enough for the other worker to take the next item
        inner = threads.parallel(lambda _: threading.current_thread().name, range(3))  # in line, no deadlock
        return x * x, threading.current_thread().name, inner

    out = threads.parallel(item, range(8))
    assert [square for square, _, _ in out] == [x * x for x in range(8)]
    names = {name for _, name, _ in out}
    assert len(names) > 1 and all(n.startswith("ragscope-worker") for n in names)
    assert all(inner == [name] * 3 for _, name, inner in out)
    assert threads.parallel(lambda x: x + 1, [41]) == [42]  # one item: no pool needed


# The offline judge's claim matrices of a few demo samples, and the torch threads its workers ran on.
MATRICES = ("import json, torch\nfrom dataclasses import asdict\nfrom evaluators import demo, threads\n"
            "from evaluators.runs import planning\n"
            "from evaluators.judges import offline\n"
            "golden = demo.read_source(demo.ARAGOG.golden, 'golden')\n"
            "outputs = [o for s in demo.ARAGOG.outputs[:2] for o in demo.read_source(s, 'outputs').outputs]\n"
            "samples = planning.plan(golden.golden, outputs).samples[:12]\n"
            "matrices = [asdict(m) for m in offline.build_matrices(samples)]\n"
            "print(json.dumps([matrices, sorted(set(threads.parallel(lambda _: torch.get_num_threads(), range(8))))]))")


def test_the_offline_judge_gives_the_same_verdicts_on_one_worker_and_on_two():
    """Every text and pair is one forward pass of its own, so the workers change when a verdict is computed,
    never what it is; the workers' passes run on one torch thread each."""
    one, one_threads = _fresh(MATRICES, RAGSCOPE_WORKERS="1")
    two, two_threads = _fresh(MATRICES, RAGSCOPE_WORKERS="2")
    assert one == two and one
    assert one_threads == two_threads == [1]


def test_a_background_job_gives_its_result_or_its_error_without_the_secret():
    done = threads.BackgroundJob().start(lambda a, b=0: a + b, 2, b=3, secret="sk-x")
    assert done.wait(10) and done.result == 5 and done.error is None

    def fail(key):
        raise ValueError(f"the server refused {key}")

    failed = threads.BackgroundJob().start(fail, "sk-secret", secret="sk-secret")
    assert failed.wait(10) and failed.done and failed.result is None
    assert failed.error == "the server refused [the API key]"
