"""Streaming load of a Kineto Chrome-trace JSON (`.json` / `.json.gz`) into a columnar Trace.

With msgspec installed, the fast path (trace/fastload.py) decodes the event list in pieces into
typed records, about twice as fast, through the same guarded reader, in two processes for a large
plain file (trace/halves.py); whatever it cannot read exactly (odd field types, a truncated file,
text that is not JSON) is read here instead.
Events are parsed one at a time with ijson's C backend (yajl2_c) and appended to typed arrays,
so memory holds the compact columns, never the whole JSON tree (orjson is faster per byte but
needs the whole document in memory: about 4x the file size as Python objects). The small
top-level keys (`distributedInfo`, `baseTimeNanoseconds`, `deviceProperties`) are read from the
bytes before and after the `traceEvents` list, which the streaming pass keeps aside, so the file
is read once.

A trace is a file people e-mail each other, so every byte passes a JsonGuard before ijson sees it
(bounds in :data:`LIMITS`, reasons in docs/trace.md): nesting deeper than 32, an event over 1 MiB,
a string or number over 1 MiB, or a gzip stream that expands more than :data:`MAX_GZIP_RATIO`
times is refused with the file and the byte offset, in memory that does not grow with the input.

Format drift tolerated: the dialects of trace/dialect.py (a bare array of events, legacy categories,
`ProfilerStep` as an operator), `External id`
and `external id`, `ts`/`dur` as int, float or string, `tid`/`pid` as strings, fields of the wrong
type (trace/columns.py), and a file cut off mid-write (what parsed is kept; a warning says where
it ended). Text that is not JSON (a syntax error before the end) is refused, never read as cut.
Every repair is a warning; all load warnings are caveats: they change how the figures read.
"""

from __future__ import annotations

import dataclasses
import gzip
import re
import zlib
from pathlib import Path
from contextlib import contextmanager
from typing import IO, Any, Callable, Iterator

import ijson
import numpy as np
import orjson

from torchdoctor.errors import TraceFormatError
from torchdoctor.inputs import open_regular
from torchdoctor.jsonguard import JsonBoundError, JsonGuard, JsonLimits
from torchdoctor.trace import fastload, halves
from torchdoctor.trace.columns import ON_DEVICE_TIMELINE, Columns
from torchdoctor.trace.dialect import DialectNotes, normalise, root_prefix
from torchdoctor.trace.events import KIND_BY_CATEGORY, Trace
from torchdoctor.trace.load_warnings import load_warnings

_EXPECTED = "a Kineto Chrome-trace JSON object with a 'traceEvents' list (as torch.profiler writes it)"
_EDGE_BYTES = 1 << 20
_CATEGORIES = {**KIND_BY_CATEGORY, **{k.capitalize(): v for k, v in KIND_BY_CATEGORY.items()}}
#: The bounds every trace is read within (docs/trace.md, "Bounds"): real traces nest 7 deep at
#: most and their largest event is 7 KB, so these leave a wide margin and stop hostile files.
LIMITS = JsonLimits(max_depth=32, max_item_bytes=1 << 20, item_depth=3, max_token_bytes=1 << 20)
#: A bare array of events (torch 1.8 nightlies) has its events one level up: the item bound follows them.
_ARRAY_LIMITS = dataclasses.replace(LIMITS, item_depth=LIMITS.item_depth - 1)
#: Real Kineto traces compress 7x to 35x overall, and up to 44x over a prefix (the test fixtures:
#: a torch 1.9 ResNet-50 trace's first 16 MiB); the stream may expand to this many times the
#: compressed bytes read so far.
MAX_GZIP_RATIO = 50
_MIN_GZIP_ALLOWANCE = 64 << 20  # small files may expand to 64 MiB whatever their ratio (real traces: 44x over 16 MiB)


