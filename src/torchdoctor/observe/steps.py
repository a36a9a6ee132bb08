"""Step clock: turns step-boundary events into per-step timings and drives the phases.

Step boundaries come from several sources, in order of preference (the Record says which one
was used): an explicit `torchdoctor.step()` marker, `Optimizer.step` of the first optimizer
seen (observe.hooks: one built again over the same parameters takes its place), `backward` calls,
calls of the outermost module. The clock follows the most preferred source seen so far; when a
better one appears (in a training loop, within the first iteration) it switches to it and counts
again from that event, so the warm-up absorbs the switch.

Phases, counted in steps of the chosen source: warm-up (not measured), timing window (per-step
times; the device is synchronised only at the window's two edges), profiler window, then stop.
This module only does arithmetic on perf_counter_ns timestamps; the hooks feed it.

Evaluation before training: a loop like nanoGPT's evaluates (forwards under `no_grad`) before its
first optimizer step. Those forwards are not the script's step, so while no step was counted and an
optimizer exists, the hooks report them as evaluation forwards and the clock holds them: not counted,
not measured, its windows not begun. The first backward or optimizer step then starts the count.
The wait is bounded (`evaluation_wait` forwards); past it the clock takes the forwards as the steps
and `note` says so. Every command observes through this clock, so all of them measure the same step.

Parts nest: `optimizer.step(closure)` (LBFGS, Lightning's automatic optimisation) runs forward and
backward inside the optimizer step. `PhaseTimer` gives each part its exclusive time (a part's wall
time less the parts timed inside it), so the parts of a step never overlap and add up to at most
the step's wall time.

The hooks' own time is not the script's: each hook charges what its body took (`PhaseTimer.charge`),
and a step's wall time is the time between its boundaries less that (`hooks_ns`), as is the part the
hook ran in. Why: tune divides two configurations' step times, and time of ours in both sides
shrinks the ratio most where a fix makes steps short. On a compiled 0.33 ms step the bodies took
~9 us a step (one process, 300-step blocks); what is left, the cost of calling the hooks at all and
their effect on the caches, measured ~12 us there.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

PREFERENCE = {"forward": 0, "backward": 1, "optimizer": 2, "marker": 3}

EVALUATION_WAIT = 2000
"""Evaluation forwards held while waiting for a training step (nanoGPT's first evaluation runs
2 x eval_iters = 400 forwards by default)."""


@dataclass(slots=True)
class _Accumulator:
    """Host time spent in each part of the step in progress, in ns."""

    data_ns: int = 0
    data_cpu_ns: int = 0  # main thread's CPU time (thread_time_ns) inside the data waits
    forward_ns: int = 0
    backward_ns: int = 0
    optimizer_ns: int = 0
    batch_size: int | None = None
    loss: Any = None  # a detached scalar tensor; read with .item() only after the window
    hooks_ns: int = 0  # torchdoctor's hooks' own time in this step: left out of its wall time


class PhaseTimer:
    """Exclusive time of nested parts: `token = enter()` ... `leave(token, "forward")` adds the
    elapsed time, less that of parts entered and left in between, to the step in progress."""

    def __init__(self, clock: "StepClock") -> None:
        self.clock = clock
        self._inner: list[int] = []  # per open part, the wall time of the parts nested in it

    def enter(self) -> tuple[int, int]:
        self._inner.append(0)
        return time.perf_counter_ns(), len(self._inner)

    def charge(self, start_ns: int) -> None:
        """The time since `start_ns` was a hook's own: not the step's, nor the open part's. Call it
        before `enter` and after `leave`, so that the hook's time is never inside its own part."""
        elapsed = time.perf_counter_ns() - start_ns
        self.clock.current.hooks_ns += elapsed
        if self._inner:
            self._inner[-1] += elapsed

    def leave(self, token: tuple[int, int], part: str) -> int:
        """Adds the part's exclusive time to the current step; returns its inclusive time."""
        start, depth = token
        elapsed = time.perf_counter_ns() - start
        del self._inner[depth:]  # parts that were entered but never left (an exception in a hook)
        inner = self._inner.pop() if len(self._inner) == depth else 0
        if self._inner:
            self._inner[-1] += elapsed
        current = self.clock.current
        name = f"{part}_ns"
        setattr(current, name, getattr(current, name) + max(0, elapsed - inner))
        return elapsed


@dataclass(slots=True)
class PhaseCallbacks:
    """What the clock calls at phase edges (device sync, profiler control, stopping)."""

    on_timing_start: Callable[[], None]
    on_timing_end: Callable[[], None]
    on_profile_start: Callable[[], None]
    on_profile_step: Callable[[], None]
    on_all_done: Callable[[], None]
    on_progress: Callable[[str, int, int], None]
    on_extra_step: Callable[[], None] | None = None
    """Called at each step end of the chosen source after every window (the memory window)."""
    on_step: Callable[[int, tuple[int, _Accumulator] | None], None] | None = None
    """Called at each counted step end, before the phase callbacks: the count, and the step's
    (wall_ns, parts) when it was timed (observe.stream writes it down at once)."""
    on_switch: Callable[[], None] | None = None
    """Called when a better source is chosen; its event ended that source's first step."""


