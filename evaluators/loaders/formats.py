"""A file's bytes -> records: reading the source, the format (by extension, else sniffed), the
text encoding, and the four parsers (CSV, JSON, JSON Lines, Parquet), each giving the column
names and the records as (row number, dict), before any column is given a meaning.

Structural failures (unreadable, empty, too big, undecodable, invalid JSON) stop at once; a record
that cannot be read (a broken line, a short row) is reported and the others are still read.
"""
from __future__ import annotations

import codecs
import csv
import gc
import hashlib
import io
import itertools
import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluators.loaders import inspectorraget
from evaluators.loaders import jsontext
from evaluators.loaders.problems import Problems, kind
from evaluators.records import LoadError, Problem

FORMATS = ("csv", "json", "jsonl", "parquet")

_EXTENSIONS = {".csv": "csv", ".tsv": "csv", ".json": "json", ".jsonl": "jsonl",
               ".ndjson": "jsonl", ".parquet": "parquet", ".pq": "parquet"}
_WRAPPER_KEYS = ("results", "data", "samples", "examples")
_CSV_DELIMITERS = (",", ";", "\t", "|")
# Fits a C long on every platform; cells over MAX_CELL_CHARS get our own message instead of
# the csv module's "field larger than field limit".
_CSV_FIELD_LIMIT = 2**31 - 1
_HEAD_BYTES = 4096
# What a run holds in memory for one input file, per row and per byte of text, from the file to the store
# (load, save_dataset, create_run; bench/results/load_memory.md). A file that would take more than the budget is
# refused before its rows are read, with a message saying how to split it, rather than filling the memory.
ROW_MEMORY, TEXT_MEMORY = 2_500, 6
MEMORY_ENV = "RAGSCOPE_INPUT_MEMORY_MB"  # the budget in MB; default: half of this machine's memory
_PARQUET_BATCH = 2_000  # rows turned into records at a time: Arrow's copy of the file is never all in memory


@dataclass(frozen=True)
class Records:
    """A file parsed into records, before any column is given a meaning (for readers of other
    tables than golden sets and outputs, such as human labels: `evaluators.store.ratings`)."""

    file: str  # file name shown in messages (basename)
    format: str  # one of FORMATS, as detected
    content_hash: str  # sha256 of the raw bytes
    keys: list[str]  # every column / key seen, in first-seen order
    rows: list[tuple[int, dict]]  # (row number as messages give it, record)
    problems: list[Problem]  # records that could not be read (a broken line, a short row); not in rows


def read_records(source, *, name=None, encoding="utf-8") -> Records:
    """Any CSV / JSON / JSONL / Parquet file (a path, or bytes with `name`) as records, with the
    same format detection, parsing and messages as `load`; LoadError when no record can be read
    (unreadable, empty, undecodable, invalid JSON). InspectorRAGet's experiment JSON comes back as
    its loader records (one per model result)."""
    src = Source(source, name)
    problems = Problems(src.file)
    with gc_paused():
        fmt, _, keys, records = parse(src, None, encoding, problems)
        records = list(records)
    return Records(src.file, fmt, src.sha256().hexdigest(), [str(k) for k in keys], records,
                   list(problems.items))


def column_names(source, *, name=None, encoding="utf-8") -> list[str]:
    """The file's own column names (every key seen, in first-seen order), read as `load` reads
    the file: the names a column mapping can choose from. LoadError, with the problems `load`
    would give, when no record can be read."""
    return read_records(source, name=name, encoding=encoding).keys


def detect_format(name: str, head: bytes) -> str:
    """The format by file extension, else by sniffing the first bytes; LoadError if unknown."""
    problems = Problems(Path(name).name)
    return _detect(name, head, problems)


# --------------------------------------------------------------------------- source


