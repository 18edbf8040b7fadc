"""Background runs: `engine.execute_run` in a worker thread, so a run outlives the click that started it.

A Streamlit script is cancelled by the next click and a tab can close at any time; a run cannot
depend on either. The `RunManager` (one per process: the app holds it in `st.cache_resource`)
starts each run in its own daemon thread, keeps its live progress in memory for any session to
poll, and stops it on request between two metrics or batches (the engine's `cancel` event), which
leaves the run cancelled and resumable. No Streamlit here: the worker never touches `st.*`.

Threads and DuckDB: the worker uses the process's one Store, whose every method takes its own
cursor, so several runs (and the pages reading meanwhile) share the connection safely. The engine
holds the file only to read the run and to write each batch (`Store.lease`), so a CLI job on the
same file runs in between, and a worker that finds the file held by one waits for it. An API key
handed to `start` reaches the judge through `judges.lent_api_key` for this run only, in memory.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from evaluators.runs import engine
from evaluators.judges import lent_api_key
from evaluators.records.run_status import LIVE, RunStatus
from evaluators.store import Store


@dataclass(frozen=True)
class MetricState:
    done: int  # cells of this metric that need no more work (earlier sessions included)
    total: int
    computed: int = 0  # cells this worker computed
    seconds: float = 0.0  # time this worker spent on them (a batch's judge calls land on its first judged metric)
    # the same after this metric's first batch, which pays for loading the judge's models: the pace once warm
    warm_computed: int = 0
    warm_seconds: float = 0.0

    @property
    def seconds_per_cell(self) -> float | None:
        if self.warm_computed:
            return self.warm_seconds / self.warm_computed
        return self.seconds / self.computed if self.computed else None


@dataclass(frozen=True)
class Snapshot:
    """What a page shows of a run in progress (a copy: reading it never blocks the worker)."""

    run_id: str
    status: RunStatus  # STARTING, RUNNING, then the engine's end (FINISHED, CANCELLED ...), or FAILED / INTERRUPTED
    done: int
    total: int
    metrics: dict[str, MetricState]
    elapsed: float  # seconds since the worker started
    cancel_requested: bool
    error: str | None = None

    @property
    def active(self) -> bool:
        return self.status in LIVE

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0

    def metric_seconds_left(self, metric_id: str) -> float | None:
        """This metric's remaining cells at its measured pace; None while it has work but no pace
        (metrics differ by orders of magnitude: another's pace would be no guess at all)."""
        state = self.metrics[metric_id]
        if state.done >= state.total:
            return 0.0
        pace = state.seconds_per_cell
        return None if pace is None else (state.total - state.done) * pace

    @property
    def eta_seconds(self) -> float | None:
        """Seconds until the run ends: every metric's remaining cells at that metric's own pace.
        None until every metric with work left has scored a batch (with the engine's batch-major
        order, after the first batch)."""
        if not self.active:
            return 0.0
        left = [self.metric_seconds_left(m) for m in self.metrics]
        return None if not left or any(x is None for x in left) else sum(left)


class Job:
    """One run's live state: the callbacks run in its worker, snapshots in any thread (the CLI's progress lines
    keep one too, for the same time left)."""

    def __init__(self, run_id: str):
        self.run_id = run_id
        self.cancel = threading.Event()
        self.thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._status = RunStatus.STARTING
        self._error: str | None = None
        self._done = self._total = 0
        self._metrics: dict[str, MetricState] = {}
        self._started = self._last = time.monotonic()

    def on_metric(self, metric_id: str, metric_done: int, metric_total: int, done: int, total: int) -> None:
        now = time.monotonic()
        with self._lock:
            before = self._metrics.get(metric_id)
            if before is None:  # the engine's opening report of this metric: nothing computed yet
                self._metrics[metric_id] = MetricState(metric_done, metric_total)
            else:
                cells, seconds = metric_done - before.done, now - self._last
                warm = before.computed > 0  # a batch after this metric's first
                self._metrics[metric_id] = MetricState(metric_done, metric_total, before.computed + cells,
                                                       before.seconds + seconds,
                                                       before.warm_computed + cells * warm,
                                                       before.warm_seconds + seconds * warm)
                self._status = RunStatus.RUNNING
            self._last = now
            self._done, self._total = done, total

    def end(self, status: RunStatus, error: str | None = None) -> None:
        with self._lock:
            self._status, self._error = status, error

    def snapshot(self) -> Snapshot:
        with self._lock:
            return Snapshot(self.run_id, self._status, self._done, self._total, dict(self._metrics),
                            time.monotonic() - self._started, self.cancel.is_set(), self._error)

    def alive(self) -> bool:
        return self.thread is not None and self.thread.is_alive()


@dataclass
class RunManager:
    """The process's background runs, by run id (the latest worker of each)."""

    _jobs: dict[str, Job] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self, store: Store, run_id: str, *, api_key: str | None = None,
              batch_size: int | None = None) -> Snapshot:
        """Execute (or resume, or re-score the failed cells of) `run_id` in a new worker thread.
        A run whose worker is still alive is not started twice: its snapshot comes back.
        `batch_size` None: the run's judge's (engine.execute_run)."""
        if store.run(run_id) is None:
            raise KeyError(f"no run {run_id!r} in {store.path}")
        with self._lock:
            job = self._jobs.get(run_id)
            if job is not None and job.alive():
                return job.snapshot()
            job = Job(run_id)
            # the key travels as a thread argument only (Thread drops its arguments when it ends)
            job.thread = threading.Thread(target=self._work, args=(job, store, batch_size, api_key),
                                          name=f"ragscope-run-{run_id}", daemon=True)
            self._jobs[run_id] = job
            job.thread.start()
        return job.snapshot()

    @staticmethod
    def _work(job: Job, store: Store, batch_size: int | None, api_key: str | None) -> None:
        try:
            with lent_api_key(job.run_id, api_key):
                status = engine.execute_run(store, job.run_id, batch_size=batch_size, on_metric=job.on_metric,
                                            cancel=job.cancel)
            job.end(status)
        except KeyboardInterrupt as exc:  # the engine has stored the status and the reason
            job.end(RunStatus.INTERRUPTED, repr(exc))
        except Exception as exc:  # noqa: BLE001 -- a worker must never die silently
            job.end(RunStatus.FAILED, engine.failure_text(exc))

    def cancel(self, run_id: str) -> bool:
        """Ask the run to stop after the metric it is computing; False if it is not running here."""
        with self._lock:
            job = self._jobs.get(run_id)
        if job is None or not job.alive():
            return False
        job.cancel.set()
        return True

    def snapshot(self, run_id: str) -> Snapshot | None:
        """The live (or last) progress of the run's worker in this process; None if it had none."""
        with self._lock:
            job = self._jobs.get(run_id)
        return job.snapshot() if job is not None else None

    def is_running(self, run_id: str) -> bool:
        with self._lock:
            job = self._jobs.get(run_id)
        return job is not None and job.alive()

    def running(self) -> list[str]:
        """Run ids whose worker is alive."""
        with self._lock:
            return [run_id for run_id, job in self._jobs.items() if job.alive()]

    def wait(self, run_id: str, timeout: float | None = None) -> Snapshot | None:
        """Block until the run's worker ends (or `timeout` passes); its snapshot then."""
        with self._lock:
            job = self._jobs.get(run_id)
        if job is None:
            return None
        if job.thread is not None:
            job.thread.join(timeout)
        return job.snapshot()
