"""Activation checkpointing of repeated blocks: every child of a ModuleList or Sequential made of
two or more blocks of one type recomputes its activations in backward instead of storing them.

It trades compute for memory: it rarely makes a step faster by itself, so the tuner tries it only
when a finding asks for it (memory pressure), and it is what lets a larger batch fit.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import torch
from torch.utils.checkpoint import checkpoint

from torchdoctor.knobs.base import GENERIC, ScriptNames, Knob, Undo, module_types, register, trains
from torchdoctor.knobs.patching import at_first_root_forward, chain, wrap_forward
from torchdoctor.record import Record


def repeated_blocks(root: torch.nn.Module) -> list[torch.nn.Module]:
    """Children of ModuleLists/Sequentials holding >= 2 modules that all share one type."""
    blocks: list[torch.nn.Module] = []
    for module in root.modules():
        if isinstance(module, (torch.nn.ModuleList, torch.nn.Sequential)):
            children = list(module.children())
            if len(children) >= 2 and len({type(c) for c in children}) == 1:
                blocks.extend(children)
    return blocks


def _checkpointed(forward: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(forward)
    def run(*args: Any, **kwargs: Any) -> Any:
        if not torch.is_grad_enabled():
            return forward(*args, **kwargs)
        return checkpoint(forward, *args, use_reentrant=False, **kwargs)
    return run


@register
class ActivationCheckpointing(Knob):
    name = "activation_checkpointing"
    loss_rtol = 1e-3
    summary = "recompute the activations of repeated blocks in backward (less memory)"

    def applies(self, record: Record) -> bool:
        types = module_types(record)
        return trains(record) and any(name in types for name in ("ModuleList", "Sequential"))

    def apply(self, value: Any) -> Undo:
        def action(root: torch.nn.Module) -> Undo:
            return chain([wrap_forward(block, _checkpointed) for block in repeated_blocks(root)])

        return at_first_root_forward(action)

    def code_change(self, value: Any, names: ScriptNames = GENERIC) -> str:
        return ("from torch.utils.checkpoint import checkpoint\n"
                f"for block in {names.model}.layers:  # the repeated blocks\n"
                "    x = checkpoint(block, x, use_reentrant=False)")