class _EdgeReader:
    """File wrapper that guards every chunk, and remembers the first MiB and the last two chunks.

    `start` and `stop` bound the bytes read to one half of a large plain trace (trace/halves.py);
    the second half's guard resumes where an event starts (JsonGuard.resume)."""

    def __init__(self, raw: IO[bytes], path: Path, expand_limit: Callable[[], int] | None, root: str, start: int = 0,
                 stop: int | None = None) -> None:
        self.raw, self.path, self.expand_limit = raw, path, expand_limit
        self.head, self.last, self.bytes_read = b"", b"", 0
        self._previous = b""  # the chunk before `last`
        self._cut: EOFError | None = None  # a gzip stream's end, met after text still to hand over
        self.at_end = False
        limits = _ARRAY_LIMITS if root == "array" else LIMITS
        self.guard = JsonGuard.resume(limits, start) if start else JsonGuard(limits)
        self.left = None if stop is None else stop - start  # bytes before `stop`

    def read(self, size: int = -1) -> bytes:
        if self.left is not None:
            size = self.left if size < 0 else min(size, self.left)
        chunk = self.raw.read(size) if self.expand_limit is None else self._read_gzip(size)
        if self.left is not None:
            self.left -= len(chunk)
        self.at_end = not chunk
        if self.expand_limit is not None and self.bytes_read + len(chunk) > (allowed := self.expand_limit()):
            raise TraceFormatError(
                f"{self.path}: the gzip stream expands to more than {allowed:,} bytes "
                f"({MAX_GZIP_RATIO}x the compressed bytes read so far; real traces compress 7x-44x), "
                "refused as a possible gzip bomb; if you trust it, decompress it (gunzip -k) and "
                "pass the .json")
        self.guard.feed(chunk)
        self.bytes_read += len(chunk)
        if len(self.head) < _EDGE_BYTES:
            self.head += chunk[: _EDGE_BYTES - len(self.head)]
        if chunk:
            self._previous, self.last = self.last, chunk
        return chunk

    def _read_gzip(self, size: int) -> bytes:
        """Up to `size` decompressed bytes, gathered one decompressed piece at a time (`read1`):
        GzipFile.read drops the text it decompressed in the call that meets a stream cut short
        (up to a whole read), so a cut .json.gz lost up to 1 MiB of events, and one under 1 MiB
        read as an empty file. The cut is raised on the next read, after that text."""
        if self._cut is not None:
            raise self._cut
        parts: list[bytes] = []
        got = 0
        while size < 0 or got < size:
            try:
                piece = self.raw.read1(size - got if size >= 0 else _EDGE_BYTES)
            except EOFError as exc:
                if not parts:
                    raise
                self._cut = exc
                break
            if not piece:
                break
            parts.append(piece)
            got += len(piece)
        return b"".join(parts)

    @property
    def tail(self) -> bytes:
        """The last two chunks read: at least one read buffer (1 MiB) of the file's end. Joined when
        asked, not at each read: that copied the whole file twice over (0.04 s per 100 MB)."""
        return self._previous + self.last

    @tail.setter
    def tail(self, text: bytes) -> None:
        """The file's end, read separately (its second half was read by another process)."""
        self._previous, self.last = text, b""


def _open(path: Path) -> tuple[IO[bytes], Callable[[], int] | None]:
    """The byte stream of the JSON text, and for a gzip file how far it may expand by now (None:
    plain file). The allowance grows with the compressed bytes read so far that expanded, not with
    the file's size: zero padding or empty members around a small bomb earn it nothing."""
    try:
        raw = open_regular(path)
    except OSError as exc:
        raise TraceFormatError(f"cannot read trace {path}: {exc.strerror}") from None
    magic = raw.read(2)
    raw.seek(0)
    if magic != b"\x1f\x8b":
        return raw, None
    stream = _GzipOwningFile(fileobj=raw, mode="rb")
    return stream, stream.allowance


class _GzipOwningFile(gzip.GzipFile):
    """A GzipFile that closes the file it reads when it is closed (a GzipFile given a file object
    leaves it open: one file leaked per trace read), and says how far it may expand."""

    earned = 0  # compressed bytes that count towards the allowance

    def read1(self, size: int = -1) -> bytes:
        """GzipFile.read1, counting what the compressed bytes it consumed earn: at most as many as
        the text they gave. Compressed bytes that expand to less than their own size (zero
        padding, empty gzip members, empty deflate blocks) earn only what they gave, so however
        many precede a bomb, they do not raise its allowance; real traces (7x-19x) earn all theirs."""
        before = self.fileobj.tell()
        piece = super().read1(size)
        self.earned += min(self.fileobj.tell() - before, len(piece))
        return piece

    def allowance(self) -> int:
        """The most decompressed bytes the compressed bytes read so far may give (read1)."""
        return max(_MIN_GZIP_ALLOWANCE, MAX_GZIP_RATIO * self.earned)

    def close(self) -> None:
        raw = self.fileobj
        try:
            super().close()
        finally:
            if raw is not None:
                raw.close()


