"""An asyncio event loop on a virtual clock, so that batching tests do not depend on how fast (or
how loaded) the machine running them is.

* `loop.time()` starts at 0 and moves only when nothing is ready to run: the loop then jumps to
  its next timer (an `asyncio.sleep`, a `wait_for` deadline) at once. Everything due at one
  virtual instant runs before time moves on, and no test waits in real time.
* `loop.run_in_executor(executor, fn, *args)` calls `fn` at once in the loop's thread and
  completes its future `seconds` of virtual time later, where `seconds` is what `fn` declared
  with `model_time(seconds)` (0 by default: the next loop turn). Timers due meanwhile (timeouts,
  arrivals) run at their own virtual times, as they would while a real worker thread ran.

Give the code under test `loop.time` as its clock; `run_virtual(coro)` runs a coroutine on a
fresh loop.
"""

from __future__ import annotations

import asyncio
import selectors
from typing import Any, Callable, Coroutine, TypeVar

T = TypeVar("T")


class _JumpingSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """Polls real I/O without blocking; when there is none, advances the loop's clock by the
    timeout the loop asked to wait (the time to its next timer) instead of sleeping."""

    def __init__(self, loop: VirtualTimeLoop) -> None:
        super().__init__()
        self._loop = loop

    def select(self, timeout: float | None = None) -> list:
        if timeout is None:  # no timer at all: only another thread can wake the loop; wait for it
            return super().select(None)
        events = super().select(0)
        if not events and timeout > 0:
            self._loop.advance(timeout)
        return events


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        self._now = 0.0
        self._model_s = 0.0
        super().__init__(_JumpingSelector(self))

    def time(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += seconds

    def take(self, seconds: float) -> None:
        """Called by a function running under `run_in_executor`: it lasts `seconds` more."""
        self._model_s += seconds

    def run_in_executor(self, executor: Any, func: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        future: asyncio.Future[T] = self.create_future()
        self._model_s = 0.0
        try:
            result = func(*args)
        except Exception as exc:  # delivered through the future, as a real executor does
            self.call_later(self._model_s, _settle, future, None, exc)
        else:
            self.call_later(self._model_s, _settle, future, result, None)
        return future


def _settle(future: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


def model_time(seconds: float) -> None:
    """Inside a function run by a VirtualTimeLoop's executor: the call takes `seconds`."""
    loop = asyncio.get_running_loop()
    assert isinstance(loop, VirtualTimeLoop), "model_time() needs a VirtualTimeLoop"
    loop.take(seconds)


def run_virtual(main: Coroutine[Any, Any, T]) -> T:
    """Run `main` to completion on a fresh VirtualTimeLoop."""
    loop = VirtualTimeLoop()
    try:
        return loop.run_until_complete(main)
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
