"""A big OTLP JSON Lines file read in parts, a process a part.

Reading a trace is Python work per span (decode a line, keep the attributes an output needs, assemble the trace):
one core reads about 80 MB/s, so a 1 GB export takes 13 s (bench/traces.py). The lines are independent, so the file
is cut at line starts into parts, one per core; each part is read by its own process (`main`), the first by the
caller's. A part groups its spans by trace and assembles each trace from its own spans; but a trace's spans may sit
on lines of different parts, so the parts then tell their trace ids, and a trace seen in more than one part is
assembled again by the caller from all its spans in file order (a part's attempt at it is dropped). The outcome is
the sequential read's, exactly: the same traces and problems in the same order, with the file's line numbers (tests/
loaders/test_trace_parts.py).

Parts talk msgpack (msgspec) over the part process's stdin and stdout: the records are dataclasses msgspec encodes
and decodes as they are, six times as fast as pickle. The file is hashed whole, in order, by a thread of the caller's
(hashlib lets the other threads run meanwhile). A part process that fails (it cannot start, dies, or sends what is no
reply) costs only time: its part is read again in the caller's process.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import gc
import os
import struct
import subprocess
import sys
import threading
from dataclasses import dataclass, replace
from itertools import accumulate
from pathlib import Path

import msgspec

from evaluators import threads
from evaluators.loaders.formats import Source
from evaluators.loaders.problems import Problems
from evaluators.loaders.traces import otlp
from evaluators.loaders.traces.assemble import Trace, assemble
from evaluators.loaders.traces.spans import Span, wanted
from evaluators.records import Problem

PART_BYTES = 64 * 2**20  # the least a part holds: a process costs ~0.3 s to start, a core reads ~80 MB/s
MAX_PARTS = 8
_ROOT = str(Path(__file__).resolve().parents[3])  # what a part process imports `evaluators` from
_MAIN = "from evaluators.loaders.traces import parts; parts.main()"


@dataclass(frozen=True)
class Job:
    """What a part reads and how: a byte range of a file, starting at a line's start."""

    path: str
    file: str  # the name problems give
    start: int
    end: int
    extra: frozenset[str]  # the method and question-id attributes, kept besides the conventions' names
    method_attribute: str
    question_id_attribute: str | None


