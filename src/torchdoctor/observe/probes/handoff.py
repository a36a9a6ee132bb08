"""The hand-off probe: what the training process pays to receive one batch from a DataLoader worker,
measured on this machine with batches laid out like the script's.

The data rules bound what workers can win by the step's compute plus this hand-off (rules/data.py):
workers hide the loading, never the receiving (the result queue, unpickling, mapping the
shared-memory tensors, pinning). They assumed 1 ms, what benchmarks/worker_handoff.py measured on the
2-core development machine; measured in the run there, it is 0.7-1.4 ms, more on a busy host, less
on a fast one (docs/field.md).

After the windows, when the timed steps waited for data, one worker serves batches of zero tensors
with the shapes and dtypes of the first batch the script received (`batch_layout`); the main process
sleeps between fetches, longer than the worker takes to make a batch, so `next()` only waits on the
hand-off, and the median over the fetches is the probe's figure. The script's own dataset is not read
again: that could take minutes or have side effects. One worker: more workers on few cores pay more
per batch (the scheduling of their processes), so the figure is a floor.

For a loader that waits on storage in the main process (TD-DATA-007's case), the probe also runs its
fix in simulation (`simulate_workers`): the fix's workers each sleep per sample for the measured
wait less its CPU time and compute that CPU time, while the main thread spins for the step's compute
and takes their batches. The bound from the figures alone (rules/workers_bound.py) said x15.8 and
x14.1 for 16 workers on the slow `__getitem__` field script and the zoo's data_slow_storage, where
the fix measured x11.2 and x9.05. With 16 processes waking up per sample on 2 cores, the workers
deliver slower than the main process loaded: 16 workers on the field script's own loader took
2.7-3.7 ms a step in the steady state, the main thread computing 0.9-1.1 ms of it (1.05 without
workers) and waiting 2.2-2.6 ms for its batch, where the bound allows 2.3 ms in all. The simulation,
measured in the steady state after three rounds of the workers, said x10.1-x13.1 and x8.2-x9.9; a
sleep per batch instead of per sample, or a window inside the first rounds, x12-x17: both are what
makes it faithful.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

import torch
from torch.utils.data import DataLoader, Dataset

from torchdoctor.estimates.workers import io_workers_cap, io_workers_needed, loads_on_storage
from torchdoctor.knobs.base import machine_cores
from torchdoctor.observe.batch_layout import Layout, layout_bytes
from torchdoctor.observe.probes.base import Phase, ProbeContext, probe
from torchdoctor.probe_values import HANDOFF

#: The timed steps' median data wait, as a share of the median step, from which the probe runs: the
#: data rules fire from 10% (rules/data.py, WAIT_WARNING).
MIN_WAIT_SHARE = 0.05
#: Batches larger than this are not rebuilt (the probe would hold two or three of them in memory).
MAX_BATCH_BYTES = 256 * 2**20
WARMUP_FETCHES, FETCHES = 3, 20
MIN_GAP_S = 0.002  # between fetches: a step's compute, during which the worker puts the next batch
TIME_BUDGET_S = 3.0  # the probe stops fetching after this long (with at least MIN_FETCHES measured)
MIN_FETCHES = 5

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
    """The probe's value (docs/record-schema.md) but its `simulation` and `duration_s`."""
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
    times = _measured(result, loader, WARMUP_FETCHES, FETCHES, lambda: time.sleep(gap_s), TIME_BUDGET_S, MIN_FETCHES)
    if times is None:
        return result
    fetches = [fetch_s for _, fetch_s in times]
    result.update(complete=True, fetches=len(fetches), handoff_ms=statistics.median(fetches) * 1e3,
                  handoff_ms_p90=statistics.quantiles(fetches, n=10)[-1] * 1e3)
    return result


def _measured(result: dict[str, Any], loader: DataLoader, warmup: int, count: int, before: Callable[[], None],
              budget_s: float, enough: int) -> list[tuple[float, float]] | None:
    """`_timed_fetches`, or None with `result["reason"]` saying why there is no figure."""
    try:
        times = _timed_fetches(loader, warmup, count, before, budget_s, enough)
    except Exception as exc:  # workers that cannot start here (no shared memory, a sandbox): no figure
        result["reason"] = f"the workers failed: {type(exc).__name__}: {exc}"
        return None
    if len(times) < enough:
        result["reason"] = f"{len(times)} measured within the budget, fewer than {enough}"
        return None
    return times


def _timed_fetches(loader: DataLoader, warmup: int, count: int, before: Callable[[], None], budget_s: float,
                   enough: int) -> list[tuple[float, float]]:
    """(step, fetch) seconds of each step after `warmup`, a step being `before()` then `next()`: until
    `count` are measured, or past `budget_s` with `enough` of them, or past twice the budget."""
    times: list[tuple[float, float]] = []
    start = time.perf_counter()
    iterator = iter(loader)
    try:
        for index in range(warmup + count):
            step_start = time.perf_counter()
            before()
            fetch_start = time.perf_counter()
            next(iterator)
            end = time.perf_counter()
            if index >= warmup:
                times.append((end - step_start, end - fetch_start))
            if end - start > budget_s and len(times) >= enough or end - start > 2 * budget_s:
                break
    finally:
        iterator._shutdown_workers()  # type: ignore[attr-defined]  # now, not at garbage collection
    return times


#: The workers simulation: steps of warm-up, in rounds of the workers (the first rounds deliver in
#: bursts: every worker started together), then steps measured until SIMULATED_STEPS or the budget.
WARMUP_ROUNDS, MIN_WARMUP_STEPS = 3, 20
SIMULATED_STEPS, MIN_SIMULATED_STEPS = 150, 30
SIMULATION_BUDGET_S = 4.0


