"""Everything `torchdoctor check` decided and measured (`CheckResult`); its JSON is a public
interface (docs/check.md, `SCHEMA_VERSION`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torchdoctor.check.decisions import EXIT_CODES
from torchdoctor.check.location import Location
from torchdoctor.check.metric import Metric, finite

#: 2: an observation's step time is its mean step (its pace), no longer its median step.
SCHEMA_VERSION = 2
KIND = "torchdoctor.check"


@dataclass(slots=True)
class CheckResult:
    """Everything `torchdoctor check` decided and measured (JSON: `to_dict`, docs/check.md)."""

    decision: str
    reason: str
    mode: str  # "ref" | "python" | "baseline" | "save-baseline" | "demo"
    script: str | None = None
    argv: list[str] = field(default_factory=list)
    a: dict[str, Any] = field(default_factory=dict)
    b: dict[str, Any] = field(default_factory=dict)
    dirty: bool = False
    dirty_files: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    metrics: list[Metric] = field(default_factory=list)
    gate_metric: str | None = None
    rounds: int = 0
    planned_rounds: int | None = None
    observations: int = 0
    wall_s: float = 0.0
    stop_reason: str | None = None
    aa_ratio: float | None = None
    samples_s: dict[str, list[float]] = field(default_factory=dict)
    location: Location | None = None
    env: dict[str, Any] = field(default_factory=dict)
    error: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    baseline: dict[str, Any] | None = None
    work_dir: str | None = None

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.decision]

    def metric(self, name: str) -> Metric | None:
        return next((m for m in self.metrics if m.name == name), None)

    @property
    def gated(self) -> list[Metric]:
        return [m for m in self.metrics if m.gate is not None]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": KIND,
            "decision": self.decision,
            "exit_code": self.exit_code,
            "reason": self.reason,
            "mode": self.mode,
            "script": self.script,
            "argv": self.argv,
            "a": self.a,
            "b": self.b,
            "dirty": self.dirty,
            "dirty_files": self.dirty_files,
            "settings": self.settings,
            "gate_metric": self.gate_metric,
            "metrics": {m.name: m.to_dict() for m in self.metrics},
            "rounds": self.rounds,
            "planned_rounds": self.planned_rounds,
            "observations": self.observations,
            "wall_s": self.wall_s,
            "stop_reason": self.stop_reason,
            "aa_ratio": finite(self.aa_ratio),
            "samples_s": self.samples_s,
            "location": self.location.to_dict() if self.location else None,
            "env": self.env,
            "error": self.error,
            "warnings": self.warnings,
            "baseline": self.baseline,
            "work_dir": self.work_dir,
        }
