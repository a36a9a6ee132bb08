"""Registries filled by module scan: a new rule, knob or inference variant needs a file, no list."""

from __future__ import annotations

import importlib
import pkgutil


def import_submodules(package: str) -> None:
    """Import every module of `package`, so that their registering decorators run."""
    root = importlib.import_module(package)
    for info in pkgutil.iter_modules(root.__path__):
        importlib.import_module(f"{package}.{info.name}")
