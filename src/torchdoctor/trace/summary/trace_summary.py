"""The whole trace summary (trace/analysis.py's `TraceAnalysis.to_dict`, docs/trace.md): the ranks,
the cross-rank figures and the timelines, as frozen `Keyed` values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from torchdoctor.jsonfields import Keyed
from torchdoctor.trace.summary.rank import RankSummary


@dataclass(frozen=True, slots=True)
class RankFigures(Keyed):
    """One rank's figures the cross-rank comparison is made of."""

    rank: int | None = None
    step_us_median: float | None = None
    compute_us: float | None = None
    comm_us: float | None = None


@dataclass(frozen=True, slots=True)
class MultiRank(Keyed):
    """The ranks compared (trace/analyses/ranks.py, HTA's straggler and imbalance figures); with fewer
    than two timed ranks only `ranks_count`."""

    ranks_count: int = 0
    step_us_median_over_ranks: float | None = None
    slowest_rank: int | None = None
    slowest_rank_excess_fraction: float | None = None
    stragglers: tuple[int, ...] = ()
    compute_imbalance_fraction: float | None = None
    comm_imbalance_fraction: float | None = None
    least_comm_rank: int | None = None
    per_rank: tuple[RankFigures, ...] = ()
    step_matrix: dict[str, Any] | None = None  # with two or more ranks (analyses/rank_steps.py)
    slow_steps: dict[str, Any] | None = None
    collectives: dict[str, Any] | None = None  # lateness at each collective (analyses/collectives.py)
    slow_devices: dict[str, Any] | None = None  # kernels slower on the same work (analyses/slow_devices.py)

    @property
    def compared(self) -> bool:
        """Two or more timed ranks were compared (`per_rank` present)."""
        return self.ranks_count >= 2 and "per_rank" in self.keys


@dataclass(frozen=True, slots=True)
class TraceSummary(Keyed):
    """`record.trace`: the files analysed, each rank's section (ordered by rank), the cross-rank
    figures, warnings (`caveats`: those that change how the figures read) and the timelines the HTML
    report draws (passed through as their JSON)."""

    WHERE: ClassVar[str] = "trace"
    schema_version: int | None = None
    files: tuple[str, ...] = ()
    ranks: tuple[RankSummary, ...] = ()
    multi_rank: MultiRank = field(default_factory=MultiRank)
    warnings: tuple[str, ...] = ()
    caveats: tuple[str, ...] = ()
    timeline: dict[str, Any] | None = None
    rank_timelines: tuple[dict[str, Any], ...] = ()
    excluded: tuple[dict[str, Any], ...] = ()  # files left out of several (trace/job.py)