@contextmanager
def gc_paused():
    """Building a million small records triggers repeated full collections that walk all of
    them (more than half the load time); none of them is cyclic, so the collector can wait."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Source:
    """A file to read: the bytes of an upload, or a path. A path is read when needed: a Parquet file a batch of
    rows at a time (its bytes are never all in memory at once), the other formats whole."""

    def __init__(self, source, name: str | None = None):
        if isinstance(source, (bytes, bytearray, memoryview)):
            if not name:
                raise ValueError("load(bytes) needs name=, the uploaded file's name")
            self.data, self.path, self.file = bytes(source), None, Path(name).name
            self.size = len(self.data)
        else:
            self.data, self.path = None, Path(source)
            self.file = Path(name).name if name else self.path.name
            self.size = self._disk(lambda: self.path.stat().st_size)
        self._digest = None

    def head(self) -> bytes:
        if self.path is None:
            return self.data[:_HEAD_BYTES]
        return self._disk(lambda: _read_head(self.path))

    def head_bytes(self, n: int) -> bytes:
        """The first n bytes (format detection that needs more than `head`)."""
        if self.path is None:
            return self.data[:n]
        return self._disk(lambda: _read_head(self.path, n))

    def blocks(self, start: int, limit: int, block: int = 1 << 20) -> Iterator[bytes]:
        """The bytes from `start` on, a block at a time, `limit` bytes at most (detection that looks past the head)."""
        if self.path is None:
            for at in range(start, min(self.size, start + limit), block):
                yield self.data[at:min(at + block, start + limit)]
            return
        with self._disk(lambda: self.path.open("rb")) as stream:
            stream.seek(start)
            while limit > 0 and (chunk := stream.read(min(block, limit))):
                limit -= len(chunk)
                yield chunk

    def lines(self, digest, block: int = 1 << 22, start: int = 0, end: int | None = None) -> Iterator[bytes]:
        """The bytes a line at a time (each with its newline, as a file gives them), hashed into `digest` (None: not
        hashed) as read: a file is never all in memory. start/end: a part of a file on disk, from a line's start to
        the next part's."""
        if self.path is None:
            if digest is not None:
                digest.update(self.data)
            yield from io.BytesIO(self.data)
            return
        left = (self.size if end is None else end) - start
        with self._disk(lambda: self.path.open("rb", buffering=block)) as stream:
            stream.seek(start)
            for line in stream:  # split in C from a block-sized buffer: 5x as fast as splitting blocks here
                if digest is not None:
                    digest.update(line)
                yield line
                left -= len(line)
                if left <= 0:
                    return

    def read(self) -> bytes:
        """Every byte (hashed on the way, so the hash needs no second read)."""
        data = self.data if self.path is None else self._disk(self.path.read_bytes)
        self._digest = hashlib.sha256(data)
        return data

    def sha256(self):
        """The file's sha256 (a hashlib object: callers add what else changes the meaning)."""
        if self._digest is None and self.path is None:
            self._digest = hashlib.sha256(self.data)
        elif self._digest is None:  # a Parquet file on disk: hashed from disk, a block at a time
            self._digest = self._disk(lambda: _file_sha256(self.path))
        return self._digest.copy()

    def arrow(self):
        """What pyarrow reads: the path, or the bytes."""
        import pyarrow as pa

        return str(self.path) if self.path is not None else pa.BufferReader(self.data)

    def _disk(self, read):
        try:
            return read()
        except OSError as err:
            raise LoadError([Problem(self.file, None, None, f"cannot read the file: {err.strerror or err}")])


def _read_head(path: Path, n: int = _HEAD_BYTES) -> bytes:
    with path.open("rb") as f:
        return f.read(n)


def _file_sha256(path: Path):
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256")