class _Parse:
    """One pass over the file: the columns, the items that were not events, what the dialect notes
    (unknown categories, memory peaks), how the text ended, and the reader that kept its edges."""

    def __init__(self, path: Path, include_python: bool) -> None:
        self.path, self.include_python = path, include_python
        self.cols = Columns()
        self.notes = DialectNotes()
        self.skip = () if include_python else (KIND_BY_CATEGORY["python_function"],)
        self.junk = 0  # items of the event list that are not objects
        self.cut: str | None = None  # why the file ended early (truncated), else None
        self.root = "object"  # or "array": a bare JSON array of events (trace/dialect.py)
        self.reader: _EdgeReader | None = None

    def stream(self) -> None:
        """The streaming parser (ijson), which reads every file the bounds let through."""
        stream, expand_limit = _open(self.path)
        with stream:
            self.root, prefix = root_prefix(stream)
            self.reader = _EdgeReader(stream, self.path, expand_limit, self.root)
            with _refusals(self.path, self.reader):
                self._events(ijson.items(self.reader, prefix, use_float=True, buf_size=_EDGE_BYTES))

    def fast(self, start: int = 0, stop: int | None = None) -> bool:
        """The fast path (trace/fastload.py) through the same guarded reader; False when it cannot
        read this file exactly, and the streaming parser must read it instead. `start` and `stop`:
        bytes [start, stop) of a plain file, one half of it (trace/halves.py); the first half must
        end between two events of the list for the second half's guard to take over exactly."""
        stream, expand_limit = _open(self.path)
        with stream:
            self.root, _ = root_prefix(stream)
            stream.seek(start)
            self.reader = _EdgeReader(stream, self.path, expand_limit, self.root, start, stop)
            try:
                with _refusals(self.path, self.reader, fall_back=True):
                    fastload.parse(self.reader, self.root, self.cols, categories=_CATEGORIES, skip=self.skip,
                                   on_device=ON_DEVICE_TIMELINE, notes=self.notes, first=start == 0,
                                   last=stop is None)
            except fastload.Unreadable:
                return False
        return stop is None or self.reader.guard.between_items()

    def in_halves(self) -> bool:
        """The fast path in two processes for a large plain file (trace/halves.py): this one reads
        the first half while a child reads the second. False when the file is not for it or either
        half cannot be read exactly; the loader then reads the whole file in one process."""
        split = halves.split_point(self.path)
        if split is None or split < _EDGE_BYTES:  # the first half must hold the head the loader reads
            return False
        child = halves.Child.start(self.path, split, self.include_python)
        if child is None:
            return False
        with child:
            try:
                if not self.fast(stop=split):
                    return False
            except TraceFormatError:  # a bound broken: one process reads the file again and says where
                return False
            later = child.result()
        if later is None or not (self.cols.extend(later.cols) and self.notes.extend(later.notes)):
            return False
        self.reader.bytes_read += later.bytes_read
        self.reader.tail = halves.file_tail(self.path, self.reader.bytes_read, fastload.READ_BYTES)
        return True

    def _events(self, events: Iterator[Any]) -> None:
        add, categories, notes, skip = self.cols.add, _CATEGORIES, self.notes, self.skip
        try:
            for event in events:
                if type(event) is not dict:
                    self.junk += 1
                    continue
                phase = event.get("ph")
                if phase != "X":
                    if phase == "i":
                        notes.instant(event)
                    continue
                cat = event.get("cat")
                kind = categories.get(cat) if type(cat) is str else None
                if kind is None:
                    kind = notes.category(cat)
                if kind is not None and kind not in skip:
                    add(event, kind)
        except (EOFError, ijson.IncompleteJSONError) as exc:
            self._ended(exc)
        except (ijson.JSONError, UnicodeDecodeError) as exc:  # yajl passes bytes that are not UTF-8 on to Python
            raise _not_json(self.path, self.reader, exc) from None

    def _ended(self, exc: Exception) -> None:
        """A file that stops mid-write is truncated; a syntax error before its end is not JSON."""
        text = str(exc).strip()
        if isinstance(exc, EOFError) or (self.reader.at_end and ("premature EOF" in text or _token_cut(str(exc)))):
            self.cut = text.splitlines()[0] if text else type(exc).__name__
            return
        raise _not_json(self.path, self.reader, exc)


