"""Latency sampling: per-call wall times of several variants, interleaved in rounds.

Written by hand rather than with torch.utils.benchmark because we need every call's time (for
p99 and for the bootstrap in torchdoctor.bench), and interleaving: each round times every variant
in turn, rotating the order, so drift on a shared machine hits all variants alike.
"""

from __future__ import annotations

import time
from typing import Any, Callable


def device_sync(device: str) -> Callable[[], None]:
    """A function that waits for queued work on `device` (a no-op on CPU)."""
    if device.startswith("cuda"):
        import torch

        return torch.cuda.synchronize
    return lambda: None


def interleaved_latencies(
    calls: dict[str, Callable[[], Any]], *, iters: int, rounds: int, sync: Callable[[], None]
) -> dict[str, list[float]]:
    """`iters` per-call times in seconds for each of `calls`, taken in `rounds` interleaved rounds."""
    samples: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    per_round = max(1, -(-iters // rounds))
    for index in range(rounds):
        shift = index % len(names) if names else 0
        for name in names[shift:] + names[:shift]:
            fn, taken = calls[name], samples[name]
            for _ in range(min(per_round, iters - len(taken))):
                start = time.perf_counter_ns()
                fn()
                sync()
                taken.append((time.perf_counter_ns() - start) / 1e9)
    return samples

