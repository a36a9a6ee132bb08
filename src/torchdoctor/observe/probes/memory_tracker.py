"""Measuring one step's memory with `torch.distributed._tools.mem_tracker.MemTracker`.

MemTracker is a TorchDispatchMode: it sees every tensor created inside its context and files
its storage under a category (see torchdoctor.memory.breakdown). It is private API, so
`mem_tracker_support()` probes for what we use and `StepMemoryTracker` falls back to allocator
or RSS totals, with the reason, when it is missing or fails.

Two things MemTracker does not do and this module adds, by subclassing:
- the phase of the peak (forward, backward, optimizer), noted per device when that device's peak
  grows (on a GPU the optimizer step also touches CPU tensors, e.g. AdamW's step counters: a new
  CPU peak then must not move the GPU peak's phase or its place on the timeline);
- the timeline of the step (torchdoctor.memory.timeline): a point at each of MemTracker's module
  hooks, at the optimizer step's start and end, and at the peak;
- several calls of the root module in one step (gradient accumulation, two forwards and one
  backward): MemTracker refuses the second call ("does not support memory tracking for multiple
  iterative calls"); we keep the per-module figures seen so far, `reset_mod_stats()`, go on, and
  skip the backward hooks of modules the reset forgot.
"""

from __future__ import annotations

from typing import Any

import torch

from torchdoctor.compile.probe import torch_version
from torchdoctor.memory.breakdown import CATEGORIES, MemoryBreakdown, ModuleMemory
from torchdoctor.memory.timeline import MemoryTimeline, TimelineRecorder

#: MemTracker members this module relies on; a torch without them gets the fallback.
_REQUIRED = ("track_external", "get_tracker_snapshot", "reset_mod_stats", "memory_tracking",
             "_update_peak_stats", "_pre_fw_hook", "_pre_bw_hook", "_post_bw_hook", "_mod_tracker", "_in_opt")
_TOTAL = "Total"


def mem_tracker_support() -> str | None:
    """None when MemTracker can be used here, else why not (names the torch version)."""
    try:
        from torch.distributed._tools.mem_tracker import MemTracker
    except ImportError as exc:
        return f"MemTracker unavailable on torch {torch_version()} ({exc})"
    probe = MemTracker()
    missing = [name for name in _REQUIRED if not hasattr(probe, name) and not hasattr(MemTracker, name)]
    if missing:
        return f"MemTracker on torch {torch_version()} lacks {', '.join(missing)}"
    return None


