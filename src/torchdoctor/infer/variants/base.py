"""What every ladder variant provides, and the registry that names them.

A variant is a function ``prepare(model, args, ctx, option) -> Prepared``: it turns the user's
model (already a private copy when the variant declares ``copies_model``) into a callable that
takes the batch's positional tensors on ``ctx.device`` and returns one output tensor. Raising
anything during ``prepare`` marks the variant failed, with the exception's message as the reason.
Names may take an option after a colon (``compile:max-autotune``).
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from torchdoctor.infer.errors import InferConfigError


@dataclass
class Prepared:
    """A ready variant. `size_bytes` is its serialised size; `save` writes its artefact to a folder."""

    run: Callable[..., Any]
    size_bytes: int | None = None
    save: Callable[[Path], Path] | None = None
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class PrepareContext:
    """Where the variant runs: device, a scratch folder, the largest batch it must accept."""

    device: str
    workdir: Path
    max_batch_size: int


@dataclass(frozen=True)
class VariantSpec:
    """A registered variant family: `family` groups it in reports, `copies_model` asks for a copy."""

    name: str
    family: str
    prepare: Callable[..., Prepared]
    copies_model: bool
    description: str


REGISTRY: dict[str, VariantSpec] = {}


def variant(name: str, *, family: str, copies_model: bool = False) -> Callable:
    """Register `prepare` under `name`; its docstring's first line describes the variant."""

    def register(prepare: Callable[..., Prepared]) -> Callable[..., Prepared]:
        if name in REGISTRY:
            raise RuntimeError(f"variant {name!r} registered twice")
        doc = (prepare.__doc__ or "").strip().splitlines()
        REGISTRY[name] = VariantSpec(name, family, prepare, copies_model, doc[0] if doc else "")
        return prepare

    return register


def resolve(name: str) -> tuple[VariantSpec, str | None]:
    """The spec and option for a variant name such as ``compile:max-autotune``."""
    base, _, option = name.partition(":")
    if base not in REGISTRY:
        known = ", ".join(sorted(REGISTRY))
        raise InferConfigError(f"unknown variant {name!r}; known variants: {known}")
    return REGISTRY[base], option or None


def first_tensor(output: Any) -> Any:
    """The tensor a variant is judged on: the output itself, its first element, or `logits`."""
    import torch

    if isinstance(output, torch.Tensor):
        return output
    if isinstance(output, dict):
        return first_tensor(output["logits"] if "logits" in output else next(iter(output.values())))
    if isinstance(output, (tuple, list)) and output:
        return first_tensor(output[0])
    raise TypeError(f"the model returned a {type(output).__name__}; expected tensors")


def saved_size(save: Callable[[io.BytesIO], Any]) -> int:
    """Bytes `save` writes into an in-memory buffer (the artefact's size on disk)."""
    buffer = io.BytesIO()
    save(buffer)
    return len(buffer.getbuffer())


def batch_dynamic_shapes(args: tuple[Any, ...], ctx: PrepareContext) -> tuple[dict[int, Any], ...]:
    """Export's `dynamic_shapes`: dimension 0 of every input is one symbolic batch size."""
    import torch

    batch = torch.export.Dim("batch", min=1, max=max(ctx.max_batch_size, 2))
    return tuple({0: batch} for _ in args)


def in_inference_mode(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` called under torch.inference_mode()."""
    import torch

    def run(*batch: Any) -> Any:
        with torch.inference_mode():
            return fn(*batch)

    return run
