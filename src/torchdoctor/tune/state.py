"""What a tune has measured and decided so far: the one mutable value its steps share."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from torchdoctor.tune.interleave import Interleaving
from torchdoctor.tune.trial import Run, Trial


@dataclass(frozen=True, slots=True)
class ScriptNoise:
    """The unmodified script's own variation, from two baseline runs of the trials' window:
    `loss`, the relative difference of their mean losses; `output`, their output distribution
    difference (where there is no loss); `deterministic`, whether they repeated identically (None:
    not measured); `too_noisy`, why nothing could be decided, when no majority of runs agreed."""

    loss: float | None = None
    output: float | None = None
    deterministic: bool | None = None
    too_noisy: str | None = None


@dataclass(slots=True)
class TuneState:
    """A tune's progress. `baseline`: trial 0, the unmodified script's runs; `best`: the trial of
    the best configuration so far (the baseline until a knob is kept); `trials`: every trial, the
    baseline first; `kept`: knob -> value kept; `unchecked_kept`: kept knobs whose numerics could
    not be checked; `trial_steps`: timed steps of a trial's runs (from the baseline's pace: the
    confirmation's window, so that a trial and the confirmation measure a short step alike);
    `noise`: the script's own; `interleaving`: the side-by-side runs under way, or last (what a
    stop leaves); `stop_reason`: why the search ended."""

    baseline: Trial
    trial_steps: int
    best: Trial = field(init=False)
    trials: list[Trial] = field(init=False)
    kept: dict[str, Any] = field(default_factory=dict)
    unchecked_kept: list[str] = field(default_factory=list)
    noise: ScriptNoise = field(default_factory=ScriptNoise)
    interleaving: Interleaving = field(default_factory=Interleaving)
    stop_reason: str = "every applicable knob was tried"

    def __post_init__(self) -> None:
        self.best = self.baseline
        self.trials = [self.baseline]

    def windowed(self, runs: Sequence[Run]) -> list[Run]:
        """`runs` that timed the trials' window: those whose losses and outputs (sampled after the
        window) a trial's can be compared with, step for step."""
        return [r for r in runs if r.ok and r.timing_steps == self.trial_steps]