def _tracker_class() -> type:
    from torch.distributed._tools.mem_tracker import MemTracker

    class PhaseMemTracker(MemTracker):
        """MemTracker that notes the phase of the peak and tolerates repeated root calls."""

        def __init__(self) -> None:
            super().__init__()
            self.peak_phases: dict[Any, str] = {}  # device -> phase when its peak last grew
            self.harvested: dict[str, ModuleMemory] = {}
            self.recorder = TimelineRecorder()
            self._optimizer_marks: tuple[Any, ...] = ()
            self._mod_tracker._fw_pre_hook = _without_grad_leaves(self._mod_tracker._fw_pre_hook)

        def __enter__(self) -> Any:
            super().__enter__()
            if self._depth == 1:  # after MemTracker's own optimizer hooks, so the step's state is counted
                from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

                self._optimizer_marks = (
                    register_optimizer_step_pre_hook(lambda *_: self.mark("optimizer step start")),
                    register_optimizer_step_post_hook(lambda *_: self.mark("optimizer step end")),
                )  # fmt: skip
            return self

        def __exit__(self, *args: Any) -> None:
            if self._depth == 1:
                for handle in self._optimizer_marks:
                    handle.remove()
                self._optimizer_marks = ()
            super().__exit__(*args)

        def mark(self, label: str) -> None:
            self.recorder.mark(label, self.get_tracker_snapshot("current"))

        def _mark_module(self, module: torch.nn.Module, what: str) -> None:
            stats = self.memory_tracking.get(module)
            self.mark(f"{stats.mod_fqn if stats is not None else type(module).__name__} {what}")

        def _update_peak_stats(self, peak_state: Any) -> None:
            before = dict(self._peak_mem)
            super()._update_peak_stats(peak_state)
            grown = [device for device, total in self._peak_mem.items() if total != before.get(device)]
            if grown:
                phase = self._phase_now()
                for device in grown:
                    self.peak_phases[device] = phase
                self.recorder.mark_peak(self._peak_mem_snap, grown)

        def _phase_now(self) -> str:
            if self._in_opt:
                return "optimizer"
            if self._mod_tracker.is_bw:
                return "backward"
            return "forward" if set(self._mod_tracker.parents) - {"Global"} else "outside"

        def _track_module_params_and_buffers(self, module: torch.nn.Module,
                                             install_grad_hooks: bool = True) -> tuple[int, int]:
            """MemTracker's, with gradient hooks only on a module whose parameters all require grad:
            it hooks every parameter's gradient, and `register_hook` raises on a frozen one (a
            snapshot made with `copy.deepcopy(model).requires_grad_(False)` called in the step). A
            module mixing both loses its gradients' bytes here; its trainable submodules keep theirs."""
            hooks = install_grad_hooks and all(p.requires_grad for p in module.parameters())
            return super()._track_module_params_and_buffers(module, hooks)

        def _pre_fw_hook(self, module: torch.nn.Module, inputs: Any) -> None:
            try:
                super()._pre_fw_hook(module, inputs)
            except NotImplementedError:  # the root called again: next micro-batch
                self.harvested = merge_modules(self.harvested, module_stats(self))
                self.reset_mod_stats()
                super()._pre_fw_hook(module, inputs)
            self._mark_module(module, "pre-forward")

        def _post_fw_hook(self, module: torch.nn.Module, inputs: Any, outputs: Any) -> None:
            super()._post_fw_hook(module, inputs, outputs)
            self._mark_module(module, "post-forward")

        # After a reset, the backward of an earlier forward reaches modules no longer tracked.
        def _pre_bw_hook(self, module: torch.nn.Module | None, args: Any) -> None:
            if module is not None and module in self.memory_tracking:
                super()._pre_bw_hook(module, args)
                self._mark_module(module, "pre-backward")

        def _post_bw_hook(self, module: torch.nn.Module | None, args: Any) -> None:
            if module is not None and module in self.memory_tracking:
                super()._post_bw_hook(module, args)
                self._mark_module(module, "post-backward")

    return PhaseMemTracker


def _without_grad_leaves(pre_hook: Any) -> Any:
    """ModTracker's forward pre-hook, shown the module's inputs less the leaf tensors that require
    grad. ModTracker hooks the backward of every input that requires grad; on a leaf that hook
    raises inside the script's own `torch.autograd.grad(out, x)` ("A leaf node was passed to
    _will_engine_execute_node but we are currently running autograd.grad()", torch 2.13): a
    Jacobian or gradient penalty with respect to the input would fail. Without such an input
    ModTracker closes the module's backward when the backward ends, as for inputs without grad;
    what is lost is that input's bytes in the module's input memory."""
    from torch.utils._pytree import tree_flatten, tree_unflatten

    def hook(module: torch.nn.Module, inputs: Any) -> Any:
        args, spec = tree_flatten(inputs)
        kept = [None if isinstance(a, torch.Tensor) and a.requires_grad and a.is_leaf else a for a in args]
        return pre_hook(module, tree_unflatten(kept, spec))

    return hook


def main_device(peak: dict[Any, dict[str, int]]) -> Any:
    """The device a breakdown reports: an accelerator over the CPU, then the largest peak. Meta
    tensors (shape-only, no memory) never count."""
    real = [d for d in peak if getattr(d, "type", str(d)) != "meta"]
    return max(real, key=lambda d: (d.type != "cpu", peak[d].get(_TOTAL, 0)), default=None)


def merge_modules(a: dict[str, ModuleMemory], b: dict[str, ModuleMemory]) -> dict[str, ModuleMemory]:
    """Per module name, the larger of each figure."""
    merged = dict(a)
    for name, m in b.items():
        old = merged.get(name)
        if old is None:
            merged[name] = m
            continue
        merged[name] = ModuleMemory(
            name, max(old.parameter_bytes, m.parameter_bytes), max(old.output_bytes, m.output_bytes),
            _max_opt(old.activation_bytes, m.activation_bytes),
            _max_opt(old.peak_forward_bytes, m.peak_forward_bytes),
            _max_opt(old.peak_backward_bytes, m.peak_backward_bytes),
        )
    return merged


