"""One trial: a fresh observed subprocess of the real script with a set of knobs applied."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from torchdoctor.analyse import analyse_record
from torchdoctor.knobs import REGISTRY, knob_env
from torchdoctor.observe import LaunchConfig, ObserveConfig, observe
from torchdoctor.record import Record
from torchdoctor.tune.config import TuneConfig

BASELINE, KEPT, REJECTED, FAILED, INTERRUPTED = "baseline", "kept", "rejected", "failed", "interrupted"


@dataclass(slots=True)
class Trial:
    """A trial's outcome. `knobs` is every knob applied (those kept so far plus the one tried)."""

    index: int
    knob: str | None
    value: Any
    knobs: dict[str, Any]
    status: str = BASELINE
    reason: str = ""
    run_id: str | None = None
    step_s: float | None = None
    sample_s: float | None = None
    duration_s: float = 0.0
    verdict: dict[str, Any] | None = None
    numerics: dict[str, Any] | None = None
    overridden: str | None = None
    record: Record | None = field(default=None, repr=False)

    def times(self, per_sample: bool) -> list[float]:
        """Step times of the timing window (per sample when `per_sample`)."""
        steps = self.record.steps if self.record else []
        if per_sample:
            return [s.wall_s / s.batch_size for s in steps if s.batch_size]
        return [s.wall_s for s in steps]

    def figures(self) -> dict[str, Any]:
        return {"step_s": self.step_s, "sample_s": self.sample_s, "duration_s": self.duration_s,
                "verdict": self.verdict, "numerics": self.numerics, "overridden": self.overridden,
                "status": self.status}

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "knob": self.knob, "value": self.value, "knobs": self.knobs,
                "status": self.status, "reason": self.reason, "run_id": self.run_id, **self.figures()}


def _failure(record: Record, timeout_s: float) -> tuple[str, str] | None:
    """(status, reason) when the trial did not measure its window, else None."""
    if record.exit.reason == "timeout":
        return FAILED, f"timed out after {timeout_s:g} s"
    if record.exit.reason == "interrupted":
        return INTERRUPTED, f"interrupted ({record.exit.signal or 'SIGINT'})"
    if record.exit.status != 0 or not record.steps:
        message = record.exit.message or record.exit.reason or "no steps measured"
        last_line = (record.exit.traceback or "").strip().splitlines()[-1:] or [message]
        return FAILED, f"{record.exit.reason}: {last_line[0]}"
    return None


def run_trial(
    script: Path, args: Sequence[str], knobs: dict[str, Any], config: TuneConfig, *, index: int,
    knob: str | None, out_dir: Path, progress: Callable[[str, int, int], None] | None = None,
    diagnose: bool = False,
) -> Trial:
    """Observe the script once with `knobs` applied. Timing only, unless `diagnose`: then a
    profiler window follows the timing window (its steps are not timed) and the Record is
    analysed (trace, lint), so that the diagnosis behind the candidates' order has its evidence."""
    observe_config = ObserveConfig(warmup_steps=config.warmup_steps, timing_steps=config.timing_steps,
                                   profile=diagnose, knobs=knobs)
    # String hashing is randomised per process unless PYTHONHASHSEED is set; fixing it keeps a
    # script that hashes strings (tokenisers, sets) reproducible from trial to trial.
    env = {"PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0"), **knob_env(knobs)}
    # --standalone (no option given): a free port, so concurrent jobs never clash.
    torchrun_args = (list(config.torchrun_args) or ["--standalone"]) if config.nproc_per_node else []
    launch = LaunchConfig(extra_env=env, timeout_s=config.trial_timeout_s, nproc_per_node=config.nproc_per_node,
                          torchrun_args=torchrun_args)
    start = time.perf_counter()
    record = observe(script, args, observe_config, launch, out_dir=out_dir, progress=progress)
    elapsed = time.perf_counter() - start
    if diagnose or len(record.ranks) > 1:  # the distributed knobs read record.distributed
        record = analyse_record(record, lint=diagnose)
    trial = Trial(index=index, knob=knob, value=knobs.get(knob) if knob else None, knobs=dict(knobs),
                  run_id=record.run_id, duration_s=elapsed, record=record,
                  step_s=record.summary.step_s)
    per_sample = trial.times(per_sample=True)
    if per_sample:
        trial.sample_s = sorted(per_sample)[len(per_sample) // 2]
    failure = _failure(record, config.trial_timeout_s)
    if failure:
        trial.status, trial.reason = failure
    elif knob is not None:
        trial.overridden = REGISTRY[knob].overridden(trial.value, record)
    return trial
