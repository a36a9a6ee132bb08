"""Build a Record's speed-of-light accounting: the waterfall from the ideal step (its FLOPs at this
machine's peak) to the measured step, and the largest cost centres with how near their speed of
light they run.

From a script's run: the measured step is the mean of the timed steps (means add up: the slices
sum to it), the data wait and the time outside the model come from the step clock, and the time in
operators from the operator-costs probe (observe/probes/op_costs.py), which profiled two more
steps. The probe's profiler slows the time between operators, not an operator's own time, so the
operators' self times are taken as they are and capped to the step's time beside the data wait;
what the operators leave of the step is Python and framework time (time outside the model, then
between the operators). On a GPU the operators' kernels are not timed here: the model's time
beyond the ideal is one slice. From a trace: the trace's steps and operators, no FLOPs and no peak
(a trace holds neither), said in the notes.
"""

from __future__ import annotations

import statistics
from typing import Any

from torchdoctor.accounting.operators import is_matrix, moves_data
from torchdoctor.accounting.outside import computation_outside_s
from torchdoctor.accounting.section import Accounting, CostCentre, Slice
from torchdoctor.environment.system import SystemSection
from torchdoctor.probe_values import OP_COSTS
from torchdoctor.record import Record

#: An operator reaching this share of its dtype's peak FLOP/s is healthy.
HEALTHY = 0.5
#: ... or this share of its own speed alone on the same inputs, by what bounds it. A step's operator
#: runs slower than alone in a healthy script too (colder caches, the thread pool waking, the
#: allocator): these are about the lower deciles of that ratio (0.22 and 0.055) over the 209 replayed
#: operator groups of 40 healthy scripts (benchmarks/alone_calibration.py;
#: benchmarks/results/2026-12-07-speed-of-light-calibration.md).
HEALTHY_ALONE = {"compute": 0.2, "memory": 0.05}
#: Operator kinds of the probe whose time is in the operator slices (`loading` is the data wait's).
OPERATOR_KINDS = ("compute", "memory", "small", "sync")
#: A machine this busy (mean CPU, all cores) is shared, when the script's process gets under half a core.
BUSY_MACHINE_PERCENT = 90.0
BUSY_NOTE = ("the machine was busy (other processes took the cores): every operator ran slower than this "
             "machine can, so the slices below a speed of light are not evidence of a problem in the script")
#: Cost centres kept in the section, and operators named per slice.
TOP, SLICE_OPS = 5, 3
LABELS = {
    "ideal": "ideal: the model's FLOPs at this machine's peak",
    "compute_below_peak": "compute-bound operators below their dtype's peak",
    "memory_at_speed": "memory-bound operators at their speed of light (bytes at the copy bandwidth, "
                       "or as fast as alone)",
    "memory_bound": "memory-bound operators below their speed of light (no FLOPs counted)",
    "small_ops": "operators shorter than their dispatch cost",
    "syncs": "synchronising operators (waits for a device value)",
    "data_wait": "waiting for the next batch",
    "outside_model": "time outside the model (the script's own Python and host work between steps)",
    "between_ops": "Python and framework time between operators",
    "device_beyond_ideal": "model time beyond the ideal (GPU kernels not timed here)",
}


def account_record(record: Record) -> Accounting | None:
    """The accounting of a script's run (its timed steps and the operator-costs probe) or of a
    trace-only Record; None when the Record has neither steps nor a trace to account for."""
    if record.steps:
        return _from_steps(record)
    if record.trace:
        from torchdoctor.accounting.trace import account_trace

        return account_trace(record.trace)
    return None


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def _from_steps(record: Record) -> Accounting:
    steps = record.steps
    step = _mean([s.wall_s for s in steps])
    data = min(step, _mean([s.data_wait_s for s in steps]))
    model = min(step - data, _mean([s.forward_s + s.backward_s + s.optimizer_s for s in steps]))
    outside = step - data - model
    costs = OP_COSTS.of(record)
    if not costs or not costs.get("complete"):
        why = (costs or {}).get("reason") or "the operator-costs probe did not run (probes off, or several ranks)"
        slices = _slices(step, {"data_wait": data, "outside_model": outside, "between_ops": model})
        return Accounting.full(source="script", device="-", step_s=step, slices=slices,
                             notes=(f"operators not accounted: {why}",))
    return _with_ops(record, costs, step, data, outside)


