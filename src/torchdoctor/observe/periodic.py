"""A short torch.profiler window repeated during the lean observation (`torchdoctor watch
--profile-every`), so that what the operators do late in a run is seen, not only at its start.

The first window opens at the first step of the lean observation, the next ones every `every_s`
seconds after the last ended (observe.watch's thread says when one is due; the step's path only
tests a field). A window spans `steps` steps after one of warm-up (the profiler's own start costs
the first step; its operators are not kept); at its last step's end the profiler stops and its
operators are summed with torch.profiler's own `key_averages()` (self time a operator: the
device's where the device was profiled, else the CPU's), the `top` largest kept. The stream gets
one `profile` line a window (goodput.stream) with the steps it touched: from the first profiled
step to the one in which the profiler stopped and the summary was made, so that the breakdown
leaves their cost out of the steady steps.
"""

from __future__ import annotations

import inspect
import time
from typing import Any

import torch

from torchdoctor.observe.watch import RunWatch


def _activities() -> list[torch.profiler.ProfilerActivity]:
    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    return activities


def operator_times(averages: Any, top: int) -> tuple[str, float, list[list[Any]]]:
    """(clock, total self µs, [[operator, self µs], ...] the `top` largest) of a profiler's
    `key_averages()`: the device's self time where any operator has some, else the CPU's. The
    script's and the libraries' `record_function` ranges (`Optimizer.step#SGD.step`) are left out:
    their self time is Python's, not an operator's."""
    def device_us(avg: Any) -> float:
        return float(getattr(avg, "self_device_time_total", getattr(avg, "self_cuda_time_total", 0.0)) or 0.0)

    on_device = any(device_us(avg) > 0 for avg in averages)
    clock = "device" if on_device else "cpu"
    times = [(str(avg.key), device_us(avg) if on_device else float(avg.self_cpu_time_total)) for avg in averages
             if not getattr(avg, "is_user_annotation", False)]  # record_function ranges are no operators
    # Rounded before they are summed: the written total is then never less than its written parts.
    times = [(name, round(us, 1)) for name, us in times if us > 0]
    times.sort(key=lambda t: -t[1])
    return clock, round(sum(t[1] for t in times), 1), [[name, us] for name, us in times[:top]]


class PeriodicProfiler:
    """Opens a profiler window of `steps` steps each time RunWatch says one is due."""

    def __init__(self, watch: RunWatch, *, steps: int, top: int = 10) -> None:
        self.watch, self.steps, self.top = watch, steps, top
        self._profiler: torch.profiler.profile | None = None
        self._first = 0
        self._left = 0
        self._start_us = 0

    def begin(self) -> None:
        """At a step's end: the profiler starts; the next `steps` steps are profiled."""
        options = {"acc_events": True} if "acc_events" in inspect.signature(torch.profiler.profile).parameters else {}
        try:
            profiler = torch.profiler.profile(activities=_activities(), schedule=torch.profiler.schedule(
                wait=0, warmup=1, active=self.steps, repeat=1), **options)
            profiler.start()
        except RuntimeError as exc:  # another profiler is running (the script's own): no more windows
            self.watch.mark("profile_off", why=str(exc)[:200])
            self.watch.unschedule()
            return
        self._profiler, self._first, self._left = profiler, self.watch.count, self.steps
        self._start_us = self.watch.t_us(time.perf_counter_ns())
        self.watch.at_step = self._tick

    def _tick(self) -> None:
        if self._profiler is not None:
            self._profiler.step()
        self._left -= 1
        if self._left < 0:
            self._end()

    def _end(self) -> None:
        profiler, self._profiler = self._profiler, None
        if profiler is None:
            return
        profiler.stop()
        clock, total_us, ops = operator_times(profiler.key_averages(), self.top)
        # The step in progress (index `count`) carries the stop and the summary: it is the window's too.
        self.watch.event({"profile": {"first": self._first, "last": self.watch.count,
                                      "t_us": self._start_us, "steps": self.steps, "clock": clock,
                                      "total_us": total_us, "ops": ops}})
        self.watch.window_done()

    def close(self) -> None:
        """The script ended: a window still open stops, unsummarised."""
        self.watch.unschedule()
        if self._profiler is not None:
            profiler, self._profiler = self._profiler, None
            profiler.stop()