def _max_opt(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def _state_total(stats: Any, state_name: str) -> int | None:
    """Largest per-device total of the module's last snapshot in state `state_name`."""
    for state, snaps in stats.snapshots.items():
        if state.name == state_name and snaps:
            return max((snap.get(_TOTAL, 0) for snap in snaps[-1].values()), default=None)
    return None


def _growth(stats: Any) -> int | None:
    before, after = _state_total(stats, "PRE_FW"), _state_total(stats, "POST_FW")
    return None if before is None or after is None else after - before


def module_stats(tracker: Any) -> dict[str, ModuleMemory]:
    """Every module MemTracker saw, by fully qualified name (root's class name first)."""
    result = {}
    for stats in tracker.memory_tracking.values():
        result[stats.mod_fqn] = ModuleMemory(
            name=stats.mod_fqn,
            parameter_bytes=int(getattr(stats, "parameter_mem", 0) or 0),
            output_bytes=int(getattr(stats, "output_mem", 0) or 0),
            activation_bytes=_growth(stats),
            peak_forward_bytes=_state_total(stats, "PEAK_FW"),
            peak_backward_bytes=_state_total(stats, "PEAK_BW"),
        )
    return result


def top_level(root: torch.nn.Module, modules: dict[str, ModuleMemory]) -> list[ModuleMemory]:
    """The root's children that were called; uncalled containers (ModuleList) are opened."""
    root_name = next((name for name in modules if "." not in name), type(root).__name__)
    found: list[ModuleMemory] = []

    def visit(module: torch.nn.Module, prefix: str) -> None:
        for child_name, child in module.named_children():
            name = f"{prefix}.{child_name}"
            if name in modules:
                found.append(modules[name])
            else:
                visit(child, name)

    visit(root, root_name)
    return found


class StepMemoryTracker:
    """Tracks the memory of the code run between `start` and `stop` (one step).

    `start` may be called on a step boundary inside the user's loop and `stop` on the next one:
    MemTracker's context is entered and left by hand, not with `with`.
    """

    def __init__(self) -> None:
        self.reason = mem_tracker_support()
        self._tracker: Any = None
        self._root: torch.nn.Module | None = None
        self._start_snap: dict[Any, dict[str, int]] = {}
        self.timeline: MemoryTimeline | None = None
        """Set by `stop`: the step's memory over time on the breakdown's device."""

    @property
    def active(self) -> bool:
        return self._tracker is not None

    def start(self, root: torch.nn.Module | None, optimizer: torch.optim.Optimizer | None) -> bool:
        """Enter MemTracker; False (and `reason` set) when it cannot be used."""
        if self.reason is not None:
            return False
        tracker = _tracker_class()()
        tracker.track_external(*(obj for obj in (root, optimizer) if obj is not None))
        self._start_snap = tracker.get_tracker_snapshot("current")
        tracker.__enter__()
        tracker.mark("step start")
        self._tracker, self._root = tracker, root
        return True

    def stop(self, reason: str | None = None) -> MemoryBreakdown:
        """Leave MemTracker and return the breakdown; `reason` notes an unfinished step."""
        tracker, self._tracker = self._tracker, None
        tracker.mark("step end")
        tracker.__exit__(None, None, None)
        peak = tracker.get_tracker_snapshot("peak")
        device = main_device(peak)
        if device is None:
            return MemoryBreakdown("mem_tracker", "cpu", 0, reason=reason or "no tensor was tracked")
        snap = peak[device]
        self.timeline = tracker.recorder.timeline(device)
        modules = merge_modules(tracker.harvested, module_stats(tracker))
        return MemoryBreakdown(
            method="mem_tracker",
            device=str(device),
            peak_bytes=int(snap.get(_TOTAL, 0)),
            categories_bytes={name: int(snap.get(key, 0)) for key, name in CATEGORIES.items()},
            phase=tracker.peak_phases.get(device),
            modules=top_level(self._root, modules) if self._root is not None else [],
            start_bytes=int(self._start_snap.get(device, {}).get(_TOTAL, 0)),
            reason=reason,
        )
