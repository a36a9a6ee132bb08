"""The parent side of running a script: observe it in a child process (run: a subprocess, torchrun
or a fork server's child), own that child (child, stops) and launch `run --apply`'s (apply).
`observe(script, args, ObserveConfig, LaunchConfig)` is the one call that does the first."""

from torchdoctor.launch.run import LaunchConfig, observe
from torchdoctor.observe.config import ObserveConfig

__all__ = ["LaunchConfig", "ObserveConfig", "observe"]
