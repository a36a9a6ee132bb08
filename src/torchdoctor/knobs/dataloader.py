"""DataLoader knobs: worker processes, pinned memory, prefetching, persistent workers.

Applied by intercepting `DataLoader.__init__` and overriding the argument, so the script's own
value is replaced wherever it builds its loaders. Worker-only arguments (`prefetch_factor`,
`persistent_workers`) are set only on loaders that end up with workers, since DataLoader
rejects them otherwise.
"""

from __future__ import annotations

import re
from typing import Any

import torch.utils.data

from torchdoctor.estimates.workers import (IDLE_CPU_PERCENT, MAX_IO_WORKERS, WAIT_SHARE, io_workers_cap, io_workers_needed,
                                      loads_on_storage)
from torchdoctor.finding import Finding
from torchdoctor.knobs import guard
from torchdoctor.knobs.base import (GENERIC, CallEdit, IntRange, Knob, ScriptNames, Undo, cpu_cores, cuda_capability,
                                    environment, machine_cores, register, system_summary)
from torchdoctor.environment import DataLoaderFacts
from torchdoctor.knobs.patching import intercept_init
from torchdoctor.record import Record


def _loaders(record: Record) -> list[DataLoaderFacts]:
    """The map-style DataLoaders the Record saw (the knobs rewrite only those)."""
    return [d for d in environment(record).dataloaders if not d.iterable_dataset]


class _LoaderKnob(Knob):
    argument = ""
    needs_workers = False

    def applies(self, record: Record) -> bool:
        return bool(_loaders(record))

    def apply(self, value: Any) -> Undo:
        def rewrite(arguments: dict[str, Any]) -> None:
            if not self.needs_workers or (arguments.get("num_workers") or 0) > 0:
                arguments[self.argument] = value

        return intercept_init(torch.utils.data.DataLoader, rewrite, on_rewrite=guard.rewritten(self.name))

    def code_change(self, value: Any, names: ScriptNames = GENERIC) -> str:
        return f"DataLoader(..., {self.argument}={value!r})"

    def call_edit(self, value: Any) -> CallEdit:
        return CallEdit(("DataLoader",), {self.argument: value})

    def overridden(self, value: Any, record: Record) -> str | None:
        seen = [getattr(d, self.argument) for d in _loaders(record)]
        if self.needs_workers:
            seen = [getattr(d, self.argument) for d in _loaders(record) if d.num_workers]
        if seen and all(v != value for v in seen):
            return f"every DataLoader ended with {self.argument}={seen[0]!r}, not {value!r}"
        return None


#: The diagnosis' finding for a loader that waits on storage or sleep (rules: TD-DATA-007).
IO_BOUND_FINDING = "TD-DATA-007"
#: The diagnosis' finding for loading in the main process (rules: TD-DATA-002), whose fix sizes the
#: workers to the cores.
NO_WORKERS_FINDING = "TD-DATA-002"


def _finding(record: Record, finding_id: str) -> Finding | None:
    """The Record's finding with that id, or None."""
    return next((finding for finding in record.findings if finding.id == finding_id), None)


def suggested_workers(record: Record, finding_id: str) -> int | None:
    """The worker count in the fix of the Record's `finding_id` finding (`num_workers=N`); None
    when there is no such finding or its fix names no count."""
    finding = _finding(record, finding_id)
    found = re.search(r"num_workers\s*=\s*(\d+)", finding.fix.code) if finding is not None else None
    return int(found.group(1)) if found else None


def io_bound_suggestion(record: Record) -> int | None:
    """The worker count the diagnosis suggested for an I/O-bound loader (its finding's fix,
    `num_workers=N`), or None when the Record's findings do not say the loader is I/O-bound.
    Its workers mostly sleep on reads, so they may outnumber the cores."""
    if _finding(record, IO_BOUND_FINDING) is not None:
        suggested = suggested_workers(record, IO_BOUND_FINDING)
        return min(MAX_IO_WORKERS, suggested) if suggested else None
    if not _waits_idle(record):
        return None
    return io_workers_needed([s.wall_s for s in record.steps], [s.data_wait_s for s in record.steps],
                             _loaders(record)[0].num_workers or 0)


