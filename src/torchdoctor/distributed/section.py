"""`record.distributed` (docs/distributed.md) as frozen values: what `rank_analysis` writes, read
back by its readers with `from_dict` (a field of the wrong type is a RecordFormatError naming it).

The section is `Keyed`: the timing keys are there only when two ranks measured steps, and a
Record analysed before a figure existed lacks it; `to_dict` writes back exactly the keys read.
None: a figure the section lacks, or one it states as null.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from torchdoctor.jsonfields import Keyed


@dataclass(frozen=True, slots=True)
class Straggler(Keyed):
    """A rank whose load exceeds the others' by more than the straggler limit, and the likely cause."""

    rank: int
    excess_s: float = 0.0
    cause: str | None = None
    excess_of_step_fraction: float = 0.0


@dataclass(frozen=True, slots=True)
class RankTiming(Keyed):
    """One measured rank's median step, data wait and backward time; `work_s` is the step outside backward."""

    rank: int
    steps_count: int = 0
    step_s: float = 0.0
    data_wait_s: float = 0.0
    backward_s: float = 0.0
    work_s: float = 0.0


@dataclass(frozen=True, slots=True)
class FailedRank(Keyed):
    """A rank that failed (earliest first): how, its exit code or error, and the steps it measured."""

    rank: int
    how: str | None = None
    code: int | None = None
    error: str | None = None
    steps_measured: int = 0


@dataclass(frozen=True, slots=True)
class GradSyncRank(Keyed):
    """One rank's backward calls and gradient all-reduces per optimizer step."""

    rank: int
    optimizer_steps: int = 0
    backward_calls: int = 0
    allreduce_backwards: int = 0
    backward_per_optimizer_step: float | None = None
    allreduce_backwards_per_optimizer_step: float | None = None
    allreduces_per_optimizer_step: float | None = None


@dataclass(frozen=True, slots=True)
class GradSync(Keyed):
    """The worst rank's gradient synchronisation per optimizer step, and whether accumulated
    backwards all-reduce each time (`accumulation_without_no_sync`)."""

    ddp_seen: bool = False
    backward_per_optimizer_step: float | None = None
    allreduce_backwards_per_optimizer_step: float | None = None
    allreduces_per_optimizer_step: float | None = None
    accumulation_without_no_sync: bool = False
    per_rank: tuple[GradSyncRank, ...] = ()


@dataclass(frozen=True, slots=True)
class Sampler(Keyed):
    """Shuffled sampler epochs compared: repeated ones mean `set_epoch` was not called (None: none compared)."""

    iterations_per_rank_max: int = 0
    epoch_pairs_compared: int = 0
    repeated_epochs: int = 0
    ranks_repeating: tuple[int, ...] = ()
    set_epoch_missing: bool | None = None


@dataclass(frozen=True, slots=True)
class BatchCostRank(Keyed):
    """One rank's input elements per step (median) and in all."""

    rank: int
    elements_per_step_median: float = 0.0
    elements_total: float = 0.0


@dataclass(frozen=True, slots=True)
class BatchCost(Keyed):
    """How unequal the ranks' batches are: the share of work the lighter ranks idle for, and per rank
    (by its number as a string) the share of steps in which its batch alone was the heaviest."""

    steps_compared: int = 0
    idle_fraction: float = 0.0
    unbalanced: bool = False
    heaviest_rank_by_step: dict[str, float] = field(default_factory=dict)
    per_rank: tuple[BatchCostRank, ...] = ()


@dataclass(frozen=True, slots=True)
class DdpSettings(Keyed):
    """The first DDP module's settings and logging data (observe/probes/distributed.py)."""

    find_unused_parameters: bool | None = None
    gradient_as_bucket_view: bool | None = None
    static_graph: bool | None = None
    bucket_cap_bytes: int | None = None
    bucket_bytes_cap: int | None = None
    """DDP's own name for the cap, in the settings of an older Record."""
    bucket_sizes_bytes: tuple[int, ...] = ()
    unused_parameter_bytes: int | None = None
    has_rebuilt_buckets: bool | None = None
    buckets_count: int | None = None
    find_unused_parameters_unneeded: bool | None = None


@dataclass(frozen=True, slots=True)
class Runtime(Keyed):
    """What the ranks' run-time facts show (distributed/runtime_analysis.py); None: not measured."""

    grad_sync: GradSync | None = None
    sampler: Sampler | None = None
    batch_cost: BatchCost | None = None
    ddp: DdpSettings | None = None


@dataclass(frozen=True, slots=True)
class DistributedSection(Keyed):
    """The ranks of a multi-process run compared: failures, run-time facts, warnings, and with two
    measured ranks their step timing (`lockstep`: the ranks' steps agree, so load is `work_s`)."""

    WHERE: ClassVar[str] = "distributed"
    schema_version: int | None = None
    failed_ranks: tuple[FailedRank, ...] = ()
    runtime: Runtime | None = None
    warnings: tuple[str, ...] = ()
    ranks_count: int = 0
    lockstep: bool | None = None
    load: str | None = None
    step_s_median_over_ranks: float | None = None
    slowest_rank: int | None = None
    fastest_rank: int | None = None
    gap_s: float | None = None
    excess_fraction: float | None = None
    imbalance_fraction: float | None = None
    stragglers: tuple[Straggler, ...] = ()
    slowest_by_step: dict[str, float] = field(default_factory=dict)
    step_counts_match: bool | None = None
    per_rank: tuple[RankTiming, ...] = ()
