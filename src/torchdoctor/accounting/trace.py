"""The accounting of a trace-only diagnosis: the trace's step breakdown as the waterfall and its
largest host operators as the cost centres. A trace holds no measured peak (and torchdoctor does
not read FLOPs from one), so there is no ideal step and no MFU; the notes say so.
"""

from __future__ import annotations

from typing import Any

from torchdoctor.accounting.section import Accounting, CostCentre, Slice
from torchdoctor.errors import RecordFormatError
from torchdoctor.trace.summary.trace_summary import TraceSummary

#: The trace's breakdown categories (docs/trace.md), as the waterfall's slices.
LABELS = {
    "kernel_us": "device kernels", "memcpy_us": "device copies", "memset_us": "device memsets",
    "communication_us": "collective communication", "runtime_us": "device runtime calls (launches, syncs)",
    "dataloader_us": "waiting for the next batch", "cpu_exec_us": "host operators",
    "other_us": "host time in no operator (Python, framework)",
}
TOP = 5
NO_PEAK = ("peak not measured: a trace holds no peak of the machine that recorded it, so no ideal step "
           "and no MFU")


def account_trace(trace: dict[str, Any]) -> Accounting | None:
    """The first rank's breakdown and host operators, per mean step; None for an unreadable summary
    or one without steps."""
    try:
        summary = TraceSummary.from_dict(trace)
    except RecordFormatError:
        return None
    if not summary.ranks or not summary.ranks[0].steps_count:
        return None
    rank = summary.ranks[0]
    steps = rank.steps_count
    seconds = {k: float(v) / steps / 1e6 for k, v in rank.breakdown_us.items() if k in LABELS}
    step = sum(seconds.values())
    if step <= 0:
        return None
    slices = tuple(Slice.full(kind=k.removesuffix("_us"), label=LABELS[k], seconds=v, share=v / step, ops=(),
                            explained_by=()) for k, v in seconds.items())
    centres = tuple(_centre(op.name, op.count / steps, op.self_us / steps / 1e6, step)
                    for op in rank.host.top_by_self_time[:TOP])
    return Accounting.full(source="trace", device="cuda" if rank.device is not None else "cpu", step_s=step,
                         slices=slices, cost_centres=centres, notes=(NO_PEAK,))


def _centre(name: str, count: float, seconds: float, step: float) -> CostCentre:
    per_call = seconds / count if count else seconds
    bound, why = ("overhead", f"{count:.0f} calls of {1e6 * per_call:.1f} us each: shorter than dispatching them") \
        if per_call < 10e-6 else ("unknown", "host self time; no peak to compare it with")
    return CostCentre.full(name=name, seconds=seconds, share=seconds / step, bound=bound,
                         verdict="below speed of light" if bound == "overhead" else "unknown", why=why)
