"""The loader's typed, append-only columns, and the one place each field of an event is read.

Kineto writes every field with one type; other tools and hand-edited files do not. Every field is
read so that no value can raise: `ts`/`dur` must be finite numbers (or numeric strings) or the
event is skipped; a negative duration counts as 0; `args` that is not an object, and an id
(`correlation`, `External id`, `bytes`) that is not an integer, read as absent (-1); `pid`, `tid`
and `stream` that are not integers become labels (negative ids); a name that is not a string is
written as text. Each repair is counted, so the loader can say how many events it changed.
"""

from __future__ import annotations

from array import array
from collections import Counter
from typing import Any

import numpy as np

from torchdoctor.trace.events import GPU_ANNOTATION, KERNEL, MEMCPY, MEMSET, SYNC

#: Kinds of event that carry a `stream` (they sit on a device timeline).
ON_DEVICE_TIMELINE = (KERNEL, MEMCPY, MEMSET, SYNC, GPU_ANNOTATION)
_INT64 = (-(2**63), 2**63 - 1)
_NUMBER = frozenset((int, float))
#: The largest |ts| and dur read, in microseconds: 2^53 (285 years), so every time is an exact
#: float integer and no sum of a trace's times reaches infinity; Kineto's are since the epoch,
#: about 1.8e15. An event beyond it is skipped and counted like a NaN (`bad_time`).
MAX_TIME_US = float(2**53)


def number(value: Any) -> float | None:
    """A time field as a float (NaN and infinities included), or None when it is not a number."""
    if type(value) is float or (type(value) is int and _INT64[0] <= value <= _INT64[1]):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def integer(value: Any) -> int | None:
    """An id as an int64, or None when it is not one (bools, fractions, text, containers)."""
    if type(value) is int:
        return value if _INT64[0] <= value <= _INT64[1] else None
    if type(value) is float:
        return int(value) if value.is_integer() and _INT64[0] <= value <= _INT64[1] else None
    if isinstance(value, str):
        try:
            return integer(int(value))
        except ValueError:
            return None
    return None


class Columns:
    """Typed, append-only columns plus the name and label interning tables and the repair counts."""

    def __init__(self) -> None:
        self.kind, self.name_id = array("b"), array("i")
        self.ts, self.dur = array("d"), array("d")
        self.pid, self.tid, self.stream = array("q"), array("q"), array("q")
        self.corr, self.ext, self.nbytes = array("q"), array("q"), array("q")
        self.names: dict[str, int] = {}
        self.labels: dict[str, int] = {}  # non-integer pid/tid/stream values -> negative ids
        self.no_time = self.bad_time = self.negative_dur = 0
        self.odd: Counter[str] = Counter()  # field -> events whose value had the wrong type

    def extend(self, later: Columns) -> bool:
        """Append the rows of `later`, read from the text that follows this one's (the second half
        of a large trace, trace/halves.py), as if one Columns had read both: its names renumbered,
        its counts added. False when its labels would number differently: a label is stored as its
        id, and which rows hold one rather than a negative integer is not kept."""
        for i, text in enumerate(later.labels):
            if self.labels.setdefault(text, -2 - len(self.labels)) != -2 - i:
                return False
        ids = np.array([self.names.setdefault(name, len(self.names)) for name in later.names], np.int32)
        self.name_id.frombytes(ids[np.frombuffer(later.name_id, np.int32)].tobytes())
        for column in ("kind", "ts", "dur", "pid", "tid", "stream", "corr", "ext", "nbytes"):
            getattr(self, column).extend(getattr(later, column))
        self.no_time += later.no_time
        self.bad_time += later.bad_time
        self.negative_dur += later.negative_dur
        self.odd.update(later.odd)
        return True

    def ident(self, value: Any, field: str) -> int:
        """A pid/tid/stream: the integer, or a stable negative id for any other value."""
        as_int = integer(value)
        if as_int is not None:
            return as_int
        if not isinstance(value, str):
            self.odd[field] += 1
        text = value if isinstance(value, str) else repr(value)
        return self.labels.setdefault(text, -2 - len(self.labels))

    def id_arg(self, value: Any, key: str) -> int:
        """An id from `args` as an int64; -1 when absent (None) or not an integer (counted)."""
        if value is None:
            return -1
        as_int = integer(value)
        if as_int is None:
            self.odd[key] += 1
            return -1
        return as_int

    def add(self, event: dict[str, Any], kind: int) -> None:
        """Append one complete event. The common case (numbers and ints as Kineto writes them, and
        ijson yields only int64 integers) takes the fast path; any other type goes through
        `number`, `integer` or `ident`."""
        ts, dur = event.get("ts"), event.get("dur", 0.0)
        if type(ts) not in _NUMBER or type(dur) not in _NUMBER:
            ts, dur = number(ts), number(dur)
            if ts is None or dur is None:
                self.no_time += 1
                return
        if not (-MAX_TIME_US <= ts <= MAX_TIME_US and dur <= MAX_TIME_US):  # False for a NaN too
            self.bad_time += 1
            return
        if dur < 0:
            self.negative_dur, dur = self.negative_dur + 1, 0.0
        name = event.get("name", "")
        if type(name) is not str:
            self.odd["name"] += 1
            name = repr(name)
        nid = self.names.get(name)
        if nid is None:
            nid = self.names[name] = len(self.names)
        args = event.get("args")
        if type(args) is not dict:
            if args is not None:
                self.odd["args"] += 1
            args = {}
        pid, tid = event.get("pid", -1), event.get("tid", -1)
        tid = tid if type(tid) is int else self.ident(tid, "tid")
        self.kind.append(kind)
        self.name_id.append(nid)
        self.ts.append(ts)
        self.dur.append(dur)
        self.pid.append(pid if type(pid) is int else self.ident(pid, "pid"))
        self.tid.append(tid)
        if kind in ON_DEVICE_TIMELINE:
            stream = args.get("stream", tid)
            self.stream.append(stream if type(stream) is int else self.ident(stream, "stream"))
        else:
            self.stream.append(-1)
        corr = args.get("correlation")
        self.corr.append(corr if type(corr) is int else self.id_arg(corr, "correlation"))
        ext = args.get("External id", args.get("external id"))
        self.ext.append(ext if type(ext) is int else self.id_arg(ext, "External id"))
        nbytes = args.get("bytes")
        self.nbytes.append(nbytes if type(nbytes) is int else self.id_arg(nbytes, "bytes"))
