"""The ranks whose kernels ran slower than the other ranks' on the same work: a slow GPU or node.

**Same work** is a group of computation kernels (HTA's kernel type: not communication, not
memory) with the same kernel name and the same launching CPU operator (the `cpu_op` whose
`External id` the kernel carries; traces that do not link the two, such as PyTorch 1.x ones, group
by kernel name alone). The kernel name fixes the code that ran (a GEMM's tile shape, an
elementwise functor) and the operator separates the same kernel used by different layers. Within
one group a data-parallel job's ranks run the same mix of shapes every step, so a group's median
duration compares across ranks; the input shapes and the launch grid are not columns of the loaded
trace, so a group may mix shapes, and the median over the same mix is what is compared.

Each rank keeps its `TOP_GROUPS` groups with the most device time (a digest of the name and
operator, both cut to `LABEL_CHARS` characters for display, the median and total duration: a few
kilobytes, whatever the trace's size; a templated kernel's name runs to 2,000 characters). Across ranks, the groups present on
every compared rank are ranked by their device time over all ranks and the first `GROUPS_COMPARED`
are compared: per group and rank, the rank's median over the median of the other ranks' medians.
A rank is a **slow device** when more than half of those groups (by count, not by time: one heavy
kernel whose work differs between ranks, such as a model-parallel embedding shard, must not
decide alone) ran more than `SLOW_EXCESS` slower than on the other ranks. A straggler whose step
is long because it waits or its host is slow runs its kernels as fast as the others, so it is not
one; a slow device may or may not be a straggler.

A rank without computation kernels, or none of whose groups most ranks run, is left out of this
analysis with its reason.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from torchdoctor.trace.device import COMPUTATION, kernel_types
from torchdoctor.trace.events import CPU_OP, KERNEL, Trace

TOP_GROUPS = 32  # groups each rank keeps, by device time
GROUPS_COMPARED = 20  # groups compared across ranks, by device time over the ranks
#: A group is slower on a rank when its median exceeds the other ranks' by more than this share.
#: On the real two-rank fixture (multirank-sampled, A100, same job) the median over the 20 compared
#: groups of rank 0's ratio to rank 1's is -4.1 % (rank 1: +4.3 %), and 2 and 7 of the 20 groups
#: exceed +15 % (the sparse embedding kernels, whose shards differ between ranks): below half.
SLOW_EXCESS = 0.15
GROUPS_LISTED = 5  # compared groups named in the output
LABEL_CHARS = 160  # of a kernel's or operator's name kept for display


@dataclass(frozen=True)
class KernelGroups:
    """One rank's computation-kernel groups with the most device time: `keys[i]` is the digest of
    (kernel name, launching operator or None), `labels[i]` the two names cut to LABEL_CHARS, with
    its `count`, `median_us` and `total_us`."""

    keys: tuple[bytes, ...]
    labels: tuple[tuple[str, str | None], ...]
    count: np.ndarray
    median_us: np.ndarray
    total_us: np.ndarray


def kernel_groups(trace: Trace, top: int = TOP_GROUPS) -> KernelGroups:
    """The `top` groups of `trace`'s computation kernels by summed duration (see the module)."""
    rows = np.flatnonzero(trace.kind == KERNEL)
    if rows.size:
        rows = rows[kernel_types(trace.names)[trace.name_id[rows]] == COMPUTATION]
    if rows.size == 0:
        return KernelGroups((), (), np.zeros(0, np.int64), np.zeros(0), np.zeros(0))
    op_name = _launching_ops(trace, rows)
    key = trace.name_id[rows].astype(np.int64) * (len(trace.names) + 1) + (op_name + 1)
    uniq, group = np.unique(key, return_inverse=True)
    dur = trace.dur_us[rows]
    total = np.bincount(group, weights=dur, minlength=uniq.size)
    count = np.bincount(group, minlength=uniq.size)
    order = np.lexsort((dur, group))  # by group, then duration: each group's durations sorted
    first = np.concatenate(([0], np.cumsum(count)[:-1]))
    sorted_dur = dur[order]
    median = (sorted_dur[first + (count - 1) // 2] + sorted_dur[first + count // 2]) / 2
    keep = np.argsort(-total, kind="stable")[:top]
    names = [(trace.names[int(k) // (len(trace.names) + 1)], _name(trace, int(k) % (len(trace.names) + 1) - 1))
             for k in uniq[keep]]  # fmt: skip
    keys = tuple(hashlib.blake2b(f"{kernel}\0{op or ''}".encode(), digest_size=16).digest() for kernel, op in names)
    labels = tuple((kernel[:LABEL_CHARS], op[:LABEL_CHARS] if op else None) for kernel, op in names)
    return KernelGroups(keys, labels, count[keep], median[keep], total[keep])


def _launching_ops(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Per kernel row, the `name_id` of the CPU operator with the kernel's `External id` (-1: none)."""
    ops = np.flatnonzero((trace.kind == CPU_OP) & (trace.external_id >= 0))
    out = np.full(rows.size, -1, np.int64)
    if ops.size == 0:
        return out
    ids = trace.external_id[ops]
    order = np.argsort(ids, kind="stable")
    ids, ops = ids[order], ops[order]
    want = trace.external_id[rows]
    pos = np.clip(np.searchsorted(ids, want), 0, ids.size - 1)
    found = (ids[pos] == want) & (want >= 0)
    out[found] = trace.name_id[ops[pos[found]]]
    return out


def _name(trace: Trace, name_id: int) -> str | None:
    return trace.names[name_id] if name_id >= 0 else None


def slow_devices(ranks: Sequence[int], groups: Sequence[KernelGroups]) -> dict[str, Any]:
    """The cross-rank comparison (docs/trace.md, `multi_rank.slow_devices`): `ranks` flagged,
    `by_rank` (every compared rank's `median_excess_fraction` and `slower_groups_fraction`),
    `groups_compared_count`, `groups` (the first GROUPS_LISTED compared), `left_out` (`rank`,
    `reason`) and `excess_threshold_fraction`."""
    kept, left_out = _comparable(ranks, groups)
    out: dict[str, Any] = {"excess_threshold_fraction": SLOW_EXCESS, "ranks": [], "by_rank": [],
                           "groups_compared_count": 0, "groups": [], "left_out": left_out}  # fmt: skip
    if len(kept) < 2:
        return out
    keys = _shared_keys([groups[i] for i in kept])
    if not keys:
        return {**out, "left_out": left_out + [{"rank": ranks[i], "reason": "no kernel group runs on every rank"}
                                               for i in kept]}  # fmt: skip
    table = np.array([[_median_of(groups[i], k) for k in keys] for i in kept])  # ranks x groups
    excess = np.empty_like(table)
    for r in range(len(kept)):
        others = np.median(np.delete(table, r, axis=0), axis=0)
        excess[r] = np.divide(table[r], others, out=np.ones_like(others), where=others > 0) - 1
    slower = (excess > SLOW_EXCESS).mean(axis=1)
    by_rank = [{"rank": ranks[i], "median_excess_fraction": float(np.median(excess[r])),
                "slower_groups_fraction": float(slower[r])} for r, i in enumerate(kept)]  # fmt: skip
    label = dict(zip(groups[kept[0]].keys, groups[kept[0]].labels))
    listed = [{"kernel": label[k][0], "operator": label[k][1], "median_us_over_ranks": float(np.median(table[:, j]))}
              for j, k in enumerate(keys[:GROUPS_LISTED])]  # fmt: skip
    return {**out, "ranks": [b["rank"] for b in by_rank if b["slower_groups_fraction"] > 0.5],
            "by_rank": by_rank, "groups_compared_count": len(keys), "groups": listed}


def _comparable(ranks: Sequence[int], groups: Sequence[KernelGroups]) -> tuple[list[int], list[dict[str, Any]]]:
    """Indices of the ranks compared, and the others with their reason: no computation kernel, or
    none of the groups that more than half of the ranks with kernels run."""
    left_out = [{"rank": ranks[i], "reason": "no computation kernel"} for i, g in enumerate(groups) if not g.keys]
    with_kernels = [i for i, g in enumerate(groups) if g.keys]
    seen: dict[bytes, int] = {}
    for i in with_kernels:
        for key in set(groups[i].keys):
            seen[key] = seen.get(key, 0) + 1
    common = {k for k, n in seen.items() if n > len(with_kernels) / 2}
    kept = [i for i in with_kernels if common & set(groups[i].keys)]
    left_out += [{"rank": ranks[i], "reason": "none of its kernel groups runs on most ranks"}
                 for i in with_kernels if i not in kept]  # fmt: skip
    return kept, left_out


def _shared_keys(groups: Sequence[KernelGroups]) -> list[bytes]:
    """The groups every rank has, the GROUPS_COMPARED with the most device time over the ranks."""
    shared = set.intersection(*(set(g.keys) for g in groups))
    time = {k: sum(float(g.total_us[g.keys.index(k)]) for g in groups) for k in shared}
    return sorted(shared, key=lambda k: (-time[k], k))[:GROUPS_COMPARED]


def _median_of(groups: KernelGroups, key: bytes) -> float:
    return float(groups.median_us[groups.keys.index(key)])
