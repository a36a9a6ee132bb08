"""The threads probe: a few steps of the user's own loop with fewer intra-op threads, measured in place.

When the intra-op threads outnumber the cores, fewer threads can be
faster or slower, and by how much depends on the script's operators and on how busy its workers
are: no ceiling computed from the counts says it (TD-COMP-009's claimed x1.93 on the zoo's
compute_threads where the fix measured x1.31, and halving threads beside busy workers measured
x0.58-x0.60 on pytorch/examples imagenet and dcgan). So the observation measures it: after the
other windows, blocks of steps alternate between the script's thread count and the count the rule's
fix would set, in the order fewer, same, same, fewer (a drift of the machine's load over the probe
weighs on both sides alike), and the first step of each block, in which the thread pool resizes,
is not counted. The script's own thread count is restored afterwards, and on any early end.

The count tried is the one TD-COMP-009's fix names (probes/thread_counts.py).
"""

from __future__ import annotations

import time
from typing import Any, Callable

import torch

#: Steps per block; the first of each is dropped, so each side gets 2 x (BLOCK - 1) samples.
BLOCK = 4
#: The order of the blocks: "tried" is the smaller thread count, "script" the script's own.
ORDER = ("tried", "script", "script", "tried")


class ThreadsProbe:
    """Drives the blocks: `begin()` on a step boundary, then `step_end()` on each following one
    until it returns True. `set_threads` and `clock_ns` are torch's and perf_counter's, replaceable
    in tests."""

    def __init__(self, threads: int, tried: int, *, set_threads: Callable[[int], None] = torch.set_num_threads,
                 clock_ns: Callable[[], int] = time.perf_counter_ns) -> None:
        self.threads, self.tried = threads, tried
        self._set_threads, self._clock_ns = set_threads, clock_ns
        self._samples: dict[str, list[float]] = {"tried": [], "script": []}
        self._step = 0  # steps ended since begin()
        self._last_ns = 0
        self._state = "waiting"  # -> "running" -> "done"
        self._reason: str | None = None

    @property
    def running(self) -> bool:
        return self._state == "running"

    def begin(self) -> None:
        self._state = "running"
        self._set_threads(self._count(ORDER[0]))
        self._last_ns = self._clock_ns()

    def step_end(self) -> bool:
        """A step of the probe ended; True when the probe is done (the script's threads are back)."""
        now = self._clock_ns()
        block, index = divmod(self._step, BLOCK)
        if index:
            self._samples[ORDER[block]].append((now - self._last_ns) / 1e9)
        self._step += 1
        if self._step == BLOCK * len(ORDER):
            self.close(None)
            return True
        if self._step % BLOCK == 0:
            self._set_threads(self._count(ORDER[self._step // BLOCK]))
        self._last_ns = self._clock_ns()  # our own bookkeeping is not part of the next step
        return False

    def close(self, reason: str | None) -> None:
        """Restore the script's threads; with `reason`, the probe stopped before its last block."""
        if self._state == "running":
            self._set_threads(self.threads)
            self._state, self._reason = "done", reason

    def _count(self, side: str) -> int:
        return self.tried if side == "tried" else self.threads

    def to_dict(self) -> dict[str, Any] | None:
        """The Record's `threads_probe` section (docs/record-schema.md); None if it never began."""
        if self._state == "waiting":
            return None
        tried, script = self._samples["tried"], self._samples["script"]
        complete = self._reason is None and len(tried) == len(script) == 2 * (BLOCK - 1)
        step_script = sum(script) / len(script) if script else None
        step_tried = sum(tried) / len(tried) if tried else None
        return {
            "threads": self.threads,
            "tried_threads": self.tried,
            "complete": complete,
            "reason": self._reason,
            "samples": len(tried) + len(script),
            "step_s_script_threads": step_script,
            "step_s_tried_threads": step_tried,
            "speedup": step_script / step_tried if complete and step_tried else None,
        }
