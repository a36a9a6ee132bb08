"""Errors a user can cause in `torchdoctor infer` and `torchdoctor serve`."""

from __future__ import annotations

from torchdoctor.errors import TorchDoctorError


class ModelFactoryError(TorchDoctorError):
    """The model factory (`module:function`, `file.py:function` or a script) cannot be loaded."""


class InputRejectedError(TorchDoctorError):
    """The model raised on its own example batch, so nothing can be measured."""


class InferConfigError(TorchDoctorError):
    """An inference option is out of range or names an unknown variant."""
