"""Errors a benchmark's input can cause; each names the variant at fault and what to do."""

from __future__ import annotations

from torchdoctor.errors import TorchDoctorError


class BenchInputError(TorchDoctorError):
    """The samples or options given to a comparison are unusable (empty, negative, NaN...)."""


class VariantFailedError(TorchDoctorError):
    """A variant's setup or statement raised, or its process exited non-zero."""

    exit_code = 3


class VariantTimeoutError(TorchDoctorError):
    """One run of a variant took longer than the per-run timeout."""

    exit_code = 3


class MismatchedDevicesError(TorchDoctorError):
    """The variants hold tensors on different devices, so their times are not comparable."""
