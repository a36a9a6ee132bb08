"""What ran outside the model, the backward and the optimizer in a profiled step, named from the
calls the script's own code made there (the operator-costs probe's `script_calls`), and the fix
that follows from what ran: TD-COMP-013's words.

A call is named when it is the script's (made by a frame of its files), outside every module's
forward, and not one of the step's own parts (a module call, a `backward()` the backward phase
times, the optimizer, the DataLoader, torchdoctor's hooks, a loss function of
`torch.nn.functional`: the step's objective, which TD-COMP-013 does not count as time outside the
model either), and takes NAMED_SHARE of the profiled step or more.
"""

from __future__ import annotations

from dataclasses import dataclass

from torchdoctor.probe_values import ScriptCall, ScriptCallsValue
from torchdoctor.rules.base import Fix, MissingEvidence
from torchdoctor.rules.evidence import Evidence

NAMED_SHARE = 0.02
MAX_NAMED = 3
LOOP_FRAME = 0.9  # a frame running this share of the profiled step or more is the step's own loop
#: Scalar reads of one tensor element to a Python number, per call.
SCALAR_READS = frozenset({"Tensor.item", "Tensor.__float__", "Tensor.__int__", "Tensor.__bool__",
                          "Tensor.__index__"})
#: The calls that run the autograd engine: each is one backward pass.
BACKWARD_CALLS = frozenset({"torch.autograd.grad", "torch.autograd.backward", "torch._tensor.backward"})
#: Callees that are a part of the step the phases already time (the backward phase times the
#: backward calls), or torchdoctor's own hooks.
_STEP_PARTS = ("nn.Module: ", "torchdoctor.", "torch.optim.", "torch._compile.", "torch.utils.data.",
               *BACKWARD_CALLS)

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


#: `torch.nn.functional`'s losses not named `*_loss`.
_LOSSES = frozenset({"cross_entropy", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div"})


def is_loss(callee: str) -> bool:
    """Whether `callee` is a loss function of `torch.nn.functional`: the step's objective, part of its
    forward computation, though called outside the model's module."""
    prefix = "torch.nn.functional."
    name = callee[len(prefix):] if callee.startswith(prefix) else ""
    return bool(name) and (name.endswith("_loss") or name in _LOSSES)


def loss_share(ev: Evidence) -> float:
    """The share of the profiled step in loss functions called outside the model (0 without the
    probe's calls): the step's own work, which the phases leave outside forward."""
    try:
        calls, step_s = ev.script_calls()
    except MissingEvidence:
        return 0.0
    return min(1.0, sum(c["wall_s"] for c in calls["calls"] if not c["in_model"] and is_loss(c["callee"])) / step_s)


def calls_outside(ev: Evidence) -> list[Ran]:
    """The longest calls the script made outside the model (module docstring), longest first;
    none without the probe's calls."""
    try:
        calls, step_s = ev.script_calls()
    except MissingEvidence:
        return []
    ran = [Ran(c["callee"], c["caller"], c["count"], share_of_step(calls, step_s, c)) for c in calls["calls"]
           if not c["in_model"] and not c["callee"].startswith(_STEP_PARTS) and not is_loss(c["callee"])]
    return sorted((r for r in ran if r.share >= NAMED_SHARE), key=lambda r: -r.share)[:MAX_NAMED]


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
