"""What one observation measures: step counts of each window, the profiler's settings, sampling."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import orjson

#: Environment variable through which the parent hands the config to the child bootstrap.
CONFIG_ENV = "TORCHDOCTOR_OBSERVE"
#: The step sources (observe.steps) a `steps_only` observation still finds.
STEPS_ONLY_SOURCES = ("optimizer", "marker")


@dataclass(kw_only=True, slots=True)
class ObserveConfig:
    warmup_steps: int = 5
    """Steps run before anything is measured (compilation, allocator and cache warm-up)."""
    timing_steps: int = 20
    """Steps in the timing window: no profiler; the device is synchronised only at its edges."""
    profile: bool = True
    """Run a torch.profiler window after the timing window and write its trace."""
    profile_wait: int = 1
    """Profiler schedule: steps skipped after the profiler starts."""
    profile_warmup: int = 1
    """Profiler schedule: steps traced but discarded (profiler warm-up)."""
    profile_active: int = 3
    """Profiler schedule: steps recorded into the trace."""
    record_shapes: bool = False
    """Record operator input shapes in the trace (larger trace, more overhead)."""
    profile_memory: bool = False
    """Record allocator events in the trace."""
    with_stack: bool = False
    """Record Python stacks in the trace (much larger trace)."""
    stop_after_windows: bool = True
    """Stop the script once every window is measured instead of letting it run to its end."""
    system_interval_s: float = 0.2
    """Sampling period of the background system-metrics thread."""
    out_dir: str = ""
    """Folder where the child writes its per-rank results and the trace (set by the parent)."""
    progress_path: str = ""
    """FIFO on which rank 0 reports its progress to the parent ("" for none)."""
    memory: bool = True
    """Measure one more step, after the other windows, with MemTracker (torchdoctor.memory)."""
    memory_snapshot: str = ""
    """CUDA only: record the memory history during that step and write the snapshot here."""
    memory_budget_bytes: int | None = None
    """Device memory budget for the largest-batch estimate (None: no estimate)."""
    compile: bool = True
    """Capture what torch.compile does during the run (torchdoctor.compile)."""
    threads_probe: bool = True
    """Probe, after the other windows, a few more steps with a finding's fix made in place: with
    fewer threads when the intra-op threads outnumber the cores (observe.probes.threads; TD-COMP-009
    reads it), then with anomaly detection off when it is on (observe.probes.anomaly; TD-COMP-007).
    Skipped when knobs are applied (a tune trial measures its own settings). The name is that of
    the first probe, kept for the Records and options that use it; it switches every probe."""
    compile_probe: bool = True
    """Last of the probes (and only with `threads_probe`): on a CPU run of many operators a step,
    blocks of steps with the outermost module compiled against eager ones
    (observe.probes.compile_speed; TD-COMP-003 reads it). It costs the compiling, seconds per
    graph: off for the commands that measure compiling themselves (tune, compile)."""
    knobs: dict[str, Any] = field(default_factory=dict)
    """Optimisations applied to the script at run time (name -> value), used by `tune`."""
    capture_steps: int = 0
    """`tune`'s numerics: steps after the timing window (beside the profiler window, if any) in
    which the outermost module's outputs are sampled (torchdoctor.observe.probes.outputs). After
    the window, not in it: sampling costs a few small operators per call, which inflated the
    timed steps of a 1.4 ms compiled step by a fifth. 0: no sample."""

    watch: bool = False
    """Observe the whole run (`torchdoctor watch`): after the windows and the memory step, the
    detailed hooks come off and a lean observation follows the script to its end (observe.watch:
    each step's end, its data wait, memory, stack samples), streamed to the run folder. Needs
    `stop_after_windows` off."""
    watch_sample_interval_s: float = 0.05
    """The whole run's stack-sampling period (the main thread's stack, observe.watch)."""
    watch_raw_steps: int = 100_000
    """Steps the whole run's stream writes one by one; later ones are written as one block a second."""
    watch_max_bytes: int = 64 * 2**20
    """Past this size the whole run's stream samples and writes ten times less often."""
    watch_profile_every_s: float = 600.0
    """Seconds between two short profiler windows of the lean observation (observe.periodic); the
    first opens as it begins. 0: none."""
    watch_profile_steps: int = 5
    """Steps each of those windows profiles."""

    steps_only: bool = False
    """Install only what finds the step boundaries (the optimizers' step hooks and
    `torchdoctor.step()`): no data, backward or forward timing, so the steps' parts, losses, batch
    sizes and the module facts stay empty. For runs whose verdict reads nothing but step times
    (tune's confirmation) of a script that steps an optimizer. Why: a hooked call costs the
    script time its hook cannot charge out (calling it at all), and both sides of a speed-up
    carry it, which shrinks the ratio most where the fix makes steps short. The zoo's tiny-ops
    workload compiled (0.3 ms steps), six interleaved rounds (benchmarks/observation_gap.py): the
    compiled steps 24% slower with every hook, 4% with the step hooks alone; its speed-up x7.12 and x8.52
    against x8.70 unobserved. Needs `profile`, `memory`, `threads_probe` and `capture_steps` off
    (they read what the other hooks find)."""

    def __post_init__(self) -> None:
        counts = {
            "warmup_steps": self.warmup_steps,
            "timing_steps": self.timing_steps,
            "profile_wait": self.profile_wait,
            "profile_warmup": self.profile_warmup,
            "capture_steps": self.capture_steps,
        }
        for name, value in counts.items():
            if value < 0:
                raise ValueError(f"{name} must be >= 0, got {value}")
        if self.warmup_steps < 2:
            # Step detection settles and discovery hooks come off during the first two steps.
            raise ValueError(f"warmup_steps must be >= 2, got {self.warmup_steps}")
        if self.timing_steps < 1:
            raise ValueError(f"timing_steps must be >= 1, got {self.timing_steps}")
        if self.profile and self.profile_active < 1:
            raise ValueError(f"profile_active must be >= 1 when profiling, got {self.profile_active}")
        if self.steps_only and (self.profile or self.memory or self.threads_probe or self.capture_steps):
            raise ValueError("steps_only observes step times alone: profile, memory, threads_probe and "
                             "capture_steps must be off")
        if self.watch and (self.stop_after_windows or self.watch_sample_interval_s <= 0):
            raise ValueError("watch needs stop_after_windows off and a sample interval > 0")
        if self.watch_profile_every_s < 0 or self.watch_profile_steps < 1:
            raise ValueError("the periodic profiler windows need a period >= 0 and at least one step")
        if self.system_interval_s <= 0:
            raise ValueError(f"system_interval_s must be > 0, got {self.system_interval_s}")

    @property
    def profile_steps(self) -> int:
        """Steps the profiler window spans (0 when profiling is off)."""
        if not self.profile:
            return 0
        return self.profile_wait + self.profile_warmup + self.profile_active

    @property
    def after_steps(self) -> int:
        """Steps run after the timing window: the profiler's and the output sample's, side by side."""
        return max(self.profile_steps, self.capture_steps)

    @property
    def total_steps(self) -> int:
        """Steps after which every window is measured."""
        return self.warmup_steps + self.timing_steps + self.after_steps

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_env(self) -> str:
        return orjson.dumps(self.to_dict()).decode()

    @classmethod
    def from_env(cls, text: str) -> ObserveConfig:
        return cls(**orjson.loads(text))
