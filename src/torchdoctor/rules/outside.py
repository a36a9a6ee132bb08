"""What ran outside the model, the backward and the optimizer in a profiled step, named from the
calls the script's own code made there (the operator-costs probe's `script_calls`), and the fix
that follows from what ran: TD-COMP-013's words.

A call is named when it is the script's (made by a frame of its files), outside every module's
forward, and not one of the step's own parts (a module call, a `backward()` the backward phase
times, the optimizer, the DataLoader, torchdoctor's hooks, a loss function of
`torch.nn.functional`: the step's objective), and its time less its torch operators' (the step's
computation wherever it is called: accounting/outside.py) takes NAMED_SHARE of the profiled step or
more. TD-COMP-013 leaves the same computation out of the time outside the model.
"""

from __future__ import annotations

from dataclasses import dataclass

from torchdoctor.accounting.outside import BACKWARD_CALLS, STEP_PARTS, computation_outside_s, is_loss
from torchdoctor.probe_values import ScriptCall, ScriptCallsValue
from torchdoctor.rules.base import Fix, MissingEvidence
from torchdoctor.rules.evidence import Evidence

NAMED_SHARE = 0.02
MAX_NAMED = 3
LOOP_FRAME = 0.9  # a frame running this share of the profiled step or more is the step's own loop
#: Scalar reads of one tensor element to a Python number, per call.
SCALAR_READS = frozenset({"Tensor.item", "Tensor.__float__", "Tensor.__int__", "Tensor.__bool__",
                          "Tensor.__index__"})
__all__ = ["BACKWARD_CALLS", "SCALAR_READS", "calls_outside", "computation_share", "outside_fix", "outside_text",
           "share_of_step"]

DEFAULT_FIX = Fix("Do what need not run every step (logging, metrics, evaluation) every N steps or in a "
                  "background thread, and per-element Python work on whole tensors.",
                  "if step % 100 == 0:\n    log_metrics(...)")
_COLLECT_FIX = Fix("Drop the forced garbage collection from the step: Python's collector runs by itself when "
                   "objects pile up. Collect once per epoch if memory must be returned, and call gc.freeze() "
                   "after set-up so the long-lived objects are not walked by every collection.",
                   "gc.freeze()   # once, after building the model and the data\n"
                   "# and no gc.collect() inside the training loop")
_SCALAR_FIX = Fix("Vectorise: compute the statistic with tensor operations and read one number per step, or "
                  "read many values at once with .tolist().",
                  "correct += (pred == y).sum().item()   # one read, not one per element")


def share_of_step(calls: ScriptCallsValue, step_s: float, call: ScriptCall) -> float:
    """Share of the profiled step spent in `call`'s calls, or in its caller when the caller is a
    function or generator of its own (its Python loop is part of the cost), not the step's loop."""
    caller_s = calls.get("frames", {}).get(call["caller"], 0.0)
    spent = caller_s if call["wall_s"] <= caller_s < LOOP_FRAME * step_s else call["wall_s"]
    return min(1.0, spent / step_s)


@dataclass(frozen=True)
class Ran:
    """One callee the script called outside the model, from one of its functions, per step."""

    callee: str
    caller: str
    count: float
    share: float

    @property
    def label(self) -> str:
        return f"{self.callee}() called from {self.caller}"

    def evidence(self) -> dict:
        return {"callee": self.callee, "caller": self.caller, "calls_per_step": self.count,
                "share_fraction": round(self.share, 4)}


def computation_share(ev: Evidence) -> float:
    """The share of the step that is computation the script ran outside the model (0 without the
    probe's calls): its torch operators' time, a time the profiler hardly slows, over the timed
    step, and its loss functions' wall time over the profiled step (accounting/outside.py)."""
    try:
        calls, step_s = ev.script_calls()
    except MissingEvidence:
        return 0.0
    operators, losses = computation_outside_s(list(calls["calls"]))
    try:
        timed = ev.summary("step_s") or step_s
    except MissingEvidence:
        timed = step_s
    return min(1.0, operators / timed + losses / step_s)


def calls_outside(ev: Evidence) -> list[Ran]:
    """The longest calls the script made outside the model (module docstring), longest first;
    none without the probe's calls."""
    try:
        calls, step_s = ev.script_calls()
    except MissingEvidence:
        return []
    ran = [Ran(c["callee"], c["caller"], c["count"], _host_share(calls, step_s, c)) for c in calls["calls"]
           if not c["in_model"] and not c["callee"].startswith(STEP_PARTS) and not is_loss(c["callee"])]
    return sorted((r for r in ran if r.share >= NAMED_SHARE), key=lambda r: -r.share)[:MAX_NAMED]


def _host_share(calls: ScriptCallsValue, step_s: float, call: ScriptCall) -> float:
    """`share_of_step` of a call less its torch operators' time: the Python and host work in it."""
    return max(0.0, share_of_step(calls, step_s, call) - call.get("ops_s", 0.0) / step_s)


def outside_text(ran: list[Ran]) -> str:
    """The sentence naming what ran, for the finding's explanation ("" when nothing is named)."""
    if not ran:
        return ""
    named = "; ".join(f"{r.label}, {r.count:.0f} call(s), {r.share:.0%}" for r in ran)
    return f" In the profiled steps, outside the model: {named} of the step."


def outside_fix(ran: list[Ran]) -> Fix:
    """The fix for the longest call: a garbage collection, scalar reads; else the general advice
    (what the longest call is for, the step's loss or its logging, only the reader can tell)."""
    if not ran:
        return DEFAULT_FIX
    top = ran[0]
    if top.callee in SCALAR_READS:
        return _SCALAR_FIX
    if top.callee == "collect":
        return _COLLECT_FIX
    return DEFAULT_FIX
