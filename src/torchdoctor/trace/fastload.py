"""The trace loader's fast path: the event list decoded in chunks by msgspec into typed records.

ijson builds one dict per event; msgspec decodes straight into small typed structs, skipping the
fields the analyses do not read, about twice as fast per byte (docs/trace.md, "Performance"). The
file is read in CHUNK_BYTES pieces through the loader's reader (so its head and tail, where the
metadata lives, are kept as in the streaming path), each piece cut after the last complete event
(`}, {"` between two events) and decoded as a JSON array, so memory holds one piece at a time.

The fast path reads only what it can read exactly: an event whose fields have unusual types (a
string `ts`, a float correlation id, `args` that is not an object), an item that is not an event,
a NaN, infinite or out-of-range number, a piece it cannot cut at an event boundary, or a file that
ends before its event list does, raise `Unreadable`, and the loader reads the file again with its
streaming parser, which repairs and counts every such case (trace/columns.py), so each repair has
one definition. The reader is the loader's guarded one: every byte passes the same JsonGuard bounds
and gzip expansion limit as in the streaming path, and a breach is refused, not read again. Without msgspec
installed, or with TORCHDOCTOR_TRACE_PARSER=stream, the loader always uses the streaming parser.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any, Callable, Union

try:
    import msgspec
except ImportError:  # pragma: no cover - the streaming parser is used instead
    msgspec = None

CHUNK_BYTES = 2 << 20  # 8 MiB pieces were no faster and doubled the peak of a hostile gzip (92 vs 183 MB)
_START = {"object": re.compile(rb'"traceEvents"\s*:\s*\['), "array": re.compile(rb"^\s*\[")}
_CUT = re.compile(rb'\}\s*,\s*\{\s*"')  # between two events: a `"` cannot follow `{` inside a string
_CUT_TRIES = 4
_TAIL = 1 << 20


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
        # [memory] records (profile_memory=True)
        total_allocated: Union[int, float, None] = msgspec.field(default=None, name="Total Allocated")
        total_reserved: Union[int, float, None] = msgspec.field(default=None, name="Total Reserved")
        device_type: Union[int, None] = msgspec.field(default=None, name="Device Type")
        device_id: Union[int, None] = msgspec.field(default=None, name="Device Id")

    class _Event(msgspec.Struct, gc=False):
        ph: str = ""
        cat: Union[str, None] = None
        name: str = ""
        ts: Union[float, None] = None
        dur: float = 0.0
        pid: Union[int, str] = -1
        tid: Union[int, str] = -1
        args: Union[_Args, None] = None

    _DECODER = msgspec.json.Decoder(list[_Event])
    #: msgspec's own error, and UnicodeDecodeError (a ValueError) for bytes that are not UTF-8
    _DECODE_ERRORS = (msgspec.DecodeError, ValueError)


def parse(reader: Any, root: str, cols: Any, *, categories: dict[Any, int], skip: tuple[int, ...],
          on_device: tuple[int, ...], notes: Any) -> None:
    """Fill `cols` (the loader's columns) from `reader`; raises Unreadable when it cannot read the
    file exactly (the loader then starts again with the streaming parser)."""
    if msgspec is None:
        raise Unreadable("msgspec is not installed")
    buf = reader.read(_TAIL)
    match = _START[root].search(buf)
    if match is None:
        raise Unreadable("no event list near the start")
    buf = buf[match.end():]
    done = False
    while not done:
        more = _read(reader)
        buf += more
        if more:
            events, buf, done = _decode_piece(buf)
        else:
            events, done = _decode_last(buf), True
        _add(events, cols, categories, skip, on_device, notes)
    while reader.read(_TAIL):  # the rest is top-level metadata: the reader keeps the file's tail
        pass


def _read(reader: Any) -> bytes:
    """About CHUNK_BYTES, read 1 MiB at a time as the streaming parser does, so the reader's
    remembered tail (the last two reads, where trailing metadata is looked for) stays small."""
    parts, size = [], 0
    while size < CHUNK_BYTES:
        part = reader.read(_TAIL)
        if not part:
            break
        parts.append(part)
        size += len(part)
    return b"".join(parts)


def _decode_piece(buf: bytes) -> tuple[list[Any], bytes, bool]:
    """Decode the complete events of `buf`: (events, the rest, whether the event list ended)."""
    cuts = list(_CUT.finditer(buf, max(0, len(buf) - _TAIL))) or list(_CUT.finditer(buf))[-1:]
    if not cuts:
        return _decode_last(buf), b"", True
    for m in reversed(cuts[-_CUT_TRIES:]):
        try:
            events, ended = _decode(buf[: m.start() + 1])
        except Unreadable:
            continue  # a cut inside an event (a list of objects in its args): try the one before
        brace = m.start() + buf[m.start() : m.end()].index(b"{")
        return events, (b"" if ended else buf[brace:]), ended
    raise Unreadable("no event boundary found")


def _decode_last(buf: bytes) -> list[Any]:
    """The events of the last piece, which must hold the end of the event list."""
    events, ended = _decode(buf)
    if not ended:
        raise Unreadable("the event list does not end (a truncated file)")
    return events


_TRAILING = re.compile(r"trailing characters \(byte (\d+)\)")


def _decode(body: bytes) -> tuple[list[Any], bool]:
    """Decode `[body]`: (events, whether the event list's own `]` was inside `body`)."""
    data = b"[" + body + b"]"
    try:
        return _DECODER.decode(data), False
    except _DECODE_ERRORS as exc:
        trailing = _TRAILING.search(str(exc))
        if trailing is None:
            raise Unreadable(str(exc)) from None
    end = data.rfind(b"]", 0, int(trailing.group(1)) + 1)  # the event list ended before `body` did
    try:
        return _DECODER.decode(data[: end + 1]), True
    except _DECODE_ERRORS as exc:
        raise Unreadable(str(exc)) from None


def _add(events: list[Any], cols: Any, categories: dict[Any, int], skip: tuple[int, ...],
         on_device: tuple[int, ...], notes: Any) -> None:
    for e in events:
        if e.ph == "i" and e.name == "[memory]" and e.args is not None:
            notes.instant({"name": e.name, "args": _memory_args(e.args)})
    complete = [e for e in events if e.ph == "X"]
    kinds = [categories.get(e.cat) for e in complete]
    if None in kinds:
        kinds = [k if k is not None else notes.category(e.cat) for k, e in zip(kinds, complete)]
    keep = [(k, e) for k, e in zip(kinds, complete) if k is not None and k not in skip]
    if not keep:
        return
    kinds = [k for k, _ in keep]
    evs = [e for _, e in keep]
    ts, dur = [e.ts for e in evs], [e.dur for e in evs]
    if None in ts or not math.isfinite(sum(ts) + sum(dur)):  # no time, NaN or infinite: Columns counts them
        raise Unreadable("an event without a finite time")
    negative = sum(1 for d in dur if d < 0)
    cols.negative_dur += negative
    ident: Callable[[Any, str], int] = cols.ident
    names = cols.names
    intern = names.setdefault  # the next id is the table's size: len(names) before the insertion
    tids = [t if type(t) is int else ident(t, "tid") for t in (e.tid for e in evs)]
    args = [e.args for e in evs]
    try:  # an integer outside int64 (msgspec reads up to 2**64 - 1) overflows its column
        cols.kind.fromlist(kinds)
        cols.name_id.fromlist([intern(e.name, len(names)) for e in evs])
        cols.ts.fromlist(ts)
        cols.dur.fromlist(dur if not negative else [max(d, 0.0) for d in dur])
        cols.pid.fromlist([p if type(p) is int else ident(p, "pid") for p in (e.pid for e in evs)])
        cols.tid.fromlist(tids)
        unset = msgspec.UNSET
        cols.stream.fromlist([
            (_stream(a.stream, ident) if a is not None and a.stream is not unset else t) if k in on_device else -1
            for k, a, t in zip(kinds, args, tids)
        ])
        cols.corr.fromlist([a.correlation if a is not None else -1 for a in args])
        cols.ext.fromlist([-1 if a is None else a.external_id if a.external_id is not None
                           else a.external_id_lower if a.external_id_lower is not None else -1 for a in args])
        cols.nbytes.fromlist([a.nbytes if a is not None else -1 for a in args])
    except OverflowError:
        raise Unreadable("an integer outside the 64-bit range") from None


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
