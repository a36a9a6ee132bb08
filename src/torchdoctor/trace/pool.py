"""One task per item in a pool of worker processes, each task retried once if its worker dies.

concurrent.futures' ProcessPoolExecutor places the tasks; its workers are started with the
'spawn' method (a fresh interpreter: no thread, lock or CUDA state of the caller is forked, as in
trace/halves.py). A worker that dies (killed, out of memory) breaks the whole pool, and every task
it held fails with BrokenProcessPool without saying which one killed it; so the tasks a broken
pool left unfinished are each retried once in a pool of their own (`jobs` such pools at a time),
where a second death can only be the task's own, and is reported as its outcome. A task that
raises is not retried: its exception is its outcome. Nothing waits without a bound on a dead worker:
the executor notices a worker's death and fails its futures.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor, as_completed, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Generic, TypeVar

import psutil

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Outcome(Generic[R]):
    """A task's result, or why it has none (`error`: the exception it raised, or its worker's death)."""

    value: R | None = None
    error: BaseException | None = None


def default_jobs() -> int:
    """The physical cores this process may use (logical ones where psutil cannot tell)."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(usable, psutil.cpu_count(logical=False) or usable))


def run_each(fn: Callable[[T], R], items: Sequence[T], jobs: int,
             on_done: Callable[[int], None] | None = None) -> list[Outcome[R]]:
    """`fn(item)` for every item in `jobs` worker processes; the outcomes in the items' order.
    `fn` must be importable by name (a module-level function). `on_done(index)` is called in this
    process as each task finishes, in the order they finish."""
    outcomes: dict[int, Outcome[R]] = {}
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        futures = {pool.submit(fn, item): i for i, item in enumerate(items)}
        for future in as_completed(futures):
            i = futures[future]
            if not isinstance(future.exception(), BrokenProcessPool):
                outcomes[i] = _outcome(future)
                if on_done is not None:
                    on_done(i)
    broken = [i for i in range(len(items)) if i not in outcomes]
    with ThreadPoolExecutor(max_workers=jobs) as threads:  # each retry alone in its own pool
        retries = {threads.submit(_alone, fn, items[i]): i for i in broken}
        for future in as_completed(retries):
            outcomes[retries[future]] = future.result()
            if on_done is not None:
                on_done(retries[future])
    return [outcomes[i] for i in range(len(items))]


def _outcome(future: Future[R]) -> Outcome[R]:
    error = future.exception()
    return Outcome(error=error) if error is not None else Outcome(value=future.result())


def _alone(fn: Callable[[T], R], item: T) -> Outcome[R]:
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        future = pool.submit(fn, item)
        wait([future])
    if isinstance(future.exception(), BrokenProcessPool):
        return Outcome(error=WorkerDied("its worker process died twice (killed, or out of memory)"))
    return _outcome(future)


class WorkerDied(RuntimeError):
    """A task whose worker process died on its first run and again on its retry."""
