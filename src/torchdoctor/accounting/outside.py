"""Which of the calls the script made outside the model are the step's own computation: the time
in torch operators wherever they are called (a `torch.cdist`, a `randperm`, target arithmetic on
the step's tensors), and a loss function of `torch.nn.functional` whole (the step's objective).
What is left of the time outside the model is Python and host work: data preparation in Python,
logging, a garbage collection, a checkpoint. Read by the accounting's `outside_model` slice and by
TD-COMP-013 (rules/outside.py); torch-free.
"""

from __future__ import annotations

from typing import Any

#: The calls that run the autograd engine: each is one backward pass.
BACKWARD_CALLS = frozenset({"torch.autograd.grad", "torch.autograd.backward", "torch._tensor.backward"})
#: Callees that are a part of the step the phases already time (the backward phase times the
#: backward calls), or torchdoctor's own hooks.
STEP_PARTS = ("nn.Module: ", "torchdoctor.", "torch.optim.", "torch._compile.", "torch.utils.data.",
              *BACKWARD_CALLS)
#: `torch.nn.functional`'s losses not named `*_loss`.
_LOSSES = frozenset({"cross_entropy", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div"})


def is_loss(callee: str) -> bool:
    """Whether `callee` is a loss function of `torch.nn.functional`: the step's objective, part of its
    forward computation, though called outside the model's module."""
    prefix = "torch.nn.functional."
    name = callee[len(prefix):] if callee.startswith(prefix) else ""
    return bool(name) and (name.endswith("_loss") or name in _LOSSES)


def is_outside(call: dict[str, Any]) -> bool:
    """Whether a call of the probe's `script_calls` ran outside the model and is none of the step's
    timed parts (STEP_PARTS)."""
    return not call.get("in_model") and not str(call.get("callee")).startswith(STEP_PARTS)


def computation_s(call: dict[str, Any]) -> tuple[float, float]:
    """(seconds of torch operators, seconds of a loss function) of one call group per step: a loss
    whole (its wall time: its Python is the objective's too), any other call its operators' time
    (`ops_s`; 0 in a Record from before it was recorded)."""
    if is_loss(str(call.get("callee"))):
        return 0.0, float(call.get("wall_s") or 0.0)
    return float(call.get("ops_s") or 0.0), 0.0


def computation_outside_s(calls: list[dict[str, Any]]) -> tuple[float, float]:
    """(operator seconds, loss seconds) per step of the calls outside the model (module docstring)."""
    parts = [computation_s(c) for c in calls if is_outside(c)]
    return sum(p[0] for p in parts), sum(p[1] for p in parts)