def _token_cut(message: str) -> bool:
    """yajl's lexical error on the file's last token with nothing after it: a number cut after its
    '.', 'e' or '-', a literal or an escape cut short. yajl's second line shows up to 30 bytes after
    the error point (column 40); they are blank when the file ends there."""
    lines = message.split("\n")
    return lines[0].startswith("lexical error") and len(lines) >= 2 and not lines[1][41:].strip()


@contextmanager
def _refusals(path: Path, reader: _EdgeReader, fall_back: bool = False) -> Iterator[None]:
    """A bound broken is refused whichever parser read it; a broken gzip stream is refused by the
    streaming parser, and the fast path (`fall_back`) leaves it, and truncation, to that parser."""
    try:
        yield
    except JsonBoundError as exc:
        raise TraceFormatError(f"{path}: refused: {exc}{_decompressed(reader)}; expected {_EXPECTED}") from None
    except (zlib.error, gzip.BadGzipFile, EOFError) as exc:  # EOFError: a gzip stream cut short
        if fall_back:
            raise fastload.Unreadable(str(exc)) from None
        raise TraceFormatError(f"{path} is not a valid gzip file ({exc}); expected {_EXPECTED}") from None


def _not_json(path: Path, reader: _EdgeReader, exc: Exception) -> TraceFormatError:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    where = _syntax_offset(str(exc), reader)
    what = "holds a number out of the 64-bit range" if "overflow" in first else "is not valid JSON"
    return TraceFormatError(f"{path} {what} ({first} {where}{_decompressed(reader)}); expected {_EXPECTED}")


def _syntax_offset(message: str, reader: _EdgeReader) -> str:
    """'near byte N' from yajl's error context, or the range of the chunk being parsed.

    yajl shows up to 30 bytes either side of the point where it stopped, that point in column 40
    (usually one past the offending byte) and newlines written as spaces; the context is searched
    for in the chunk it came from.
    """
    start = reader.bytes_read - len(reader.last)
    lines = message.split("\n")
    if len(lines) >= 2 and len(lines[1]) > 40:
        after = lines[1][40:].encode("utf-8", "replace")
        chunk = reader.last.replace(b"\n", b" ").replace(b"\r", b" ")
        found = [m.start() for m in re.finditer(re.escape(after), chunk)]
        if len(found) == 1:
            return f"near byte {start + max(found[0] - 1, 0):,}"
    return f"between bytes {start:,} and {reader.bytes_read:,}"


def _decompressed(reader: _EdgeReader) -> str:
    return " of the decompressed text" if reader.expand_limit is not None else ""


def _metadata(head: bytes, tail: bytes) -> dict[str, Any]:
    """Top-level keys other than traceEvents, from the bytes before and after that list."""
    meta: dict[str, Any] = {}
    start = head.find(b'"traceEvents"')
    if start > 0:
        before = head[:start].rstrip().rstrip(b",")
        meta.update(_loads_object(before + b"}"))
    closing = list(re.finditer(rb"\}\s*\]\s*,\s*\"", tail))
    if closing:
        meta.update(_loads_object(b"{" + tail[closing[-1].end() - 1 :]))
    return meta


def _loads_object(text: bytes) -> dict[str, Any]:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _check_shape(path: Path, head: bytes, bytes_read: int, loaded: bool) -> None:
    """A Kineto trace is an object whose `traceEvents` is a list; say which part is missing."""
    key = re.search(rb'"traceEvents"\s*:\s*(.?)', head)
    if key is None and not loaded:
        what = "an empty file" if bytes_read == 0 else "no 'traceEvents' key near its start"
        raise TraceFormatError(f"{path} is not a Kineto trace ({what}); expected {_EXPECTED}")
    if key is not None and key.group(1) not in (b"[", b""):
        found = {b"{": "an object", b'"': "a string", b"n": "null"}.get(key.group(1), "a number or literal")
        raise TraceFormatError(f"{path} is not a Kineto trace ('traceEvents' is {found}, not a list of events); "
                               f"expected {_EXPECTED}")


