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
from torchdoctor.trace.intervals import clip, length, merge
from torchdoctor.trace.steps import Step

PATTERNS = {
    "dataloader": DATALOADER_RE,
    "optimizer": re.compile(r"^Optimizer\.|optimizer", re.IGNORECASE),
    "backward": re.compile(r"^autograd::engine::evaluate_function|backward", re.IGNORECASE),
    "forward": re.compile(r"forward|^nn\.Module:", re.IGNORECASE),
}


def annotation_shares(trace: Trace, step: Step, host_rows: np.ndarray) -> dict[str, Any]:
    """`host_rows`: rows of host events (ops, annotations, runtime) starting in this step."""
    wall = step.wall_us or 1.0
    scoped = is_kind(trace.kind[host_rows], (ANNOTATION, CPU_OP))
    out: dict[str, Any] = {}
    for label, pattern in PATTERNS.items():
        hit = host_rows[scoped & trace.name_mask(pattern, host_rows)]
        covered = clip(merge(trace.ts_us[hit], trace.end_us[hit]), step.start_us, step.end_us)
        out[f"{label}_fraction"] = length(covered) / wall
    out["python_overhead_fraction"] = _uncovered(trace, step, host_rows) / wall
    return out


def _uncovered(trace: Trace, step: Step, host_rows: np.ndarray) -> float:
    if host_rows.size == 0:
        return step.wall_us
    main_tid = _main_thread(trace, host_rows)
    kinds = trace.kind[host_rows]
    keep = (trace.tid[host_rows] == main_tid) & is_kind(kinds, (ANNOTATION, CPU_OP, RUNTIME))
    rows = host_rows[keep & ~trace.name_mask(STEP_NAME_RE, host_rows)]
    covered = clip(merge(trace.ts_us[rows], trace.end_us[rows]), step.start_us, step.end_us)
    return step.wall_us - length(covered)


def _main_thread(trace: Trace, host_rows: np.ndarray) -> int:
    """The thread with the most operator time in the step (where ProfilerStep runs, usually)."""
    tids, inverse = np.unique(trace.tid[host_rows], return_inverse=True)
    return int(tids[np.argmax(np.bincount(inverse, weights=trace.dur_us[host_rows]))])
