"""The trace loader's fast path: the event list decoded in chunks by msgspec into typed records.

ijson builds one dict per event; msgspec decodes straight into small typed structs, skipping the
fields the analyses do not read (all of them for events other than complete and instant ones, told
apart by their phase, `ph`), about twice as fast per byte (docs/trace.md, "Performance"). The
file is read in CHUNK_BYTES pieces through the loader's reader (so its head and tail, where the
metadata lives, are kept as in the streaming path), each piece cut after the last complete event
(`}, {"` between two events) and decoded as a JSON array, so memory holds one piece at a time.

The fast path reads only what it can read exactly: an event whose fields have unusual types (a
string `ts`, a float correlation id, `args` that is not an object), an event with no phase or one
the Trace Event Format does not define, an item that is not an event, a NaN, infinite or
out-of-range number, a piece it cannot cut at an event boundary, or a file that ends before its
event list does, raise `Unreadable`, and the loader reads the file again with its
streaming parser, which repairs and counts every such case (trace/columns.py), so each repair has
one definition. The reader is the loader's guarded one: every byte passes the same JsonGuard bounds
and gzip expansion limit as in the streaming path, and a breach is refused, not read again. Without msgspec
installed, or with TORCHDOCTOR_TRACE_PARSER=stream, the loader always uses the streaming parser.
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable, Union

import numpy as np

from torchdoctor.trace.events import is_kind
from torchdoctor.trace.columns import MAX_TIME_US

try:
    import msgspec
except ImportError:  # pragma: no cover - the streaming parser is used instead
    msgspec = None

CHUNK_BYTES = 2 << 20  # 8 MiB pieces were no faster and doubled the peak of a hostile gzip (92 vs 183 MB)
_START = {"object": re.compile(rb'"traceEvents"\s*:\s*\['), "array": re.compile(rb"^\s*\[")}
# between two events: a `"` cannot follow `{` inside a string; only JSON's blanks (\s has \f and \v too)
_CUT = re.compile(rb'\}[ \t\r\n]*,[ \t\r\n]*\{[ \t\r\n]*"')
_ENDS_AT_CUT = re.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*\Z")
_CUT_WINDOW = 64 << 10  # the last cuts are looked for in the piece's last 64 KiB first
_CUT_TRIES = 4
READ_BYTES = 1 << 20  # each read, as the streaming parser's (the reader remembers the last two)


class Unreadable(Exception):
    """This file is not for the fast path; the streaming parser reads it."""


def available() -> bool:
    """msgspec is installed and TORCHDOCTOR_TRACE_PARSER does not ask for the streaming parser."""
    return msgspec is not None and os.environ.get("TORCHDOCTOR_TRACE_PARSER", "") != "stream"


if msgspec is not None:

    class _Args(msgspec.Struct, gc=False):
        correlation: int = -1
        # absent: UNSET; an explicit null does not decode (the streaming path counts it as odd)
        stream: Union[int, str, msgspec.UnsetType] = msgspec.UNSET
        external_id: Union[int, None] = msgspec.field(default=None, name="External id")
        external_id_lower: Union[int, None] = msgspec.field(default=None, name="external id")
        nbytes: int = msgspec.field(default=-1, name="bytes")

    class _MemoryArgs(msgspec.Struct, gc=False):
        """The args of a `[memory]` record (profile_memory=True), the only instant events read: kept
        apart from _Args, whose every extra field costs each complete event's decoding."""

        total_allocated: Union[int, float, None] = msgspec.field(default=None, name="Total Allocated")
        total_reserved: Union[int, float, None] = msgspec.field(default=None, name="Total Reserved")
        device_type: Union[int, None] = msgspec.field(default=None, name="Device Type")
        device_id: Union[int, None] = msgspec.field(default=None, name="Device Id")

    class _Complete(msgspec.Struct, gc=False, tag_field="ph", tag="X"):
        cat: Union[str, None] = None
        name: str = ""
        ts: Union[float, None] = None
        dur: float = 0.0
        pid: Union[int, str] = -1
        tid: Union[int, str] = -1
        args: Union[_Args, None] = None

    class _Instant(msgspec.Struct, gc=False, tag_field="ph", tag="i"):
        name: str = ""
        args: Union[_MemoryArgs, None] = None

    #: The other phases of the Trace Event Format, their fields skipped: nothing reads them, and a
    #: third of a Kineto trace's events are flows (`s`, `f`), whose fields cost a fifth of the decoding.
    #: A phase not listed, or an event without one, does not decode: the streaming parser reads the file.
    _OTHER_PHASES = tuple(msgspec.defstruct(f"_Phase{ord(ph)}", [], gc=False, tag_field="ph", tag=ph)
                          for ph in "BEICbnestfPNODMVvRc()STpF")
    _DECODER = msgspec.json.Decoder(list[Union[(_Complete, _Instant, *_OTHER_PHASES)]])
    #: msgspec's own error, and UnicodeDecodeError (a ValueError) for bytes that are not UTF-8
    _DECODE_ERRORS = (msgspec.DecodeError, ValueError)


