"""DataLoader knobs: worker processes, pinned memory, prefetching, persistent workers.

Applied by intercepting `DataLoader.__init__` and overriding the argument, so the script's own
value is replaced wherever it builds its loaders. Worker-only arguments (`prefetch_factor`,
`persistent_workers`) are set only on loaders that end up with workers, since DataLoader
rejects them otherwise.
"""

from __future__ import annotations

from typing import Any

import torch.utils.data

from torchdoctor.knobs import guard
from torchdoctor.knobs.base import (GENERIC, CallEdit, IntRange, Knob, ScriptNames, Undo, cpu_cores, cuda_capability,
                                    machine_cores, register)
from torchdoctor.knobs.patching import intercept_init
from torchdoctor.record import Record


def _loaders(record: Record) -> list[dict[str, Any]]:
    return [d for d in record.env.get("dataloaders") or [] if not d.get("iterable_dataset")]


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
        seen = [d.get(self.argument) for d in _loaders(record)]
        if self.needs_workers:
            seen = [d.get(self.argument) for d in _loaders(record) if d.get("num_workers")]
        if seen and all(v != value for v in seen):
            return f"every DataLoader ended with {self.argument}={seen[0]!r}, not {value!r}"
        return None


@register
class NumWorkers(_LoaderKnob):
    name = "num_workers"
    kind = "int"
    changes_data_stream = True
    argument = "num_workers"
    summary = "load batches in worker processes, in parallel with the step"

    def applies(self, record: Record) -> bool:
        """No workers, or fewer than the cores allow (the "too few workers" case, TD-DATA-003)."""
        most = max(2, min(16, cpu_cores(record)))
        return any(d.get("num_workers", 0) < most for d in _loaders(record))

    def int_range(self, record: Record) -> IntRange:
        cores = cpu_cores(record)
        # One worker per core at most (DataLoader warns beyond); first guess leaves a core to the step.
        return IntRange(low=1, high=max(2, min(16, cores)), first=max(1, min(8, cores - 1)))

    def value_range(self) -> tuple[int, int]:
        """0 (load in the main process) up to 4 a core (16 at least: a result tuned on a larger machine)."""
        return 0, max(16, machine_cores() * 4)


@register
class PinMemory(_LoaderKnob):
    name = "pin_memory"
    argument = "pin_memory"
    summary = "page-locked host batches: faster, asynchronous copies to the GPU"

    def applies(self, record: Record) -> bool:
        return cuda_capability(record) is not None and any(not d.get("pin_memory") for d in _loaders(record))


@register
class PrefetchFactor(_LoaderKnob):
    name = "prefetch_factor"
    kind = "int"
    argument = "prefetch_factor"
    needs_workers = True
    summary = "batches each worker loads ahead"

    def applies(self, record: Record) -> bool:
        return any(d.get("num_workers", 0) > 0 for d in _loaders(record))

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
        return any(d.get("num_workers", 0) > 0 and not d.get("persistent_workers") for d in _loaders(record))
