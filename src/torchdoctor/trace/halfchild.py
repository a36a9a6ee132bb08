"""The child process of trace/halves.py: it reads the second half of a large plain trace and writes
what it read to stdout, pickled (its own module, so that the loader, which starts it, and this
module, which reads through the loader, do not import each other)."""

from __future__ import annotations

import pickle
import signal
import sys
from pathlib import Path

from torchdoctor.process.lifeline import die_with_parent
from torchdoctor.trace.loader import second_half


def main(argv: list[str]) -> int:
    """Read bytes [split, end) of the file (argv: path, split, include_python as 0 or 1, the
    loader's pid) and write (columns, notes, bytes read), or None when the fast path cannot read
    them exactly. Killed should the loader die first (Ctrl-C, SIGTERM or SIGKILL of torchdoctor):
    what it reads is for nobody then."""
    die_with_parent(signal.SIGKILL, int(argv[3]))
    path, split, include_python = Path(argv[0]), int(argv[1]), argv[2] == "1"
    half = second_half(path, split, include_python)
    out = sys.stdout.buffer
    pickle.dump(None if half is None else (half.cols, half.notes, half.bytes_read), out, pickle.HIGHEST_PROTOCOL)
    out.flush()
    return 0
