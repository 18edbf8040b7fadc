"""A big OTLP JSON Lines file read in parts, a process a part.

Reading a trace is Python work per span (decode a line, keep the attributes an output needs, assemble the trace):
one core reads about 80 MB/s, so a 1 GB export takes 13 s (bench/traces.py). The lines are independent, so the file
is cut at line starts into parts, one per core; each part is read by its own process (`main`), the first by the
caller's. A trace's spans may sit on lines of different parts, so a part first groups its spans by
trace and tells its trace ids; a trace seen in more than one part is assembled by the caller from all its spans in
file order, every other trace by the part that read it. The outcome is the sequential read's, exactly: the same
traces and problems in the same order, with the file's line numbers (tests/loaders/test_trace_parts.py).

Parts talk msgpack (msgspec) over the part process's stdin and stdout: the records are dataclasses msgspec encodes
and decodes as they are, six times as fast as pickle. The file is hashed whole, in order, by a thread of the caller's
(hashlib lets the other threads run meanwhile). A part process that fails (it cannot start, dies, or sends what is no
reply) costs only time: its part is read again in the caller's process.
"""
from __future__ import annotations

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

PART_BYTES = 128 * 2**20  # the least a part holds: a process costs ~0.3 s to start, a core reads ~80 MB/s
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
    hashing = threading.Thread(target=lambda: [digest.update(b) for b in src.blocks(0, src.size, 1 << 22)])
    hashing.start()
    jobs = [Job(str(src.path), src.file, start, end, extra, method_attribute, question_id_attribute)
            for start, end in zip(at, at[1:])]
    others = [_Remote(job) for job in jobs[1:]]  # started first: they read while this process reads the first part
    parts = [_Part(jobs[0])] + [part.ids() for part in others]
    seen: dict[str, int] = {}
    for part in parts:
        for trace_id in part.trace_ids:
            seen[trace_id] = seen.get(trace_id, 0) + 1
    shared = frozenset(t for t, n in seen.items() if n > 1)
    offsets = list(accumulate((part.lines for part in parts), initial=0))
    for part, offset in reversed(list(zip(parts, offsets))):  # this process's own part last: the others work meanwhile
        part.finish(shared, offset)
    replies = [part.collect() for part in parts]
    hashing.join()
    for reply in replies:
        problems.items.extend(reply.problems)
    out, done = [], set()
    for part, reply in zip(parts, replies):
        own = iter(reply.results())
        for trace_id in part.trace_ids:
            if trace_id not in shared:
                out.append(next(own))
            elif trace_id not in done:
                done.add(trace_id)
                spans = [span for r in replies for span in r.shared_spans.get(trace_id, ())]
                out.append(assemble(src.file, trace_id, spans, method_attribute, question_id_attribute))
    return out


@dataclass
class _Reply:
    """What a part gives back once its traces are assembled."""

    problems: list[Problem]  # reading problems, in line order, with the file's line numbers
    traces: list[Trace]  # its own traces (those no other part has spans of) that are answers, in its order
    failed: list[tuple[int, Problem]]  # its own traces that are not: (place among its own, why)
    shared_spans: dict[str, list[Span]]  # the spans of its traces that other parts have spans of too

    def results(self) -> list[Trace | Problem]:
        """Its own traces, each assembled or its problem, in its order."""
        out = list(self.traces)
        for at, problem in self.failed:
            out.insert(at, problem)
        return out


class _Part:
    """A part read in this process."""

    def __init__(self, job: Job):
        self.job, self.problems, self.by_trace = job, Problems(job.file), {}
        counted = _Counted(Source(job.path, job.file).lines(None, start=job.start, end=job.end))
        for span in otlp.spans(counted, self.problems, wanted(job.extra), first=job.start == 0):
            self.by_trace.setdefault(span.trace_id, []).append(span)
        self.lines, self.trace_ids = counted.n, list(self.by_trace)

    def ids(self) -> _Part:
        return self

    def finish(self, shared: frozenset[str], offset: int) -> None:
        self.reply = _finish(self, shared, offset)

    def collect(self) -> _Reply:
        return self.reply


def _finish(part: _Part, shared: frozenset[str], offset: int) -> _Reply:
    """The part's own traces assembled, its shared traces' spans set aside, line numbers made the file's."""
    job = part.job
    problems = [p if p.row is None else replace(p, row=p.row + offset) for p in part.problems.items]
    reply = _Reply(problems, [], [], {})
    for trace_id, spans in part.by_trace.items():
        for span in spans if offset else ():
            span.line += offset
        if trace_id in shared:
            reply.shared_spans[trace_id] = spans
            continue
        result = assemble(job.file, trace_id, spans, job.method_attribute, job.question_id_attribute)
        if isinstance(result, Problem):
            reply.failed.append((len(reply.traces) + len(reply.failed), result))
        else:
            reply.traces.append(result)
    part.by_trace = {}
    return reply


class _Remote:
    """A part read by a process of its own (`main`). Where that process fails, the part is read in this one."""

    def __init__(self, job: Job):
        self.job = job
        env = os.environ | {"PYTHONPATH": os.pathsep.join(filter(None, (_ROOT, os.environ.get("PYTHONPATH"))))}
        try:
            self.process = subprocess.Popen([sys.executable, "-c", _MAIN], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, env=env)
            _send(self.process.stdin, job)
        except OSError:
            self.process = None

    def ids(self) -> _Remote | _Part:
        try:
            self.lines, self.trace_ids = _receive(self.process.stdout, tuple[int, list[str]])
        except Exception:  # noqa: BLE001 - whatever went wrong in the process, its part is read here
            self._stop()
            return _Part(self.job)
        return self

    def finish(self, shared: frozenset[str], offset: int) -> None:
        self.shared, self.offset = shared, offset
        try:
            _send(self.process.stdin, (shared, offset))
            self.process.stdin.close()
        except (OSError, ValueError):
            pass  # then no reply comes, and the part is read here

    def collect(self) -> _Reply:
        try:
            reply = _receive(self.process.stdout, _Reply)
            if len(reply.traces) + len(reply.failed) + len(reply.shared_spans) != len(self.trace_ids):
                raise ValueError("a part process's reply does not hold its traces")
        except Exception:  # noqa: BLE001
            self._stop()
            part = _Part(self.job)
            part.finish(self.shared, self.offset)
            return part.collect()
        self.process.wait()
        return reply

    def _stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()


def _send(stream, message) -> None:
    data = msgspec.msgpack.encode(message)
    stream.write(struct.pack("<Q", len(data)))
    stream.write(data)
    stream.flush()


def _receive(stream, kind):
    size = struct.unpack("<Q", _exactly(stream, 8))[0]
    return msgspec.msgpack.decode(_exactly(stream, size), type=kind)


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
    """A part process: read the job's part, send its line count and trace ids, wait for the shared ids and the
    part's first line number, send the reply."""
    gc.disable()  # as loaders.load reads (formats.gc_paused): nothing read is cyclic, and the process ends after
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    part = _Part(_receive(stdin, Job))
    _send(stdout, (part.lines, part.trace_ids))
    shared, offset = _receive(stdin, tuple[frozenset[str], int])
    _send(stdout, _finish(part, shared, offset))
