"""Facts about the script's objects, noted once as the hooks first meet them.

DataLoaders, optimizers, the outermost modules, the state of torch's switches while the model
runs (grad mode, inference mode, autocast, training flag), and torch.compile calls. These become
part of the Record's environment fingerprint; rules and knobs read them from there.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import torch

from torchdoctor.observe.probes.distributed import RuntimeProbe
from torchdoctor.observe.batch_layout import Layout
from torchdoctor.observe.gradients import gradient_facts, optimized_ids, unused_gradients
from torchdoctor.observe.module_hooks import script_hooks

_MAX_ITEMS = 16  # a script building hundreds of loaders or modules gets the first few recorded
_MAX_WARNINGS = 20  # distinct warnings kept (a warning shown once per call site cannot flood the Record)
_WARNING_CHARS = 300
_MAX_LAYER_SHAPES = 64  # distinct Linear/Conv shapes recorded per model


def describe_dataloader(loader: Any) -> dict[str, Any]:
    dataset = loader.dataset
    try:
        length: int | None = len(dataset)
    except TypeError:  # an IterableDataset without __len__
        length = None
    collate = getattr(loader, "collate_fn", None)
    return {
        "num_workers": loader.num_workers,
        "pin_memory": bool(loader.pin_memory),
        "prefetch_factor": loader.prefetch_factor,
        "persistent_workers": bool(loader.persistent_workers),
        "batch_size": loader.batch_size,
        "drop_last": bool(loader.drop_last),
        "dataset_type": type(dataset).__qualname__,
        "dataset_len": length,
        "iterable_dataset": isinstance(dataset, torch.utils.data.IterableDataset),
        "sampler_type": type(loader.sampler).__qualname__ if loader.sampler is not None else None,
        "collate_fn": getattr(collate, "__qualname__", type(collate).__qualname__),
    }


def describe_optimizer(optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    defaults = optimizer.defaults
    return {
        "class": type(optimizer).__qualname__,
        "module": type(optimizer).__module__,
        "foreach": defaults.get("foreach"),
        "fused": defaults.get("fused"),
        "lr": defaults.get("lr") if isinstance(defaults.get("lr"), (int, float)) else None,
        "num_param_groups": len(optimizer.param_groups),
        "num_params": sum(len(g["params"]) for g in optimizer.param_groups),
    }


def describe_module(module: torch.nn.Module, optimizers: list[torch.optim.Optimizer] | None = None,
                    others: list[torch.nn.Module] | None = None) -> dict[str, Any]:
    """The module's parameters, layers and state; with the optimizers the script stepped and its
    `others` outermost modules, what its gradients went to (observe/gradients.py)."""
    params = list(module.parameters())
    dtypes = Counter(str(p.dtype).removeprefix("torch.") for p in params)
    devices = Counter(str(p.device.type) for p in params)
    types = Counter(type(m).__qualname__ for m in module.modules())
    info: dict[str, Any] = {
        "class": type(module).__qualname__,
        "num_parameters": sum(p.numel() for p in params),
        "num_trainable_parameters": sum(p.numel() for p in params if p.requires_grad),
        "parameter_bytes": sum(p.numel() * p.element_size() for p in params),
        "parameter_dtypes": dict(dtypes),
        "parameter_devices": dict(devices),
        "module_types": dict(types.most_common(40)),
        "layer_shapes": layer_shapes(module),
        "training": module.training,
        "compiled": type(module).__qualname__ == "OptimizedModule",
        **gradient_facts(module, optimizers or [], others or []),
        "script_hooks": script_hooks(module),
    }
    if type(module).__qualname__ == "DistributedDataParallel":
        info["ddp"] = {
            "find_unused_parameters": getattr(module, "find_unused_parameters", None),
            "gradient_as_bucket_view": getattr(module, "gradient_as_bucket_view", None),
            "static_graph": getattr(module, "static_graph", None),
            "bucket_bytes_cap": getattr(module, "bucket_bytes_cap", None),
        }
    return info


def layer_shapes(module: torch.nn.Module) -> list[dict[str, Any]]:
    """Distinct Linear and Conv shapes in `module`, with how many layers share each: `type`,
    `in_features`/`out_features` (Linear) or `in_channels`/`out_channels` (Conv), weight `dtype`,
    `count`. The Tensor Core alignment rule reads these."""
    shapes: Counter[tuple[str, str, int, str, int, str]] = Counter()
    for m in module.modules():
        if isinstance(m, torch.nn.Linear):
            key = ("Linear", "in_features", m.in_features, "out_features", m.out_features, m.weight.dtype)
        elif isinstance(m, torch.nn.modules.conv._ConvNd):
            key = (type(m).__qualname__, "in_channels", m.in_channels, "out_channels", m.out_channels, m.weight.dtype)
        else:
            continue
        shapes[key] += 1
    return [{"type": t, k_in: n_in, k_out: n_out, "dtype": str(dtype).removeprefix("torch."), "count": count}
            for (t, k_in, n_in, k_out, n_out, dtype), count in shapes.most_common(_MAX_LAYER_SHAPES)]


def script_tools() -> dict[str, Any]:
    """Debugging tools the script itself has switched on, sampled at the timing window's start
    (before torchdoctor's own profiler starts): the autograd profiler and anomaly detection."""
    return {"profiler_enabled": bool(torch.autograd._profiler_enabled()),
            "anomaly_detection": bool(torch.is_anomaly_enabled())}


def forward_state(module: torch.nn.Module) -> dict[str, Any]:
    """The switches in effect while the outermost module runs."""
    autocast = {}
    for device in ("cpu", "cuda"):
        if torch.is_autocast_enabled(device):
            autocast[device] = str(torch.get_autocast_dtype(device)).removeprefix("torch.")
    return {
        "grad_enabled": torch.is_grad_enabled(),
        "inference_mode": torch.is_inference_mode_enabled(),
        "autocast": autocast,
        "training": module.training,
    }


@dataclass
class Facts:
    dataloaders: list[dict[str, Any]] = field(default_factory=list)
    optimizers: list[dict[str, Any]] = field(default_factory=list)
    models: list[dict[str, Any]] = field(default_factory=list)
    forward_state: dict[str, Any] | None = None
    compile_calls: list[dict[str, Any]] = field(default_factory=list)
    script_tools: dict[str, Any] | None = None  # script_tools() at the timing window's start
    gradcheck_calls: int = 0  # torch.autograd.gradcheck/gradgradcheck calls in the timing window
    gradcheck_ns: int = 0  # their wall time
    save_calls: int = 0  # torch.save calls in the timing window
    save_ns: int = 0  # their wall time
    batch_layout: Layout | None = None  # the first batch's tensors (observe/batch_layout.py); not in the Record
    warnings: dict[tuple[str, str, str, int], int] = field(default_factory=dict)  # shown warnings -> times
    create_graph: bool = False  # a backward call asked for create_graph (double backward); not in the Record
    _seen: set[int] = field(default_factory=set)
    _forward_noted: bool = False
    _root_modules: list[torch.nn.Module] = field(default_factory=list)
    _optimizers: list[torch.optim.Optimizer] = field(default_factory=list)  # every one stepped
    runtime: RuntimeProbe = field(default_factory=RuntimeProbe)  # facts for the distributed analysis

    def _first_time(self, obj: Any) -> bool:
        key = id(obj)
        if key in self._seen:
            return False
        self._seen.add(key)
        return True

    def add_dataloader(self, loader: Any) -> None:
        if self._first_time(loader) and len(self.dataloaders) < _MAX_ITEMS:
            self.dataloaders.append(describe_dataloader(loader))

    def add_optimizer(self, optimizer: torch.optim.Optimizer) -> None:
        if not self._first_time(optimizer):
            return
        self._optimizers.append(optimizer)
        if len(self.optimizers) < _MAX_ITEMS:
            self.optimizers.append(describe_optimizer(optimizer))

    def replace_optimizer(self, old: torch.optim.Optimizer, new: torch.optim.Optimizer) -> None:
        """`new` was built over `old`'s parameters after steps began and steps in its place: kept
        instead of it (the script has dropped `old`; its description stands for both)."""
        self._optimizers = [new if kept is old else kept for kept in self._optimizers]
        self._first_time(new)

    def unused_gradients(self) -> list[torch.nn.Parameter]:
        """The outermost modules' parameters whose gradients no stepped optimizer uses (none before
        an optimizer stepped; observe/gradients.py)."""
        if not self._optimizers:
            return []
        optimized = optimized_ids(self._optimizers)
        return unused_gradients(self._root_modules, optimized)

    def add_root_module(self, module: torch.nn.Module) -> None:
        if len(self._root_modules) < _MAX_ITEMS:
            self._root_modules.append(module)

    def note_forward_state(self, module: torch.nn.Module) -> None:
        """Kept from the first root call after warm-up started: the state of the measured steps."""
        if not self._forward_noted:
            self.forward_state = forward_state(module)

    def freeze_forward_state(self) -> None:
        self._forward_noted = True

    def note_gradcheck(self, ns: int) -> None:
        self.gradcheck_calls, self.gradcheck_ns = self.gradcheck_calls + 1, self.gradcheck_ns + ns

    def note_save(self, ns: int) -> None:
        self.save_calls, self.save_ns = self.save_calls + 1, self.save_ns + ns

    def note_warning(self, message: Any, category: type, filename: str, lineno: int) -> None:
        """A warning shown (warnings.showwarning): kept by category, message, file and line, the
        first _MAX_WARNINGS distinct ones, each message cut to _WARNING_CHARS characters."""
        key = (getattr(category, "__name__", str(category)), str(message)[:_WARNING_CHARS], str(filename), int(lineno))
        if key in self.warnings or len(self.warnings) < _MAX_WARNINGS:
            self.warnings[key] = self.warnings.get(key, 0) + 1

    def note_create_graph(self, asked: bool) -> None:
        self.create_graph = self.create_graph or asked

    def note_window_start(self) -> None:
        self.freeze_forward_state()
        self.script_tools = script_tools()
        self.gradcheck_calls, self.gradcheck_ns = 0, 0
        self.save_calls, self.save_ns = 0, 0

    def note_window_end(self) -> None:
        """The gradcheck and torch.save figures of the timing window join the tools (later calls do
        not count)."""
        if self.script_tools is not None and "gradcheck_calls" not in self.script_tools:
            self.script_tools.update(gradcheck_calls=self.gradcheck_calls, gradcheck_s=self.gradcheck_ns / 1e9,
                                     save_calls=self.save_calls, save_s=self.save_ns / 1e9)

    def note_compile(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        target = args[0] if args else kwargs.get("model")
        self.compile_calls.append(
            {
                "target": type(target).__qualname__ if target is not None else None,
                "mode": kwargs.get("mode"),
                "backend": kwargs.get("backend") if isinstance(kwargs.get("backend"), str) else None,
                "dynamic": kwargs.get("dynamic"),
                "fullgraph": kwargs.get("fullgraph", False),
            }
        )

    def to_dict(self) -> dict[str, Any]:
        """Described at the end of the run, so modules show the state the script left them in."""
        self.models = [describe_module(m, self._optimizers, self._root_modules) for m in self._root_modules]
        return {
            "dataloaders": self.dataloaders,
            "optimizers": self.optimizers,
            "models": self.models,
            "forward_state": self.forward_state,
            "compile_calls": self.compile_calls,
            "script_tools": self.script_tools,
            "compile_used": bool(self.compile_calls) or any(m["compiled"] for m in self.models),
            "distributed_runtime": self.runtime.to_dict(),
            "warnings": [{"category": c, "message": m, "file": f, "line": n, "count": count}
                         for (c, m, f, n), count in self.warnings.items()],
        }
