"""`record.env` as one frozen value: where the script ran and what it built (docs/record-schema.md).

The Record keeps the JSON the observed process wrote (keys this value does not know stay in the
saved Record); readers take it through `Environment.from_dict(record.env)`, which checks every
field (a wrong type is a RecordFormatError naming it, `env.devices.gpus[0].capability`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from torchdoctor.environment.machine import Cpu, Devices, Gpu, RankPlacement, TorchSwitches, Versions
from torchdoctor.environment.script import (CompileCall, DataLoaderFacts, ForwardState, GuardedCall, ModelFacts,
                                            OptimizerFacts, RuntimeFacts, ScriptTools,
                                            ScriptWarning)
from torchdoctor.jsonfields import Keyed, readable


@dataclass(frozen=True, slots=True)
class Environment(Keyed):
    """The observed process's fingerprint and the script's objects; a part the Record lacks (a run
    stopped before the end, trace files only, an older Record) is None or empty."""

    WHERE: ClassVar[str] = "env"
    versions: Versions | None = None
    devices: Devices | None = None
    cpu: Cpu | None = None
    torch: TorchSwitches | None = None
    env_vars: dict[str, str] = field(default_factory=dict)
    distributed: RankPlacement | None = None
    executable: str | None = None
    dataloaders: tuple[DataLoaderFacts, ...] = ()
    optimizers: tuple[OptimizerFacts, ...] = ()
    models: tuple[ModelFacts, ...] = ()
    forward_state: ForwardState | None = None
    compile_calls: tuple[CompileCall, ...] = ()
    script_tools: ScriptTools | None = None
    compile_used: bool | None = None
    distributed_runtime: RuntimeFacts | None = None
    knob_guard: tuple[GuardedCall, ...] = ()
    warnings: tuple[ScriptWarning, ...] = ()

    @classmethod
    def or_empty(cls, data: Any) -> Environment:
        """The value of a Record's `env`; an empty one when it does not fit its type (a hand-edited
        Record), for a reader that then finds nothing in it instead of failing."""
        return readable(cls.from_dict, data) or cls()

    @property
    def gpus(self) -> tuple[Gpu, ...]:
        """Every GPU torch saw (none without CUDA or without the devices recorded)."""
        return self.devices.gpus if self.devices else ()

    @property
    def cuda_available(self) -> bool:
        """Whether torch saw CUDA in the observed process (False when not recorded)."""
        return bool(self.devices and self.devices.cuda_available)

    def model_devices(self) -> set[str]:
        """The device types the observed models kept parameters on ("cpu", "cuda", ...)."""
        return {device for model in self.models for device in model.parameter_devices}

    def module_types(self) -> dict[str, int]:
        """Module classes over every observed model, with how many of each."""
        found: dict[str, int] = {}
        for model in self.models:
            for name, count in model.module_types.items():
                found[name] = found.get(name, 0) + count
        return found