def parse(src: Source, fmt: str | None, encoding: str, problems: Problems):
    """(format, codec name, column names, records) of a file, the records (row number, record dict) in a list,
    or for Parquet an iterator that reads them a batch at a time; `fmt` None detects the format."""
    codec = _check_options(problems, fmt, encoding)
    head = src.head()
    if src.size <= len(head):  # else the whole file is checked once read (Parquet is never blank)
        _check_not_empty(head, problems)
    fmt = fmt or _detect(src.file, head, problems)
    if fmt == "parquet":
        keys, records = _parse_parquet(src, problems)
    else:
        check_fits(None, src.size, problems)
        raw = src.read()
        _check_not_empty(raw, problems)
        text = _decode(raw, codec, fmt, problems)
        del raw  # the text is all that is needed now
        _reject_nul(text, fmt, problems)
        if fmt == "csv":
            keys, records = _parse_csv(text, problems)
        elif fmt == "jsonl":
            keys, records = _parse_jsonl(text, problems)
        else:
            fmt, keys, records = _parse_json(text, problems)
    if not records:  # (an iterator is never empty here: _parse_parquet has checked the row count)
        problems.raise_if_any()  # every record was broken: those problems say it all
        problems.stop(None, None, _no_records_message(fmt))
    return fmt, codec, keys, records


def _check_options(problems: Problems, fmt, encoding) -> str:
    """Problems with the format options themselves; returns the normalised codec name."""
    if fmt is not None and fmt not in FORMATS:
        problems.stop(None, None, f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    try:
        return codecs.lookup(encoding).name
    except LookupError:
        problems.stop(None, None, f"unknown encoding {encoding!r}; use a Python codec name "
                      "such as 'utf-8', 'cp1252' or 'latin-1'")


def _check_not_empty(raw: bytes, problems: Problems) -> None:
    if not raw.strip(b" \t\r\n\x0b\x0c\xef\xbb\xbf"):
        problems.stop(None, None, "the file is empty; export the data again and upload that file")


def check_fits(rows: int | None, size: int, problems: Problems, advice: str | None = None) -> None:
    """Refuses, before its rows are read, a file whose rows (Parquet's metadata; None: unknown) and size (Parquet:
    as read; else on disk) would take more memory in a run than the budget. `advice`: what to do instead, where
    the file's format has a better way than splitting it by question."""
    budget = memory_budget()
    origin = MEMORY_ENV if os.environ.get(MEMORY_ENV) else f"half this machine's memory; {MEMORY_ENV} sets it"
    need = (rows or 0) * ROW_MEMORY + size * TEXT_MEMORY
    if need <= budget:
        return
    if rows:
        held = f"its {rows:,} rows and {_size(size)} of data when read"
        cost = f"{ROW_MEMORY:,} bytes a row and {TEXT_MEMORY} per byte of data"
        part = f"{_round_down(budget * rows // need):,} rows"
    else:
        held, cost = f"its {_size(size)}", f"{TEXT_MEMORY} bytes per byte of the file"
        part = _size(budget // TEXT_MEMORY)
    advice = advice or (f"Split it by question into files of at most {part} each (all methods of a question in one "
                        "file, so each still compares the methods) and evaluate each as its own run with the whole "
                        "golden set")
    problems.stop(None, None, f"the file is too big for this machine: {held} would take about {_size(need)} of "
                  f"memory in a run ({cost}), over the bound of {_size(budget)} ({origin}). {advice}")


def memory_budget() -> int:
    """The memory one input file may take in a run: $RAGSCOPE_INPUT_MEMORY_MB, else half of this machine's (or
    of its container's, when that is less)."""
    if setting := os.environ.get(MEMORY_ENV):
        try:
            return int(float(setting) * 2**20)
        except ValueError:
            raise ValueError(f"{MEMORY_ENV} must be a number of MB, not {setting!r}") from None
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows)
        total = 8 * 2**30
    try:
        total = min(total, int(Path("/sys/fs/cgroup/memory.max").read_text()))
    except (OSError, ValueError):  # no container limit ("max"), or not Linux
        pass
    return total // 2


def _size(n: int) -> str:
    for unit, scale in (("GB", 2**30), ("MB", 2**20)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n:,} bytes"


def _round_down(n: int) -> int:
    return n // 1000 * 1000 if n >= 10_000 else max(n, 1)


def _no_records_message(fmt: str) -> str:
    if fmt == "csv":
        return "the file has a header row but no data rows; add at least one row under the header"
    return "the file holds no records; it needs at least one question"


# --------------------------------------------------------------------------- format detection


def _detect(name: str, head: bytes, problems: Problems) -> str:
    suffix = Path(name).suffix.lower()
    fmt = _EXTENSIONS.get(suffix) or _sniff_format(head)
    if fmt is None:
        problems.stop(None, None, _unknown_format_message(suffix, head))
    return fmt


def _sniff_format(head: bytes) -> str | None:
    if head.startswith(b"PAR1"):
        return "parquet"
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"["):
        return "json"
    if text.startswith(b"{"):
        first, _, rest = text.partition(b"\n")
        return "jsonl" if rest.lstrip().startswith(b"{") and _is_json(first) else "json"
    first_line = text.split(b"\n", 1)[0]
    if b"\0" not in first_line and any(d.encode() in first_line for d in _CSV_DELIMITERS):
        return "csv"
    return None


