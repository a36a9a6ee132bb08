"""Versions and hardware a ladder ran on, so results from two machines are not confused."""

from __future__ import annotations

import importlib.metadata
import platform
from typing import Any


def environment(device: str) -> dict[str, Any]:
    """torch/onnxruntime/torchao versions, torch's thread count and the device's name."""
    import torch

    versions = {}
    for package in ("torch", "onnxruntime", "onnxscript", "torchao"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    name = torch.cuda.get_device_name(device) if device.startswith("cuda") else platform.processor()
    return {
        "versions": versions,
        "python": platform.python_version(),
        "torch_num_threads": torch.get_num_threads(),
        "device_name": name or platform.machine(),
    }
