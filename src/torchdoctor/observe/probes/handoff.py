"""The hand-off probe: what the training process pays to receive one batch from a DataLoader worker,
measured on this machine with batches laid out like the script's.

The data rules bound what workers can win by the step's compute plus this hand-off (rules/data.py):
workers hide the loading, never the receiving (the result queue, unpickling, mapping the
shared-memory tensors, pinning). A constant (1 ms, what benchmarks/worker_handoff.py measured on the
2-core development machine) over-claimed on the slow `__getitem__` field script, where a later run on
the same VM paid about 2 ms a batch (docs/field.md, session 12).

After the windows, when the timed steps waited for data, one worker serves batches of zero tensors
with the shapes and dtypes of the first batch the script received (`batch_layout`); the main process
sleeps between fetches, longer than the worker takes to make a batch, so `next()` only waits on the
hand-off, and the median over the fetches is the probe's figure. The script's own dataset is not read
again: that could take minutes or have side effects. One worker: more workers on few cores pay more
per batch (the scheduling of their processes), so the figure is a floor.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping
from typing import Any

import torch
from torch.utils._pytree import tree_leaves
from torch.utils.data import DataLoader, Dataset

#: The timed steps' median data wait, as a share of the median step, from which the probe runs: the
#: data rules fire from 10% (rules/data.py, WAIT_WARNING).
MIN_WAIT_SHARE = 0.05
#: Batches larger than this are not rebuilt (the probe would hold two or three of them in memory).
MAX_BATCH_BYTES = 256 * 2**20
WARMUP_FETCHES, FETCHES = 3, 20
MIN_GAP_S = 0.002  # between fetches: a step's compute, during which the worker puts the next batch
TIME_BUDGET_S = 3.0  # the probe stops fetching after this long (with at least MIN_FETCHES measured)
MIN_FETCHES = 5

Layout = list[tuple[tuple[int, ...], torch.dtype]]


def batch_layout(batch: Any) -> Layout:
    """Shapes and dtypes of the batch's tensors (torch's pytree: tuples, lists, dicts, namedtuples;
    another Mapping, e.g. a Hugging Face BatchEncoding, by its items). [] when it holds none."""
    if isinstance(batch, Mapping) and not isinstance(batch, dict):
        batch = dict(batch)
    return [(tuple(leaf.shape), leaf.dtype) for leaf in tree_leaves(batch) if isinstance(leaf, torch.Tensor)]


def layout_bytes(layout: Layout) -> int:
    return sum(torch.Size(shape).numel() * torch.empty((), dtype=dtype).element_size() for shape, dtype in layout)


class _ZeroBatches(Dataset):
    """Batches of zero tensors in `layout`, made anew per item as a worker's collate makes each batch."""

    def __init__(self, layout: Layout, length: int) -> None:
        self.layout, self.length = layout, length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> list[torch.Tensor]:
        return [torch.zeros(shape, dtype=dtype) for shape, dtype in self.layout]


def _make_s(layout: Layout) -> float:
    """Seconds to make one batch and move it to shared memory, as the worker does before sending it."""
    start = time.perf_counter()
    for tensor in _ZeroBatches(layout, 1)[0]:
        tensor.share_memory_()
    return time.perf_counter() - start


def measure_handoff(layout: Layout, *, pin_memory: bool = False) -> dict[str, Any]:
    """The Record's `handoff_probe` section (docs/record-schema.md)."""
    size = layout_bytes(layout)
    result: dict[str, Any] = {"workers": 1, "batch_tensors": len(layout), "batch_bytes": size, "complete": False,
                              "reason": None, "fetches": 0, "handoff_ms": None, "handoff_ms_p90": None}
    if not layout:
        result["reason"] = "the script's batches hold no tensors"
        return result
    if size > MAX_BATCH_BYTES:
        result["reason"] = f"a batch of {size / 2**20:.0f} MiB is above the probe's {MAX_BATCH_BYTES >> 20} MiB"
        return result
    gap_s = max(MIN_GAP_S, 2.0 * _make_s(layout))
    loader = DataLoader(_ZeroBatches(layout, WARMUP_FETCHES + FETCHES), batch_size=None, num_workers=1,
                        pin_memory=pin_memory and torch.cuda.is_available())
    try:
        times = _fetch_times(loader, gap_s)
    except Exception as exc:  # a worker that cannot start here (no shared memory, a sandbox): no figure
        result["reason"] = f"the worker failed: {type(exc).__name__}: {exc}"
        return result
    result.update(complete=True, fetches=len(times), handoff_ms=statistics.median(times) * 1e3,
                  handoff_ms_p90=statistics.quantiles(times, n=10)[-1] * 1e3)
    return result


def _fetch_times(loader: DataLoader, gap_s: float) -> list[float]:
    """Seconds each `next()` after the warm-up took, with `gap_s` of sleep before each."""
    times: list[float] = []
    start = time.perf_counter()
    iterator = iter(loader)
    try:
        for index in range(WARMUP_FETCHES + FETCHES):
            time.sleep(gap_s)
            fetch_start = time.perf_counter()
            next(iterator)
            if index >= WARMUP_FETCHES:
                times.append(time.perf_counter() - fetch_start)
            if time.perf_counter() - start > TIME_BUDGET_S and len(times) >= MIN_FETCHES:
                break
    finally:
        iterator._shutdown_workers()  # type: ignore[attr-defined]  # now, not at garbage collection
    return times
