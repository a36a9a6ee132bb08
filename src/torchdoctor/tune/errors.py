"""Errors a user can cause when tuning."""

from __future__ import annotations

from torchdoctor.errors import TorchDoctorError


class TuneInputError(TorchDoctorError):
    """Bad tuning options or result file (unknown knob, unreadable --apply file)."""


class BaselineFailedError(TorchDoctorError):
    """The script failed or measured no steps without any knob: there is nothing to tune against."""

    exit_code = 3


class TuneInterruptedError(TorchDoctorError):
    """A stop signal arrived before the baseline was measured: there is nothing to report.
    `exit_code` is 128 + the signal."""

    def __init__(self, message: str, *, exit_code: int = 130) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class BudgetTooShortError(TorchDoctorError):
    """The time budget ended before the baseline was measured: no trial could be judged against
    it. The message gives what the first run measured and the budget it would take."""

    exit_code = 2
