"""Runs the registered probes (observe/probes/base.py) of one observation, in their order, and keeps
their values for the rank's results (`probes`: name -> value, as `Record.probes` holds them).

The session tells the runner what happens: the profiler stopped, the windows ended, a step ended
while a probe measures, the script ended. At most one probe measures the script's steps at a time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable

from torchdoctor.observe.probes.base import PROFILED_OPS, Phase, Probe, ProbeContext, StepProbe, all_probes
from torchdoctor.observe.probes.profiled_ops import profiled_ops

if TYPE_CHECKING:
    import torch


class ProbeRunner:
    """`progress(label, done, total)` shows a measuring probe's steps; `probes` defaults to every
    registered probe."""

    def __init__(self, context: ProbeContext, progress: Callable[[str, int, int], None],
                 probes: Iterable[Probe] | None = None) -> None:
        self.context = context
        self._progress = progress
        self._probes = tuple(all_probes() if probes is None else probes)
        self._waiting = [p for p in self._probes if p.phase is Phase.AFTER_WINDOWS]
        self._values: dict[str, Any] = {}  # the WINDOWS_END probes' values
        self._started: dict[str, StepProbe] = {}
        self._measuring: StepProbe | None = None

    @property
    def measuring(self) -> bool:
        """Whether a probe is measuring the script's steps now."""
        return self._measuring is not None

    def profiler_stopped(self, profiler: torch.profiler.profile, steps: int) -> None:
        """Read the profiled operators, when a probe that applies needs them."""
        if any(PROFILED_OPS in p.needs and p.applies(self.context) for p in self._probes):
            self.context.profiled_ops = profiled_ops(profiler, steps)

    def windows_ended(self, *, script_compiles: bool) -> None:
        """Run the WINDOWS_END probes that apply."""
        self.context.script_compiles = script_compiles
        for p in self._probes:
            if p.phase is Phase.WINDOWS_END and p.applies(self.context):
                value = p.start(self.context)
                if value is not None:
                    self._values[p.name] = value

    def start_next(self) -> bool:
        """Begin the next AFTER_WINDOWS probe that applies and has steps to measure; False when none is left."""
        while self._waiting:
            p = self._waiting.pop(0)
            started = p.start(self.context) if p.applies(self.context) else None
            if started is not None:
                self._started[p.name] = self._measuring = started
                started.begin()
                self._progress(started.label, *started.progress)
                return True
        return False

    def step_end(self) -> bool:
        """A step ended while a probe measured it; True when that probe is done."""
        probe = self._measuring
        assert probe is not None, "no probe is measuring"
        if probe.step_end():
            self._measuring = None
            return True
        self._progress(probe.label, *probe.progress)
        return False

    def close(self, reason: str) -> None:
        """The script ended: the probe still measuring, if one is, is cut short for `reason`."""
        if self._measuring is not None:
            self._measuring.close(reason)
            self._measuring = None

    def values(self) -> dict[str, Any]:
        """Each probe's value by its name, in the order they ran; only the probes that measured."""
        stepped = {name: started.to_dict() for name, started in self._started.items()}
        return {**self._values, **{name: value for name, value in stepped.items() if value is not None}}
