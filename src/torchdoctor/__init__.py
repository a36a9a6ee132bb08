"""torchdoctor: measure, locate, optimise and measure again, for unmodified PyTorch scripts.

The only API a user script may call is :func:`step`, an explicit end-of-step marker. It costs one
attribute lookup when the script runs without torchdoctor.
"""

from __future__ import annotations

from typing import Callable

__version__ = "0.1.0"

# Set by torchdoctor.observe.bootstrap while a script is observed; None otherwise.
_step_marker: Callable[[], None] | None = None


def step() -> None:
    """Mark the end of one training or inference step (optional; overrides automatic detection)."""
    if _step_marker is not None:
        _step_marker()


__all__ = ["step", "__version__"]
