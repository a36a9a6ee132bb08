"""Stop signals in torchdoctor's own process: SIGINT, SIGTERM and SIGHUP are passed on to the
script while it runs, and held (recorded, never raised) while torchdoctor saves what it measured.

Why: the script runs in its own process group (launch.child), so a signal sent to torchdoctor
alone (`kill -TERM`, Ctrl-C, a terminal closing) reaches the script only through us; and once the
script has ended, a stop must not cost the Record: a KeyboardInterrupt raised in the middle of the
analysis used to lose the store entry and the --json of a run that had been measured.

Signal handlers are process-wide, so there is one set of them: `held_stops()` installs them
(re-entrant; only the main thread can, elsewhere it is a no-op), `forwarding(send)` routes them to
a running child. A command reads its StopLog at the end to choose its exit status.
"""

from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Callable, Iterator

from torchdoctor.process.signals import signal_name

STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass(slots=True)
class StopLog:
    """The stop signals one command received: passed on to its script, or held while it saved."""

    forwarded: list[int] = field(default_factory=list)
    held: list[int] = field(default_factory=list)

    @property
    def requested(self) -> bool:
        return bool(self.forwarded or self.held)

    @property
    def first(self) -> int | None:
        """The first stop signal received, forwarded or held."""
        return (self.forwarded or self.held or [None])[0]

    def exit_status(self, status: int) -> int:
        """The command's exit status: `status` (the Record's), unless that is 0 and a stop arrived
        after the script ended; then 128 + the signal, as a shell reports a stopped command."""
        if status or not self.held:
            return status
        return 128 + self.held[0]


class _Handlers:
    """The one installed set of handlers and where they send a signal."""

    def __init__(self) -> None:
        self.depth = 0
        self.log = StopLog()
        self.forward: Callable[[int], None] | None = None
        self.previous: dict[int, object] = {}

    def handle(self, signum: int, frame: FrameType | None) -> None:
        if self.forward is not None:
            self.log.forwarded.append(signum)
            self.forward(signum)
            return
        self.log.held.append(signum)
        if len(self.log.held) == 1:
            try:
                sys.stderr.write(f"torchdoctor: {signal_name(signum)} received; saving what was measured, "
                                 "then stopping\n")
                sys.stderr.flush()
            except (OSError, ValueError):  # the terminal is gone (SIGHUP): the saving matters more
                pass


_HANDLERS = _Handlers()


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def held_stops() -> Iterator[StopLog]:
    """Within: stop signals are passed on to a child started under `forwarding`, and otherwise
    recorded in the yielded StopLog instead of ending the process. Nested uses share one log."""
    if not _main_thread():
        yield StopLog()
        return
    handlers = _HANDLERS
    if handlers.depth == 0:
        handlers.log = StopLog()
        handlers.previous = {sig: signal.signal(sig, handlers.handle) for sig in STOP_SIGNALS}
    handlers.depth += 1
    try:
        yield handlers.log
    finally:
        handlers.depth -= 1
        if handlers.depth == 0:
            for sig, previous in handlers.previous.items():
                signal.signal(sig, previous)  # type: ignore[arg-type]


@contextmanager
def forwarding(send: Callable[[int], None]) -> Iterator[StopLog]:
    """Within (it holds stops itself): every stop signal is given to `send` (which passes it to
    the running child) and logged as forwarded. Outside the main thread nothing is installed."""
    if not _main_thread():
        yield StopLog()
        return
    with held_stops() as log:
        before, _HANDLERS.forward = _HANDLERS.forward, send
        try:
            yield log
        finally:
            _HANDLERS.forward = before
