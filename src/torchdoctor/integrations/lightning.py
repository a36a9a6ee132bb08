"""`TorchDoctorCallback`: a Lightning Callback that observes `trainer.fit` from inside the loop.

    trainer = L.Trainer(callbacks=[TorchDoctorCallback()])

Steps are found as `torchdoctor diagnose` finds them, from the optimizer's step: with automatic
optimisation `training_step` runs inside the optimizer's closure, and the step's parts are
exclusive times, so the shares still add to 1; with manual optimisation (several optimizers, GANs)
the first optimizer's step ends each step. The observation starts with training (after the
sanity check's validation batches) and ends once every window is measured, training going on
unobserved, or when `fit` ends or raises first. Needs `lightning` (or `pytorch_lightning`).
"""

from __future__ import annotations

from typing import Any

from torchdoctor.integrations import MissingIntegrationError, require
from torchdoctor.integrations.inloop import InLoopObservation
from torchdoctor.observe.config import ObserveConfig
from torchdoctor.record import Record
from torchdoctor.workflow.diagnose import DiagnoseOutputs


def _lightning_pytorch() -> Any:
    """`lightning.pytorch`, or the older standalone `pytorch_lightning` package."""
    try:
        return require("lightning.pytorch", "lightning")
    except MissingIntegrationError:
        return require("pytorch_lightning", "lightning")


_pl = _lightning_pytorch()


class TorchDoctorCallback(_pl.Callback):
    """Observes the training loop of the Trainer it is given to; `record` holds the Record (with its
    findings) once the observation ended. `config` and `outputs` are those of `torchdoctor diagnose`
    (ObserveConfig: the windows; DiagnoseOutputs: store, JSON/HTML files, console);
    `watch=True` follows the whole of training as `torchdoctor watch` does (the Record then holds
    its `whole_run` breakdown)."""

    def __init__(self, config: ObserveConfig | None = None, outputs: DiagnoseOutputs | None = None, *,
                 watch: bool = False) -> None:
        super().__init__()
        self.observation = InLoopObservation("lightning", config, outputs, watch=watch)

    @property
    def record(self) -> Record | None:
        return self.observation.record

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self.observation.start(loaders=trainer.train_dataloader)

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        self.observation.poll()

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self.observation.finish("script_finished")

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self.observation.finish("interrupted" if isinstance(exception, KeyboardInterrupt) else "script_error",
                                exception)
