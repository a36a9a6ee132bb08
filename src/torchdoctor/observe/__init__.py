"""Running a script under instrumentation and recording what it did, as a Record."""

from torchdoctor.observe.config import ObserveConfig
from torchdoctor.observe.run import LaunchConfig, observe

__all__ = ["LaunchConfig", "ObserveConfig", "observe"]
