"""Trace diff: per operator and per kernel, count and time in A and B, and what changed.

Operators are compared by self time (see analyses/host_ops.py), kernels by summed duration,
both over the whole trace (all steps) and divided by the number of steps, so traces of
different lengths compare. `status` is `added` (only in B), `removed` (only in A), `faster` /
`slower` (time per step changed by more than `threshold_fraction`) or `same`. After
torch.compile, the eager kernels it fused show up as `removed` and the Triton kernels as `added`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from torchdoctor.trace.analyses.host_ops import self_times
from torchdoctor.trace.device import device_events
from torchdoctor.trace.events import Trace
from torchdoctor.trace.loader import load_trace
from torchdoctor.trace.steps import find_steps

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class TraceDiff:
    a: str
    b: str
    ops: tuple[dict[str, Any], ...]
    kernels: tuple[dict[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"schema_version": SCHEMA_VERSION, "a": self.a, "b": self.b,
                "ops": list(self.ops), "kernels": list(self.kernels)}  # fmt: skip


def diff_traces(a: str | Path | Trace, b: str | Path | Trace, *, threshold_fraction: float = 0.05) -> TraceDiff:
    """Compare two traces (paths or loaded Traces); rows sorted by largest time change first."""
    ta, tb = (t if isinstance(t, Trace) else load_trace(t) for t in (a, b))
    ops = _compare(_op_totals(ta), _op_totals(tb), threshold_fraction)
    kernels = _compare(_kernel_totals(ta), _kernel_totals(tb), threshold_fraction)
    return TraceDiff(ta.path, tb.path, tuple(ops), tuple(kernels))


def _per_step(trace: Trace, rows: np.ndarray, times: np.ndarray) -> dict[str, tuple[int, float]]:
    steps = max(len(find_steps(trace)), 1)
    count = np.bincount(trace.name_id[rows], minlength=len(trace.names))
    total = np.bincount(trace.name_id[rows], weights=times, minlength=len(trace.names))
    return {trace.names[i]: (int(count[i]) / steps, float(total[i]) / steps) for i in np.flatnonzero(count)}


def _op_totals(trace: Trace) -> dict[str, tuple[int, float]]:
    rows, self_us = self_times(trace)
    return _per_step(trace, rows, self_us)


def _kernel_totals(trace: Trace) -> dict[str, tuple[int, float]]:
    dev = device_events(trace, find_steps(trace), hta_window=False)
    return _per_step(trace, dev.rows, trace.dur_us[dev.rows])


def _compare(a: dict[str, tuple[int, float]], b: dict[str, tuple[int, float]], threshold: float) -> list[dict[str, Any]]:
    rows = []
    for name in a.keys() | b.keys():
        (ca, ta), (cb, tb) = a.get(name, (0, 0.0)), b.get(name, (0, 0.0))
        rows.append({
            "name": name, "count_per_step_a": ca, "count_per_step_b": cb,
            "us_per_step_a": ta, "us_per_step_b": tb, "delta_us_per_step": tb - ta,
            "status": _status(name in a, name in b, ta, tb, threshold),
        })  # fmt: skip
    return sorted(rows, key=lambda r: -abs(r["delta_us_per_step"]))


def _status(in_a: bool, in_b: bool, ta: float, tb: float, threshold: float) -> str:
    if not in_a:
        return "added"
    if not in_b:
        return "removed"
    if tb < ta * (1 - threshold):
        return "faster"
    if tb > ta * (1 + threshold):
        return "slower"
    return "same"
