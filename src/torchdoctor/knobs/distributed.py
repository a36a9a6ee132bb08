"""Knobs for data-parallel training under torchrun: DistributedDataParallel's constructor options,
`no_sync()` during gradient accumulation, and FSDP2's `reshard_after_forward`.

What they read (docs/distributed.md): `record.env`'s `models[i].ddp` (the DDP module's settings,
rank 0) and `record.distributed`'s runtime (`grad_sync`, `ddp`: bucket sizes), which the tuner
fills for every multi-rank trial. FSDP2 is recognised by the classes `fully_shard` creates
(`FSDP<Class>` in the model's `module_types`).
"""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable

from torchdoctor.distributed.section import DdpSettings, DistributedSection, GradSync, Runtime
from torchdoctor.jsonfields import readable
from torchdoctor.knobs import guard
from torchdoctor.knobs.base import (GENERIC, ScriptNames, CallEdit, IntRange, Knob, Undo, environment, module_types,
                                    register)
from torchdoctor.knobs.patching import chain, intercept_init, patch_attr
from torchdoctor.record import Record

MB = 1 << 20


def ddp_settings(record: Record) -> DdpSettings | None:
    """The first DDP module's settings the Record saw, or None when the script uses no DDP (or the
    Record's settings do not fit their type)."""
    for model in environment(record).models:
        if model.ddp:
            return readable(functools.partial(DdpSettings.from_dict, where="env.models[].ddp"), model.ddp)
    return _runtime(record).ddp


def grad_sync(record: Record) -> GradSync:
    """The ranks' gradient synchronisation (`distributed.runtime.grad_sync`); empty when not measured."""
    return _runtime(record).grad_sync or GradSync()


def _runtime(record: Record) -> Runtime:
    section = readable(DistributedSection.from_dict, record.distributed)
    return (section.runtime if section is not None else None) or Runtime()


def _ddp_class() -> type:
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel


class _DDPArgument(Knob):
    """A bool DDP constructor argument switched on at every `DistributedDataParallel(...)`."""

    argument = ""
    loss_rtol = 1e-3

    def applies(self, record: Record) -> bool:
        settings = ddp_settings(record)
        return settings is not None and not getattr(settings, self.argument)

    def apply(self, value: Any) -> Undo:
        def rewrite(arguments: dict[str, Any]) -> None:
            arguments[self.argument] = value

        return intercept_init(_ddp_class(), rewrite, on_rewrite=guard.rewritten(self.name))

    def code_change(self, value: Any, names: ScriptNames = GENERIC) -> str:
        return f"{names.model} = DistributedDataParallel({names.model}, ..., {self.argument}={value!r})"

    def call_edit(self, value: Any) -> CallEdit:
        return CallEdit(("DistributedDataParallel", "DDP"), {self.argument: value})


@register
class GradientAsBucketView(_DDPArgument):
    name = argument = "gradient_as_bucket_view"
    summary = "DDP gradients as views into the all-reduce buckets (one copy less per step)"


@register
class StaticGraph(_DDPArgument):
    name = argument = "static_graph"
    summary = "DDP static_graph: the same parameters are used every step, so DDP skips its per-step search"

    def applies(self, record: Record) -> bool:
        """Not with `no_sync()` in use: DDP's static graph expects every backward to all-reduce
        (torch 2.13 fails an internal assert in the reducer otherwise)."""
        sync = grad_sync(record)
        skips_sync = (sync.allreduce_backwards_per_optimizer_step or 0) < (sync.backward_per_optimizer_step or 0)
        return super().applies(record) and not skips_sync