@dataclass(frozen=True)
class LoadingPlan:
    """A workers fix to simulate: `workers` processes loading batches of `batch_size` samples, each
    batch `load_ms` of wall time of which `load_cpu_ms` computes, for a step that computes `compute_ms`."""

    workers: int
    batch_size: int
    compute_ms: float
    load_ms: float
    load_cpu_ms: float


class _SleepyBatches(_ZeroBatches):
    """`_ZeroBatches` loaded as the script's are: per sample, its share of the CPU time, then of the sleep."""

    def __init__(self, layout: Layout, length: int, plan: LoadingPlan) -> None:
        super().__init__(layout, length)
        self.samples = max(1, plan.batch_size)
        self.cpu_s = plan.load_cpu_ms / 1e3 / self.samples
        self.sleep_s = max(0.0, plan.load_ms - plan.load_cpu_ms) / 1e3 / self.samples

    def __getitem__(self, index: int) -> list[torch.Tensor]:
        for _ in range(self.samples):
            _spin(self.cpu_s, time.thread_time)
            time.sleep(self.sleep_s)
        return super().__getitem__(index)


def _spin(seconds: float, clock: Any = time.perf_counter) -> None:
    """Compute (hold a core) for `seconds` of `clock`."""
    end = clock() + seconds
    while clock() < end:
        pass


def simulate_workers(layout: Layout, plan: LoadingPlan) -> dict[str, Any]:
    """The `simulation` of the probe's value: the mean step of the fix simulated."""
    warmup = max(MIN_WARMUP_STEPS, WARMUP_ROUNDS * plan.workers)
    result: dict[str, Any] = {**asdict(plan), "warmup_steps": warmup, "steps": 0, "step_ms": None,
                              "complete": False, "reason": None}
    # at best a step computes and receives, and the workers deliver a batch per load_ms / workers
    least_s = (warmup + MIN_SIMULATED_STEPS) * max(plan.compute_ms, plan.load_ms / plan.workers) / 1e3
    if least_s > SIMULATION_BUDGET_S:
        result["reason"] = f"it would take {least_s:.0f} s at least, above the probe's {SIMULATION_BUDGET_S:.0f} s"
        return result
    loader = DataLoader(_SleepyBatches(layout, warmup + SIMULATED_STEPS, plan), batch_size=None,
                        num_workers=plan.workers)
    times = _measured(result, loader, warmup, SIMULATED_STEPS, lambda: _spin(plan.compute_ms / 1e3),
                      SIMULATION_BUDGET_S, MIN_SIMULATED_STEPS)
    if times is None:
        return result
    result.update(steps=len(times), step_ms=statistics.fmean(step_s for step_s, _ in times) * 1e3, complete=True)
    return result


def _timed_waits(ctx: ProbeContext) -> tuple[list[float], list[float], list[float]]:
    """The timed steps' wall times, data waits and the main thread's CPU time in them, in seconds."""
    samples = ctx.clock.samples
    return ([wall_ns / 1e9 for wall_ns, _ in samples], [parts.data_ns / 1e9 for _, parts in samples],
            [parts.data_cpu_ns / 1e9 for _, parts in samples])


def _steps_waited_for_data(ctx: ProbeContext) -> bool:
    """A DataLoader's batches were received and the median timed step waited MIN_WAIT_SHARE or more."""
    walls, waits, _ = _timed_waits(ctx)
    if not ctx.facts.dataloaders or ctx.facts.batch_layout is None or not walls:
        return False
    return statistics.median(waits) >= MIN_WAIT_SHARE * statistics.median(walls)


def _storage_workers_plan(ctx: ProbeContext) -> LoadingPlan | None:
    """TD-DATA-007's fix for num_workers=0 steps that wait on reads, from the same medians the rule
    reads (rules/data.py): its worker count, as many as `run --apply` accepts here, the step's
    compute (the median step less the median wait), and a batch's load time and CPU time."""
    loader = ctx.facts.dataloaders[0]
    walls, waits, cpus = _timed_waits(ctx)
    if loader.get("num_workers") or not loads_on_storage(walls, waits, cpus):
        return None
    step_ms, wait_ms = statistics.median(walls) * 1e3, statistics.median(waits) * 1e3
    workers = min(io_workers_needed(walls, waits, 0), io_workers_cap(machine_cores()))
    layout = ctx.facts.batch_layout or []
    batch_size = loader.get("batch_size") or (layout[0][0][0] if layout and layout[0][0] else 1)
    return LoadingPlan(workers, int(batch_size), compute_ms=max(step_ms - wait_ms, 0.0), load_ms=wait_ms,
                       load_cpu_ms=wait_ms * min(1.0, sum(cpus) / sum(waits)))


@probe(HANDOFF.name, Phase.WINDOWS_END, order=1, applies=ProbeContext.may_probe)
def handoff(ctx: ProbeContext) -> dict[str, Any] | None:
    """When the timed steps waited for data: the hand-off, and for a loader waiting on storage in
    this process, its fix simulated; `duration_s` is what the probe added to the run (HandoffValue)."""
    if not _steps_waited_for_data(ctx):
        return None
    layout, loader = ctx.facts.batch_layout or [], ctx.facts.dataloaders[0]
    plan, start = _storage_workers_plan(ctx), time.perf_counter()
    with ctx.hooks.own_loaders():
        value = measure_handoff(layout, pin_memory=bool(loader.get("pin_memory")))
        value["simulation"] = simulate_workers(layout, plan) if plan and value["complete"] else None
    return {**value, "duration_s": time.perf_counter() - start}
