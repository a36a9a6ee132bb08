"""One task per item in a pool of worker processes, each task retried once if its worker dies.

concurrent.futures' ProcessPoolExecutor places the tasks; its workers are started with the
'spawn' method (a fresh interpreter: no thread, lock or CUDA state of the caller is forked, as in
trace/halves.py). A worker that dies (killed, out of memory) breaks the whole pool, and every task
it held fails with BrokenProcessPool without saying which one killed it. So each worker tells the
caller which task it starts: the unfinished tasks that never started run again in a fresh pool,
and those that had started are each retried once in a pool of their own (`jobs` such pools at a
time), where a second death can only be the task's own, and is reported as its outcome. A task that
raises is not retried: its exception is its outcome. Nothing waits without a bound on a dead worker:
the executor notices a worker's death and fails its futures.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor, as_completed, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import psutil

from torchdoctor.trace import halves
from torchdoctor.process.lifeline import die_with_parent

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Outcome(Generic[R]):
    """A task's result, or why it has none (`error`: the exception it raised, or its worker's death)."""

    value: R | None = None
    error: BaseException | None = None


def default_jobs() -> int:
    """The physical cores this process may use (logical ones where psutil cannot tell)."""
    usable = halves.usable_cpus()
    return max(1, min(usable, psutil.cpu_count(logical=False) or usable))


def run_each(fn: Callable[[T], R], items: Sequence[T], jobs: int,
             on_done: Callable[[int], None] | None = None) -> list[Outcome[R]]:
    """`fn(item)` for every item in `jobs` worker processes; the outcomes in the items' order.
    `fn` must be importable by name (a module-level function). `on_done(index)` is called in this
    process as each task finishes, in the order they finish."""
    outcomes: dict[int, Outcome[R]] = {}
    todo, suspects = list(range(len(items))), []
    while todo:
        started = _shared_round(fn, items, todo, jobs, outcomes, on_done)
        left = [i for i in todo if i not in outcomes]
        if left and not started & set(left):  # broken before any of them started: no one to blame
            started = set(left)
        suspects += [i for i in left if i in started]
        todo = [i for i in left if i not in started]  # never started: not charged, run again together
    with ThreadPoolExecutor(max_workers=jobs) as threads:  # each suspect retried alone in its own pool
        retries = {threads.submit(_alone, fn, items[i]): i for i in suspects}
        for future in as_completed(retries):
            outcomes[retries[future]] = future.result()
            if on_done is not None:
                on_done(retries[future])
    return [outcomes[i] for i in range(len(items))]


def _shared_round(fn: Callable[[T], R], items: Sequence[T], todo: list[int], jobs: int,
                  outcomes: dict[int, Outcome[R]], on_done: Callable[[int], None] | None) -> set[int]:
    """Run `todo` in one pool, filling `outcomes` for the tasks that finished; the tasks that started.
    A broken pool leaves its unfinished tasks out of `outcomes`."""
    context = multiprocessing.get_context("spawn")
    started = context.SimpleQueue()  # each worker says which task it starts, before running it
    with ProcessPoolExecutor(max_workers=min(jobs, len(todo)), mp_context=context,
                             initializer=_remember, initargs=(started, os.getpid())) as pool:
        futures = {pool.submit(_tagged, fn, i, items[i]): i for i in todo}
        for future in as_completed(futures):
            if not isinstance(future.exception(), BrokenProcessPool):
                outcomes[futures[future]] = _outcome(future)
                if on_done is not None:
                    on_done(futures[future])
    out = set()
    while not started.empty():
        out.add(started.get())
    return out


_STARTED: Any = None  # in a worker: the queue its starts are told on


def _remember(queue: Any, parent_pid: int) -> None:
    """A worker's start: where it tells its tasks' starts, and killed should the caller die first
    (Ctrl-C, SIGTERM or SIGKILL of torchdoctor): what it computes is for nobody then."""
    global _STARTED
    _STARTED = queue
    die_with_parent(signal.SIGKILL, parent_pid)


def _tagged(fn: Callable[[T], R], index: int, item: T) -> R:
    _STARTED.put(index)
    return fn(item)


def _outcome(future: Future[R]) -> Outcome[R]:
    error = future.exception()
    return Outcome(error=error) if error is not None else Outcome(value=future.result())


def _alone(fn: Callable[[T], R], item: T) -> Outcome[R]:
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=_remember,
                             initargs=(context.SimpleQueue(), os.getpid())) as pool:
        future = pool.submit(fn, item)
        wait([future])
    if isinstance(future.exception(), BrokenProcessPool):
        return Outcome(error=WorkerDied("its worker process died twice (killed, or out of memory)"))
    return _outcome(future)


class WorkerDied(RuntimeError):
    """A task whose worker process died on its first run and again on its retry."""
