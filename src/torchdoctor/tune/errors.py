"""Errors a user can cause when tuning."""

from __future__ import annotations

from torchdoctor.errors import TorchDoctorError


class TuneInputError(TorchDoctorError):
    """Bad tuning options or result file (unknown knob, unreadable --apply file)."""


class BaselineFailedError(TorchDoctorError):
    """The script failed or measured no steps without any knob: there is nothing to tune against."""

    exit_code = 3
