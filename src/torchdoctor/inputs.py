"""Opening a file someone gave torchdoctor: regular files only, read within a byte bound.

A FIFO blocks `open()` until a writer comes (forever, when none does), and a device or a /proc
file does not have the size `st_size` says (/dev/zero is endless at size 0). So a file is opened
without blocking, checked to be a regular file on the open descriptor (no race with a rename), and
read with a cap on the bytes actually read, never on the size the file system reports. The errors
are `OSError`s with a `strerror` that says what was wrong, so every reader's existing "cannot read
X: <strerror>" message covers them.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path
from typing import BinaryIO

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


class NotRegularFileError(OSError):
    """The path is a directory, FIFO, socket or device, not a file's bytes."""


class InputTooLargeError(OSError):
    """The file holds more bytes than its reader accepts."""


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words ("a FIFO")."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def open_regular(path: str | Path) -> BinaryIO:
    """`path` opened for binary reading; NotRegularFileError (before any blocking open) when it is
    not a regular file, another OSError when it cannot be opened."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        _refuse_non_regular(os.stat(path).st_mode, path)  # a socket cannot be opened at all
        raise
    try:
        _refuse_non_regular(os.fstat(fd).st_mode, path)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _refuse_non_regular(mode: int, path: str | Path) -> None:
    if not stat.S_ISREG(mode):
        raise NotRegularFileError(errno.EINVAL, f"{file_kind(mode)}, not a regular file", str(path))


def read_capped(path: str | Path, limit: int) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them: InputTooLargeError when it
    holds more (found by reading one byte past the limit, whatever its reported size)."""
    with open_regular(path) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise InputTooLargeError(errno.EFBIG, f"larger than {limit:,} bytes, the most this reader accepts", str(path))
    return data
