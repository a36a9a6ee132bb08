"""What one file may cost lint: a size read before parsing, and CPU time while it is analysed.

Generated modules (tables of constants, long lists of assignments, a huge dict literal) are common
in real repositories and say nothing about a training loop. Their syntax tree costs about a
kilobyte of memory per byte of source, so a file larger than :data:`MAX_PARSED_BYTES` is not
parsed at all (the memory bound). A file under it is analysed, tokenizer pass, parse and checks,
within :data:`FILE_SECONDS` of the process's CPU time (the time bound): past it the analysis is
abandoned and the file skipped with a note; the other files are linted.

The clock is the process's CPU time (`ITIMER_PROF`), not the wall clock: a busy machine does not
skip a file that a quiet one lints. It is set where Python allows it, the main thread of a Unix
process whose CPU timer is free (a profiler may hold it); elsewhere only the size bound
applies. The parser itself is one call into native code that a timer cannot interrupt: the size
bound keeps that call to a few seconds.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: The largest source parsed: its syntax tree and name tables peak near 500 MB. Hand-written
#: training code stays far below; above it a file is skipped, not parsed.
MAX_PARSED_BYTES = 512 * 1024
#: CPU seconds one file's analysis may take by default (a typical training script takes 0.05 s;
#: a generated file of 8,000 flagged statements about 10 s).
FILE_SECONDS = 10.0


class OverBudget(BaseException):
    """The file's analysis ran past its CPU time. A BaseException, like KeyboardInterrupt, so that
    no `except Exception` in the parser or the checks swallows it."""


def too_large(source: str) -> str | None:
    """Why `source` is not parsed (larger than :data:`MAX_PARSED_BYTES`), or None."""
    size = len(source.encode("utf-8", "surrogatepass"))
    if size <= MAX_PARSED_BYTES:
        return None
    return (
        f"too large to analyse ({size // 1024} KiB, at most {MAX_PARSED_BYTES // 1024} KiB "
        "are parsed; generated code?); skipped"
    )


def too_slow(seconds: float) -> str:
    """The note of a file whose analysis ran past `seconds` of CPU time."""
    return f"too slow to analyse within {seconds:g} s of CPU time (generated code?); skipped"


@contextmanager
def cpu_budget(seconds: float) -> Iterator[None]:
    """Raise :class:`OverBudget` in the body once it has used `seconds` of the process's CPU
    time (only where a timer can be set: see the module docstring). A timer set before is put
    back afterwards."""
    if not _timer_free():
        yield
        return
    previous = signal.signal(signal.SIGPROF, _over_budget)
    earlier = signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        try:
            signal.setitimer(signal.ITIMER_PROF, *earlier)
        finally:  # a signal due just before the timer stopped may raise here: restore regardless
            signal.signal(signal.SIGPROF, previous)


def _timer_free() -> bool:
    """The CPU timer can be set here and nothing else handles its signal (a profiler may)."""
    return (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGPROF) == signal.SIG_DFL
    )


def _over_budget(signum: int, frame: object) -> None:
    raise OverBudget
