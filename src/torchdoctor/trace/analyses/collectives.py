"""Which rank arrived last at each collective, and how long the others waited for it.

A rank's collectives are its communication kernels (events.COMM_KERNEL_RE), in start order, each
with its operation (`AllReduce`, `AllGather`, `ReduceScatter`, `Broadcast`, `SendRecv`, ... : the
word after `Kernel_` in NCCL's and RCCL's kernel names) and its duration. The k-th collective of an
operation on one rank is matched with the k-th of that operation on every other rank.

A collective ends at the same moment on every rank (none can finish before the last one joins),
while node clocks differ; so the ranks are aligned by the collective's end, never by timestamps:
a rank's arrival is its end minus its duration, the rank with the shortest kernel arrived last,
and every other rank waited its duration minus that shortest one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from torchdoctor.trace.events import COMM_KERNEL_RE, KERNEL, Trace

_OPERATION_RE = re.compile(r"^(?:nccl|rccl)\w*?Kernel_([A-Za-z]+)")
TOP = 10  # collectives listed, by the others' total wait


@dataclass(frozen=True)
class RankCollectives:
    """One rank's collectives in start order: `operations[i]` and `dur_us[i]`."""

    operations: tuple[str, ...]
    dur_us: np.ndarray


def rank_collectives(trace: Trace) -> RankCollectives:
    rows = trace.rows_named(COMM_KERNEL_RE, (KERNEL,))
    rows = rows[np.argsort(trace.ts_us[rows], kind="stable")]
    names = [trace.names[i] for i in trace.name_id[rows].tolist()]
    return RankCollectives(tuple(_operation(n) for n in names), trace.dur_us[rows].astype(np.float64))


def _operation(name: str) -> str:
    found = _OPERATION_RE.match(name)
    return found.group(1) if found else "other"


def lateness(ranks: Sequence[int], collectives: Sequence[RankCollectives]) -> dict[str, Any]:
    """`matched_count` (collectives every rank ran), `last_count_by_rank` and `waited_us_by_rank`
    (how often each rank arrived last; how long each waited for the others), and `top`: the
    collectives with the longest total wait (`operation`, `index` (k-th of its operation),
    `last_rank`, `waited_us` (the others' total), `max_wait_us`)."""
    ops = sorted(set.intersection(*(set(c.operations) for c in collectives))) if collectives else []
    last_count = np.zeros(len(ranks), np.int64)
    waited = np.zeros(len(ranks))
    rows: list[dict[str, Any]] = []
    matched = 0
    for op in ops:
        durs = [c.dur_us[np.array([o == op for o in c.operations], bool)] for c in collectives]
        count = min(d.size for d in durs)
        table = np.stack([d[:count] for d in durs])  # ranks x collectives
        wait = table - table.min(axis=0)
        last = np.argmin(table, axis=0)
        last_count += np.bincount(last, minlength=len(ranks))
        waited += wait.sum(axis=1)
        matched += count
        rows += [{"operation": op, "index": k, "last_rank": ranks[int(last[k])], "waited_us": float(wait[:, k].sum()),
                  "max_wait_us": float(wait[:, k].max())} for k in range(count)]  # fmt: skip
    rows.sort(key=lambda r: -r["waited_us"])
    return {
        "matched_count": matched,
        "last_count_by_rank": [{"rank": r, "count": int(n)} for r, n in zip(ranks, last_count)],
        "waited_us_by_rank": [{"rank": r, "waited_us": float(w)} for r, w in zip(ranks, waited)],
        "top": rows[:TOP],
    }
