"""Observation from inside a training framework's loop, for users who cannot wrap their launcher.

`torchdoctor diagnose -- python train.py` needs no change to the script; these integrations are for
runs started by something else (a notebook, a cluster launcher, a platform's own job runner). Each
hosts torchdoctor's own in-process observation (`torchdoctor.observe.session`: the same hooks, step
clock and windows as the observed child) from the framework's callbacks, so the Record and its
findings are those `diagnose` would give:

- `torchdoctor.integrations.lightning.TorchDoctorCallback`: a Lightning `Callback`;
- `torchdoctor.integrations.huggingface.TorchDoctorCallback`: a Hugging Face `TrainerCallback`;
- `torchdoctor.integrations.accelerate.TorchDoctorHook`: a context manager around an Accelerate loop.

The frameworks are optional (`pip install 'torchdoctor[field]'`); each module imports its own on
import and raises `MissingIntegrationError` when it is absent. This package imports none of them.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from torchdoctor.errors import TorchDoctorError


class MissingIntegrationError(TorchDoctorError):
    """The framework an integration plugs into is not installed."""


def require(module: str, package: str) -> ModuleType:
    """Import a framework's module, or say which package to install (and the extra that has it)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingIntegrationError(
            f"this integration needs `{package}` ({module} could not be imported: {exc}); "
            f"install it with `pip install {package}` or `pip install 'torchdoctor[field]'`"
        ) from exc
