"""Checkpoints saved inside the training steps.

Sources: the guides' seed row "checkpoint saving stalls training"; PyTorch's "Asynchronous Saving
with Distributed Checkpoint (DCP)" recipe (checkpointing sits on the training loop's critical path;
`torch.distributed.checkpoint.async_save` moves it off).
"""

from __future__ import annotations

import statistics

from torchdoctor.rules.base import Fix, Hit, MissingEvidence, rule, severity_at
from torchdoctor.rules.capabilities import gated_fix
from torchdoctor.rules.evidence import Evidence

SAVE_WARNING, SAVE_PROBLEM = 0.05, 0.20  # share of the timing window inside torch.save
SLOW_STEP = 2.0  # a step this many times the median is counted as stalled


@rule("TD-COMP-026", "compute")
def checkpoint_stalls_steps(ev: Evidence) -> Hit | None:
    """torch.save calls inside the timing window take 5% (warning) or 20% (problem) of it
    (`env.script_tools.save_s` over `summary.window_s`): the steps that save wait for the
    serialisation and the write. The evidence names the steps slower than twice the median, the
    stalled steps the saves fall in. Upside: the share inside torch.save. Silent where the whole
    run shows the saves as a periodic stall (TD-COMP-030 names them over the run, not one window)."""
    tools = ev.script_tools()
    if not tools.save_calls or not tools.save_s or _saves_seen_over_the_run(ev):
        return None
    share = ev.save_fraction()
    severity = severity_at(share, SAVE_WARNING, SAVE_PROBLEM)
    if severity is None:
        return None
    walls = ev.step_walls_s()
    median = statistics.median(walls)
    slow = [i for i, wall in enumerate(walls) if wall > SLOW_STEP * median]
    return Hit(severity, f"torch.save takes {share:.0%} of the steps: {tools.save_calls} saves, "
               f"{len(slow)} stalled steps", share,
               {"save_calls": tools.save_calls, "save_s": round(tools.save_s, 4), "save_fraction": round(share, 4),
                "stalled_steps": slow[:10], "median_step_s": round(median, 6)},
               "Each save serialises the state and writes it while the step waits; the steps that save are "
               "the slow ones.",
               gated_fix(ev, "async_save",
                         Fix("Save less often, from rank 0 only, and asynchronously "
                             "(torch.distributed.checkpoint.async_save stages the state and writes it in the "
                             "background).",
                             "if step % save_every == 0:\n"
                             "    pending = torch.distributed.checkpoint.async_save(state, checkpoint_id=path)"),
                         "if step % save_every == 0 and rank == 0:  # less often, one rank\n"
                         "    torch.save(state, path)"))


def _saves_seen_over_the_run(ev: Evidence) -> bool:
    try:
        return ev.trend("checkpoint") is not None
    except MissingEvidence:
        return False
