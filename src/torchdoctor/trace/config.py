"""TraceConfig: the one place the trace engine's options and thresholds live."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True, slots=True)
class TraceConfig:
    """Options of :func:`torchdoctor.trace.analyse_traces`.

    `steps` selects profiler steps by number, inclusive (`(first, last)`, None = all). The
    thresholds define the figures documented in docs/trace.md.
    """

    top_n: int = 15
    steps: tuple[int, int] | None = None
    include_python: bool = False
    small_op_us: float = 10.0  # an operator whose self time is under this is "small"
    small_op_storm_per_step: int = 1000  # a step with more small ops than this is a storm
    runtime_outlier_us: float = 50.0  # HTA's runtime_cutoff
    launch_delay_outlier_us: float = 100.0  # HTA's launch_delay_cutoff
    queue_saturation_depth: int = 1000  # CUDA's launch queue holds 1024 entries
    hta_ns_rounding: bool = False  # round float timestamps to whole us as HTA does (parity checks)
    steps_listed: int = 1000  # steps a rank's section lists in full; its totals cover every step
    timeline: bool = True  # keep one step of the first file's events for the HTML report

    def __post_init__(self) -> None:
        if self.top_n < 1:
            raise ValueError("TraceConfig.top_n must be at least 1")
        if self.steps_listed < 0:
            raise ValueError("TraceConfig.steps_listed must be 0 or more")
        if self.steps is not None and self.steps[0] > self.steps[1]:
            raise ValueError(f"TraceConfig.steps {self.steps} is empty: first > last")
