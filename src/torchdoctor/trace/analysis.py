"""`analyse_traces`: every analysis of one or more ranks' traces, as a TraceAnalysis value.

The report's dict (`to_dict`) is what the observe step stores in `Record.trace` and what the
diagnosis rules read; its keys are documented in docs/trace.md. Keys are only added within a
`schema_version`; renaming, removing or changing the meaning of one bumps it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from torchdoctor.trace.analyses.collectives import lateness
from torchdoctor.trace.analyses.rank_steps import slow_steps, step_matrix
from torchdoctor.trace.analyses.ranks import rank_summary
from torchdoctor.trace.analyses.slow_devices import slow_devices
from torchdoctor.trace.config import TraceConfig
from torchdoctor.trace.gather import Progress, gather_ranks
from torchdoctor.trace.job import job_ranks
from torchdoctor.trace.packed import PackedSection
from torchdoctor.trace.rank_task import RankResult
from torchdoctor.trace.report_json import json_chunks

SCHEMA_VERSION = 2


@dataclass(frozen=True)
class TraceAnalysis:
    """Per-rank sections (`ranks`, ordered by rank; held compressed, trace/packed.py), the
    cross-rank summary and all warnings; `caveats` are the warnings that change how the figures
    read (what was cut, skipped, repaired)."""

    files: tuple[str, ...]
    packed_ranks: tuple[PackedSection, ...]
    multi_rank: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    caveats: tuple[str, ...] = ()
    timeline: dict[str, Any] | None = None  # one step of the first file (analyses/timeline.py)
    rank_timelines: tuple[dict[str, Any], ...] = ()  # that step of every rank, when there are several
    excluded: tuple[dict[str, Any], ...] = ()  # files left out of several: path, rank, reason (trace/job.py)

    @property
    def ranks(self) -> tuple[dict[str, Any], ...]:
        """Every rank's section, expanded (fresh dicts at each call)."""
        return tuple(p.unpack() for p in self.packed_ranks)

    def head(self) -> dict[str, Any]:
        """`to_dict` without the ranks' sections (`ranks` empty): what is said of the job as a whole."""
        return {**self._parts(), "ranks": []}

    def iter_ranks(self) -> Iterator[dict[str, Any]]:
        """Every rank's section, expanded one at a time."""
        return (p.unpack() for p in self.packed_ranks)

    def to_dict(self) -> dict[str, Any]:
        """The report as one dict: every rank's section expanded at once (see `json_chunks`)."""
        return {**self._parts(), "ranks": list(self.ranks)}

    def json_chunks(self, option: int = orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY) -> Iterator[bytes]:
        """Pieces of `dumps_json(self.to_dict(), option=option)` (the same bytes, concatenated),
        encoded one rank's section at a time: what writes a report of many ranks without holding
        all of them expanded."""
        return json_chunks({**self._parts(), "ranks": self.iter_ranks()}, option)

    def _parts(self) -> dict[str, Any]:
        """`to_dict`'s keys, in its order, `ranks` left to the caller."""
        return {
            "schema_version": SCHEMA_VERSION,
            "files": list(self.files),
            "ranks": None,
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
    heads = [r.section.head for r in job.kept]
    warnings = [w for h in heads for w in h["warnings"]] + list(job.warnings)
    summary = _multi_rank(job.kept)
    caveats = tuple(c for h in heads for c in h["caveats"])
    first = next((r.first_timeline for r in job.kept if r.first_timeline is not None), None)
    by_rank = tuple(r.rank_timeline for r in job.kept if r.rank_timeline is not None)
    packed = tuple(r.section for r in job.kept)
    return TraceAnalysis(tuple(files), packed, summary, tuple(warnings), caveats, first, by_rank, job.excluded)


def _multi_rank(kept: Sequence[RankResult]) -> dict[str, Any]:
    """The cross-rank figures: per-rank medians (analyses/ranks.py) and, with two or more ranks, the
    step matrix and the ranks slow at one step (analyses/rank_steps.py) and the lateness at each
    collective (analyses/collectives.py) and the ranks whose kernels ran slower on the same work
    (analyses/slow_devices.py)."""
    heads = [r.section.head for r in kept]
    summary = rank_summary([_rank_figures(h) for h in heads])
    if len(kept) < 2:
        return summary
    ranks = [h["rank"] for h in heads]
    matrix = step_matrix(ranks, [r.step_walls for r in kept])
    return {**summary, "step_matrix": matrix, "slow_steps": slow_steps(matrix),
            "collectives": lateness(ranks, [r.collectives for r in kept]),
            "slow_devices": slow_devices(ranks, [r.kernel_groups for r in kept])}


def _rank_figures(head: dict[str, Any]) -> dict[str, Any]:
    keys = ("rank", "step_us_median", "compute_us", "comm_us")
    return {key: head[key] for key in keys}