def _with_ops(record: Record, costs: dict[str, Any], step: float, data: float, outside: float) -> Accounting:
    peaks = costs.get("peaks") or {}
    device = str(peaks.get("device") or "cpu")
    flops_by_dtype = {k: float(v) for k, v in (costs.get("flops_by_dtype") or {}).items()}
    peak = {k: float(v) for k, v in (peaks.get("flops_per_s") or {}).items()}
    ideal = sum(f / peak[d] for d, f in flops_by_dtype.items() if d in peak)
    busy = _busy(record, peaks)
    notes = _peak_notes(peaks, flops_by_dtype) + ((BUSY_NOTE,) if busy else ())
    flops = float(costs.get("flops") or 0.0)
    if device == "cuda":
        seconds = {"ideal": min(ideal, step - data - outside), "data_wait": data, "outside_model": outside}
        seconds["device_beyond_ideal"] = step - sum(seconds.values())
        centres: tuple[CostCentre, ...] = ()
    else:
        centres = _centres(costs, peak, peaks.get("bytes_per_s"), step, _scale(costs, step - data))
        seconds = _cpu_seconds(costs, ideal, step, data, outside, centres)
    complete = all(d in peak for d in flops_by_dtype) and flops > 0
    return Accounting.full(
        source="script", device=device, step_s=step, flops_per_step=flops, flops_by_dtype=flops_by_dtype,
        peak_flops_per_s=peak or None, peak_bytes_per_s=_number(peaks.get("bytes_per_s")),
        achieved_flops_per_s=flops / step if step else None,
        mfu=ideal / step if complete and step else None,
        slices=_slices(step, seconds, centres), cost_centres=centres[:TOP], notes=notes, busy=busy)


def _busy(record: Record, peaks: dict[str, Any]) -> bool:
    """Other processes took the cores: a load average above the cores when the peaks were measured,
    or the machine at BUSY_MACHINE_PERCENT while the script's process got under a core's half."""
    load, cores = _number(peaks.get("load_average")), _number(peaks.get("cores"))
    summary = SystemSection.summary_of(record.system)
    machine = _number(summary.machine_cpu_percent_mean)
    process = _number(summary.process_cpu_percent_mean)
    loaded = load is not None and cores is not None and load > cores
    starved = machine is not None and process is not None and machine >= BUSY_MACHINE_PERCENT and process < 50
    return loaded or starved


def _scale(costs: dict[str, Any], room: float) -> float:
    """The factor that caps the operators' self times to `room`, the step's time beside the data
    wait (1 when they fit)."""
    kinds = costs.get("self_s_by_kind") or {}
    total = sum(float(kinds.get(k) or 0.0) for k in OPERATOR_KINDS)
    return min(1.0, room / total) if total else 1.0


def _cpu_seconds(costs: dict[str, Any], ideal: float, step: float, data: float, outside: float,
                 centres: tuple[CostCentre, ...]) -> dict[str, float]:
    """The slices' seconds on a CPU: the memory-bound operators' time split into their time at
    their speed of light (`memory_at_speed`) and the rest, their gap (`memory_bound`)."""
    kinds = {k: float(v) for k, v in (costs.get("self_s_by_kind") or {}).items()}
    scale = _scale(costs, step - data)
    compute = kinds.get("compute", 0.0) * scale
    ideal = min(ideal, compute)
    memory = kinds.get("memory", 0.0) * scale
    at_speed = min(memory, sum(c.seconds * min(1.0, c.sol_fraction or 0.0) for c in centres if c.bound == "memory"))
    seconds = {"ideal": ideal, "compute_below_peak": compute - ideal, "memory_at_speed": at_speed,
               "memory_bound": memory - at_speed, "small_ops": kinds.get("small", 0.0) * scale,
               "syncs": kinds.get("sync", 0.0) * scale, "data_wait": data}
    rest = step - sum(seconds.values())
    seconds["outside_model"] = min(max(0.0, outside - _computation_outside(costs)), rest)
    seconds["between_ops"] = rest - seconds["outside_model"]
    return seconds


def _computation_outside(costs: dict[str, Any]) -> float:
    """Seconds per step of the computation the script ran outside the model (accounting/outside.py):
    its operators are in the operator slices already, and a loss is the step's work, so neither is
    time outside the model."""
    calls = (costs.get("script_calls") or {}).get("calls") or []
    return sum(computation_outside_s(list(calls)))


def _peak_notes(peaks: dict[str, Any], flops_by_dtype: dict[str, float]) -> tuple[str, ...]:
    measured = peaks.get("flops_per_s") or {}
    notes = [f"peak not measured for {d}: {(peaks.get('not_measured') or {}).get(d, 'no figure')}"
             for d in sorted(flops_by_dtype) if d not in measured]
    if not flops_by_dtype:
        notes.append("no FLOPs counted: the profiler counts matrix products and convolutions only")
    if peaks.get("cached"):
        notes.append(f"peaks from this machine's cache: {', '.join(peaks['cached'])}")
    return tuple(notes)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _centres(costs: dict[str, Any], peak: dict[str, float], bandwidth: Any, step: float,
             scale: float) -> tuple[CostCentre, ...]:
    ops = sorted(costs.get("ops") or [], key=lambda o: -float(o.get("self_s") or 0.0))
    return tuple(cost_centre(op, peak, _number(bandwidth), step, scale) for op in ops)


