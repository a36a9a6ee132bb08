"""Signals named as a shell and Python name them, in messages and Records alike."""

from __future__ import annotations

import signal


def signal_name(signum: int) -> str:
    """SIGINT, SIGKILL, ... (or "signal N" for a number Python does not name)."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
