"""Share of a step spent in DataLoader, forward, backward and optimizer, and Python overhead.

Each share is the union of the matching host events inside the step window, over the window's
wall time (shares may overlap: an optimizer annotation contains operators):
- dataloader: names containing `DataLoader` (`enumerate(DataLoader)#..._next__`);
- optimizer: `Optimizer.step#*`, `Optimizer.zero_grad#*`, or names containing `optimizer`;
- backward: `autograd::engine::evaluate_function:*` and annotations containing `backward`;
- forward: annotations containing `forward` (`## forward ##`, `nn.Module: *`);
- python_overhead: time on the step's thread covered by no operator, runtime call or annotation
  other than the ProfilerStep itself (Python running between operators).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from torchdoctor.trace.events import ANNOTATION, CPU_OP, DATALOADER_RE, RUNTIME, STEP_NAME_RE, Trace, is_kind
from torchdoctor.trace.intervals import run_lengths
from torchdoctor.trace.steps import Step, bounds

PATTERNS = {
    "dataloader": DATALOADER_RE,
    "optimizer": re.compile(r"^Optimizer\.|optimizer", re.IGNORECASE),
    "backward": re.compile(r"^autograd::engine::evaluate_function|backward", re.IGNORECASE),
    "forward": re.compile(r"forward|^nn\.Module:", re.IGNORECASE),
}


def annotation_shares(trace: Trace, steps: list[Step], rows: np.ndarray, owner: np.ndarray) -> list[dict[str, Any]]:
    """Each step's shares. `steps`: a batch of steps.batches; `rows`: the host events (ops,
    annotations, runtime) starting in each step (steps.starting_in), `owner` the step of each."""
    lo, hi = bounds(steps)
    scoped = np.flatnonzero(is_kind(trace.kind[rows], (ANNOTATION, CPU_OP)))
    names, run = trace.name_id[rows[scoped]], owner[scoped]
    ts, end = trace.ts_us[rows[scoped]], trace.end_us[rows[scoped]]
    covered = {}
    for label, pattern in PATTERNS.items():
        hit = trace.name_table(pattern).take(names)
        covered[f"{label}_fraction"] = run_lengths(ts[hit], end[hit], run[hit], lo, hi)
    uncovered = _uncovered(trace, steps, rows, owner)
    out = []
    for i, step in enumerate(steps):
        wall = step.wall_us or 1.0
        out.append({**{k: v[i] / wall for k, v in covered.items()}, "python_overhead_fraction": uncovered[i] / wall})
    return out


def _uncovered(trace: Trace, steps: list[Step], rows: np.ndarray, owner: np.ndarray) -> list[float]:
    """Each step's time on its main thread covered by no operator, runtime call or annotation
    other than the ProfilerStep (a step without host events: its wall time, less nothing)."""
    lo, hi = bounds(steps)
    kinds, tid = trace.kind[rows], trace.tid[rows]
    keep = (tid == _main_threads(trace, rows, owner, len(steps))[owner]) & is_kind(kinds, (ANNOTATION, CPU_OP, RUNTIME))
    keep[keep] = ~trace.name_mask(STEP_NAME_RE, rows[keep])
    mine = rows[keep]
    covered = run_lengths(trace.ts_us[mine], trace.end_us[mine], owner[keep], lo, hi)
    return [step.wall_us - covered_us for step, covered_us in zip(steps, covered)]


def _main_threads(trace: Trace, rows: np.ndarray, owner: np.ndarray, steps_count: int) -> np.ndarray:
    """Per step, the thread with the most operator time among its rows (where ProfilerStep runs,
    usually): durations added per thread in row order, ties to the lowest thread id. A step whose
    rows all last 0 us may get a thread it has no rows on: nothing covers its time either way."""
    tid = trace.tid[rows]
    if tid.size == 0:
        return np.zeros(steps_count, np.int64)
    head = np.flatnonzero(np.concatenate(([True], tid[1:] != tid[:-1])))  # a thread's rows come in runs
    threads, thread = np.unique(tid[head], return_inverse=True)
    index = owner * threads.size + np.repeat(thread.reshape(-1), np.diff(np.append(head, tid.size)))
    time = np.bincount(index, weights=trace.dur_us[rows], minlength=steps_count * threads.size)
    return threads[np.argmax(time.reshape(steps_count, -1), axis=1)]
