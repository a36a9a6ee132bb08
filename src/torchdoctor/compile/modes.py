"""Comparing torch.compile modes (and `dynamic` on/off) against eager on an unmodified script.

Each variant is a fresh observation of the script with the `compile` knob
(`torchdoctor.knobs.compile`: torch.compile of the outermost module at its first forward) set
through `ObserveConfig(knobs={"compile": ...})`; the eager baseline is the script as written.
A variant that cannot run here is kept as a row with `status: "not_applicable"` and the reason:
`reduce-overhead` records CUDA graphs and needs a CUDA device; no variant applies to a script
that calls torch.compile itself (the knob would compile an already compiled model, and
TORCHDYNAMO_DISABLE, which gives its eager baseline, would switch the knob off too).
Row keys are documented in docs/compile.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from torchdoctor.environment import Environment
from torchdoctor.errors import TorchDoctorError
from torchdoctor.knobs.compile import MODES
from torchdoctor.record import Record

#: Modes that need a CUDA device, and why.
NEEDS_CUDA = {"reduce-overhead": "reduce-overhead records CUDA graphs, which need a CUDA device"}


class UnknownCompileModeError(TorchDoctorError):
    """`--modes` names a mode torch.compile does not have."""


@dataclass(frozen=True, slots=True)
class Variant:
    mode: str
    dynamic: bool | None
    """None: torch.compile's default (dynamic after a shape changes); True/False: forced."""

    def knob_value(self, backend: str) -> dict[str, Any]:
        return {"mode": self.mode, "dynamic": self.dynamic, "backend": backend}

    def knobs(self, base: dict[str, Any], backend: str) -> dict[str, Any]:
        """An observation's knobs `base` with this variant's compile knob added."""
        return {**base, "compile": self.knob_value(backend)}


def parse_modes(text: str) -> list[str]:
    """"default,max-autotune" -> the modes, checked against torch.compile's."""
    modes = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise UnknownCompileModeError(f"unknown compile mode(s) {', '.join(unknown) or '(none given)'}; "
                                      f"choose from {', '.join(MODES)}")  # fmt: skip
    return modes


def variants(modes: Sequence[str], dynamic: bool) -> list[Variant]:
    """One variant per mode; with `dynamic`, each mode with dynamic=False and dynamic=True."""
    return [Variant(m, d) for m in modes for d in ((False, True) if dynamic else (None,))]


def not_applicable(variant: Variant, baseline: Record) -> str | None:
    """Why `variant` cannot be measured against `baseline` (the script as written), or None."""
    if baseline.compile:
        return ("the script calls torch.compile itself; change its mode= there, or remove the call to let "
                "torchdoctor compare modes")  # fmt: skip
    if variant.mode in NEEDS_CUDA and not Environment.or_empty(baseline.env).cuda_available:
        return f"{NEEDS_CUDA[variant.mode]}; this machine has none"
    return None


def mode_row(variant: Variant, *, reason: str | None = None, compiled: Record | None = None,
             comparison: dict[str, Any] | None = None) -> dict[str, Any]:
    """One row of `modes`: the variant's figures, or why there are none."""
    row: dict[str, Any] = {"mode": variant.mode, "dynamic": variant.dynamic, "status": "not_applicable",
                           "reason": reason, "run_id": None, "compile_time_s": None, "step_s": None,
                           "graph_count": None, "graph_break_count": None, "recompile_count": None,
                           "recompile_limit_hit": None, "verdict": None, "payoff_steps": None}  # fmt: skip
    if compiled is None:
        return row
    report = compiled.compile or {}
    failure = None if comparison else (compiled.exit.message or f"no steps measured ({compiled.exit.reason})")
    row.update(status="failed" if failure else "measured", run_id=compiled.run_id, reason=failure,
               step_s=compiled.summary.step_s,
               compile_time_s=report.get("compile_time_s"), graph_count=report.get("graph_count"),
               graph_break_count=report.get("graph_break_count"),
               recompile_count=len(report["recompiles"]) if "recompiles" in report else None,
               recompile_limit_hit=report.get("recompile_limit_hit"))  # fmt: skip
    if comparison is not None:
        row.update(verdict=comparison["verdict"], payoff_steps=comparison["payoff_steps"])
    return row
