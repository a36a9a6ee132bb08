"""One rank's file read and analysed, as a task a worker process runs: what it returns is all that
the cross-rank analyses and the report keep of that rank.

A worker loads the whole trace (its memory bounded as in trace/loader.py) and sends back only the
rank's section (trace/rank.py: figures per step and over the selection, not events; packed as
compressed JSON, trace/packed.py, so that the caller holds a few kilobytes a rank), its steps'
numbers and wall times (two numbers a step), its drawn step timelines (capped:
trace/analyses/timeline.py), its collectives' operations and durations
(trace/analyses/collectives.py: two numbers a kernel), its computation kernels' groups with the
most device time (trace/analyses/slow_devices.py: at most 32 names and three numbers each) and the facts that say which job it belongs
to; the events stay in the worker, so the caller's memory grows with the ranks' summaries only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torchdoctor.trace.analyses.collectives import RankCollectives, rank_collectives
from torchdoctor.trace.analyses.rank_steps import StepWalls
from torchdoctor.trace.analyses.slow_devices import KernelGroups, kernel_groups
from torchdoctor.trace.analyses.timeline import RANK_EVENTS_TOTAL, step_timeline
from torchdoctor.trace.config import TraceConfig
from torchdoctor.trace.events import Trace
from torchdoctor.trace.loader import load_trace
from torchdoctor.trace.packed import PackedSection
from torchdoctor.trace.rank import analyse_rank


@dataclass(frozen=True)
class RankTask:
    """`draw_first`: this file sets the step every rank's timeline draws (the first file);
    otherwise `step` is that step (None: each rank's median step)."""

    path: str
    config: TraceConfig
    files_count: int
    draw_first: bool = False
    step: int | None = None
    split: bool = True  # a large plain file may be read in two processes (trace/halves.py)


@dataclass(frozen=True)
class RankResult:
    section: PackedSection  # the rank's section (trace/rank.py), compressed
    world_size: int | None
    first_timeline: dict[str, Any] | None  # the single-file timeline (600 events), for the first file
    rank_timeline: dict[str, Any] | None  # this rank's timeline among several (shared cap)
    collectives: RankCollectives  # its communication kernels: operation and duration, in order
    step_walls: StepWalls  # every analysed step's number and wall time, listed in the section or not
    kernel_groups: KernelGroups  # its computation kernels' groups with the most device time


def analyse_file(task: RankTask) -> RankResult:
    """Load and analyse one file. Raises what load_trace raises (TraceFormatError, OSError)."""
    config = task.config
    trace = load_trace(task.path, include_python=config.include_python, hta_ns_rounding=config.hta_ns_rounding,
                       split=task.split)
    section, walls = analyse_rank(trace, config)
    first, rank = None, None
    if config.timeline:
        first, rank = _timelines(trace, task)
    return RankResult(PackedSection.pack(section), _world_size(trace), first, rank, rank_collectives(trace), walls,
                      kernel_groups(trace))


def _timelines(trace: Trace, task: RankTask) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    step = task.step
    first = None
    if task.draw_first:
        drawn = step_timeline(trace)
        first = drawn.to_dict() if drawn else None
        step = first["step"] if first else None
    if task.files_count < 2:
        return first, None
    drawn = step_timeline(trace, max_events=max(RANK_EVENTS_TOTAL // task.files_count, 1), step_number=step)
    return first, drawn.to_dict() if drawn else None


def _world_size(trace: Trace) -> int | None:
    """`distributedInfo.world_size` when the trace states it as a whole number."""
    info = trace.metadata.get("distributedInfo")
    size = info.get("world_size") if isinstance(info, dict) else None
    return size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None