def _is_json(data: bytes | str) -> bool:
    try:
        jsontext.loads(data if isinstance(data, str) else data.decode("utf-8", "replace"))
    except jsontext.JsonRefused:
        return True  # JSON, refused where it is read (too deep, a key twice)
    except ValueError:
        return False
    return True


def _unknown_format_message(suffix: str, head: bytes) -> str:
    if suffix in (".xlsx", ".xls") or head.startswith(b"PK\x03\x04"):
        return ("this looks like an Excel workbook, which RAGScope does not read; "
                "save it as 'CSV UTF-8' and upload the CSV")
    what = f"unknown file format {suffix!r}" if suffix else "unknown file format"
    return (f"{what}: RAGScope reads .csv, .json, .jsonl and .parquet files; give the file "
            "its real extension or choose the format explicitly")


# --------------------------------------------------------------------------- text encoding


def _decode(raw: bytes, codec: str, fmt: str, problems: Problems) -> str:
    try:
        text = raw.decode("utf-8-sig" if codec == "utf-8" else codec)
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        problems.stop(line if fmt == "jsonl" else None, None,
                      _encoding_message(raw, err.start, line, codec))
    return text.removeprefix("\ufeff")


def _encoding_message(raw: bytes, position: int, line: int, codec: str) -> str:
    guess = _guess_encoding(raw, position)
    label = "UTF-8" if codec == "utf-8" else codec
    message = (f"the file is not valid {label} text: byte 0x{raw[position]:02x} on line {line} "
               "cannot be read.")
    # Every way of loading a file has an encoding option: `run` and `labels import` --encoding, the Data screen
    # an Encoding choice beside each upload (it takes any codec name), load() and read_records() encoding=.
    if guess and guess != codec:
        return (f"{message} It looks like {guess}: re-save the file as UTF-8 (in Excel: Save As > CSV UTF-8), "
                f"or read it as {guess} (command line: --encoding {guess}; Data screen: set Encoding to {guess}).")
    return (f"{message} Re-save the file as UTF-8, or read it in the encoding it was saved in (command line: "
            "--encoding NAME, for example --encoding cp1252; Data screen: the Encoding option).")


def _guess_encoding(raw: bytes, position: int) -> str | None:
    from charset_normalizer import from_bytes  # only needed when decoding failed

    # The start of the file plus the bytes around the failure: enough to judge, cheap on 50 MB.
    if position < 96 * 1024:
        sample = raw[: position + 32 * 1024]
    else:
        sample = raw[: 64 * 1024] + raw[position - 32 * 1024: position + 32 * 1024]
    matches = list(from_bytes(sample))
    if not matches:
        return None
    # Short samples fit several code pages about equally; among those, name cp1252 (what
    # Western-locale Excel saves) rather than an exotic neighbour such as cp1257.
    close = [m for m in matches if m.chaos <= matches[0].chaos + 0.1]
    if any("cp1252" in m.could_be_from_charset for m in close):
        return "cp1252"
    return codecs.lookup(matches[0].encoding).name  # Python's own spelling (utf-16, not utf_16), as the app offers it


