"""`analyse_traces`: every analysis of one or more ranks' traces, as a TraceAnalysis value.

The report's dict (`to_dict`) is what the observe step stores in `Record.trace` and what the
diagnosis rules read; its keys are documented in docs/trace.md. Keys are only added within a
`schema_version`; renaming, removing or changing the meaning of one bumps it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchdoctor.trace.analyses.collectives import lateness
from torchdoctor.trace.analyses.rank_steps import slow_steps, step_matrix
from torchdoctor.trace.analyses.ranks import rank_summary
from torchdoctor.trace.analyses.slow_devices import slow_devices
from torchdoctor.trace.config import TraceConfig
from torchdoctor.trace.gather import Progress, gather_ranks
from torchdoctor.trace.job import job_ranks
from torchdoctor.trace.rank_task import RankResult

SCHEMA_VERSION = 2


@dataclass(frozen=True)
class TraceAnalysis:
    """Per-rank sections (`ranks`, ordered by rank), the cross-rank summary and all warnings;
    `caveats` are the warnings that change how the figures read (what was cut, skipped, repaired)."""

    files: tuple[str, ...]
    ranks: tuple[dict[str, Any], ...]
    multi_rank: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    caveats: tuple[str, ...] = ()
    timeline: dict[str, Any] | None = None  # one step of the first file (analyses/timeline.py)
    rank_timelines: tuple[dict[str, Any], ...] = ()  # that step of every rank, when there are several
    excluded: tuple[dict[str, Any], ...] = ()  # files left out of several: path, rank, reason (trace/job.py)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "files": list(self.files),
            "ranks": list(self.ranks),
            "multi_rank": self.multi_rank,
            "warnings": list(self.warnings),
            "caveats": list(self.caveats),
            "timeline": self.timeline,
            "rank_timelines": list(self.rank_timelines),
            "excluded": list(self.excluded),
        }


def analyse_traces(
    paths: Sequence[str | Path],
    config: TraceConfig | None = None,
    *,
    progress: Progress | None = None,
    jobs: int = 1,
    cluster: str | None = None,
) -> TraceAnalysis:
    """Load and analyse each file (one per rank): in this process one at a time (`jobs=1`), so that
    memory holds one trace, or in `jobs` worker processes, each holding one trace and sending back
    its rank's summary (trace/rank_task.py), or as tasks on the Dask cluster at `cluster` (an
    address, or `local`: trace/cluster.py); the result is the same every way.

    One file: raises TraceFormatError if it is missing or not a Kineto trace;
    a truncated file is analysed as far as it parses, with a warning. Several files: a file that
    cannot be read, is truncated or comes from another job is left out and named in `excluded`
    (trace/job.py); raises only when no file is left. `progress(done, total, path)` is called as
    each file's analysis ends.
    """
    config = config or TraceConfig()
    if not paths:
        raise ValueError("analyse_traces needs at least one trace file")
    files = [str(p) for p in paths]
    job = job_ranks(files, gather_ranks(files, config, jobs, progress, cluster))
    sections = [r.section for r in job.kept]
    warnings = [w for s in sections for w in s["warnings"]] + list(job.warnings)
    summary = _multi_rank(job.kept)
    caveats = tuple(c for s in sections for c in s["caveats"])
    first = next((r.first_timeline for r in job.kept if r.first_timeline is not None), None)
    by_rank = tuple(r.rank_timeline for r in job.kept if r.rank_timeline is not None)
    return TraceAnalysis(tuple(files), tuple(sections), summary, tuple(warnings), caveats, first, by_rank,
                         job.excluded)  # fmt: skip


def _multi_rank(kept: Sequence[RankResult]) -> dict[str, Any]:
    """The cross-rank figures: per-rank medians (analyses/ranks.py) and, with two or more ranks, the
    step matrix and the ranks slow at one step (analyses/rank_steps.py) and the lateness at each
    collective (analyses/collectives.py) and the ranks whose kernels ran slower on the same work
    (analyses/slow_devices.py)."""
    sections = [r.section for r in kept]
    summary = rank_summary([_rank_figures(s) for s in sections])
    if len(kept) < 2:
        return summary
    ranks = [s["rank"] for s in sections]
    matrix = step_matrix(ranks, [r.step_walls for r in kept])
    return {**summary, "step_matrix": matrix, "slow_steps": slow_steps(matrix),
            "collectives": lateness(ranks, [r.collectives for r in kept]),
            "slow_devices": slow_devices(ranks, [r.kernel_groups for r in kept])}


def _rank_figures(section: dict[str, Any]) -> dict[str, Any]:
    device = section.get("device") or {}
    return {
        "rank": section["rank"],
        "step_us_median": section["step_us_median"],
        "compute_us": device.get("compute_us"),
        "comm_us": device.get("comm_us"),
    }
