"""Writing a file the user asked for (`--json`, `--html`, `-o`): whole or not at all.

The bytes go to a temporary file in the target's own folder, are flushed to disk, and the temporary
file is renamed over the target (one atomic step on POSIX): a full disk or a failed write leaves
the previous file, or none, never a truncated one. A failure is an OutputError that names the
output and the reason, so the command can finish its other outputs first and then say which one
failed (exit code 5).
"""

from __future__ import annotations

import dataclasses
import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable

import orjson

from torchdoctor.errors import TorchDoctorError

#: The exit code of a command whose report was made but an output file could not be written.
OUTPUT_EXIT_CODE = 5


class OutputError(TorchDoctorError):
    """An output file could not be written; the message names it and says why."""

    exit_code = OUTPUT_EXIT_CODE


def write_atomic(path: str | Path, data: bytes | Iterable[bytes], *, what: str = "output") -> Path:
    """Write `data` to `path` through a temporary file renamed over it; OutputError (naming
    `what`, e.g. "--json") when it cannot be. `data` is the bytes, or their pieces in order (a
    report of many ranks, written without holding it whole); a piece that raises leaves nothing at
    `path`. A folder is refused; a device or pipe the user named (/dev/stdout, /dev/full, a
    shell's `>(...)`) is written in place, as no rename can replace it."""
    path = Path(path)
    chunks = (data,) if isinstance(data, (bytes, bytearray, memoryview)) else data
    try:
        if _is_special(path):
            with path.open("wb") as handle:
                for chunk in chunks:
                    handle.write(chunk)
            return path
        mode = _mode_for(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise OutputError(f"cannot write {what} {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), mode)
            for chunk in chunks:
                handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        _remove(temporary)
        raise OutputError(f"cannot write {what} {path}: {exc.strerror or exc} (nothing was written there)") from None
    except BaseException:
        _remove(temporary)
        raise
    return path


def _is_special(path: Path) -> bool:
    """True for an existing device or pipe; IsADirectoryError for a folder."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "it is a directory")
    return not stat.S_ISREG(mode)


def _mode_for(path: Path) -> int:
    """The mode the file keeps (a file replaced keeps its own; a new one gets what open() would
    give it); PermissionError for a read-only file, which a rename would otherwise replace."""
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        return 0o666 & ~_umask()
    if not os.access(path, os.W_OK):
        raise PermissionError(errno.EACCES, "the file is read-only")
    return mode


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _remove(temporary: str) -> None:
    try:
        os.unlink(temporary)
    except OSError:
        pass  # already gone: nothing is left behind either way


def dumps_json(obj: Any, *, option: int = 0, default: Callable[[Any], Any] | None = None) -> bytes:
    """orjson.dumps(obj), and where orjson cannot encode a value, the value made encodable instead
    of an error that would lose the whole document: a string holding surrogates (a non-UTF-8 file
    name or argument, as the OS hands it to Python) with its odd bytes written as `\\xNN`, an
    integer beyond 64 bits as a float (or its decimal text where no float holds it)."""
    try:
        return orjson.dumps(obj, option=option, default=default)
    except orjson.JSONEncodeError:
        return orjson.dumps(_encodable(obj, default), option=option, default=default)


def _encodable(obj: Any, default: Callable[[Any], Any] | None) -> Any:
    """`obj` with its strings, integers and keys made encodable, containers walked (by hand:
    orjson has no hook for a value it supports but cannot encode)."""
    if isinstance(obj, str):
        return encodable_text(obj)
    if isinstance(obj, int) and not isinstance(obj, bool) and not -2**63 <= obj < 2**64:
        return _big_int(obj)
    if isinstance(obj, dict):
        return {encodable_text(str(k)) if not isinstance(k, str) else encodable_text(k): _encodable(v, default) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [_encodable(v, default) for v in obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _encodable(dataclasses.asdict(obj), default)
    if default is not None and not _orjson_native(obj):
        return _encodable(default(obj), default)
    return obj


def encodable_text(text: str) -> str:
    """`text` as valid UTF-8: bytes the OS could not decode (surrogate-escaped, as in a file name
    from another system) written as `\\xNN`, for JSON and SQLite, which take UTF-8 only."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        try:  # bytes the OS could not decode come back as they were, then shown as \xNN
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # a lone surrogate from elsewhere
            return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _big_int(value: int) -> float | str:
    try:
        return float(value)
    except OverflowError:
        return str(value)


def _orjson_native(obj: Any) -> bool:
    """A value orjson encodes by itself (numbers, None, and numpy arrays or scalars under
    OPT_SERIALIZE_NUMPY), which `default` must not see."""
    return obj is None or isinstance(obj, (bool, int, float)) or type(obj).__module__ == "numpy"
