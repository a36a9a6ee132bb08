"""What a tune is given to report to: who hears of its progress, and where its trials are kept."""

from __future__ import annotations

from typing import Any, Protocol

from torchdoctor.record import Record
from torchdoctor.tune.plan import SearchPlan
from torchdoctor.tune.trial import Trial


class TuneProgress(Protocol):
    """Told of the plan, then each run, trial, settled knob and the confirmation as they happen
    (a progress bar)."""

    def planned(self, plan: SearchPlan) -> None: ...
    def trial_started(self, index: int, label: str) -> None: ...
    def run_started(self, label: str, role: str) -> None: ...
    def trial_finished(self, trial: Trial, best: Trial) -> None: ...
    def knob_settled(self, knob: str, kept: Trial | None, best: Trial) -> None: ...
    def confirmation_finished(self, confirmation: dict[str, Any]) -> None: ...


class TrialStore(Protocol):
    """Where trials are kept as they finish (`torchdoctor.store.RunStore` is one)."""

    def save(self, record: Record) -> None: ...
    def save_trial(self, tune_id: str, trial: int, *, run_id: str | None, knobs: dict[str, Any], verdict: str,
                   reason: str, figures: dict[str, Any]) -> None: ...
