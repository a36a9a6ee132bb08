"""The threads probe: a few steps of the user's own loop with fewer intra-op threads, measured in place.

When the intra-op threads outnumber the cores, fewer threads can be faster or slower, and by how
much depends on the script's operators and on how busy its workers are: no ceiling computed from
the counts says it (TD-COMP-009's claimed x1.93 on the zoo's compute_threads where the fix measured
x1.31, and halving threads beside busy workers measured x0.58-x0.60 on pytorch/examples imagenet
and dcgan). So blocks of steps alternate between the script's thread count and the count the
rule's fix would set (probes/blocks.py), and the script's own count is restored afterwards.

The count tried is the one TD-COMP-009's fix names, or, beside other processes that took a
material share of the machine over the timed window, TD-COMP-031's, or, where the script set fewer
threads than the cores, TD-COMP-043's (estimates/threads.py).
"""

from __future__ import annotations

import os
import time
from typing import Callable

import torch

from torchdoctor.observe import env
from torchdoctor.observe.probes.base import Phase, ProbeContext, probe
from torchdoctor.observe.probes.blocks import BlockProbe
from torchdoctor.environment.system import others_material
from torchdoctor.estimates.threads import busy_worker_cores, more_threads, set_by_environment, threads_to_try
from torchdoctor.probe_values import THREADS, ThreadsValue


class ThreadsProbe(BlockProbe):
    """`set_threads` and `clock_ns` are torch's and perf_counter's, replaceable in tests."""

    label = "probing another thread count"

    def __init__(self, threads: int, tried: int, *, set_threads: Callable[[int], None] = torch.set_num_threads,
                 clock_ns: Callable[[], int] = time.perf_counter_ns) -> None:
        super().__init__(clock_ns=clock_ns)
        self.threads, self.tried = threads, tried
        self._set_threads = set_threads

    def _apply(self, side: str) -> None:
        self._set_threads(self.tried if side == "tried" else self.threads)

    def to_dict(self) -> ThreadsValue | None:
        """Its value in `Record.probes` (docs/record-schema.md); None if it never began."""
        measured = self.measured()
        if measured is None:
            return None
        return {"threads": self.threads, "tried_threads": self.tried, "complete": measured["complete"],
                "reason": measured["reason"], "samples": measured["samples"],
                "step_s_script_threads": measured["step_s_script"], "step_s_tried_threads": measured["step_s_tried"],
                "speedup": measured["speedup"],
                "speedup_ci": measured["speedup_ci"], "verdict": measured["verdict"]}


@probe(THREADS.name, Phase.AFTER_WINDOWS, order=1, applies=ProbeContext.may_probe)
def fewer_threads(ctx: ProbeContext) -> ThreadsProbe | None:
    """When the intra-op threads outnumber the usable cores less those the busy DataLoader workers
    (and other processes, when their load is material) used over the timed window, as TD-COMP-009
    and TD-COMP-031 read them: blocks with the count their fix sets. When the script itself set
    fewer threads than those cores, on a machine without material other load (TD-COMP-043): blocks
    with one a core."""
    loaders = ctx.facts.dataloaders
    workers = int(loaders[0].get("num_workers") or 0) if loaders else 0
    threads = torch.get_num_threads()
    busy = busy_worker_cores(workers, ctx.sampler.window_children_cpu_cores() or 0.0)
    others = ctx.sampler.window_other_cpu_cores()
    material = others if others is not None and others_material(others, ctx.sampler.logical_cores) else 0.0
    tried = threads_to_try(threads, env.usable_cores(), busy, material)
    if tried is None and not material and not set_by_environment(threads, os.environ):
        tried = more_threads(threads, env.usable_cores(), busy)
    return ThreadsProbe(threads, tried) if tried is not None else None
