"""Running a script under instrumentation and recording what it did, as a Record."""

from torchdoctor.observe.config import STEPS_ONLY_SOURCES, ObserveConfig
from torchdoctor.observe.run import LaunchConfig, observe

__all__ = ["STEPS_ONLY_SOURCES", "LaunchConfig", "ObserveConfig", "observe"]
