"""What runs inside the observed process: the bootstrap, hooks, step clock, session, probes and
samplers that record a script, switched on by the ObserveConfig. Starting that process is
torchdoctor.launch's."""

from torchdoctor.observe.config import STEPS_ONLY_SOURCES, ObserveConfig

__all__ = ["STEPS_ONLY_SOURCES", "ObserveConfig"]
