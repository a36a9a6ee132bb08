"""Which of several rank files belong to one job, and why the others are left out.

With two or more files, a file is left out (and named, with the reason, in `excluded`) when:
- it could not be read: missing, not a Kineto trace, or its worker process died twice;
- it is truncated (cut off mid-write): its last steps are missing, so its figures would not
  compare with the other ranks';
- it comes from another job: its `distributedInfo.world_size`, or its number of profiled steps,
  differs from that of most files (ties: the first file's).
Two files that claim the same rank are both kept and named in a warning. With one file nothing
is left out: a file that cannot be read raises, and a truncated one is analysed as far as it parses.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from torchdoctor.trace.pool import Outcome
from torchdoctor.trace.rank_task import RankResult


@dataclass(frozen=True)
class JobRanks:
    kept: tuple[RankResult, ...]  # ordered by rank (stable for duplicates)
    excluded: tuple[dict[str, Any], ...]  # {"path", "rank" (None when unread), "reason"}
    warnings: tuple[str, ...]


def job_ranks(paths: Sequence[str], outcomes: Sequence[Outcome[RankResult]]) -> JobRanks:
    """The files' outcomes sorted into kept ranks and excluded files. Raises the first file's error
    when nothing can be kept (or when the one file given cannot be read)."""
    errors = [(p, o.error) for p, o in zip(paths, outcomes) if o.error is not None]
    read = [o.value for o in outcomes if o.value is not None]
    if not read or len(paths) == 1 and errors:
        raise errors[0][1]  # type: ignore[misc]
    excluded = [{"path": p, "rank": None, "reason": f"could not be read: {e}"} for p, e in errors]
    kept = []
    reasons = _mismatches(read) if len(paths) > 1 else [None] * len(read)
    for result, reason in zip(read, reasons):
        if reason is None:
            kept.append(result)
        else:
            head = result.section.head
            excluded.append({"path": head["path"], "rank": head["rank"], "reason": reason})
    kept.sort(key=lambda r: r.section.head["rank"])
    warnings = [f"{e['path']} left out: {e['reason']}" for e in excluded] + _duplicates(kept)
    return JobRanks(tuple(kept), tuple(excluded), tuple(warnings))


def _mismatches(read: list[RankResult]) -> list[str | None]:
    """Per read file, why it is left out (None: kept)."""
    sizes = _most_common([r.world_size for r in read if r.world_size is not None])
    steps = _most_common([r.section.head["steps_count"] for r in read if not r.section.head["truncated"]])
    out: list[str | None] = []
    for result in read:
        section = result.section.head
        if section["truncated"]:
            out.append("truncated (cut off mid-write): its last steps are missing")
        elif result.world_size is not None and sizes is not None and result.world_size != sizes:
            out.append(f"from another job: world size {result.world_size}, the other files' is {sizes}")
        elif steps is not None and section["steps_count"] != steps:
            out.append(f"from another job: {section['steps_count']} profiled steps, the other files have {steps}")
        else:
            out.append(None)
    return out


def _most_common(values: list[int]) -> int | None:
    return Counter(values).most_common(1)[0][0] if values else None


def _duplicates(kept: list[RankResult]) -> list[str]:
    paths: dict[int, list[str]] = {}
    for result in kept:
        paths.setdefault(result.section.head["rank"], []).append(result.section.head["path"])
    return [f"rank {rank} is claimed by several files (distributedInfo.rank): {', '.join(files)}; "
            "they are reported side by side" for rank, files in paths.items() if len(files) > 1]  # fmt: skip
