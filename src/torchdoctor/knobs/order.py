"""The order in which knobs compose, and applying a set of them.

Two mechanisms stack, and each fixes part of the order:
- constructor interception (`DataLoader.__init__`, optimizers): the knob applied LAST wraps
  outermost, so its rewrite of the arguments runs FIRST;
- forward wrappers at the first root forward: the knob applied LAST wraps outermost, so it runs
  first on the way in and contains every wrapper applied before it.
"""

from __future__ import annotations

from typing import Any, Iterable

from torchdoctor.knobs.base import REGISTRY, Undo
from torchdoctor.knobs.patching import chain

#: Apply order; each line's comment is the constraint that places it.
COMPOSITION_ORDER: tuple[str, ...] = (
    # DataLoader rewrites: worker-only arguments must see num_workers already set, so they are
    # applied before it (their rewrite then runs after num_workers' one).
    "prefetch_factor",
    "persistent_workers",
    "num_workers",
    "pin_memory",
    "batch_size",  # independent of the other loader arguments
    # Global switches: independent of each other and of everything below.
    "threads",
    "tf32",
    "cudnn_benchmark",
    "no_anomaly_detection",
    "zero_grad_set_to_none",
    "optimizer_impl",
    # DDP constructor rewrites: independent of each other (each sets its own argument).
    "gradient_as_bucket_view",
    "static_graph",
    "bucket_cap_mb",
    # no_sync wraps DDP.forward at class level; FSDP2's fully_shard is replaced: both independent
    # of the model wrappers below, which act on the outermost module's instance.
    "no_sync",
    "reshard_after_forward",
    # Block-level forward wrappers before any whole-model one, so compile traces them.
    "activation_checkpointing",
    # channels_last converts the module and its inputs: innermost of the model wrappers.
    "channels_last",
    # autocast inside compile, so the compiled graph contains the autocast region.
    "autocast_bf16",
    "autocast_fp16",
    "compile",
    # inference_mode outermost: compile traces (and guards on) the inference-mode forward.
    "inference_mode",
)


def composition_order(names: Iterable[str]) -> list[str]:
    """`names` sorted into the apply order; unknown names raise KeyError."""
    names = list(names)
    for name in names:
        if name not in REGISTRY:
            raise KeyError(f"unknown knob {name!r}; known: {', '.join(sorted(REGISTRY))}")
    return sorted(names, key=COMPOSITION_ORDER.index)


def apply_knobs(values: dict[str, Any]) -> Undo:
    """Apply every knob of `values` (name -> value) in composition order; return the undo."""
    return chain([REGISTRY[name].apply(values[name]) for name in composition_order(values)])


def knob_env(values: dict[str, Any]) -> dict[str, str]:
    """Environment variables the child needs for `values` (set before it starts)."""
    env: dict[str, str] = {}
    for name in composition_order(values):
        env.update(REGISTRY[name].env(values[name]))
    return env
