"""Streaming load of a Kineto Chrome-trace JSON (`.json` / `.json.gz`) into a columnar Trace.

With msgspec installed, the fast path (trace/fastload.py) decodes the event list in chunks into
typed records, about twice as fast; whatever it cannot read exactly is read here instead.
Events are parsed one at a time with ijson's C backend (yajl2_c) and appended to typed arrays,
so memory holds the compact columns, never the whole JSON tree (orjson is faster per byte but
needs the whole document in memory: about 4x the file size as Python objects). The small
top-level keys (`distributedInfo`, `baseTimeNanoseconds`, `deviceProperties`) are read from the
bytes before and after the `traceEvents` list, which the streaming pass keeps aside, so the file
is read once.

Format drift tolerated: legacy categories (`Operator`, `Runtime`, `Kernel`, `Memcpy`), `External id`
and `external id`, `ts`/`dur` as int, float or string, `tid`/`pid` as strings, missing or negative
durations (clamped to 0, counted in a warning), and a file cut off mid-write (what parsed is kept;
a warning says where it ended).
"""

from __future__ import annotations

import dataclasses
import gzip
import re
import zlib
from array import array
from pathlib import Path
from typing import IO, Any

import ijson
import numpy as np
import orjson

from torchdoctor.errors import TraceFormatError
from torchdoctor.trace import fastload
from torchdoctor.trace.dialect import DialectNotes, normalise, root_prefix
from torchdoctor.trace.events import GPU_ANNOTATION, KIND_BY_CATEGORY, KERNEL, MEMCPY, MEMSET, SYNC, Trace

_EXPECTED = "a Kineto Chrome-trace JSON object with a 'traceEvents' list (as torch.profiler writes it)"
_EDGE_BYTES = 1 << 20
_ON_DEVICE_TIMELINE = (KERNEL, MEMCPY, MEMSET, SYNC, GPU_ANNOTATION)  # events that carry a `stream`
_CATEGORIES = {**KIND_BY_CATEGORY, **{k.capitalize(): v for k, v in KIND_BY_CATEGORY.items()}}