def _reject_nul(text: str, fmt: str, problems: Problems) -> None:
    position = text.find("\x00")
    if position >= 0:
        line = text.count("\n", 0, position) + 1
        problems.stop(line if fmt == "jsonl" else None, None,
                      f"line {line} contains a NUL byte (\\x00), so this is not plain text: the "
                      "file may be binary or saved as UTF-16; re-save it as UTF-8 text")


# --------------------------------------------------------------------------- the parsers


def _parse_csv(text: str, problems: Problems):
    csv.field_size_limit(max(csv.field_size_limit(), _CSV_FIELD_LIMIT))
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=_csv_delimiter(text),
                        strict=True)
    records: list[tuple[int, dict]] = []
    row = 0
    try:
        header = next((cells for cells in reader if any(c.strip() for c in cells)), [])
        header = [cell.strip() for cell in header]
        _check_header(header, problems)
        for row, cells in enumerate(reader, 1):
            if len(cells) == len(header) and any(cells):
                records.append((row, dict(zip(header, cells))))
            elif any(cell.strip() for cell in cells):  # blank lines and ",,," rows are skipped
                problems.add(row, None, f"this row has {len(cells)} fields but the header has "
                             f"{len(header)}; a value containing the separator must be quoted")
    except csv.Error as err:
        problems.stop(row + 1, None, f"the CSV is malformed near line {reader.line_num} ({err}); "
                      "check for an unclosed or stray double quote")
    return header, records


def _csv_delimiter(text: str) -> str:
    """Comma unless the header line has none and another separator (Excel's ';', tab) instead."""
    header_line = text.lstrip("\r\n").split("\n", 1)[0]
    counts = {d: header_line.count(d) for d in _CSV_DELIMITERS}
    if counts[","]:
        return ","
    best = max(counts, key=counts.get)
    return best if counts[best] else ","


def _check_header(header: list[str], problems: Problems) -> None:
    seen: dict[str, int] = {}
    for position, column in enumerate(header, 1):
        if column in seen and column:  # unnamed columns (a trailing comma) are never read
            problems.add(None, column, f"column '{column}' appears twice in the header "
                         f"(columns {seen[column]} and {position}); rename or delete one")
        seen.setdefault(column, position)


def _parse_json(text: str, problems: Problems):
    try:
        top = jsontext.loads(text)
    except jsontext.JsonRefused as refused:
        problems.stop(*jsontext.place(refused, records_listed=True), refused.message)
    except json.JSONDecodeError as err:
        if err.msg == "Extra data" and _is_json(text.lstrip().split("\n", 1)[0]):
            return ("jsonl", *_parse_jsonl(text, problems))  # JSON Lines saved as .json
        problems.stop(None, None, f"the file is not valid JSON: {err.msg} at line {err.lineno}, "
                      f"column {err.colno}; fix it there (or export the file again)")
    if inspectorraget.is_inspectorraget(top):  # known by its keys, whatever the file's name
        return ("json", *inspectorraget.records(top, problems))
    items = _unwrap(top, problems)
    return ("json", *_records(enumerate(items, 1), problems))


def _unwrap(top: Any, problems: Problems) -> list:
    """The list of records: the top level itself, or the list a wrapper object holds."""
    if isinstance(top, list):
        return top
    if not isinstance(top, dict):
        problems.stop(None, None, f"the top level of the JSON is {kind(top)}; expected a list "
                      "of records, or an object holding one (like {\"results\": [...]})")
    for key in _WRAPPER_KEYS:
        if isinstance(top.get(key), list):
            return top[key]
    if len(top) == 1 and isinstance(next(iter(top.values())), list):
        return next(iter(top.values()))
    problems.stop(None, None, "the top-level JSON object holds no list of records (under "
                  f"{', '.join(_WRAPPER_KEYS)} or a single key); keys found: "
                  f"{', '.join(map(str, top)) or 'none'}. Put the records in a list")


