"""The script's structure, read from a profiled baseline run as counts: what orders the search
and which knobs it must try before it may stop.

A step's operator count, the share of those operators shorter than their dispatch cost, anomaly
mode, a forward loop run with gradients on, the DataLoaders' worker counts, the thread count
against the cores, how many input sizes the steps saw: these are properties of the script, not
of the machine's load. Another job on the cores stretches every operator's time (the timed
shares a diagnosis rests on then mislead) but not how many operators a step runs, nor how many of
them are tiny. A knob whose *precondition* holds here is tried first, and no "diminishing
returns" ends the search before it was tried (`torchdoctor.tune.search`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torchdoctor.errors import RecordFormatError
from torchdoctor.environment import ForwardState, ScriptTools, TorchSwitches
from torchdoctor.estimates.shapes import size_spread
from torchdoctor.knobs.base import cpu_cores, environment, step_sizes
from torchdoctor.record import Record
from torchdoctor.rules.compute import LAUNCH_SHORT_SHARE, OPS_PER_STEP
from torchdoctor.trace.summary.trace_summary import TraceSummary

#: Operators shorter than the profiler's small-operator limit (trace/config.py, 10 us of self
#: time) that make up at least this share of a step's operators: dispatch outweighs the work.
#: Counted, not timed: load stretches the long operators as much as the short ones, so the count
#: of short ones moves little (a disturbed run of the tiny-operator test script counted 98%).
SMALL_OP_SHARE = 0.5
#: The share of a step spent waiting for the DataLoader from which more workers are worth a
#: trial. A share, not a time: another job's load stretches the wait and the step alike.
DATA_WAIT_SHARE = 0.05


@dataclass(frozen=True, slots=True)
class Structure:
    """Counts read from one profiled run. `ops_per_step`: host operators per profiled step;
    `small_op_share`: the share of them shorter than their dispatch cost (on a GPU: kernels
    shorter than their launch); `anomaly`: anomaly mode on; `backward`: the steps run a backward;
    `grad_in_forward`: the forward runs with gradients on; `loader_workers`: each DataLoader's
    num_workers; `data_wait_share`: the share of the timed steps spent waiting for data; `threads`, `cores`: intra-op threads and the cores the process may use;
    `input_sizes`: distinct first-input sizes over the steps that recorded one (None: too few);
    `models`: models observed."""

    ops_per_step: float | None = None
    small_op_share: float | None = None
    anomaly: bool = False
    backward: bool = True
    grad_in_forward: bool = False
    loader_workers: tuple[int, ...] = ()
    data_wait_share: float = 0.0
    threads: int | None = None
    cores: int = 1
    input_sizes: int | None = None
    models: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"ops_per_step": self.ops_per_step, "small_op_share": self.small_op_share,
                "anomaly": self.anomaly, "backward": self.backward, "grad_in_forward": self.grad_in_forward,
                "loader_workers": list(self.loader_workers), "data_wait_share": self.data_wait_share,
                "threads": self.threads, "cores": self.cores,
                "input_sizes": self.input_sizes}


def script_structure(record: Record) -> Structure:
    """The counts of `record` (a profiled run's; a run without a trace has no operator counts)."""
    env = environment(record)
    tools, switches = env.script_tools or ScriptTools(), env.torch or TorchSwitches()
    forward = env.forward_state or ForwardState()
    ops, share = _operator_counts(record)
    return Structure(
        ops_per_step=ops, small_op_share=share,
        anomaly=bool(tools.anomaly_detection or switches.anomaly_detection),
        backward=any(s.backward_s > 0 for s in record.steps) or record.step_detection != "forward",
        grad_in_forward=bool(forward.grad_enabled) and not forward.inference_mode,
        loader_workers=tuple(int(d.num_workers or 0) for d in env.dataloaders),
        data_wait_share=float(record.summary.data_wait_fraction or 0.0),
        threads=switches.num_threads, cores=cpu_cores(record),
        input_sizes=_input_sizes(record), models=len(env.models))


def _operator_counts(record: Record) -> tuple[float | None, float | None]:
    """(operators per profiled step, share of them shorter than their dispatch cost), from the
    trace's first rank: its GPU kernels shorter than their launch where it has a device."""
    try:
        ranks = TraceSummary.from_dict(record.trace).ranks if record.trace else ()
    except RecordFormatError:  # a trace section this version cannot read
        ranks = ()
    if not ranks or not ranks[0].steps_count:
        return None, None
    rank = ranks[0]
    per_step = rank.host.ops_count / rank.steps_count
    if rank.has_device and rank.device is not None:
        launches = rank.device.launches
        return per_step, launches.gpu_shorter_than_launch_fraction
    share = rank.host.small_ops_count / rank.host.ops_count if rank.host.ops_count else None
    return per_step, share


def _input_sizes(record: Record) -> int | None:
    """Distinct first-input sizes over the steps (env.distributed_runtime.step_elements)."""
    spread = size_spread(step_sizes(record))
    return spread.distinct if spread is not None else None


def preconditions(structure: Structure) -> dict[str, str]:
    """Knob name -> the structural reason to try it, in the order the search tries them (the
    largest expected effect first): these are tried before any other knob, and the search does
    not stop on diminishing returns before each was tried."""
    found: dict[str, str] = {}
    if structure.anomaly:
        found["no_anomaly_detection"] = "anomaly mode is on: every autograd node records a stack"
    tiny = structure.small_op_share is not None and structure.small_op_share >= max(SMALL_OP_SHARE,
                                                                                   LAUNCH_SHORT_SHARE)
    if structure.models and structure.ops_per_step and structure.ops_per_step >= OPS_PER_STEP and tiny:
        found["compile"] = (f"tiny operators dominate: {structure.ops_per_step:.0f} operators a step, "
                            f"{structure.small_op_share:.0%} of them shorter than their dispatch")
    if not structure.backward and structure.grad_in_forward:
        found["inference_mode"] = "no backward runs, yet the forward records autograd graphs"
    if any(workers == 0 for workers in structure.loader_workers) and structure.data_wait_share >= DATA_WAIT_SHARE:
        found["num_workers"] = (f"the step waits for data ({structure.data_wait_share:.0%} of it) loaded in the "
                                "training process (num_workers=0)")
    if structure.threads and structure.threads > structure.cores:
        found["threads"] = f"{structure.threads} intra-op threads on {structure.cores} cores"
    return found