def _waits_idle(record: Record) -> bool:
    """A Record not yet diagnosed (tune's baseline): the figures TD-DATA-007 reads. A typical step
    waits for data (WAIT_SHARE) while the loading is idle: the main thread's CPU time inside its
    own loading (no workers), or the script's and workers' CPU use (workers), is small."""
    steps, loaders = record.steps, _loaders(record)
    if not steps or not loaders:
        return False
    walls, waits = [s.wall_s for s in steps], [s.data_wait_s for s in steps]
    if not loaders[0].num_workers:
        if any(s.data_wait_cpu_s is None for s in steps):
            return False
        return loads_on_storage(walls, waits, [s.data_wait_cpu_s or 0.0 for s in steps])
    walls, waits = sorted(walls), sorted(waits)
    middle = len(steps) // 2
    if not walls[middle] or waits[middle] / walls[middle] < WAIT_SHARE:
        return False
    cpu = system_summary(record).process_cpu_percent_mean
    return cpu is not None and cpu < IDLE_CPU_PERCENT


@register
class NumWorkers(_LoaderKnob):
    name = "num_workers"
    kind = "int"
    changes_data_stream = True
    argument = "num_workers"
    summary = "load batches in worker processes, in parallel with the step"

    def applies(self, record: Record) -> bool:
        """No workers, or fewer than the cores allow (the "too few workers" case, TD-DATA-003), or
        fewer than the diagnosis suggested for an I/O-bound loader (TD-DATA-007)."""
        most = max(2, min(16, cpu_cores(record)), io_bound_suggestion(record) or 0)
        return any((d.num_workers or 0) < most for d in _loaders(record))

    def int_range(self, record: Record) -> IntRange:
        cores = cpu_cores(record)
        suggested = io_bound_suggestion(record)
        if suggested:
            # I/O-bound: workers sleep on reads, so the search goes beyond the cores, up to the
            # diagnosis' own suggestion, and tries that suggestion first; never beyond what `run
            # --apply` accepts on this machine (`check`), or tune would keep a value it cannot replay.
            suggested = min(suggested, self.value_range()[1])
            return IntRange(low=1, high=max(2, min(16, cores), suggested), first=suggested)
        # One worker per core at most (DataLoader warns beyond). First the count TD-DATA-002's fix names (the
        # one its bound on these cores favours), else a guess that leaves a core to the step.
        high = max(2, min(16, cores))
        named = suggested_workers(record, NO_WORKERS_FINDING)
        return IntRange(low=1, high=high, first=min(named, high) if named else max(1, min(8, cores - 1)))

    def value_range(self) -> tuple[int, int]:
        """0 (load in the main process) up to 4 a core (16 at least: a result tuned on a larger machine)."""
        return 0, io_workers_cap(machine_cores())


@register
class PinMemory(_LoaderKnob):
    name = "pin_memory"
    argument = "pin_memory"
    summary = "page-locked host batches: faster, asynchronous copies to the GPU"

    def applies(self, record: Record) -> bool:
        return cuda_capability(record) is not None and any(not d.pin_memory for d in _loaders(record))


@register
class PrefetchFactor(_LoaderKnob):
    name = "prefetch_factor"
    kind = "int"
    argument = "prefetch_factor"
    needs_workers = True
    summary = "batches each worker loads ahead"

    def applies(self, record: Record) -> bool:
        return any((d.num_workers or 0) > 0 for d in _loaders(record))

    def int_range(self, record: Record) -> IntRange:
        return IntRange(low=2, high=8, first=4)

    def value_range(self) -> tuple[int, int]:
        return 1, 64


@register
class PersistentWorkers(_LoaderKnob):
    name = "persistent_workers"
    changes_data_stream = True
    argument = "persistent_workers"
    needs_workers = True
    summary = "keep workers alive between epochs instead of restarting them"

    def applies(self, record: Record) -> bool:
        return any((d.num_workers or 0) > 0 and not d.persistent_workers for d in _loaders(record))
