"""Loading the user's model and example batch from a factory specification.

Accepted forms of `spec`:
  * ``package.module:function`` - an importable function returning ``(model, example)``;
  * ``path/to/file.py:function`` - the same, from a file;
  * ``path/to/script.py`` - a script defining ``model_and_example()``, or globals ``model`` and
    ``example``.
The example is one tensor or a tuple of tensors (the model's positional arguments), batched along
dimension 0. :data:`DEMO_SPEC` names the built-in demo model.
"""

from __future__ import annotations

import importlib
import os
import runpy
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from torchdoctor.infer.errors import ModelFactoryError

DEMO_SPEC = "torchdoctor.zoo.demo:model_and_example"


@dataclass(frozen=True)
class ModelAndExample:
    """The model (in eval mode) and its example batch as a tuple of positional tensors."""

    model: Any  # torch.nn.Module
    args: tuple[Any, ...]  # tensors, batch along dim 0
    spec: str

    @property
    def batch_size(self) -> int:
        return int(self.args[0].shape[0])


def load_model(spec: str) -> ModelAndExample:
    """Call the factory named by `spec` and check what it returned (see the module docstring)."""
    produced = _resolve(spec)()
    if not isinstance(produced, tuple) or len(produced) != 2:
        raise ModelFactoryError(f"{spec} must return (model, example), got {type(produced).__name__}")
    model, example = produced
    return ModelAndExample(model=_checked_model(model, spec), args=_as_args(example, spec), spec=spec)


def _resolve(spec: str) -> Callable[[], Any]:
    target, _, name = spec.rpartition(":") if ":" in spec else (spec, "", "")
    if target.endswith(".py"):
        return _from_file(Path(target), name)
    if os.getcwd() not in sys.path:  # as `python -m` and uvicorn do: modules beside the user
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(target)
    except ImportError as exc:
        raise ModelFactoryError(f"cannot import {target!r} for model factory {spec!r}: {exc}") from None
    return _attribute(module.__dict__, name or "model_and_example", spec)


def _from_file(path: Path, name: str) -> Callable[[], Any]:
    if not path.is_file():
        raise ModelFactoryError(f"model factory file {path} does not exist")
    namespace = runpy.run_path(str(path), run_name="__torchdoctor_factory__")
    if name or "model_and_example" in namespace:
        return _attribute(namespace, name or "model_and_example", str(path))
    if "model" in namespace and "example" in namespace:
        return lambda: (namespace["model"], namespace["example"])
    raise ModelFactoryError(
        f"{path} defines neither model_and_example() nor globals `model` and `example`"
    )


def _attribute(namespace: dict[str, Any], name: str, spec: str) -> Callable[[], Any]:
    fn = namespace.get(name)
    if not callable(fn):
        raise ModelFactoryError(f"{spec}: no callable named {name!r}")
    return fn


def _checked_model(model: Any, spec: str) -> Any:
    import torch

    if not isinstance(model, torch.nn.Module):
        raise ModelFactoryError(f"{spec} returned a {type(model).__name__}, not a torch.nn.Module")
    return model.eval()


def _as_args(example: Any, spec: str) -> tuple[Any, ...]:
    import torch

    args = example if isinstance(example, (tuple, list)) else (example,)
    if not args or not all(isinstance(a, torch.Tensor) and a.dim() >= 1 for a in args):
        raise ModelFactoryError(
            f"{spec}: the example must be a tensor or a tuple of tensors with a batch dimension"
        )
    if len({int(a.shape[0]) for a in args}) != 1:
        raise ModelFactoryError(f"{spec}: the example tensors disagree on the batch size (dim 0)")
    return tuple(args)


def resize_batch(args: tuple[Any, ...], batch_size: int) -> tuple[Any, ...]:
    """The example rows repeated cyclically (or cut) to `batch_size` rows, for a batch-size sweep."""
    import torch

    index = torch.arange(batch_size) % int(args[0].shape[0])
    return tuple(a.index_select(0, index.to(a.device)) for a in args)