def next_event(data: bytes) -> int | None:
    """Where the first event that follows another in `data` starts (its `{`), or None."""
    cut = _CUT.search(data)
    return None if cut is None else data.index(b"{", cut.start() + 1)


def parse(reader: Any, root: str, cols: Any, *, categories: dict[Any, int], skip: tuple[int, ...],
          on_device: tuple[int, ...], notes: Any, first: bool = True, last: bool = True) -> None:
    """Fill `cols` (the loader's columns) from `reader`; raises Unreadable when it cannot read the
    file exactly (the loader then starts again with the streaming parser).

    `first` False: the reader starts at an event, not at the file's start; `last` False: it stops
    after an event and its comma, inside the event list (the two halves of trace/halves.py).
    """
    if msgspec is None:
        raise Unreadable("msgspec is not installed")
    rest = reader.read(READ_BYTES)
    if first:
        match = _START[root].search(rest)
        if match is None:
            raise Unreadable("no event list near the start")
        rest = rest[match.end():]
    piece = _Piece()
    done = False
    while not done:
        if piece.fill(reader, rest):
            events, rest, done = _decode_piece(piece)
            if done and not last:
                raise Unreadable("the event list ends before the split")
        else:
            events, done = (_decode_last(piece) if last else _decode_before_cut(piece)), True
        _add(events, cols, categories, skip, on_device, notes)
    while reader.read(READ_BYTES):  # the rest is top-level metadata: the reader keeps the file's tail
        pass
    if last and not reader.guard.closed():  # the streaming parser calls such a file truncated, and says so
        raise Unreadable("the text after the event list does not end (a truncated file)")


class _Piece:
    """One reused buffer holding `[`, what the last piece left after its last cut, and about
    CHUNK_BYTES more: each byte is copied into it once, and pieces are decoded in place (building
    fresh bytes for each piece copied every byte four times and paid page faults for each copy)."""

    def __init__(self) -> None:
        self.buf = bytearray(1 + CHUNK_BYTES + 2 * READ_BYTES)
        self.buf[0] = ord("[")
        self.size = 1

    def fill(self, reader: Any, rest: bytes) -> bool:
        """`[` + `rest` + about CHUNK_BYTES of the file, read 1 MiB at a time as the streaming
        parser does (so the reader's remembered tail stays small); False at the end of the input."""
        self.size = 1
        self._put(rest)
        added = 0
        while added < CHUNK_BYTES:
            part = reader.read(READ_BYTES)
            if not part:
                break
            self._put(part)
            added += len(part)
        return added > 0

    def _put(self, data: bytes) -> None:
        end = self.size + len(data)
        if end > len(self.buf):
            self.buf.extend(bytes(end - len(self.buf)))
        self.buf[self.size:end] = data
        self.size = end

    def decode(self, end: int) -> tuple[list[Any], bool]:
        """Decode `[` + the bytes before `end` + `]`: (events, whether the event list's own `]`
        came first). The byte at `end` is overwritten (a comma or blank after an event's `}`)."""
        buf = self.buf
        if end >= self.size:
            self._put(b"]")
            end = self.size - 1
        buf[end] = ord("]")
        with memoryview(buf) as view:
            try:
                return _DECODER.decode(view[: end + 1]), False
            except _DECODE_ERRORS as exc:
                trailing = _TRAILING.search(str(exc))
                if trailing is None:
                    raise Unreadable(str(exc)) from None
            # the event list ended before `end`; msgspec's byte N is one past the first trailing byte,
            # which may be the `]` written at `end` (a list that ends the document: `...}]}`)
            close = buf.rfind(b"]", 0, int(trailing.group(1)) - 1)
            try:
                return _DECODER.decode(view[: close + 1]), True
            except _DECODE_ERRORS as exc:
                raise Unreadable(str(exc)) from None


