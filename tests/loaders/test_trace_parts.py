"""A big OTLP file read in parts, a process a part (loaders/traces/parts.py): the outcome is the one-piece read's,
exactly (outputs, their lines, notes, content hash; problems, their order and line numbers), traces whose spans sit
in several parts included, and a part process that fails costs only time."""
import json
import random
import sys

import pytest

from evaluators import loaders
from evaluators.loaders.formats import Source
from evaluators.loaders.traces import parts
from evaluators.records import LoadError
from tests.helpers.otlp import T0, rag_trace, request

QUESTIONS = [f"Question number {n} about the Cornish coast?" for n in range(40)]


def golden(tmp_path):
    path = tmp_path / "golden.jsonl"
    path.write_text("".join(json.dumps({"question_id": f"q{n}", "question": q, "reference": "r"}) + "\n"
                            for n, q in enumerate(QUESTIONS)), encoding="utf-8")
    return loaders.load(path, role="golden")


def spread_traces(path, bad_lines=()):
    """80 traces of two services, a span a line, the lines shuffled: most traces have spans far apart in the file,
    so cut in parts, many have spans in two or three parts. One trace repeats a question (the later one is kept), one
    asks what the golden set does not. bad_lines: (line number, text) put in at those lines."""
    rng = random.Random(37)
    lines = []
    for n in range(80):
        service = ("svc_a", "svc_b")[n % 2]
        question = QUESTIONS[n // 2] if n < 78 else ("Who painted the Mona Lisa?" if n == 78 else QUESTIONS[0])
        spans = rag_trace(f"{n:032x}", question, f"Answer {n}.", start=T0 + n * 10**9,
                          docs=[(f"doc-{n}-{k}", f"Chunk {k} of trace {n}.", k / 4) for k in range(3)])
        lines += [json.dumps(request(service, [s])) for s in spans]
    rng.shuffle(lines)
    for at, text in sorted(bad_lines):
        lines.insert(at - 1, text)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def read(path, gold, workers, monkeypatch):
    """The file read with `workers` cores to spread over (1: in one piece)."""
    monkeypatch.setenv("RAGSCOPE_WORKERS", str(workers))
    monkeypatch.setattr(parts, "PART_BYTES", 1)  # these files are small: parts of any size
    try:
        return loaders.load(path, role="outputs", golden=gold)
    except LoadError as err:
        return err.problems


def test_a_file_read_in_three_parts_gives_exactly_the_one_piece_read(tmp_path, monkeypatch):
    gold, path = golden(tmp_path), spread_traces(tmp_path / "traces.jsonl")
    monkeypatch.setenv("RAGSCOPE_WORKERS", "3")
    monkeypatch.setattr(parts, "PART_BYTES", 1)
    at = parts.cuts(Source(path))
    data = path.read_bytes()
    assert len(at) == 4 and all(data[k - 1:k] == b"\n" for k in at[1:-1])  # three parts, each from a line's start
    in_part = [{json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
                for line in data[a:b].decode().splitlines()} for a, b in zip(at, at[1:])]
    assert in_part[0] & in_part[1] and in_part[1] & in_part[2]  # traces with spans in two parts
    whole, in_parts = read(path, gold, 1, monkeypatch), read(path, gold, 3, monkeypatch)
    assert len(whole.outputs) == 78  # 80 traces: one unmatched, one an earlier answer of a question answered again
    assert (in_parts.outputs, in_parts.output_rows, in_parts.notes, in_parts.content_hash) == (
        whole.outputs, whole.output_rows, whole.notes, whole.content_hash)


def test_problems_in_later_parts_keep_their_order_and_the_file_line_numbers(tmp_path, monkeypatch):
    gold = golden(tmp_path)
    path = spread_traces(tmp_path / "traces.jsonl", bad_lines=[(200, "{not json"), (230, "[1, 2]")])
    lines = path.read_text().splitlines()
    root = next(k for k in range(150, len(lines)) if '"output.value"' in lines[k])
    lines[root] = lines[root].replace('"output.value"', '"output.other"')  # a root span without its answer
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    whole, in_parts = read(path, gold, 1, monkeypatch), read(path, gold, 3, monkeypatch)
    assert in_parts == whole
    assert [p.row for p in whole] == [200, 230, root + 1]
    assert "not valid JSON" in whole[0].message and "no answer" in whole[2].message


DIES_AT_ONCE = "import sys; sys.exit(3)"
SENDS_NONSENSE = "import sys; sys.stdout.buffer.write(b'not a reply at all'); sys.exit(0)"
DIES_MIDWAY = ("import sys; from evaluators.loaders.traces import parts as p; "  # after telling its traces
               "part = p._Part(p._receive(sys.stdin.buffer, p.Job)); p._send(sys.stdout.buffer, part.told); sys.exit(3)")


@pytest.mark.parametrize("program", [None, DIES_AT_ONCE, SENDS_NONSENSE, DIES_MIDWAY])
def test_a_part_process_that_cannot_start_or_fails_costs_only_time(tmp_path, monkeypatch, program):
    gold, path = golden(tmp_path), spread_traces(tmp_path / "traces.jsonl")
    whole = read(path, gold, 1, monkeypatch)
    if program is None:  # no process can start
        monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python-here"))
    else:
        monkeypatch.setattr(parts, "_MAIN", program)
    again = read(path, gold, 3, monkeypatch)  # the failed parts read in this process instead
    assert (again.outputs, again.output_rows, again.notes, again.content_hash) == (
        whole.outputs, whole.output_rows, whole.notes, whole.content_hash)


@pytest.mark.parametrize("head", [b"{\n", b"\n\n[\n"])
def test_a_pretty_printed_file_or_one_in_memory_is_never_cut(tmp_path, monkeypatch, head):
    monkeypatch.setenv("RAGSCOPE_WORKERS", "3")
    monkeypatch.setattr(parts, "PART_BYTES", 1)
    path = tmp_path / "pretty.json"
    path.write_bytes(head + b'  "resourceSpans": []\n' * 50 + b"}\n")
    assert parts.cuts(Source(path)) is None
    lines = spread_traces(tmp_path / "t.jsonl").read_bytes()
    assert parts.cuts(Source(lines, name="t.jsonl")) is None
    assert parts.cuts(Source(tmp_path / "t.jsonl")) is not None


def test_a_part_process_reads_its_part_as_this_process_would(tmp_path):
    path = spread_traces(tmp_path / "traces.jsonl", bad_lines=[(230, "{not json")])
    data = path.read_bytes()
    start = data.index(b"\n", len(data) // 2) + 1
    job = parts.Job(str(path), "traces.jsonl", start, len(data), frozenset({"service.name"}), "service.name", None)
    remote, here = parts._Remote(job), parts._Part(job)
    assert remote.read() is remote  # the process answered (a failed one is replaced by a part read here)
    assert remote.told == here.told and remote.told.traces
    assert remote.told.problems[0].row == 230 - data[:start].count(b"\n")  # counted from the part's start
    shared = frozenset(here.told.trace_ids[::3])
    remote.ask(shared)
    here.ask(shared)
    spans = remote.shared_spans()
    assert remote.process.returncode == 0  # it replied and ended (a failed one is killed)
    assert spans == here.shared_spans() and set(spans) == shared