@register
class BucketCapMB(Knob):
    name = "bucket_cap_mb"
    kind = "int"
    summary = "DDP gradient bucket size in MiB (fewer, larger all-reduces, or earlier overlap)"

    def applies(self, record: Record) -> bool:
        return ddp_settings(record) is not None

    def int_range(self, record: Record) -> IntRange:
        """1 MiB up to the whole gradient in one bucket (at least 2, at most 256); 25 (DDP's
        default) tried first unless it is what the script runs with."""
        parameter_bytes = max((m.parameter_bytes or 0 for m in environment(record).models), default=0)
        high = min(256, max(2, -(-parameter_bytes // MB)))
        first = 25 if self.current(record) != 25 else max(1, high // 2)
        return IntRange(1, high, min(first, high))

    def value_range(self) -> tuple[int, int]:
        return 1, 4096

    def current(self, record: Record) -> Any:
        settings = ddp_settings(record) or DdpSettings()
        cap = settings.bucket_cap_bytes or settings.bucket_bytes_cap
        return round(cap / MB) if cap else None

    def apply(self, value: Any) -> Undo:
        def rewrite(arguments: dict[str, Any]) -> None:
            arguments["bucket_cap_mb"] = int(value)

        return intercept_init(_ddp_class(), rewrite, on_rewrite=guard.rewritten(self.name))

    def code_change(self, value: Any, names: ScriptNames = GENERIC) -> str:
        return f"{names.model} = DistributedDataParallel({names.model}, ..., bucket_cap_mb={int(value)})"

    def call_edit(self, value: Any) -> CallEdit:
        return CallEdit(("DistributedDataParallel", "DDP"), {"bucket_cap_mb": int(value)})


@register
class NoSync(Knob):
    """Value: the micro-batches per optimizer step (k). Of every k training forwards of a DDP
    module since the last optimizer step, the first k-1 run as inside `model.no_sync()` (their
    backward does not all-reduce, gradients accumulate locally) and the k-th synchronises, exactly
    what the code change does. A script whose accumulation count varies is caught by the
    numerics check (unsynchronised ranks drift apart)."""

    name = "no_sync"
    kind = "choice"
    loss_rtol = 1e-3
    summary = "skip DDP's all-reduce on all but the last micro-batch of gradient accumulation"

    def applies(self, record: Record) -> bool:
        """Measured accumulation without `no_sync()`, and no static graph (see StaticGraph)."""
        settings = ddp_settings(record)
        return grad_sync(record).accumulation_without_no_sync and not (settings is not None and settings.static_graph)

    def choices(self, record: Record) -> list[Any]:
        return [max(2, round(grad_sync(record).backward_per_optimizer_step or 2))]

    def check(self, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or not 2 <= value <= 4096:
            raise ValueError(f"no_sync takes the micro-batches per optimizer step, an integer in 2..4096, "
                             f"got {value!r}")

    def apply(self, value: Any) -> Undo:
        import torch
        from torch.optim.optimizer import register_optimizer_step_post_hook

        micro = int(value)
        forwards = [0]
        original = _ddp_class().forward

        def forward(module: Any, *args: Any, **kwargs: Any) -> Any:
            if module.training and torch.is_grad_enabled():
                module.require_backward_grad_sync = forwards[0] % micro == micro - 1
                forwards[0] += 1
            return original(module, *args, **kwargs)

        def restart(*_: Any) -> None:  # an optimizer step ends the accumulation
            forwards[0] = 0

        handle = register_optimizer_step_post_hook(restart)
        return chain([handle.remove, patch_attr(_ddp_class(), "forward", functools.wraps(original)(forward))])

    def code_change(self, value: Any, names: ScriptNames = GENERIC) -> str:
        return (f"for micro, batch in enumerate(micro_batches):  # {value} per optimizer step\n"
                f"    sync = micro == {value} - 1\n"
                f"    with contextlib.nullcontext() if sync else {names.model}.no_sync():\n"
                f"        loss_fn({names.model}(batch)).backward()\n"
                f"{names.optimizer}.step()")


#: Modules that export `fully_shard` (FSDP2); a script may import it from any of them.
_FSDP_MODULES = ("torch.distributed.fsdp", "torch.distributed.fsdp._fully_shard._fully_shard",
                 "torch.distributed._composable.fsdp", "torch.distributed._composable.fsdp.fully_shard")


@register
class ReshardAfterForward(Knob):
    """False keeps each FSDP2 unit's parameters gathered from forward to backward (no second
    all-gather in backward, more memory); True frees them after forward (FSDP2's default)."""

    name = "reshard_after_forward"
    kind = "choice"
    loss_rtol = 1e-3
    summary = "FSDP2 fully_shard(reshard_after_forward=...): trade memory for one all-gather per unit"

    def applies(self, record: Record) -> bool:
        return any(name.startswith("FSDP") for name in module_types(record))

    def choices(self, record: Record) -> list[Any]:
        return [False, True]

    def check(self, value: Any) -> None:
        if not isinstance(value, bool):
            raise ValueError(f"reshard_after_forward takes true or false, got {value!r}")

    def apply(self, value: Any) -> Undo:
        import torch.distributed.fsdp  # noqa: F401  (loads the modules patched below)

        undos = []
        for name in _FSDP_MODULES:
            module = sys.modules.get(name)
            original = getattr(module, "fully_shard", None) if module is not None else None
            if callable(original) and not isinstance(original, type(sys)):
                undos.append(patch_attr(module, "fully_shard", _forcing(original, bool(value))))
        return chain(undos)

    def code_change(self, value: Any, names: ScriptNames = GENERIC) -> str:
        return f"fully_shard(module, reshard_after_forward={bool(value)!r})  # each unit and the root"

    def call_edit(self, value: Any) -> CallEdit:
        return CallEdit(("fully_shard",), {"reshard_after_forward": bool(value)})


def _forcing(fully_shard: Callable[..., Any], value: bool) -> Callable[..., Any]:
    @functools.wraps(fully_shard)
    def forced(*args: Any, **kwargs: Any) -> Any:
        return fully_shard(*args, **{**kwargs, "reshard_after_forward": value})

    return forced
