"""Activation checkpointing where memory is not the constraint.

`torch.utils.checkpoint.checkpoint` keeps a block's inputs instead of its activations and runs the
block's forward again during the backward: it trades compute for memory (PyTorch docs
`torch.utils.checkpoint`: "trades compute for memory"). The guides recommend it when the peak is
near the limit (TD-MEM-002); when the step's peak is a small share of the device's memory, the
recompute is paid for memory nobody needs. The calls come from the operator-costs probe's
`script_calls` (observe/probes/script_calls.py), which names them through `torch._disable_dynamo`'s
wrapper; the peak from the memory window's breakdown.
"""

from __future__ import annotations

from torchdoctor.probe_values import ScriptCall, ScriptCallsValue
from torchdoctor.rules.base import Fix, Hit, MissingEvidence, measured, rule
from torchdoctor.rules.evidence import Evidence
from torchdoctor.rules.host_calls import share_severity

CHECKPOINTS = frozenset({"torch.utils.checkpoint.checkpoint", "torch.utils.checkpoint.checkpoint_sequential"})
ROOM = 0.25  # the step's peak under this share of the memory: checkpointing is not what makes it fit
REPORTED = 0.05


def _memory_bytes(ev: Evidence) -> tuple[int, str]:
    """The memory the step's tensors live in: the first GPU's, else the host's (`env.cpu`)."""
    if ev.uses_gpu():
        return ev.device_memory_bytes(), "the GPU's"
    cpu = ev.environment().cpu
    return measured(cpu.memory_bytes if cpu else None, "env.cpu.memory_bytes"), "the machine's"


def _forward_s(calls: ScriptCallsValue, call: ScriptCall) -> float:
    """The checkpointed forward's time a profiled step: the calls' own time, or, when they ran a
    function of the script (a block's `forward`, `drives`), half that frame's time, since the frame
    runs twice, in the forward and in the backward's recompute."""
    driven = call.get("drives")
    return calls["frames"].get(driven, 0.0) / 2 if driven else call["wall_s"]


@rule("TD-MEM-007", "memory")
def checkpointing_without_memory_pressure(ev: Evidence) -> Hit | None:
    """The model checkpoints activations (`torch.utils.checkpoint` calls in every profiled step)
    while the step's peak memory is under ROOM of the memory it lives in. Upside, estimated: the
    checkpointed forward's share of the profiled step (`_forward_s`), what the backward runs once
    more; reported from REPORTED."""
    calls, step_s = ev.script_calls()
    checkpointed = [c for c in calls["calls"] if c["callee"] in CHECKPOINTS]
    if not checkpointed:
        return None
    peak = float(measured(ev.memory().peak_bytes, "memory.breakdown.peak_bytes"))
    total, whose = _memory_bytes(ev)
    if not total:
        raise MissingEvidence("the memory's size")
    share = min(1.0, sum(_forward_s(calls, c) for c in checkpointed) / step_s)
    if peak / total >= ROOM or share < REPORTED:
        return None
    top = max(checkpointed, key=lambda c: c["wall_s"])
    count = sum(c["count"] for c in checkpointed)
    return Hit(share_severity(share),
               f"activation checkpointing recomputes {count:.0f} block(s) a step while the peak is "
               f"{peak / total:.1%} of {whose} memory", share,
               {"checkpoint_calls_per_step": count, "caller": top["caller"], "peak_bytes": peak,
                "memory_bytes": total, "peak_fraction": round(peak / total, 4),
                "checkpointed_share_fraction": round(share, 4), "upside_basis": "estimated"},
               f"{top['caller']} runs blocks through torch.utils.checkpoint, which keeps their inputs instead of "
               "their activations and runs their forward again during the backward. The step's peak is "
               f"{peak / 2**20:.0f} MiB of {total / 2**30:.0f} GiB: memory is not what checkpointing is needed "
               "for here, and the recompute costs about the checkpointed forward again every step.",
               Fix("Call the blocks directly (turn activation checkpointing off) while the model and its "
                   "activations fit in memory; keep it, or checkpoint fewer blocks, only where the peak nears "
                   "the limit.",
                   "for block in self.blocks:\n    x = block(x)   # not checkpoint(block, x)"))
