"""Errors a user can cause. The CLI prints their message without a traceback and exits non-zero."""

from __future__ import annotations


class TorchDoctorError(Exception):
    """Base of every error caused by input or usage; the message says what to do."""

    exit_code: int = 2


class ScriptNotFoundError(TorchDoctorError):
    """The script to observe does not exist or cannot be read."""



class RecordFormatError(TorchDoctorError):
    """A saved Record cannot be read (not JSON, unknown schema version, missing fields)."""


class StoreError(TorchDoctorError):
    """The run store cannot be opened or does not hold the requested run."""


class TraceFormatError(TorchDoctorError):
    """A file is not a readable Kineto trace."""