class _EdgeReader:
    """File wrapper that remembers the first MiB and the last two chunks it handed out."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw, self.head, self.tail, self.bytes_read = raw, b"", b"", 0
        self._last = b""

    def read(self, size: int = -1) -> bytes:
        chunk = self.raw.read(size)
        self.bytes_read += len(chunk)
        if len(self.head) < _EDGE_BYTES:
            self.head += chunk[: _EDGE_BYTES - len(self.head)]
        if chunk:  # the last two chunks: at least one read buffer (1 MiB) of the file's end
            self.tail, self._last = self._last + chunk, chunk
        return chunk


class _Columns:
    """Typed, append-only columns plus the name and id interning tables."""

    def __init__(self) -> None:
        self.kind, self.name_id = array("b"), array("i")
        self.ts, self.dur = array("d"), array("d")
        self.pid, self.tid, self.stream = array("q"), array("q"), array("q")
        self.corr, self.ext, self.nbytes = array("q"), array("q"), array("q")
        self.names: dict[str, int] = {}
        self.labels: dict[str, int] = {}  # non-numeric pid/tid strings -> negative ids
        self.negative_dur = self.bad = 0

    def ident(self, value: Any) -> int:
        if isinstance(value, int):
            return value
        text = str(value)
        if text.lstrip("-").isdigit():
            return int(text)
        return self.labels.setdefault(text, -2 - len(self.labels))

    def add(self, event: dict[str, Any], kind: int) -> None:
        try:
            ts, dur = float(event["ts"]), float(event.get("dur", 0.0))
        except (KeyError, TypeError, ValueError):
            self.bad += 1
            return
        if dur < 0:
            self.negative_dur, dur = self.negative_dur + 1, 0.0
        name = str(event.get("name", ""))
        nid = self.names.get(name)
        if nid is None:
            nid = self.names[name] = len(self.names)
        args = event.get("args") or {}
        self.kind.append(kind)
        self.name_id.append(nid)
        self.ts.append(ts)
        self.dur.append(dur)
        self.pid.append(self.ident(event.get("pid", -1)))
        tid = self.ident(event.get("tid", -1))
        self.tid.append(tid)
        self.stream.append(self.ident(args.get("stream", tid)) if kind in _ON_DEVICE_TIMELINE else -1)
        self.corr.append(int(args.get("correlation", -1)))
        self.ext.append(int(args.get("External id", args.get("external id", -1))))
        self.nbytes.append(int(args.get("bytes", -1)))


def _open(path: Path) -> IO[bytes]:
    try:
        raw = path.open("rb")
    except OSError as exc:
        raise TraceFormatError(f"cannot read trace {path}: {exc.strerror}") from None
    magic = raw.read(2)
    raw.seek(0)
    return gzip.GzipFile(fileobj=raw, mode="rb") if magic == b"\x1f\x8b" else raw


def _parse_events(path: Path, reader: _EdgeReader, include_python: bool, prefix: str,
                  notes: DialectNotes) -> tuple[_Columns, str | None]:
    """Fill the columns (and `notes`: unknown categories, memory peaks); returns the columns and,
    if the file ended early, why."""
    cols = _Columns()
    add, categories = cols.add, _CATEGORIES
    skip = () if include_python else (KIND_BY_CATEGORY["python_function"],)
    try:
        for event in ijson.items(reader, prefix, use_float=True, buf_size=_EDGE_BYTES):
            if type(event) is not dict:
                continue
            if event.get("ph") != "X":
                if event.get("ph") == "i":
                    notes.instant(event)
                continue
            kind = categories.get(event.get("cat"))
            if kind is None:
                kind = notes.category(event.get("cat"))
            if kind is not None and kind not in skip:
                add(event, kind)
    except (ijson.IncompleteJSONError, EOFError, zlib.error) as exc:
        return cols, str(exc).strip() or type(exc).__name__
    except ijson.JSONError as exc:
        if not cols.kind:
            raise TraceFormatError(f"{path} is not JSON ({str(exc).strip()}); expected {_EXPECTED}") from None
        return cols, str(exc).strip()
    except gzip.BadGzipFile as exc:
        raise TraceFormatError(f"{path} is not a valid gzip file ({exc}); expected {_EXPECTED}") from None
    return cols, None


def _parse_fast(path: Path, include_python: bool) -> tuple[Any, Any, Any, str]:
    """(columns, reader, notes, root) from the fast path, or Nones when it cannot read the file."""
    if not fastload.available():
        return None, None, None, ""
    notes, cols = DialectNotes(), _Columns()
    skip = () if include_python else (KIND_BY_CATEGORY["python_function"],)
    try:
        with _open(path) as stream:
            root, _ = root_prefix(stream)
            reader = _EdgeReader(stream)
            fastload.parse(reader, root, cols, categories=_CATEGORIES, skip=skip, on_device=_ON_DEVICE_TIMELINE,
                           notes=notes)
    except (fastload.Unreadable, OSError, EOFError, zlib.error, gzip.BadGzipFile, TraceFormatError):
        return None, None, None, ""
    return cols, reader, notes, root


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


def _to_trace(path: Path, cols: _Columns, meta: dict[str, Any], warnings: list[str], truncated: bool) -> Trace:
    ts = np.frombuffer(cols.ts, np.float64)
    order = np.argsort(ts, kind="stable")

    def col(values: array, dtype: Any) -> np.ndarray:
        return np.frombuffer(values, dtype)[order] if len(values) else np.zeros(0, dtype)

    info = meta.get("distributedInfo") or {}
    rank = info.get("rank", 0) if isinstance(info, dict) else 0
    return Trace(
        path=str(path), names=tuple(cols.names), kind=col(cols.kind, np.int8),
        name_id=col(cols.name_id, np.int32), ts_us=col(cols.ts, np.float64),
        dur_us=col(cols.dur, np.float64), pid=col(cols.pid, np.int64), tid=col(cols.tid, np.int64),
        stream=col(cols.stream, np.int64), correlation=col(cols.corr, np.int64),
        external_id=col(cols.ext, np.int64), bytes=col(cols.nbytes, np.int64),
        rank=int(rank) if isinstance(rank, (int, str)) and str(rank).isdigit() else 0,
        metadata=meta, warnings=tuple(warnings), truncated=truncated,
    )  # fmt: skip


def load_trace(path: str | Path, *, include_python: bool = False, hta_ns_rounding: bool = False) -> Trace:
    """Load one rank's Kineto trace. Raises TraceFormatError if it is not a readable Kineto trace.

    Python-function events are dropped unless `include_python`. A file cut off mid-write gives
    the events parsed before the cut, `truncated=True` and a warning. `hta_ns_rounding` applies
    HTA's rounding of float (ns-resolution) timestamps: start rounded up and end rounded down to
    whole microseconds (hta/common/trace_parser.py `round_down_time_stamps`), for parity checks.
    """
    path = Path(path)
    cols, reader, notes, root = _parse_fast(path, include_python)
    cut = None
    if cols is None:  # the streaming parser reads what the fast path does not (trace/fastload.py)
        notes = DialectNotes()
        with _open(path) as stream:
            root, prefix = root_prefix(stream)
            reader = _EdgeReader(stream)
            cols, cut = _parse_events(path, reader, include_python, prefix, notes)
    if b'"traceEvents"' not in reader.head and not cols.kind:
        what = "an empty file" if reader.bytes_read == 0 else "no 'traceEvents' key near its start"
        raise TraceFormatError(f"{path} is not a Kineto trace ({what}); expected {_EXPECTED}")
    warnings = _load_warnings(path, cols, cut, reader.bytes_read)
    meta = _metadata(reader.head, reader.tail if cut is None else b"")
    trace = normalise(_to_trace(path, cols, meta, warnings, truncated=cut is not None), notes, root, reader.head)
    return _round_like_hta(trace) if hta_ns_rounding else trace


def _round_like_hta(trace: Trace) -> Trace:
    start, end = np.ceil(trace.ts_us), np.floor(trace.ts_us + trace.dur_us)
    return dataclasses.replace(trace, ts_us=start, dur_us=np.maximum(end - start, 0.0))


def _load_warnings(path: Path, cols: _Columns, cut: str | None, nbytes: int) -> list[str]:
    warnings = []
    if cut is not None:
        span = (max(cols.ts) - min(cols.ts)) / 1e6 if cols.ts else 0.0
        warnings.append(
            f"{path.name}: truncated trace (the file ends mid-write after {nbytes / 1e6:.1f} MB: {cut}); "
            f"analysed the {len(cols.kind)} complete events that parsed ({span:.3f} s of timeline); "
            "everything recorded after the cut is lost"
        )
    if cols.negative_dur:
        warnings.append(f"{path.name}: {cols.negative_dur} events had a negative duration; counted as 0")
    if cols.bad:
        warnings.append(f"{path.name}: {cols.bad} events had no usable 'ts'/'dur' and were skipped")
    return warnings
