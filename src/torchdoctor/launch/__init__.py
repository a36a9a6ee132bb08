"""The parent side of running a script: observe it in a child process (run: a subprocess, torchrun
or a fork server's child), own that child (child, stops) and launch `run --apply`'s (apply).
`observe(script, args, ObserveConfig, LaunchConfig)` is the one call that does the first.

The three names are imported on first use: `run --apply`'s program and the fork server import a
module of this package inside the started process, which needs none of the parent's (psutil, the
Record's summary, the step stream's reader)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchdoctor.launch.run import LaunchConfig, observe
    from torchdoctor.observe.config import ObserveConfig

__all__ = ["LaunchConfig", "ObserveConfig", "observe"]


def __getattr__(name: str) -> object:
    """`LaunchConfig`, `ObserveConfig` or `observe`, from the module that defines it."""
    if name in ("LaunchConfig", "observe"):
        from torchdoctor.launch import run

        return getattr(run, name)
    if name == "ObserveConfig":
        from torchdoctor.observe.config import ObserveConfig

        return ObserveConfig
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
