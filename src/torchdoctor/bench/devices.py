"""Which devices each variant computes on, read from the tensors and modules in its namespace."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from torchdoctor.bench.errors import MismatchedDevicesError


def namespace_devices(namespace: Mapping[str, Any]) -> set[str]:
    """Device types ("cpu", "cuda", ...) of the tensors and modules bound in `namespace`."""
    import torch

    devices: set[str] = set()
    for value in namespace.values():
        if isinstance(value, torch.Tensor):
            devices.add(value.device.type)
        elif isinstance(value, torch.nn.Module):
            devices.update(p.device.type for p in value.parameters())
            devices.update(b.device.type for b in value.buffers())
    return devices


def callable_bindings(fn: Callable[..., Any]) -> dict[str, Any]:
    """What a callable computes with: the callable itself (a Module, a bound method's object),
    its closure variables and the globals it names."""
    bindings: dict[str, Any] = {"<callable>": fn, "<self>": getattr(fn, "__self__", None)}
    target = getattr(fn, "__func__", fn)
    if inspect.isfunction(target):
        found = inspect.getclosurevars(target)
        bindings.update(found.globals)
        bindings.update(found.nonlocals)
    return bindings


def check_same_devices(namespaces: Mapping[str, Mapping[str, Any]]) -> None:
    """Raise MismatchedDevicesError when the variants' tensors live on different devices.

    Variants with no tensor in their namespace (pure callables) are not judged.
    """
    found = {name: namespace_devices(ns) for name, ns in namespaces.items()}
    distinct = {frozenset(devs) for devs in found.values() if devs}
    if len(distinct) > 1:
        listing = ", ".join(f"{name}: {'+'.join(sorted(devs))}" for name, devs in found.items() if devs)
        raise MismatchedDevicesError(
            f"variants hold tensors on different devices ({listing}); their times are not "
            "comparable. Put every variant's inputs on one device, or pass "
            "allow_mixed_devices=True (--allow-mixed-devices) if comparing devices is the point"
        )


def check_cpu_only(namespaces: Mapping[str, Mapping[str, Any]]) -> None:
    """Raise MismatchedDevicesError when a variant holds tensors off the CPU (CPU clock refused)."""
    off_cpu = {name: devs - {"cpu"} for name, ns in namespaces.items() if (devs := namespace_devices(ns)) - {"cpu"}}
    if off_cpu:
        listing = ", ".join(f"{name}: {'+'.join(sorted(devs))}" for name, devs in off_cpu.items())
        raise MismatchedDevicesError(
            f"the CPU clock cannot see work on {listing}; use the wall clock (clock='wall', --clock wall)"
        )