def cost_centre(op: dict[str, Any], peak: dict[str, float], bandwidth: float | None, step: float,
                scale: float = 1.0) -> CostCentre:
    """One operator group of the probe's value as a cost centre: what bounds it, how near its speed
    of light it runs (of its dtype's peak or the copy bandwidth, and of the same operator alone on
    the same inputs), and whether that is expected."""
    seconds = float(op.get("self_s") or 0.0) * scale
    own = float(op.get("self_s") or 0.0)
    count = float(op.get("count") or 1.0)
    flops, moved, dtype = float(op.get("flops") or 0.0), float(op.get("bytes") or 0.0), str(op.get("dtype") or "-")
    if flops and own:
        achieved, limit, bound = flops / own, peak.get(dtype), "compute"
    elif is_matrix(str(op.get("name"))):
        achieved, limit, bound = None, None, "compute"  # FLOPs not counted (a convolution's backward)
    elif own / max(count, 1.0) < 10e-6:
        achieved, limit, bound = None, None, "overhead"
    else:  # bytes not known (a list of tensors: `cat`, `stack`) give no bandwidth figure
        achieved, limit, bound = (moved / own if moved and own else None), bandwidth, "memory"
    fraction = achieved / limit if achieved is not None and limit else None
    alone = _number(op.get("alone_s"))
    alone_fraction = alone * count / own if alone and own and bound != "overhead" else None
    verdict, why = _verdict(str(op.get("name")), bound, fraction, alone_fraction, dtype, count, own)
    return CostCentre.full(name=str(op.get("name")), dtype=dtype, shapes=str(op.get("shapes") or "-"),
                         seconds=seconds, share=seconds / step if step else 0.0,
                         flops_per_s=flops / own if flops and own else None, peak_fraction=fraction,
                         alone_fraction=alone_fraction, bound=bound, verdict=verdict, why=why,
                         source=op.get("source"))


def _verdict(name: str, bound: str, fraction: float | None, alone: float | None, dtype: str,
             count: float, own: float) -> tuple[str, str]:
    if bound == "overhead":
        return "below speed of light", (f"{count:.0f} calls of {1e6 * own / count:.1f} us each: "
                                        "shorter than dispatching them")
    limit = f"this machine's {dtype} peak" if bound == "compute" else "its copy bandwidth"
    figures = ([f"{fraction:.0%} of {limit}"] if fraction is not None else []) + (
        [f"{alone:.0%} of its own speed alone on these inputs"] if alone is not None else [])
    reach = health(name, bound, fraction, alone)
    if reach is None:
        what = f"its FLOPs or this machine's {dtype} peak" if bound == "compute" else "its speed alone"
        return "unknown", f"{bound}-bound" + (f" at {figures[0]}" if figures else "") + f"; {what} not measured"
    verdict = "healthy" if reach >= 1 else "below speed of light"
    return verdict, f"{bound}-bound at {' and '.join(figures)}: " + (
        "healthy" if verdict == "healthy" else "below its speed of light")


def health(name: str, bound: str, fraction: float | None, alone: float | None) -> float | None:
    """How near an operator runs to what a healthy step reaches, 1 or more being healthy: its share
    of its speed of light over HEALTHY (a compute-bound operator's dtype peak, a copy's bandwidth),
    or of its speed alone over HEALTHY_ALONE; the nearer of the two. An operator that computes per
    element (a GELU, a pooling, a norm, a random sampler) is weighed against itself alone only: the
    copy bandwidth, one large copy, is out of its reach. None when nothing it can be weighed
    against was measured."""
    reaches = [alone / HEALTHY_ALONE[bound]] if alone is not None and bound in HEALTHY_ALONE else []
    if fraction is not None and (bound == "compute" or (bound == "memory" and moves_data(name))):
        reaches.append(fraction / HEALTHY)
    return max(reaches) if reaches else None


def _slices(step: float, seconds: dict[str, float], centres: tuple[CostCentre, ...] = ()) -> tuple[Slice, ...]:
    """The slices in LABELS' order, with the cost centres that fall in each (by what bounds them)."""
    where = {"compute": "compute_below_peak", "memory": "memory_bound", "overhead": "small_ops"}
    out = []
    for kind in LABELS:
        if kind not in seconds:
            continue
        value = max(0.0, seconds[kind])
        ops = tuple(c for c in centres if where.get(c.bound) == kind and c.verdict != "healthy")[:SLICE_OPS]
        out.append(Slice.full(kind=kind, label=LABELS[kind], seconds=value, share=value / step if step else 0.0,
                            ops=ops, explained_by=()))
    return tuple(out)
