"""`TorchDoctorHook`: observe a hand-written Accelerate training loop from inside it.

    with TorchDoctorHook(loaders=[train_loader]) as doctor:
        for batch in train_loader:
            ...
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            doctor.poll()  # optional: ends the observation as soon as every window is measured

Accelerate has no callbacks, so the hook wraps the loop. Steps are found as `torchdoctor diagnose`
finds them, from the optimizer's step: `AcceleratedOptimizer.step` steps the torch optimizer only
when gradients are synchronised, so with `accelerator.accumulate` a step is one optimisation step.
The observation ends at `poll` once every window is measured, else when the block ends (raising
or not). Needs `accelerate`.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from torchdoctor.integrations import require
from torchdoctor.integrations.inloop import InLoopObservation
from torchdoctor.observe.config import ObserveConfig
from torchdoctor.record import Record
from torchdoctor.workflow.diagnose import DiagnoseOutputs

require("accelerate", "accelerate")


class TorchDoctorHook:
    """A context manager observing the loop it encloses; `record` holds the Record (with its
    findings) once the observation ended. `loaders`: DataLoaders built (or prepared by the
    Accelerator) before the block, whose settings the Record should show. `config` and `outputs`
    are those of `torchdoctor diagnose`; `watch=True` follows the whole loop as `torchdoctor watch`
    does (the Record then holds its `whole_run` breakdown)."""

    def __init__(self, loaders: Any = (), config: ObserveConfig | None = None,
                 outputs: DiagnoseOutputs | None = None, *, watch: bool = False) -> None:
        self.loaders = loaders
        self.observation = InLoopObservation("accelerate", config, outputs, watch=watch)

    @property
    def record(self) -> Record | None:
        return self.observation.record

    def poll(self) -> Record | None:
        """At a step end: ends the observation once every window is measured (then returns the Record)."""
        return self.observation.poll()

    def __enter__(self) -> TorchDoctorHook:
        self.observation.start(self.loaders)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc is None:
            self.observation.finish("script_finished")
        else:
            self.observation.finish("interrupted" if isinstance(exc, KeyboardInterrupt) else "script_error", exc)
