"""Reading a CUDA memory snapshot pickle without trusting it.

`torch.cuda.memory._dump_snapshot` writes a pickle of dicts, lists, strings and numbers. A pickle
is a program for a stack machine, and even one that builds nothing but data can make the C
unpickler allocate what it declares: `LONG_BINPUT` with index 2**28 resizes the memo table to
that many slots (a 9-byte file took 4 GB). So the bytes are first walked opcode by opcode (no
object is built) and refused, with the byte offset, when an opcode:
- would import or call anything (GLOBAL, REDUCE, BUILD, ...: nothing in a snapshot needs them);
- declares a length beyond the end of the file;
- stores into a memo slot beyond the number of opcodes read so far (a real pickle numbers them in
  order, so the memo can never grow past twice the file's opcode count).
Only then does the C unpickler (with a `find_class` that refuses everything) build the value, and
the value is checked against the shape the analysis reads (`check_shape`), so any malformed file
ends in a SnapshotFormatError, never in another exception.
"""

from __future__ import annotations

import io
import pickle
import pickletools
from typing import Any

from torchdoctor.errors import TorchDoctorError


class SnapshotFormatError(TorchDoctorError):
    """A file is not a readable torch memory snapshot (truncated, another format, no history)."""


_CODE = {"GLOBAL", "STACK_GLOBAL", "REDUCE", "BUILD", "INST", "OBJ", "NEWOBJ", "NEWOBJ_EX", "PERSID",
         "BINPERSID", "EXT1", "EXT2", "EXT4", "NEXT_BUFFER", "READONLY_BUFFER"}  # fmt: skip
_NAMES = {ord(op.code.encode("latin-1")): op.name for op in pickletools.opcodes}
# How the scan steps over each opcode's argument: a size >= 0 is a fixed width; the negative codes
# below are a length prefix, a text line, a memo store, the end, or refusal (code, unknown).
_LEN1, _LEN4, _LEN4U, _LEN8U, _LINE, _PUT_LINE, _PUT4, _STOP, _REFUSE = range(-1, -10, -1)
_LENGTH_CODES = {pickletools.TAKEN_FROM_ARGUMENT1: _LEN1, pickletools.TAKEN_FROM_ARGUMENT4: _LEN4,
                 pickletools.TAKEN_FROM_ARGUMENT4U: _LEN4U, pickletools.TAKEN_FROM_ARGUMENT8U: _LEN8U,
                 pickletools.UP_TO_NEWLINE: _LINE}  # fmt: skip
_STEP = [_REFUSE] * 256
for _op in pickletools.opcodes:
    if _op.name not in _CODE:
        _n = _op.arg.n if _op.arg else 0
        _STEP[ord(_op.code.encode("latin-1"))] = _n if _n >= 0 else _LENGTH_CODES[_n]
_STEP[ord("p")], _STEP[ord("r")], _STEP[ord(".")] = _PUT_LINE, _PUT4, _STOP  # BINPUT's slot is < 256
_INT64 = (-(2**63), 2**63 - 1)


class _DataOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}")


def scan(data: bytes) -> None:
    """Walk the opcodes of one pickle; ValueError (with the byte offset) at the first one that
    could run code, read past the end, or store into a memo slot beyond its own offset (each
    opcode is at least one byte, so a real pickle's slots never pass it)."""
    step, pos, end = _STEP, 0, len(data)
    while pos < end:
        size = step[data[pos]]
        pos += 1
        if size >= 0:  # most opcodes: none or a fixed-width argument
            pos += size
        elif size == _LEN1:  # short strings and bytes: the other common case
            pos += 1 + data[pos] if pos < end else 1
        elif size == _PUT4 and int.from_bytes(data[pos : pos + 4], "little") <= pos:  # LONG_BINPUT, in order
            pos += 4
        elif size == _STOP:
            return
        else:
            pos = _step_slowly(data, pos - 1, size)
    if pos > end:
        raise ValueError(f"the last opcode reads past the end of the file (truncated at byte {end:,})")
    raise ValueError("the pickle ends without STOP (truncated)")


def _step_slowly(data: bytes, at: int, size: int) -> int:
    """The offset after the opcode at `at` whose step is a length, a text line, a memo store or
    a refusal."""
    name, pos = _NAMES.get(data[at], f"unknown opcode {data[at]:#04x}"), at + 1
    if size == _REFUSE:
        raise ValueError(f"refusing to load a pickle that runs code ({name} at byte {at:,})" if data[at] in _NAMES
                         else f"{name} at byte {at:,}")
    if size in (_LINE, _PUT_LINE):
        stop = data.find(b"\n", pos)
        if stop < 0:
            raise ValueError(f"{name} at byte {at:,} has no end of line (truncated)")
        arg, after = data[pos:stop], stop + 1
    else:
        width = {_LEN4: 4, _LEN4U: 4, _LEN8U: 8, _PUT4: 4}[size]
        arg = data[pos : pos + width]
        length = 0 if size == _PUT4 else int.from_bytes(arg, "little", signed=size == _LEN4)
        if length < 0:
            raise ValueError(f"{name} at byte {at:,} has a negative length")
        after = pos + width + length
    if after > len(data):
        raise ValueError(f"{name} at byte {at:,} reads past the end of the file (truncated)")
    if size in (_PUT_LINE, _PUT4):
        if size == _PUT_LINE and not arg.strip().isdigit():
            raise ValueError(f"{name} at byte {at:,} has no slot number")
        slot = int(arg.strip()) if size == _PUT_LINE else int.from_bytes(arg, "little")
        if slot > at:
            raise ValueError(f"{name} at byte {at:,} stores into memo slot {slot:,}, beyond any a pickle of "
                             f"{at:,} bytes can fill")
    return after


