"""The script's own output, when a run writes it to a file (`LaunchConfig.log_path`) rather than to
the terminal: its last lines, quoted where a run that failed is reported."""

from __future__ import annotations

from pathlib import Path

#: Lines of a failing run's output quoted by default.
LOG_TAIL_LINES = 25


def log_tail(log: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last `lines` lines of a run's log, blank lines at its end left out ('' when it cannot be read)."""
    try:
        return "\n".join(log.read_text(errors="replace").rstrip().splitlines()[-lines:])
    except OSError:
        return ""
