"""Multi-tensor (`foreach=True`) or fused (`fused=True`) optimizer implementations: one kernel
over all parameters instead of a loop of small ones. Applied by intercepting the construction of
every torch.optim class that takes the argument."""

from __future__ import annotations

import inspect
from typing import Any

import torch

from torchdoctor.knobs import guard
from torchdoctor.knobs.base import GENERIC, ScriptNames, CallEdit, Knob, Undo, environment, register, trains
from torchdoctor.knobs.patching import chain, intercept_init
from torchdoctor.record import Record


def _optimizer_classes(argument: str) -> list[type]:
    classes = []
    for value in vars(torch.optim).values():
        if (isinstance(value, type) and issubclass(value, torch.optim.Optimizer)
                and argument in inspect.signature(value.__init__).parameters):
            classes.append(value)
    return classes


@register
class OptimizerImplementation(Knob):
    name = "optimizer_impl"
    kind = "choice"
    loss_rtol = 1e-3
    summary = "foreach (multi-tensor) or fused optimizer kernels"

    def applies(self, record: Record) -> bool:
        optimizers = environment(record).optimizers
        plain = [o for o in optimizers if (o.module or "").startswith("torch.optim") and not o.fused]
        return trains(record) and bool(plain)

    def choices(self, record: Record) -> list[Any]:
        names = {o.class_name for o in environment(record).optimizers}
        fused = {c.__name__ for c in _optimizer_classes("fused")}
        return ["fused", "foreach"] if names & fused else ["foreach"]

    def check(self, value: Any) -> None:
        if value not in ("fused", "foreach"):
            raise ValueError(f"optimizer_impl takes \"fused\" or \"foreach\", got {value!r}")

    def apply(self, value: Any) -> Undo:
        if value not in ("fused", "foreach"):
            raise ValueError(f"optimizer_impl must be 'fused' or 'foreach', got {value!r}")
        other = "foreach" if value == "fused" else "fused"

        def rewrite(arguments: dict[str, Any]) -> None:
            arguments[value] = True
            if other in arguments:
                arguments[other] = None

        on_rewrite = guard.rewritten(self.name)
        return chain([intercept_init(cls, rewrite, on_rewrite=on_rewrite) for cls in _optimizer_classes(value)])

    def code_change(self, value: Any, names: ScriptNames = GENERIC) -> str:
        return f"{names.optimizer} = {names.optimizer_class}({names.model}.parameters(), ..., {value}=True)"

    def call_edit(self, value: Any) -> CallEdit:
        names = tuple(cls.__name__ for cls in _optimizer_classes(value))
        return CallEdit(names, {value: True})
