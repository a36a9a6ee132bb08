"""Per-batch cost of the DataLoader wait hook (observe/hooks.py `timed_next`), in process.

Times `next()` on a DataLoader over an in-memory list (batch_size=None: the loader's own work is
tiny, so the hook's share shows) without instrumentation, with it, and the cost of the
`time.thread_time_ns()` pair the hook adds for `steps[].data_wait_cpu_s`. Best of 7 repeats.
Usage: python benchmarks/data_wait_hook.py  (figures in docs/rules-measured.md, "Observation cost").
"""

from __future__ import annotations

import time
import timeit

import torch

from torchdoctor.observe.facts import Facts
from torchdoctor.observe.hooks import Instrumentation
from torchdoctor.observe.steps import PhaseCallbacks, StepClock

N = 20_000


def per_next_ns() -> float:
    loader = torch.utils.data.DataLoader(list(range(N)), batch_size=None)
    it = iter(loader)
    start = time.perf_counter_ns()
    for _ in range(N):
        next(it)
    return (time.perf_counter_ns() - start) / N


def best(fn, repeats: int = 7) -> float:
    return min(fn() for _ in range(repeats))


def main() -> None:
    plain = best(per_next_ns)
    noop = lambda *a: None  # noqa: E731
    hooks = Instrumentation(StepClock(10**9, 1, 0, PhaseCallbacks(noop, noop, noop, noop, noop, noop)), Facts())
    hooks.install()
    try:
        hooked = best(per_next_ns)
    finally:
        hooks.uninstall()
    pair = min(timeit.repeat("t() - t()", setup="import time; t = time.thread_time_ns", number=N, repeat=7)) / N * 1e9
    print(f"next() plain {plain:.0f} ns, instrumented {hooked:.0f} ns (hook {hooked - plain:.0f} ns), "
          f"thread_time_ns pair {pair:.0f} ns per batch")


if __name__ == "__main__":
    main()
