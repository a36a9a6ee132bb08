"""`analyse_traces`: every analysis of one or more ranks' traces, as a TraceAnalysis value.

The report's dict (`to_dict`) is what the observe step stores in `Record.trace` and what the
diagnosis rules read; its keys are documented in docs/trace.md. Keys are only added within a
`schema_version`; renaming, removing or changing the meaning of one bumps it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchdoctor.trace.analyses.ranks import rank_summary
from torchdoctor.trace.analyses.timeline import RankTimelines
from torchdoctor.trace.config import TraceConfig
from torchdoctor.trace.loader import load_trace
from torchdoctor.trace.rank import analyse_rank

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
        }


def analyse_traces(
    paths: Sequence[str | Path],
    config: TraceConfig | None = None,
    *,
    progress: Callable[[str], None] | None = None,
) -> TraceAnalysis:
    """Load and analyse each file (one per rank), one at a time so memory holds one trace.

    Raises TraceFormatError for a file that is not a Kineto trace; a truncated file is analysed
    as far as it parses, with a warning. `progress` is called with each file's path before it loads.
    """
    config = config or TraceConfig()
    if not paths:
        raise ValueError("analyse_traces needs at least one trace file")
    sections = []
    timelines = RankTimelines(len(paths))
    for path in paths:
        if progress is not None:
            progress(str(path))
        trace = load_trace(path, include_python=config.include_python, hta_ns_rounding=config.hta_ns_rounding)
        sections.append(analyse_rank(trace, config))
        if config.timeline:
            timelines.add(trace)
    sections.sort(key=lambda s: s["rank"])
    warnings = [w for s in sections for w in s["warnings"]]
    if len({s["rank"] for s in sections}) < len(sections):
        warnings.append("several files claim the same rank (distributedInfo.rank); they are reported side by side")
    summary = rank_summary([_rank_figures(s) for s in sections])
    caveats = tuple(c for s in sections for c in s["caveats"])
    return TraceAnalysis(tuple(str(p) for p in paths), tuple(sections), summary, tuple(warnings), caveats,
                         timelines.first, tuple(timelines.by_rank()))  # fmt: skip


def _rank_figures(section: dict[str, Any]) -> dict[str, Any]:
    device = section.get("device") or {}
    return {
        "rank": section["rank"],
        "step_us_median": section["step_us_median"],
        "compute_us": device.get("compute_us"),
        "comm_us": device.get("comm_us"),
    }