def _decode_piece(piece: _Piece) -> tuple[list[Any], bytes, bool]:
    """Decode the complete events of the piece: (events, the rest, whether the event list ended)."""
    buf, size = piece.buf, piece.size
    cuts = list(_CUT.finditer(buf, max(1, size - _CUT_WINDOW), size)) or list(_CUT.finditer(buf, 1, size))[-1:]
    if not cuts:
        return _decode_last(piece), b"", True
    for m in reversed(cuts[-_CUT_TRIES:]):
        after = buf[m.start() + 1]
        try:
            events, ended = piece.decode(m.start() + 1)
        except Unreadable:
            buf[m.start() + 1] = after
            continue  # a cut inside an event (a list of objects in its args): try the one before
        return events, (b"" if ended else bytes(buf[buf.index(b"{", m.start() + 1) : size])), ended
    raise Unreadable("no event boundary found")


def _decode_last(piece: _Piece) -> list[Any]:
    """The events of the last piece, which must hold the end of the event list."""
    events, ended = piece.decode(piece.size)
    if not ended:
        raise Unreadable("the event list does not end (a truncated file)")
    return events


def _decode_before_cut(piece: _Piece) -> list[Any]:
    """The events of the first half's last piece, which ends with an event, a comma and blanks."""
    end = _ENDS_AT_CUT.search(piece.buf, 1, piece.size)
    if end is None:
        raise Unreadable("the first half does not end between two events")
    events, ended = piece.decode(end.start() + 1)
    if ended:
        raise Unreadable("the event list ends before the split")
    return events


_TRAILING = re.compile(r"trailing characters \(byte (\d+)\)")


def _add(events: list[Any], cols: Any, categories: dict[Any, int], skip: tuple[int, ...],
         on_device: tuple[int, ...], notes: Any) -> None:
    for e in events:
        if type(e) is _Instant and e.name == "[memory]" and e.args is not None:
            notes.instant({"name": e.name, "args": _memory_args(e.args)})
    complete = [e for e in events if type(e) is _Complete]
    kinds = [categories.get(e.cat) for e in complete]
    present = set(kinds)
    if None in present:
        kinds = [k if k is not None else notes.category(e.cat) for k, e in zip(kinds, complete)]
        present = set(kinds)
    evs = complete
    if None in present or not present.isdisjoint(skip):
        keep = [(k, e) for k, e in zip(kinds, complete) if k is not None and k not in skip]
        kinds = [k for k, _ in keep]
        evs = [e for _, e in keep]
    if not evs:
        return
    kind = bytes(kinds)  # the kinds are small non-negative ints: bytes() converts them 3x faster than fromlist
    ident: Callable[[Any, str], int] = cols.ident
    names = cols.names
    intern = names.setdefault  # the next id is the table's size: len(names) before the insertion
    args = [e.args for e in evs]
    try:  # an integer outside int64 (msgspec reads up to 2**64 - 1) overflows its column
        _times(cols, [e.ts for e in evs], [e.dur for e in evs])
        tids = _ids(cols.tid, [e.tid for e in evs], ident, "tid")
        cols.kind.frombytes(kind)
        cols.name_id.fromlist([intern(e.name, len(names)) for e in evs])
        _ids(cols.pid, [e.pid for e in evs], ident, "pid")
        cols.stream.frombytes(_streams(kind, args, tids, on_device, ident).tobytes())
        cols.corr.fromlist([a.correlation if a is not None else -1 for a in args])
        cols.ext.fromlist([-1 if a is None else a.external_id if a.external_id is not None
                           else a.external_id_lower if a.external_id_lower is not None else -1 for a in args])
        cols.nbytes.fromlist([a.nbytes if a is not None else -1 for a in args])
    except OverflowError:
        raise Unreadable("an integer outside the 64-bit range") from None


