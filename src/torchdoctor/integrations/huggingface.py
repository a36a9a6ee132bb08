"""`TorchDoctorCallback`: a Hugging Face `TrainerCallback` that observes `Trainer.train` from inside.

    trainer = Trainer(..., callbacks=[TorchDoctorCallback()])

Steps are found as `torchdoctor diagnose` finds them, from the optimizer's step (the Trainer's
Accelerate-wrapped optimizer steps the torch optimizer once per optimisation step, so gradient
accumulation gives one step per `gradient_accumulation_steps` batches). The observation starts
with training and ends once every window is measured, training going on unobserved, or when
training ends first. The Trainer calls no callback when training raises: the patches then stay
until `observation.finish()` is called or the process ends. Needs `transformers`.
"""

from __future__ import annotations

from typing import Any

from torchdoctor.integrations import require
from torchdoctor.integrations.inloop import InLoopObservation
from torchdoctor.observe.config import ObserveConfig
from torchdoctor.record import Record
from torchdoctor.workflow.diagnose import DiagnoseOutputs

_transformers = require("transformers", "transformers")


class TorchDoctorCallback(_transformers.TrainerCallback):
    """Observes the Trainer's training loop; `record` holds the Record (with its findings) once the
    observation ended. `config` and `outputs` are those of `torchdoctor diagnose` (ObserveConfig:
    the windows; DiagnoseOutputs: store, JSON/HTML files, console);
    `watch=True` follows the whole of training as `torchdoctor watch` does (the Record then holds
    its `whole_run` breakdown)."""

    def __init__(self, config: ObserveConfig | None = None, outputs: DiagnoseOutputs | None = None, *,
                 watch: bool = False) -> None:
        self.observation = InLoopObservation("huggingface", config, outputs, watch=watch)

    @property
    def record(self) -> Record | None:
        return self.observation.record

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.observation.start(loaders=kwargs.get("train_dataloader"))

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.observation.poll()

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.observation.finish("script_finished")
