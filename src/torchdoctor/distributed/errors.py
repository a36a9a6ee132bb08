"""Errors a user can cause in the distributed commands."""

from __future__ import annotations

from torchdoctor.errors import TorchDoctorError


class CommError(TorchDoctorError):
    """The collective sweep cannot run as asked (bad options, failed ranks, rendezvous timeout)."""


class ScaleError(TorchDoctorError):
    """The scaling sweep cannot run as asked (bad options, or the script failed at some size)."""