def _times(cols: Any, ts: list[float | None], dur: list[float]) -> None:
    """Append the starts and durations, negative durations as 0 (counted). No time, NaN, an
    infinity or a time beyond MAX_TIME_US is Unreadable: the streaming path counts and drops such events (trace/columns.py).
    Checked with numpy on the appended rows: the Python sums and scans cost ten times as much."""
    start = len(cols.ts)
    try:
        cols.ts.fromlist(ts)
    except TypeError:  # a None: an event without `ts`
        raise Unreadable("an event without a time") from None
    cols.dur.fromlist(dur)
    # views of the rows just appended, released before the columns grow again (a view pins an array's size)
    ts_view = np.frombuffer(cols.ts, np.float64, len(ts), start * 8)
    dur_view = np.frombuffer(cols.dur, np.float64, len(dur), start * 8)
    if not ((np.abs(ts_view) <= MAX_TIME_US).all() and (dur_view <= MAX_TIME_US).all()):  # NaN fails too
        raise Unreadable("an event with a NaN, infinite or out-of-range time")
    negative = dur_view < 0  # -0.0 is not negative, and stays -0.0, as in the streaming path
    if negative.any():
        cols.negative_dur += int(negative.sum())
        dur_view[negative] = 0.0
    del ts_view, dur_view


def _ids(column: Any, values: list[Any], ident: Callable[[Any, str], int], field: str) -> list[int]:
    """Append pids or tids to their column, labels (strings) as their ids; the integers appended.
    Most pieces hold integers only, which the column takes whole (and refuses whole otherwise)."""
    try:
        column.fromlist(values)
    except TypeError:
        values = [v if type(v) is int else ident(v, field) for v in values]
        column.fromlist(values)
    return values


def _streams(kind: bytes, args: list[Any], tids: list[int], on_device: tuple[int, ...],
             ident: Callable[[Any, str], int]) -> np.ndarray:
    """The piece's stream column: -1 off the device timeline; on it, `args.stream`, or the tid when
    absent. Python reads only the device events (a tenth of a Kineto trace's): one expression per
    event for the whole column cost twice as much."""
    out = np.full(len(kind), -1, np.int64)
    rows = np.flatnonzero(is_kind(np.frombuffer(kind, np.int8), on_device)).tolist()
    if rows:
        unset = msgspec.UNSET
        device_args = [args[i] for i in rows]
        out[rows] = [_stream(a.stream, ident) if a is not None and a.stream is not unset else tids[i]
                     for i, a in zip(rows, device_args)]
    return out


def _stream(value: int | str, ident: Callable[[Any, str], int]) -> int:
    """An integer stream as it is (one outside int64 overflows its column), a label otherwise."""
    return value if type(value) is int else ident(value, "stream")


def _memory_args(a: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in (("Total Allocated", a.total_allocated), ("Total Reserved", a.total_reserved),
                       ("Device Type", a.device_type), ("Device Id", a.device_id)):
        if value is not None:
            out[key] = value
    return out
