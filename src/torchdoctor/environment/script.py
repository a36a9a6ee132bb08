"""What the observed script built and did, as `record.env` holds it: its DataLoaders, optimizers,
outermost models, the switches in effect while the model ran, its torch.compile calls, its own
debugging tools, the distributed run-time facts, and the calls a knob held off (observe/facts.py,
observe/probes/distributed.py and knobs/guard.py write them in the observed process).

Each value is `Keyed` (torchdoctor.jsonfields): `to_dict` writes back the keys read, and a key an
older Record lacks reads as None.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torchdoctor.jsonfields import Keyed, json_key


@dataclass(frozen=True, slots=True)
class DataLoaderFacts(Keyed):
    """A DataLoader the script iterated: its settings and its dataset's and sampler's types."""

    num_workers: int | None = None
    pin_memory: bool | None = None
    prefetch_factor: int | None = None
    persistent_workers: bool | None = None
    batch_size: int | None = None
    drop_last: bool | None = None
    dataset_type: str | None = None
    dataset_len: int | None = None
    iterable_dataset: bool | None = None
    sampler_type: str | None = None
    collate_fn: str | None = None


@dataclass(frozen=True, slots=True)
class OptimizerFacts(Keyed):
    """An optimizer the script stepped: its class (`class` in the JSON) and implementation."""

    class_name: str | None = field(default=None, metadata=json_key("class"))
    module: str | None = None
    foreach: bool | None = None
    fused: bool | None = None
    lr: float | None = None
    num_param_groups: int | None = None
    num_params: int | None = None


@dataclass(frozen=True, slots=True)
class LayerShape(Keyed):
    """One distinct Linear (`in_features`, `out_features`) or Conv (`in_channels`, `out_channels`)
    shape, its weight's dtype and how many layers share it."""

    type: str | None = None
    in_features: int | None = None
    out_features: int | None = None
    in_channels: int | None = None
    out_channels: int | None = None
    dtype: str | None = None
    count: int = 1

    @property
    def sizes(self) -> tuple[int, int]:
        """(in, out): features of a Linear, channels of a Conv (0 for one not recorded)."""
        if self.in_features is not None or self.out_features is not None:
            return self.in_features or 0, self.out_features or 0
        return self.in_channels or 0, self.out_channels or 0


@dataclass(frozen=True, slots=True)
class EmbeddingTable(Keyed):
    """An `nn.Embedding` or `nn.EmbeddingBag` of a model at the end of the run: `module` (its name in
    the model), its size, `sparse` flag and dtype, whether an optimizer held its weight, and
    `rows_with_grad` (rows whose dense gradient was non-zero; None without a dense gradient)."""

    module: str | None = None
    type: str | None = None
    num_embeddings: int | None = None
    embedding_dim: int | None = None
    sparse: bool | None = None
    dtype: str | None = None
    optimized: bool | None = None
    rows_with_grad: int | None = None


@dataclass(frozen=True, slots=True)
class ScriptHook(Keyed):
    """A hook the script registered on its modules (observe/module_hooks.py): its function, where it
    is defined, its kind (forward_pre, forward, backward_pre, backward) and on how many modules."""

    function: str | None = None
    file: str | None = None
    line: int | None = None
    kind: str | None = None
    modules: int = 0


@dataclass(frozen=True, slots=True)
class ModelFacts(Keyed):
    """An outermost module the script called, as it was at the end of the run. `ddp`: a
    DistributedDataParallel's settings, as written (read with torchdoctor.distributed.section's
    `DdpSettings`). `unused_grad_tensors`/`unused_grad_parameters`: the parameter tensors (and their
    elements) that required grad and held a gradient that no stepped optimizer held (None: no
    optimizer stepped, or an older Record); `embeddings`: its largest embedding tables;
    `script_hooks`: the hooks the script registered on its modules (None: an older Record)."""

    class_name: str | None = field(default=None, metadata=json_key("class"))
    num_parameters: int | None = None
    num_trainable_parameters: int | None = None
    parameter_bytes: int | None = None
    parameter_dtypes: dict[str, int] = field(default_factory=dict)
    parameter_devices: dict[str, int] = field(default_factory=dict)
    module_types: dict[str, int] = field(default_factory=dict)
    layer_shapes: tuple[LayerShape, ...] | None = None
    training: bool | None = None
    compiled: bool | None = None
    ddp: Any = None
    unused_grad_tensors: int | None = None
    unused_grad_parameters: int | None = None
    embeddings: tuple[EmbeddingTable, ...] | None = None
    script_hooks: tuple[ScriptHook, ...] | None = None


@dataclass(frozen=True, slots=True)
class ForwardState(Keyed):
    """The switches in effect while the outermost module ran (`autocast`: device -> dtype)."""

    grad_enabled: bool | None = None
    inference_mode: bool | None = None
    autocast: dict[str, str] = field(default_factory=dict)
    training: bool | None = None


@dataclass(frozen=True, slots=True)
class CompileCall(Keyed):
    """One `torch.compile` call of the script."""

    target: str | None = None
    mode: str | None = None
    backend: str | None = None
    dynamic: bool | None = None
    fullgraph: bool | None = None


@dataclass(frozen=True, slots=True)
class ScriptWarning(Keyed):
    """A warning the script's process showed (through `warnings.showwarning`): its category, its
    message (cut to 300 characters), the file and line it was attributed to, and how many times
    it was shown."""

    category: str | None = None
    message: str | None = None
    file: str | None = None
    line: int | None = None
    count: int = 1


@dataclass(frozen=True, slots=True)
class ScriptTools(Keyed):
    """The script's own debugging tools at the timing window's start, and its gradcheck and
    torch.save calls in the window (None: the window did not end, or an older Record)."""

    profiler_enabled: bool | None = None
    anomaly_detection: bool | None = None
    gradcheck_calls: int | None = None
    gradcheck_s: float | None = None
    save_calls: int | None = None
    save_s: float | None = None


@dataclass(frozen=True, slots=True)
class SamplerIteration(Keyed):
    """One pass over a DistributedSampler: its epoch and a hash of its first indices."""

    sampler_id: int | None = None
    epoch: int | None = None
    shuffle: bool | None = None
    num_indices: int | None = None
    indices_hash: str | None = None


@dataclass(frozen=True, slots=True)
class RuntimeFacts(Keyed):
    """The distributed run-time facts of this rank (`step_elements`: the outermost model's input
    elements per step)."""

    optimizer_steps: int | None = None
    backward_calls: int | None = None
    synced_forwards: int | None = None
    step_elements: tuple[int, ...] | None = None
    sampler_iterations: tuple[SamplerIteration, ...] = ()
    ddp: Any = None


@dataclass(frozen=True, slots=True)
class GuardedCall(Keyed):
    """A call of the script that a knob applied to the run held off (knobs/guard.py), once per call
    site; `callee`, `given` and `changed` for a rewritten constructor, `args` for a held call,
    `value` for a held assignment, and `variable` for an environment variable's."""

    knob: str | None = None
    call: str | None = None
    file: str | None = None
    line: int | None = None
    code: str | None = None
    count: int | None = None
    action: str | None = None
    callee: str | None = None
    given: tuple[str, ...] | None = None
    changed: dict[str, list[Any]] | None = None
    args: list[Any] | None = None
    value: Any = None
    variable: str | None = None
