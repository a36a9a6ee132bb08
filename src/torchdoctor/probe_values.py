"""What the in-run probes (observe/probes/) leave in `Record.probes`, typed for the code that reads it.

`Record.probes` maps a probe's name to its value, a JSON object (docs/record-schema.md, "Probes").
A reader takes a probe's value through its :class:`ProbeKey`, `THREADS.of(record)`, never by
indexing the mapping, so a probe's name is spelt once (here, where the probe registers under it)
and its keys are named by the value's TypedDict. A probe that nothing reads needs no key here.

This module imports no torch: the parent process reads Records, the child measures them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, NotRequired, TypedDict, TypeVar

from torchdoctor.record import Record

V = TypeVar("V")


@dataclass(frozen=True)
class ProbeKey(Generic[V]):
    """The name a probe's value is kept under in `Record.probes`, and the type of that value."""

    name: str

    def of(self, record: Record) -> V | None:
        """The probe's value in `record`; None where it did not run (nor measured anything)."""
        return record.probes.get(self.name)  # type: ignore[return-value]


class BlocksValue(TypedDict):
    """What a probe of alternating blocks measured (observe/probes/blocks.py)."""

    complete: bool
    reason: str | None
    samples: int
    speedup: float | None
    speedup_ci: list[float] | None
    verdict: str | None


class ThreadsValue(BlocksValue):
    threads: int
    tried_threads: int
    step_s_script_threads: float | None
    step_s_tried_threads: float | None


class AnomalyValue(BlocksValue):
    step_s_anomaly_on: float | None
    step_s_anomaly_off: float | None


class FreezeValue(BlocksValue):
    tensors: int
    parameters: int
    step_s_with_grads: float | None
    step_s_frozen: float | None


class CompileSpeedValue(BlocksValue):
    value: dict[str, Any]
    ops_per_step: float
    overhead_bound: float
    lead_in_s: float
    step_s_eager: float | None
    step_s_compiled: float | None


class HandoffValue(TypedDict):
    workers: int
    batch_tensors: int
    batch_bytes: int
    complete: bool
    reason: str | None
    fetches: int
    handoff_ms: float | None
    handoff_ms_p90: float | None
    simulation: dict[str, Any] | None  # the workers fix simulated (observe/probes/handoff.py simulate_workers)
    duration_s: float


THREADS: ProbeKey[ThreadsValue] = ProbeKey("threads")
ANOMALY: ProbeKey[AnomalyValue] = ProbeKey("anomaly")
FREEZE: ProbeKey[FreezeValue] = ProbeKey("freeze")
COMPILE_SPEED: ProbeKey[CompileSpeedValue] = ProbeKey("compile_speed")
HANDOFF: ProbeKey[HandoffValue] = ProbeKey("handoff")


class ScriptCall(TypedDict):
    """Calls of one function (`callee`) made directly by one of the script's frames (`caller`,
    `file:line (function)`), per recorded step: how many, their wall time, the part of it in torch
    operators (`ops_s`), inside a module, inside the DataLoader's fetch (`in_loading`), and the
    script's frame they ran (`drives`: a generator expression `sum(...)` consumed)."""

    callee: str
    caller: str
    count: float
    wall_s: float
    ops_s: NotRequired[float]
    in_model: bool
    in_loading: NotRequired[bool]
    drives: NotRequired[str | None]


class ScriptCallsValue(TypedDict):
    """What the script's own code called in the recorded steps (observe/probes/script_calls.py)."""

    forwards: float
    backward_passes: float
    loading_s: NotRequired[float]
    calls: list[ScriptCall]
    frames: dict[str, float]


class OpCostValue(TypedDict, total=False):
    """The operator-costs probe's value (observe/probes/op_costs.py): per recorded step, operators
    grouped by name, dtype and shapes (`ops`), their totals, FLOPs, the script's calls
    (`script_calls`), and this machine's `peaks`."""

    complete: bool
    reason: str | None
    steps: int
    step_s: float
    ops_self_s: float
    ops_count: float
    small_ops_count: float
    small_ops_self_s: float
    sync_self_s: float
    flops: float
    flops_by_dtype: dict[str, float]
    ops: list[dict[str, Any]]
    script_calls: ScriptCallsValue | None  # None: the Python tracer could not run (`reason` says why)
    peaks: dict[str, Any]


OP_COSTS: ProbeKey[OpCostValue] = ProbeKey("op_costs")