def unpickle(data: bytes, where: str) -> Any:
    """The value of a data-only pickle, or SnapshotFormatError saying why it is not one."""
    try:
        scan(data)
        return _DataOnly(io.BytesIO(data)).load()
    except Exception as exc:  # noqa: BLE001 - whatever the bytes make the unpickler raise is a format error
        raise SnapshotFormatError(f"{where}: not a readable memory snapshot (truncated or another format: "
                                  f"{exc}); write it again with `torchdoctor memory --snapshot`") from None


def check_shape(data: Any, where: str) -> dict[str, Any]:
    """`data` once every part the analysis reads has the type it reads it as.

    Each segment, block list, device trace and trace entry must be its own object: torch never
    shares them, and a file that did could make the analysis walk one list a million times.
    Frame lists and frames may be shared (torch shares identical stacks); the analysis reads
    each distinct one once.
    """
    if not isinstance(data, dict) or not isinstance(data.get("segments"), list):
        raise SnapshotFormatError(f"{where}: not a torch memory snapshot (no 'segments' list)")
    traces = data.get("device_traces")
    if not isinstance(traces, list) or not any(isinstance(t, list) and t for t in traces):
        raise SnapshotFormatError(f"{where}: the snapshot has no allocation history; record it with "
                                  "`torchdoctor memory --snapshot` (memory history on)")  # fmt: skip
    seen: set[int] = set()
    frames_seen: set[int] = set()
    for i, segment in enumerate(data["segments"]):
        _once(segment, dict, f"segments[{i}]", seen, where)
        _field(segment, "device", int, f"segments[{i}]", where)
        blocks = segment.get("blocks", [])
        _once(blocks, list, f"segments[{i}].blocks", seen, where)
        for j, block in enumerate(blocks):
            _once(block, dict, f"segments[{i}].blocks[{j}]", seen, where)
            _field(block, "size", int, f"segments[{i}].blocks[{j}]", where, required=True)
            _field(block, "state", str, f"segments[{i}].blocks[{j}]", where)
    for d, trace in enumerate(traces):
        _once(trace, list, f"device_traces[{d}]", seen, where)
        for k, event in enumerate(trace):
            _check_event(event, f"device_traces[{d}][{k}]", seen, frames_seen, where)
    return data


def _check_event(event: Any, name: str, seen: set[int], frames_seen: set[int], where: str) -> None:
    _once(event, dict, name, seen, where)
    _field(event, "action", str, name, where)
    action = event.get("action")
    _field(event, "addr", int, name, where, required=action in ("alloc", "free_completed"))
    _field(event, "size", int, name, where, required=action == "alloc")
    _field(event, "time_us", (int, float), name, where)
    frames = event.get("frames", [])
    if not isinstance(frames, list):
        raise SnapshotFormatError(f"{where}: {name}.frames is not a list")
    if id(frames) in frames_seen:
        return
    frames_seen.add(id(frames))
    for frame in frames:
        if not isinstance(frame, dict) or not all(_frame_value(frame.get(k)) for k in ("filename", "line", "name")):
            raise SnapshotFormatError(f"{where}: {name}.frames holds a frame that is not "
                                      "{filename, line, name} of strings and numbers")


def _frame_value(value: Any) -> bool:
    if isinstance(value, int) and not isinstance(value, bool):
        return _INT64[0] <= value <= _INT64[1]
    return value is None or isinstance(value, str)


def _once(value: Any, kind: type, name: str, seen: set[int], where: str) -> None:
    if not isinstance(value, kind):
        raise SnapshotFormatError(f"{where}: {name} is not a {'list' if kind is list else 'dict'}")
    if id(value) in seen:
        raise SnapshotFormatError(f"{where}: {name} is the same object as an earlier part; torch never "
                                  "writes that, so the file was made by hand")
    seen.add(id(value))


def _field(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], name: str, where: str, *,
           required: bool = False) -> None:
    value = obj.get(key)
    if value is None and not required:
        return
    out_of_range = isinstance(value, int) and not (_INT64[0] <= value <= _INT64[1] and (key != "size" or value >= 0))
    if not isinstance(value, kind) or isinstance(value, bool) or out_of_range:
        shown = repr(value)[:60] if isinstance(value, (float, str)) else f"a {type(value).__name__}"
        if out_of_range:
            shown = "an integer out of range" if key != "size" or value >= 0 else "negative"
        raise SnapshotFormatError(f"{where}: {name}.{key} is {shown}, not what a snapshot holds there")
