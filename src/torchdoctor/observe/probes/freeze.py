"""The freeze probe: a few steps of the user's own loop with the parameters whose gradients no
optimizer uses frozen (`requires_grad_(False)`), measured in place against steps with them as the
script left them (probes/blocks.py).

What those gradients cost depends on where the parameters sit in the graph: a frozen backbone at
the input end spares the backward its whole pass through the backbone (weight and input gradients
alike), a frozen layer in the middle only its weight gradients. No count of parameters says which,
so the fix TD-COMP-042 names is measured: in the "tried" blocks exactly those parameters stop
requiring grad; the script's flags come back for its blocks and at the end.
"""

from __future__ import annotations

import time
from typing import Callable

import torch

from torchdoctor.observe.probes.base import Phase, ProbeContext, probe
from torchdoctor.observe.probes.blocks import BlockProbe
from torchdoctor.probe_values import FREEZE, FreezeValue


class FreezeProbe(BlockProbe):
    """Blocks with `params` frozen ("tried") and requiring grad as the script had them ("script")."""

    label = "probing unused gradients frozen"

    def __init__(self, params: list[torch.nn.Parameter], *,
                 clock_ns: Callable[[], int] = time.perf_counter_ns) -> None:
        super().__init__(clock_ns=clock_ns)
        self.params = params

    def _apply(self, side: str) -> None:
        for p in self.params:
            p.requires_grad_(side != "tried")

    def to_dict(self) -> FreezeValue | None:
        """Its value in `Record.probes` (docs/record-schema.md); None if it never began."""
        measured = self.measured()
        if measured is None:
            return None
        return {"tensors": len(self.params), "parameters": sum(p.numel() for p in self.params),
                "complete": measured["complete"], "reason": measured["reason"], "samples": measured["samples"],
                "step_s_with_grads": measured["step_s_script"], "step_s_frozen": measured["step_s_tried"],
                "speedup": measured["speedup"], "speedup_ci": measured["speedup_ci"], "verdict": measured["verdict"]}


@probe(FREEZE.name, Phase.AFTER_WINDOWS, order=2, applies=ProbeContext.may_probe)
def unused_gradients_frozen(ctx: ProbeContext) -> FreezeProbe | None:
    """When parameters of the script's models hold gradients no stepped optimizer holds (and the
    script does not compile, whose guards would recompile on every switch): blocks with them frozen."""
    params = ctx.facts.unused_gradients()
    return FreezeProbe(params) if params and not ctx.script_compiles else None
