"""Errors a user can cause. The CLI prints their message without a traceback and exits non-zero."""

from __future__ import annotations


class TorchDoctorError(Exception):
    """Base of every error caused by input or usage; the message says what to do."""

    exit_code: int = 2


class ScriptNotFoundError(TorchDoctorError):
    """The script to observe does not exist or cannot be read."""


class OutDirInUseError(TorchDoctorError):
    """The folder given for an observation's artefacts holds another observation's results."""


class RecordFormatError(TorchDoctorError):
    """A saved Record cannot be read (not JSON, unknown schema version, missing fields)."""


class StoreError(TorchDoctorError):
    """The run store cannot be opened or does not hold the requested run."""


class TraceFormatError(TorchDoctorError):
    """A file is not a readable Kineto trace."""


class CheckError(TorchDoctorError):
    """`torchdoctor check` cannot compare: a bad REF or baseline, a refused environment, a side that
    failed. `kind` names the case in the JSON output; `side` is "A" or "B" when one side failed."""

    def __init__(self, message: str, *, kind: str = "input", side: str | None = None,
                 detail: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.side = side
        self.detail = detail


class TraceLoadError(TorchDoctorError):
    """A trace could not be loaded for a reason other than its content: the process that reads the
    second half of a large trace failed (killed, out of memory, a crash)."""
