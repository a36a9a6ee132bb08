"""The whole run's Record section (`Record.whole_run`): its wall time broken down, and what changed
over time. Frozen values with `to_dict`/`from_dict`; docs/record-schema.md has the schema."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from torchdoctor.jsonfields import value_of

#: Kinds of part; `steady` is the goodput, every other kind badput (or the script's own set-up).
PART_KINDS = ("startup", "top_level", "warmup", "steady", "windows", "slow", "slow_epoch", "tail", "exit",
              "no_steps")


@dataclass(frozen=True, slots=True)
class Part:
    """A share of the wall time: what it was (`kind`, `label` in words), how long, and its evidence."""

    kind: str
    label: str
    seconds: float
    steps: int | None = None
    period_steps: int | None = None
    every_s: float | None = None
    cause: str | None = None
    first_steps: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Trend:
    """A finding over time: what, the evidence (in words, and its numbers in `figures`, units in the
    keys), the fix, and the run time it would save. The rules of torchdoctor.rules.whole_run turn
    each into a Finding."""

    kind: str
    title: str
    evidence: str
    advice: str
    upside_s: float | None = None
    figures: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class OpTime:
    """An operator's self time in a profiler window, and its share of the window's."""

    name: str
    seconds: float
    share: float


@dataclass(frozen=True, slots=True)
class ProfileWindow:
    """A short profiler window of the lean observation (`watch --profile-every`): when it began
    (on the run's clock), the steps it touched (`first_step`..`last_step`, the profiler's stop and
    summary included), the clock its times are on (`device` or `cpu`), the operators' total self
    time and the largest operators."""

    t_s: float
    first_step: int
    last_step: int
    steps: int
    clock: str
    total_s: float
    ops: list[OpTime] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class RankRun:
    """One rank's whole run under torchrun (`watch --nproc-per-node`): its steps, median step and
    goodput, each rank broken down from its own stream like rank 0's."""

    rank: int
    wall_s: float
    ended: str
    steps: int
    step_s: float | None
    goodput_s: float

    @property
    def goodput_share(self) -> float:
        return self.goodput_s / self.wall_s if self.wall_s > 0 else 0.0


@dataclass(frozen=True, slots=True)
class Straggler:
    """A stretch of the run in which one rank's steps were slower than the other ranks': its steps
    (`first_step`..`last_step`) and when they ran on the run's clock, its own time a step (the step
    time less the share of its stack samples waiting in a collective) against the other ranks'
    median, and the run time lost: the excess a step times the steps, what the others waited."""

    rank: int
    first_step: int
    last_step: int
    start_s: float
    end_s: float
    step_s: float
    others_step_s: float
    lost_s: float


@dataclass(frozen=True, slots=True)
class WholeRun:
    """The run from the process's start to its exit."""

    wall_s: float
    ended: str
    steps: int
    step_s: float | None
    goodput_s: float
    parts: list[Part]
    trends: list[Trend]
    timeline: dict[str, list[float | None]] = field(default_factory=dict)
    disk_bytes: int = 0
    profiles: list[ProfileWindow] = field(default_factory=list)
    profiles_seen: int = 0
    ranks: list[RankRun] = field(default_factory=list)
    stragglers: list[Straggler] = field(default_factory=list)

    @property
    def goodput_share(self) -> float:
        return self.goodput_s / self.wall_s if self.wall_s > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WholeRun:
        """The section of a saved Record; RecordFormatError naming a field of the wrong type."""
        return value_of(cls, data, "whole_run")