def cuts(src: Source) -> list[int] | None:
    """Where the parts start (and the last ends), or None where the file is read in one piece: it is an upload in
    memory, smaller than two parts, RAGScope has one core (threads.workers(): RAGSCOPE_WORKERS, else the usable
    cores), or it is one pretty-printed object."""
    parts = min(threads.workers(), MAX_PARTS, src.size // PART_BYTES)
    if src.path is None or parts < 2 or _one_object(src.head_bytes(1 << 16)):
        return None
    at = [0]
    with src.path.open("rb") as stream:
        for k in range(1, parts):
            stream.seek(max(src.size * k // parts, at[-1]))
            stream.readline()  # on to the next line's start
            if at[-1] < stream.tell() < src.size:
                at.append(stream.tell())
    return at + [src.size] if len(at) > 1 else None


def _one_object(head: bytes) -> bool:
    """Whether the file's first non-blank line opens a pretty-printed object (read whole, never in parts)."""
    line = next((ln.strip() for ln in head.split(b"\n") if ln.strip()), b"{")
    return line in (b"{", b"[")


def traces(src: Source, at: list[int], digest, problems: Problems, extra: frozenset[str], method_attribute: str,
           question_id_attribute: str | None) -> list[Trace | Problem]:
    """Every trace of the file in `at`'s parts, assembled (or its problem), in the order of its first span in the
    file; reading problems go to `problems` in line order. The whole file is hashed into `digest`."""
    hashed = _in_thread(lambda: [digest.update(block) for block in src.blocks(0, src.size, 1 << 22)])
    jobs = [Job(str(src.path), src.file, start, end, extra, method_attribute, question_id_attribute)
            for start, end in zip(at, at[1:])]
    others = [_Remote(job) for job in jobs[1:]]  # started first: they read while this process reads the first part
    try:
        parts = [_Part(jobs[0])] + [part.read() for part in others]
        seen: dict[str, int] = {}
        for part in parts:
            for trace_id in part.told.trace_ids:
                seen[trace_id] = seen.get(trace_id, 0) + 1
        shared = frozenset(t for t, n in seen.items() if n > 1)
        for part in parts:
            part.ask(shared)
        shared_spans = [part.shared_spans() for part in parts]
        hashed.result()
    finally:
        for part in others:
            part.stop()
    out, done = [], set()
    told = [part.told for part in parts]
    offsets = list(accumulate((t.lines for t in told), initial=0))
    for offset, spans_of in zip(offsets, shared_spans):
        for span in (span for spans in spans_of.values() for span in spans):
            span.line += offset
    for part, offset in zip(told, offsets):
        problems.items.extend(_moved(p, offset) for p in part.problems)
        for trace_id, result in zip(part.trace_ids, part.results()):
            if trace_id not in shared:
                out.append(_moved(result, offset))
            elif trace_id not in done:
                done.add(trace_id)
                spans = [span for of in shared_spans for span in of.get(trace_id, ())]
                out.append(assemble(src.file, trace_id, spans, method_attribute, question_id_attribute))
    return out


def _moved(result: Trace | Problem, offset: int) -> Trace | Problem:
    """A result of a part, its line number counted from the file's start."""
    if isinstance(result, Trace):
        result.line += offset
        return result
    return result if result.row is None or not offset else replace(result, row=result.row + offset)


@dataclass
class _Read:
    """What a part tells once read: its line count, its traces (ids in the order of their first span, each
    assembled from the part's own spans of it, or its problem) and its reading problems; line numbers count from
    the part's start. A trace that other parts have spans of too is assembled again from all of them."""

    lines: int
    trace_ids: list[str]
    traces: list[Trace]  # the traces that are answers, in order
    failed: list[tuple[int, Problem]]  # the others: (place among all, why)
    problems: list[Problem]

    def results(self) -> list[Trace | Problem]:
        """Every trace assembled or its problem, in order."""
        out = list(self.traces)
        for at, problem in self.failed:
            out.insert(at, problem)
        return out


class _Part:
    """A part read in this process."""

    def __init__(self, job: Job):
        problems = Problems(job.file)
        counted = _Counted(Source(job.path, job.file).lines(None, start=job.start, end=job.end))
        self.by_trace: dict[str, list[Span]] = {}
        for span in otlp.spans(counted, problems, wanted(job.extra), first=job.start == 0):
            self.by_trace.setdefault(span.trace_id, []).append(span)
        self.told = _Read(counted.n, list(self.by_trace), [], [], problems.items)
        for trace_id, spans in self.by_trace.items():  # before the shared traces are known: few will be
            result = assemble(job.file, trace_id, spans, job.method_attribute, job.question_id_attribute)
            if isinstance(result, Problem):
                self.told.failed.append((len(self.told.traces) + len(self.told.failed), result))
            else:
                self.told.traces.append(result)

    def read(self) -> _Part:
        return self

    def ask(self, shared: frozenset[str]) -> None:
        self.shared = shared

    def shared_spans(self) -> dict[str, list[Span]]:
        spans = {t: self.by_trace[t] for t in self.told.trace_ids if t in self.shared}
        self.by_trace = {}
        return spans


class _Remote:
    """A part read by a process of its own (`main`). Where that process fails, the part is read in this one."""

    def __init__(self, job: Job):
        self.job = job
        env = os.environ | {"PYTHONPATH": os.pathsep.join(filter(None, (_ROOT, os.environ.get("PYTHONPATH"))))}
        try:
            self.process = subprocess.Popen([sys.executable, "-c", _MAIN], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, env=env)
        except OSError:
            self.process = None
            return
        with contextlib.suppress(ImportError, AttributeError, OSError):  # Linux: messages of hundreds of MB in
            import fcntl  # fewer, larger writes

            fcntl.fcntl(self.process.stdout.fileno(), fcntl.F_SETPIPE_SZ, 1 << 20)
        with contextlib.suppress(OSError):  # a process that ended at once sends nothing: read() reads here then
            _send(self.process.stdin, job)
        # what the part tells is taken from the pipe as it comes, while this process reads its own part
        self.message = _in_thread(lambda: _message(self.process.stdout))

    def read(self) -> _Remote | _Part:
        try:
            self.told = msgspec.msgpack.decode(self.message.result(), type=_Read)
            if len(self.told.traces) + len(self.told.failed) != len(self.told.trace_ids):
                raise ValueError("a part process's reply does not hold its traces")
        except Exception:  # noqa: BLE001 - whatever went wrong in the process, its part is read here
            return self._here()
        return self

    def ask(self, shared: frozenset[str]) -> None:
        self.shared = shared
        try:
            _send(self.process.stdin, shared)
            self.process.stdin.close()
        except (OSError, ValueError):
            pass  # then no reply comes, and the part is read here

    def shared_spans(self) -> dict[str, list[Span]]:
        try:
            spans = _receive(self.process.stdout, dict[str, list[Span]])
            if set(spans) != self.shared.intersection(self.told.trace_ids):
                raise ValueError("a part process sent the spans of other traces")
        except Exception:  # noqa: BLE001
            part = self._here()
            part.ask(self.shared)
            return part.shared_spans()
        self.process.wait()
        return spans

    def _here(self) -> _Part:
        """The part read in this process (after its own failed: stopped first)."""
        self.stop()
        return _Part(self.job)

    def stop(self) -> None:
        """The process ended, if it has not (a failure here or there)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def _in_thread(work) -> concurrent.futures.Future:
    """work() in a thread of its own: its result, or the exception it raised, when asked for."""
    future = concurrent.futures.Future()

    def run():
        try:
            future.set_result(work())
        except BaseException as err:  # noqa: BLE001 - raised where the result is asked for
            future.set_exception(err)

    threading.Thread(target=run, daemon=True).start()
    return future


def _send(stream, message) -> None:
    data = msgspec.msgpack.encode(message)
    stream.write(struct.pack("<Q", len(data)))
    stream.write(data)
    stream.flush()


def _receive(stream, kind):
    return msgspec.msgpack.decode(_message(stream), type=kind)


def _message(stream) -> bytes:
    return _exactly(stream, struct.unpack("<Q", _exactly(stream, 8))[0])


def _exactly(stream, n: int) -> bytes:
    data = stream.read(n)
    if len(data) != n:
        raise EOFError(f"the part process ended {n - len(data)} bytes short")
    return data


class _Counted:
    """Lines passed through, counted (a part's line count sets the next parts' line numbers)."""

    def __init__(self, lines):
        self.lines, self.n = lines, 0

    def __iter__(self):
        for line in self.lines:
            self.n += 1
            yield line


def main() -> None:
    """A part process: read the job's part and assemble its traces, send them with its line count, wait for the
    ids of the traces other parts have spans of too, send those traces' spans."""
    gc.disable()  # as loaders.load reads (formats.gc_paused): nothing read is cyclic, and the process ends after
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    part = _Part(_receive(stdin, Job))
    _send(stdout, part.told)
    part.ask(_receive(stdin, frozenset[str]))
    _send(stdout, part.shared_spans())
    os._exit(0)  # all is sent: no teardown of a heap of a part's spans (the caller waits for the exit)
