"""Registries filled by module scan: a new rule, knob, lint check or inference variant needs a file,
no list."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType
from typing import Collection


def import_submodules(package: str, skip: Collection[str] = ()) -> list[ModuleType]:
    """Import every module of `package` but those named in `skip` (modules that register nothing),
    so that their registering decorators run; returns them."""
    root = importlib.import_module(package)
    return [importlib.import_module(f"{package}.{info.name}") for info in pkgutil.iter_modules(root.__path__)
            if info.name not in skip]