def _parse_jsonl(text: str, problems: Problems):
    items = []
    # split on "\n" only: splitlines() would also break on U+2028 inside JSON strings
    for line_number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            items.append((line_number, jsontext.loads(line)))
        except jsontext.JsonRefused as refused:
            problems.add(line_number, jsontext.place(refused, records_listed=False)[1], refused.message)
        except json.JSONDecodeError as err:
            problems.add(line_number, None, f"this line is not valid JSON: {err.msg} at column "
                         f"{err.colno}; each line must hold one complete JSON object")
    return _records(items, problems)


def _records(items: Iterable[tuple[int, Any]], problems: Problems):
    """Object records with their row numbers, and every key seen, in first-seen order."""
    records = []
    for row, item in items:
        if isinstance(item, dict):
            records.append((row, item))
        else:
            problems.add(row, None, f"this record is {kind(item)}; each record must be an "
                         "object like {\"question\": ..., \"answer\": ...}")
    keys = list(dict.fromkeys(key for _, record in records for key in record))
    return keys, records


def _parse_parquet(src: Source, problems: Problems):
    import pyarrow as pa  # imported here: only Parquet files pay for it
    import pyarrow.parquet as pq

    try:  # pages are read from the file as needed (buffer_size), not a row group at once (pre_buffer)
        parquet = pq.ParquetFile(src.arrow(), buffer_size=1 << 20, pre_buffer=False)
    except (pa.ArrowException, OSError, ValueError) as err:
        problems.stop(None, None, _unreadable_parquet(err))
    meta = parquet.metadata
    if meta.num_rows == 0:
        problems.stop(None, None, _no_records_message("parquet"))
    batches = _parquet_batches(parquet, problems)
    first = next(batches)
    # A text repeated down a column is stored once (dictionary encoding) but read once per row: the size is the
    # larger of the metadata's and the first batch's, as read, times the rows.
    stored = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    check_fits(meta.num_rows, max(stored, first.nbytes * meta.num_rows // max(first.num_rows, 1)), problems)
    return parquet.schema_arrow.names, _parquet_rows(itertools.chain([first], batches))


def parquet_columns(src: Source) -> list[str]:
    """A Parquet file's column names ([] when it is not readable: its reader says why)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(src.arrow()).schema_arrow.names
    except (pa.ArrowException, OSError, ValueError):
        return []


def traces_input(src: Source, fmt: str, digest, problems: Problems, keep):
    """(lines, batches) of a trace file: its lines (hashed into `digest` as read), or for Parquet its record batches
    with only the columns a span needs (`traces.phoenix.columns_needed`)."""
    from evaluators.loaders.traces import phoenix

    if src.size == 0 or not src.head().strip():
        _check_not_empty(src.head(), problems)
    if not src.head().startswith(b"PAR1"):
        return src.lines(digest), None
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(src.arrow(), buffer_size=1 << 20, pre_buffer=False)
    except (pa.ArrowException, OSError, ValueError) as err:
        problems.stop(None, None, _unreadable_parquet(err))
    columns = phoenix.columns_needed(parquet.schema_arrow.names, keep)
    return None, _parquet_batches(parquet, problems, columns)


def _parquet_batches(parquet, problems: Problems, columns=None):
    """The rows in batches, so only one batch is ever both in Arrow and in Python."""
    import pyarrow as pa

    row = 0
    try:
        for batch in parquet.iter_batches(batch_size=_PARQUET_BATCH, columns=columns):
            yield batch
            row += batch.num_rows
    except (pa.ArrowException, OSError, ValueError) as err:
        problems.stop(row + 1, None, _unreadable_parquet(err))


def _parquet_rows(batches) -> Iterator[tuple[int, dict]]:
    row = 0
    for batch in batches:
        for record in batch.to_pylist():
            row += 1
            yield row, record


def _unreadable_parquet(err: Exception) -> str:
    return (f"this is not a readable Parquet file ({err}); export it again as Parquet, or give the file its "
            "real extension")
