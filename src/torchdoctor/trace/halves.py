"""A large plain trace read in two processes, one half each, to use a second core.

Guarding, decoding and building the columns (trace/fastload.py) cost about 2 us per event on one
core, and a 1 GB trace holds 5 million events. So a plain file of at least MIN_BYTES is cut at the
first event after its middle (HEAD_START bytes after it): a child process (trace/halfchild.py: the
same interpreter started afresh, so that no state of the caller, threads or CUDA included, is
forked) reads the second half while the loader reads the first, and the child's columns, received
while the loader still reads, are appended to the loader's (Columns.extend, DialectNotes.extend) as
if one process had read the whole file.

The result is what one process gives, or the file is read again in one process:
- the cut is only a candidate (`}, {"` may end a string): it stands when the loader's own guard
  ends its half between two events of the event list (JsonGuard.between_items), the state the
  child's guard starts in (JsonGuard.resume), so every byte passes the same bounds as in one process;
- a half the fast path cannot read exactly, a bound broken in either half (the one-process reading
  then says where), or labels and bounded counts that do not merge exactly: the loader reads the
  file again in one process, which decides as it always has;
- a child that fails otherwise (killed, out of memory, a crash) raises TraceLoadError, with its
  last words; one that cannot start leaves the file to one process.
The child is killed when the loader stops early (an error, Ctrl-C). Gzip files are not split: a
stream cannot be entered in its middle. TORCHDOCTOR_TRACE_PARSER=serial keeps to one process.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import torchdoctor
from torchdoctor.errors import TraceLoadError
from torchdoctor.inputs import open_regular
from torchdoctor.trace import fastload
from torchdoctor.trace.columns import Columns
from torchdoctor.trace.dialect import DialectNotes

#: Smaller files are read in one process: starting the child (0.3 s) would cost more than it saves.
MIN_BYTES = 64 << 20
_FIND_BYTES = 1 << 20  # how far after the middle the first event is looked for
#: The loader's half is longer by this much (at most a sixteenth of the file): the child starts about
#: 0.3 s later (a fresh interpreter importing numpy and msgspec) and then sends its columns (0.3 s for
#: the 1 GB trace's). With equal halves the loader waited 0.44 s for them; with 16 MB (0.3 s of reading
#: at 55 MB/s) moved to the loader, the child finishes first and the loader waited about 0.2 s.
HEAD_START = 16 << 20
_CHILD = "import sys; from torchdoctor.trace.halfchild import main; sys.exit(main(sys.argv[1:]))"
_SRC = str(Path(torchdoctor.__file__).resolve().parents[1])  # so the child imports this torchdoctor


def usable_cpus() -> int:
    """The CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def enabled() -> bool:
    """At least two CPUs, and TORCHDOCTOR_TRACE_PARSER does not ask for one process (`serial`)."""
    return usable_cpus() >= 2 and os.environ.get("TORCHDOCTOR_TRACE_PARSER", "") != "serial"


def split_point(path: Path) -> int | None:
    """Where the second half starts: the first event after the middle (plus HEAD_START) of a plain
    file of at least MIN_BYTES; None for a smaller or gzip file, or when no event starts near there."""
    try:
        size = path.stat().st_size
        if size < MIN_BYTES:
            return None
        with open_regular(path) as f:
            if f.read(2) == b"\x1f\x8b":
                return None
            middle = size // 2 + min(HEAD_START, size // 16)
            f.seek(middle)
            at = fastload.next_event(f.read(_FIND_BYTES))
    except OSError:
        return None
    return None if at is None else middle + at


def file_tail(path: Path, size: int, read_bytes: int) -> bytes:
    """The file's last two reads of `read_bytes` counted from its start: the tail a reader that read
    the whole file remembers (its trailing metadata), which the two halves' readers do not hold."""
    start = max(0, (-(-size // read_bytes) - 2) * read_bytes)
    with open_regular(path) as f:
        f.seek(start)
        return f.read(size - start)


@dataclass
class Half:
    """What the child read: the second half's columns and notes, and how many bytes it read."""

    cols: Columns
    notes: DialectNotes
    bytes_read: int


class Child:
    """The process reading the second half (`start` it); leaving its `with` block kills it unless
    its result was taken, so an error or Ctrl-C in the loader leaves no process behind."""

    def __init__(self, path: Path, split: int, proc: subprocess.Popen[bytes], errors: Any) -> None:
        self.path, self.split, self.proc, self.errors = path, split, proc, errors
        self._payload: Any = ()  # what the child wrote, () until it is read whole
        self._failure: Exception | None = None  # an unexpected error while reading it, raised by `result`
        # Read as it arrives, while the loader still reads its own half: the pipe holds 64 KiB, so a
        # child done first would wait for the loader, which then spent 0.26 s receiving 120 MB of
        # columns (1 GB trace). The thread waits in read() without the GIL, so the loader keeps its core.
        self._reader = threading.Thread(target=self._read, name="torchdoctor-second-half", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            self._payload = pickle.load(self.proc.stdout)  # our own child's output, over a private pipe
        except (EOFError, pickle.UnpicklingError):
            pass  # the payload stays (): `result` reports the child as failed
        except Exception as exc:  # any other: handed to the loader's thread, which raises it in `result`
            self._failure = exc

    @classmethod
    def start(cls, path: Path, split: int, include_python: bool) -> Child | None:
        """The child, started; None when it cannot be (no interpreter to run, no process left)."""
        errors = tempfile.TemporaryFile()  # a file, not a pipe: a child that writes much cannot block
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (_SRC, os.environ.get("PYTHONPATH"))))}
        try:
            proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(path), str(split), str(int(include_python)),
                                     str(os.getpid())],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors, env=env)
        except (OSError, ValueError):
            errors.close()
            return None
        return cls(path, split, proc, errors)

    def __enter__(self) -> Child:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._reader.join()  # it ends at the pipe's end, which the child's exit closes
        self.proc.stdout.close()
        self.errors.close()

    def result(self) -> Half | None:
        """The second half, None when it cannot be read exactly; TraceLoadError when the child fails."""
        self._reader.join()
        if self._failure is not None:
            raise self._failure
        payload = self._payload
        code = self.proc.wait()
        if code != 0 or payload == ():
            raise TraceLoadError(f"{self.path}: the process reading its second half (from byte {self.split:,}) "
                                 f"failed ({_how(code)}){self._last_words()}; TORCHDOCTOR_TRACE_PARSER=serial "
                                 "reads the file in one process")
        return None if payload is None else Half(*payload)

    def _last_words(self) -> str:
        self.errors.seek(0)
        lines = self.errors.read().decode("utf-8", "replace").strip().splitlines()
        return f": {lines[-1]}" if lines else ""


def _how(code: int) -> str:
    return f"killed by signal {-code}" if code < 0 else f"exit status {code}"
