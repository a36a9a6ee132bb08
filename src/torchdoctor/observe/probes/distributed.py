"""Run-time facts for the distributed analysis, noted inside the observed child.

`RuntimeProbe` is owned by the observation's `Facts` and fed by its hooks
(`torchdoctor.observe.hooks`); its `to_dict()` lands in each rank's environment as
`distributed_runtime` and, through `rank_summary`, in `record.ranks[i]["runtime"]`.

Definitions:
- sampler iterations: each call of `DistributedSampler.__iter__` (one epoch of one loader) notes the
  sampler's `epoch`, `shuffle`, the number of indices and a hash of the first `HASHED_INDICES`.
  Two iterations of one sampler with equal epoch and hash mean `set_epoch` was not called: every
  epoch repeats the same order. A subclass that overrides `__iter__` is not seen.
- gradient-synchronising forwards: forwards of a `DistributedDataParallel` module with grad
  enabled and `require_backward_grad_sync` true (false inside `no_sync()`); the backward that follows
  each one all-reduces every gradient bucket.
- backward calls and optimizer steps: counts of the hooks' events over the whole run.
- step elements: per step (of the clock's chosen source), the summed number of elements of the
  first tensor handed to the outermost module's forward: its batch cost (batch x padded length).
- ddp: the first DDP module's settings and, at the end, its logging data (bucket sizes, unused
  parameters, rebuilt buckets).
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable

import torch

HASHED_INDICES = 64
_MAX_RECORDED = 256  # per list: a long run keeps its first iterations and steps


def first_tensor_numel(items: Any) -> int | None:
    """Elements of the first tensor found in a (nested) batch, or None."""
    if isinstance(items, torch.Tensor):
        return items.numel()
    if isinstance(items, dict):
        items = list(items.values())
    if isinstance(items, (list, tuple)):
        for item in items[:4]:
            numel = first_tensor_numel(item)
            if numel is not None:
                return numel
    return None


def ddp_settings(module: torch.nn.Module) -> dict[str, Any]:
    """The DDP module's settings and the reducer's logging data (torch's own counters)."""
    data = module._get_ddp_logging_data()  # type: ignore[operator]
    sizes = str(data.get("bucket_sizes", "")).split(",")
    return {
        "find_unused_parameters": bool(module.find_unused_parameters),
        "gradient_as_bucket_view": bool(module.gradient_as_bucket_view),
        "static_graph": bool(module.static_graph),
        "bucket_cap_bytes": int(module.bucket_bytes_cap),
        "bucket_sizes_bytes": [int(s) for s in sizes if s.strip()],
        "unused_parameter_bytes": data.get("unused_parameter_size"),
        "has_rebuilt_buckets": bool(data.get("has_rebuilt_buckets", 0)),
    }


class RuntimeProbe:
    def __init__(self) -> None:
        self.optimizer_steps = 0
        self.backward_calls = 0
        self.synced_forwards = 0
        self.step_elements: list[int] = []
        self.sampler_iterations: list[dict[str, Any]] = []
        self._elements = 0
        self._ddp: torch.nn.Module | None = None

    def install(self) -> Callable[[], None]:
        """Wraps `DistributedSampler.__iter__`; returns the undo."""
        from torch.utils.data.distributed import DistributedSampler

        original = DistributedSampler.__iter__
        probe = self

        def noted_iter(sampler: Any) -> Any:
            indices = list(original(sampler))
            probe.note_sampler(sampler, indices)
            return iter(indices)

        DistributedSampler.__iter__ = noted_iter  # type: ignore[method-assign]
        return lambda: setattr(DistributedSampler, "__iter__", original)

    def note_sampler(self, sampler: Any, indices: list[int]) -> None:
        if len(self.sampler_iterations) >= _MAX_RECORDED:
            return
        head = ",".join(str(int(i)) for i in indices[:HASHED_INDICES])
        self.sampler_iterations.append({
            "sampler_id": id(sampler), "epoch": int(sampler.epoch), "shuffle": bool(sampler.shuffle),
            "num_indices": len(indices), "indices_hash": hashlib.sha1(head.encode()).hexdigest()[:16],
        })  # fmt: skip

    def note_forward(self, module: torch.nn.Module, args: Any, kwargs: dict[str, Any]) -> None:
        """An outermost module's forward starts (not nested in another)."""
        numel = first_tensor_numel(list(args) + list(kwargs.values()))
        self._elements += numel or 0
        if isinstance(module, torch.nn.parallel.DistributedDataParallel):
            self._ddp = self._ddp or module
            if torch.is_grad_enabled() and module.require_backward_grad_sync:
                self.synced_forwards += 1

    def note_backward(self) -> None:
        self.backward_calls += 1

    def note_optimizer_step(self) -> None:
        self.optimizer_steps += 1

    def end_step(self) -> None:
        """A step of the clock's chosen source ended."""
        if len(self.step_elements) < _MAX_RECORDED:
            self.step_elements.append(self._elements)
        self._elements = 0

    def restart_steps(self) -> None:
        """The clock switched to a better step source and counts again from its first step."""
        self.step_elements.clear()
        self._elements = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "optimizer_steps": self.optimizer_steps,
            "backward_calls": self.backward_calls,
            "synced_forwards": self.synced_forwards,
            "step_elements": self.step_elements,
            "sampler_iterations": self.sampler_iterations,
            "ddp": ddp_settings(self._ddp) if self._ddp is not None else None,
        }