@dataclass(slots=True)
class StepClock:
    warmup_steps: int
    timing_steps: int
    profile_steps: int
    callbacks: PhaseCallbacks
    capture_steps: int = 0  # steps after the timing window for tune's output sample (ObserveConfig)
    source: str | None = None
    count: int = 0  # completed steps of `source`
    total_events: int = 0  # boundary events of the chosen source, including before switches
    last_end_ns: int = 0
    current: _Accumulator = field(default_factory=_Accumulator)
    samples: list[tuple[int, _Accumulator]] = field(default_factory=list)  # (wall_ns, parts)
    window_ns: int | None = None
    _window_start_ns: int = 0
    done: bool = False
    evaluation_wait: int = EVALUATION_WAIT
    held: int = 0  # evaluation forwards held while waiting for a training step
    note: str | None = None  # set when the wait ran out: the steps are evaluation forwards

    def boundary(self, source: str, *, evaluation: bool = False) -> None:
        """A step of `source` just ended; `evaluation`: a forward under no_grad while the script has
        an optimizer (a training step may come: the forward is held, see the module's docstring)."""
        if self.done:
            if source == self.source and self.callbacks.on_extra_step is not None:
                self.callbacks.on_extra_step()
            return
        if evaluation and self._holds_evaluation():
            return
        now = time.perf_counter_ns()
        if self.source is None or PREFERENCE[source] > PREFERENCE[self.source]:
            self._switch(source, now)
            return
        if source != self.source:
            return
        self.count += 1
        self.total_events += 1
        self._close_step(now)

    def _holds_evaluation(self) -> bool:
        """Whether an evaluation forward is held (True) or counted as a step (False)."""
        if self.source is not None:
            return False
        if self.held < self.evaluation_wait:
            self.held += 1
            self.callbacks.on_progress("waiting for a training step", self.held, self.evaluation_wait)
            return True
        self.note = (f"no training step (optimizer.step() or backward()) came within the first {self.held} "
                     "forwards, which ran under no_grad: the steps measured are these evaluation forwards")
        return False

    def _switch(self, source: str, now: int) -> None:
        # The event that reveals a better source also ends that source's first step.
        self.source = source
        self.count = 1
        self.total_events += 1
        self.samples.clear()
        self.current = _Accumulator()
        self.last_end_ns = now
        if self.callbacks.on_switch is not None:
            self.callbacks.on_switch()

    def _close_step(self, now: int) -> None:
        warm, timed = self.warmup_steps, self.timing_steps
        sample = None
        if warm < self.count <= warm + timed:
            sample = (max(0, now - self.last_end_ns - self.current.hooks_ns), self.current)
            self.samples.append(sample)
        self.current = _Accumulator()
        cb = self.callbacks
        if cb.on_step is not None:
            cb.on_step(self.count, sample)
        if self.count == warm:
            cb.on_timing_start()
            self._window_start_ns = time.perf_counter_ns()
        elif self.count == warm + timed:
            cb.on_timing_end()
            self.window_ns = time.perf_counter_ns() - self._window_start_ns
            if self.profile_steps:
                cb.on_profile_start()
        elif warm + timed < self.count <= warm + timed + self.profile_steps:
            cb.on_profile_step()
        self._report_progress()
        # What the callbacks cost (the step stream's line, the progress line, a window's edge) is
        # torchdoctor's time inside the next step's span: its wall time leaves it out, its hooks' time
        # holds it, so that the two add up to the span the script's own clock sees.
        self.last_end_ns = now
        self.current.hooks_ns += time.perf_counter_ns() - now
        if self.count == warm + timed + self.after_steps:
            self.done = True
            cb.on_all_done()

    @property
    def after_steps(self) -> int:
        """Steps after the timing window: the profiler's and the output sample's, side by side."""
        return max(self.profile_steps, self.capture_steps)

    def in_capture_window(self) -> bool:
        """Whether the step in progress is one of the output sample's, after the timing window."""
        after = self.count - self.warmup_steps - self.timing_steps
        return self.source is not None and not self.done and 0 <= after < self.capture_steps

    def _report_progress(self) -> None:
        warm, timed = self.warmup_steps, self.timing_steps
        if self.count < warm:
            self.callbacks.on_progress("warm-up", self.count, warm)
        elif self.count < warm + timed:
            self.callbacks.on_progress("timing", self.count - warm, timed)
        else:
            after = self.count - warm - timed
            phase = "sampling outputs" if self.profile_steps <= after < self.capture_steps else "profiling"
            self.callbacks.on_progress(phase, after, self.after_steps)
