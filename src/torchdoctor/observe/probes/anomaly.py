"""The anomaly probe: a few steps of the user's own loop with autograd anomaly detection held off,
measured in place against steps with it on (probes/blocks.py).

What anomaly mode costs depends on the script's autograd graph (a Python stack recorded per node,
every gradient checked for NaN), not on a constant: the slowdown measured on the zoo's MLP (x2.5,
TD-COMP-007's constant) claimed x1.96 where turning it off measured x1.50 (docs/field.md). In the
"tried" blocks the switch is held off exactly as the `no_anomaly_detection` knob holds it (the
script's own `set_detect_anomaly(True)` or `detect_anomaly()` on each step does nothing); the
script's mode comes back for its blocks and at the end.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable

import torch

from torchdoctor.knobs import REGISTRY, guard
from torchdoctor.observe.probes.base import Phase, ProbeContext, probe
from torchdoctor.observe.probes.blocks import BlockProbe
from torchdoctor.probe_values import ANOMALY, AnomalyValue

if TYPE_CHECKING:
    from torchdoctor.observe.facts import Facts

KNOB = "no_anomaly_detection"


def anomaly_detection_on(facts: Facts) -> bool:
    """On at a step boundary now, or at the timing window's start (a `detect_anomaly()` block per step)."""
    return bool(torch.is_anomaly_enabled() or (facts.script_tools or {}).get("anomaly_detection"))


class AnomalyProbe(BlockProbe):
    label = "probing anomaly detection off"

    def __init__(self, *, clock_ns: Callable[[], int] = time.perf_counter_ns) -> None:
        super().__init__(clock_ns=clock_ns)
        self._mode = (True, True)  # the script's (enabled, check_nan), read each time the probe holds it off
        self._undo: Callable[[], None] | None = None

    def _apply(self, side: str) -> None:
        if side == "tried" and self._undo is None:
            self._mode = (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled())
            self._undo = REGISTRY[KNOB].apply(True)
        elif side == "script" and self._undo is not None:
            self._undo()
            self._undo = None
            guard.forget(KNOB)  # the script's calls were held off by this probe, not by a knob of the run
            torch.autograd.set_detect_anomaly(*self._mode)

    def to_dict(self) -> AnomalyValue | None:
        """Its value in `Record.probes` (docs/record-schema.md); None if it never began."""
        measured = self.measured()
        if measured is None:
            return None
        return {"complete": measured["complete"], "reason": measured["reason"], "samples": measured["samples"],
                "step_s_anomaly_on": measured["step_s_script"], "step_s_anomaly_off": measured["step_s_tried"],
                "speedup": measured["speedup"],
                "speedup_ci": measured["speedup_ci"], "verdict": measured["verdict"]}


@probe(ANOMALY.name, Phase.AFTER_WINDOWS, order=2, applies=ProbeContext.may_probe)
def anomaly_detection_off(ctx: ProbeContext) -> AnomalyProbe | None:
    """When anomaly detection is on: blocks with it held off, as TD-COMP-007's fix holds it."""
    return AnomalyProbe() if anomaly_detection_on(ctx.facts) else None
