"""Alternating blocks of the user's own steps under two settings, measured in place: the driver the
threads and anomaly probes share.

A setting's effect depends on the script's own operators and on the machine's load, which no
constant measured elsewhere says (TD-COMP-009's ceiling claimed x1.93 where its fix measured
x1.31; TD-COMP-007's constant slowdown claimed x1.96 where turning anomaly mode off measured x1.50:
docs/field.md). So, after the other windows, blocks of steps alternate between the setting a
finding's fix would make ("tried") and the script's own ("script"), in the order tried, script,
script, tried (a drift of the machine's load over the probe weighs on both sides alike); the first
step of each block, in which the switch settles (a thread pool resizes), is not counted. The
script's setting is restored afterwards, and on any early end.

Six steps a side are few: the Trainer's compile probe measured x1.09 and x1.17 in two runs, its fix
x1.00-x1.06 by `run --apply`. So the speed-up comes with the statistic tune judges by
(`torchdoctor.bench.compare_runs`, each side's steps one run, so that its ratio is the speed-up):
a 95% interval from resampling the side's steps, the two blocks pooled (a drift between them widens
it), and a verdict, "faster" only when the interval clears 2%. The rules that rest on a probe
claim a measured speed-up only when that verdict is "faster" (rules/probed.py).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from typing import Any, Callable

from torchdoctor.bench import compare_runs

#: Steps per block; the first of each is dropped, so each side gets 2 x (BLOCK - 1) samples.
BLOCK = 4
#: The order of the blocks: "tried" is the fix's setting, "script" the script's own.
ORDER = ("tried", "script", "script", "tried")


class BlockProbe(ABC):
    """Drives the blocks: `begin()` on a step boundary, then `step_end()` on each following one
    until it returns True. Subclasses say how to switch to a side (`_apply`) and what the progress
    bar calls them (`label`)."""

    label = "probing"

    def __init__(self, *, clock_ns: Callable[[], int] = time.perf_counter_ns, lead_in: int = 0) -> None:
        self._clock_ns = clock_ns
        self._blocks: list[list[float]] = [[] for _ in ORDER]  # each block's counted step times
        self._lead_in = lead_in
        self.lead_in_s = 0.0  # the lead-in steps' wall time (a compile probe's compiling)
        self._step = -lead_in  # steps ended since the blocks began (negative in the lead-in)
        self._last_ns = 0
        self._state = "waiting"  # -> "running" -> "done"
        self._reason: str | None = None

    @abstractmethod
    def _apply(self, side: str) -> None:
        """Switch the process to `side`'s setting ("tried" or "script")."""

    @property
    def running(self) -> bool:
        return self._state == "running"

    @property
    def progress(self) -> tuple[int, int]:
        """(steps ended, steps in all) since `begin()`, lead-in included."""
        return self._step + self._lead_in, self._lead_in + BLOCK * len(ORDER)

    def begin(self) -> None:
        self._state = "running"
        self._apply(ORDER[0])
        self._last_ns = self._clock_ns()

    def step_end(self) -> bool:
        """A step of the probe ended; True when the probe is done (the script's setting is back)."""
        now = self._clock_ns()
        if self._step < 0:
            self.lead_in_s += (now - self._last_ns) / 1e9
            self._step += 1
            self._last_ns = self._clock_ns()
            return False
        block, index = divmod(self._step, BLOCK)
        if index:
            self._blocks[block].append((now - self._last_ns) / 1e9)
        self._step += 1
        if self._step == BLOCK * len(ORDER):
            self.close(None)
            return True
        if self._step % BLOCK == 0 and ORDER[self._step // BLOCK] != ORDER[block]:
            self._apply(ORDER[self._step // BLOCK])
        self._last_ns = self._clock_ns()  # our own bookkeeping is not part of the next step
        return False

    def close(self, reason: str | None) -> None:
        """Restore the script's setting; with `reason`, the probe stopped before its last block."""
        if self._state == "running":
            self._apply("script")
            self._state, self._reason = "done", reason

    def measured(self) -> dict[str, Any] | None:
        """`complete`, `reason`, `samples` and each side's mean step; once every block was measured,
        `speedup` (script over tried), its 95% interval `speedup_ci` and `verdict` (compare_runs' word
        for the tried setting: "faster", "slower" or "no clear difference"). None if the probe never
        began."""
        if self._state == "waiting":
            return None
        tried, script = self._side("tried"), self._side("script")
        complete = self._reason is None and len(tried) == len(script) == 2 * (BLOCK - 1)
        step_script = sum(script) / len(script) if script else None
        step_tried = sum(tried) / len(tried) if tried else None
        judged = compare_runs([script], [tried]).verdict if complete and min(tried + script) > 0 else None
        decided = judged is not None and judged.ci_low > 0  # no interval: too few steps for one
        return {"complete": complete, "reason": self._reason, "samples": len(tried) + len(script),
                "step_s_script": step_script, "step_s_tried": step_tried,
                "speedup": step_script / step_tried if complete and step_tried else None,
                "speedup_ci": [1 / judged.ci_high, 1 / judged.ci_low] if decided else None,
                "verdict": judged.verdict if judged else None}

    def _side(self, side: str) -> list[float]:
        """The counted step times of `side`'s blocks, in order."""
        return [t for name, block in zip(ORDER, self._blocks) if name == side for t in block]