def _to_trace(path: Path, cols: Columns, meta: dict[str, Any], warnings: list[str], truncated: bool) -> Trace:
    """The sorted columns; each source array is released once copied, so the peak is one column over."""
    ts = np.frombuffer(cols.ts, np.float64)
    order = np.argsort(ts, kind="stable")

    def col(name: str, dtype: Any) -> np.ndarray:
        values = getattr(cols, name)
        setattr(cols, name, None)
        return np.frombuffer(values, dtype)[order] if len(values) else np.zeros(0, dtype)

    del ts
    columns = dict(kind=col("kind", np.int8), name_id=col("name_id", np.int32), ts_us=col("ts", np.float64),
                   dur_us=col("dur", np.float64), pid=col("pid", np.int64), tid=col("tid", np.int64),
                   stream=col("stream", np.int64), correlation=col("corr", np.int64),
                   external_id=col("ext", np.int64), bytes=col("nbytes", np.int64))
    return Trace(
        path=str(path), names=tuple(cols.names), **columns,
        rank=_rank(meta),
        metadata=meta, warnings=tuple(warnings), truncated=truncated,
    )  # fmt: skip


def _rank(meta: dict[str, Any]) -> int:
    """`distributedInfo.rank` when it is a whole number of at most 9 digits, else 0."""
    info = meta.get("distributedInfo")
    rank = info.get("rank", 0) if isinstance(info, dict) else 0
    text = str(rank) if isinstance(rank, (int, str)) and not isinstance(rank, bool) else ""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 9 else 0


def load_trace(path: str | Path, *, include_python: bool = False, hta_ns_rounding: bool = False,
               split: bool = True) -> Trace:
    """Load one rank's Kineto trace. Raises TraceFormatError if it is not a readable Kineto trace.

    Python-function events are dropped unless `include_python`. A file cut off mid-write gives
    the events parsed before the cut, `truncated=True` and a warning. `hta_ns_rounding` applies
    HTA's rounding of float (ns-resolution) timestamps: start rounded up and end rounded down to
    whole microseconds (hta/common/trace_parser.py `round_down_time_stamps`), for parity checks.
    `split=False` keeps a large plain file to this process (trace/halves.py): where other processes
    already keep every core busy, a second half's process only adds its own start and merge.
    """
    path = Path(path)
    parse = _parsed(path, include_python, split)
    cols, reader = parse.cols, parse.reader
    if parse.root == "array":
        if not cols.kind:
            raise TraceFormatError(f"{path} is a JSON array with no trace events in it; expected {_EXPECTED}")
        meta: dict[str, Any] = {}
    else:
        _check_shape(path, reader.head, reader.bytes_read, bool(cols.kind))
        meta = _metadata(reader.head, reader.tail if parse.cut is None else b"")
    warnings = load_warnings(path.name, cols, parse.junk, parse.notes.unknown, parse.cut, reader.bytes_read)
    trace = _to_trace(path, cols, meta, warnings, truncated=parse.cut is not None)
    trace = normalise(trace, parse.notes, parse.root, reader.head)
    return _round_like_hta(trace) if hta_ns_rounding else trace


def _parsed(path: Path, include_python: bool, split: bool = True) -> _Parse:
    """The file read by the first parser that reads it exactly: the fast path in two processes
    (large plain files), then in one, then the streaming parser, which reads every file the bounds
    let through (each attempt starts afresh, so none leaves anything in the next one's columns)."""
    if fastload.available():
        for attempt in ((_Parse.in_halves,) if split and halves.enabled() else ()) + (_Parse.fast,):
            parse = _Parse(path, include_python)
            if attempt(parse):
                return parse
    parse = _Parse(path, include_python)
    parse.stream()
    return parse


def second_half(path: Path, split: int, include_python: bool) -> halves.Half | None:
    """Bytes [split, end) of a plain trace read by the fast path, in the child of trace/halves.py;
    None when it cannot read them exactly or a bound is broken (one process then reads the file)."""
    parse = _Parse(path, include_python)
    try:
        if not parse.fast(start=split):
            return None
    except TraceFormatError:
        return None
    return halves.Half(parse.cols, parse.notes, parse.reader.bytes_read)


def _round_like_hta(trace: Trace) -> Trace:
    start, end = np.ceil(trace.ts_us), np.floor(trace.ts_us + trace.dur_us)
    return dataclasses.replace(trace, ts_us=start, dur_us=np.maximum(end - start, 0.0))
