"""The one vocabulary of advice: a :class:`Finding` names a measured problem, what it costs and its fix.

The diagnosis rules (torchdoctor.rules), the compile advice (torchdoctor.compile.advice) and the
`scale` and `comm` commands (torchdoctor.distributed) all report Findings; the ids share one scheme,
`TD-<LAYER>-NNN`, listed in docs/rules.md. `knob` is the name of a registered tune knob
(`torchdoctor.knobs.REGISTRY`) that applies the fix, or None. A Record's findings also carry the
diagnosis's `confidence` and the input `caveats` that set it (torchdoctor.analyse.caveats).

This module sits at the bottom of the package: it imports nothing of torchdoctor.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

SEVERITIES = ("info", "warning", "problem")
LAYERS = ("data", "compute", "memory", "scale", "config")
#: Fields a Record's diagnosis sets and `Finding.to_dict` leaves out while None.
_SET_BY_DIAGNOSIS = ("confidence", "caveats")


@dataclass(frozen=True)
class Fix:
    """What to change: one sentence and the code that does it."""

    text: str
    code: str = ""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fix:
        """The Fix of a `to_dict`-shaped dict whose values have the annotated types (unknown keys ignored)."""
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


@dataclass(frozen=True)
class Finding:
    """One located problem. `upside`: fraction (0-1) of step time (or memory, for the memory layer)
    that the fix can win back at most, computed from `evidence` (numbers with units in the keys).
    `confidence` ("low" or "normal") and `caveats` are set by the diagnosis of a Record, None
    elsewhere; `to_dict` leaves them out while None."""

    id: str
    layer: str
    severity: str
    title: str
    upside: float
    evidence: dict[str, Any]
    explanation: str
    fix: Fix
    knob: str | None = None
    confidence: str | None = None
    caveats: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape: every field in order, `caveats` a list, `confidence` and `caveats` only when set."""
        data = asdict(self)
        for name in _SET_BY_DIAGNOSIS:
            if data[name] is None:
                del data[name]
        if self.caveats is not None:
            data["caveats"] = list(self.caveats)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Finding:
        """The Finding of a `to_dict`-shaped dict whose values have the annotated types (`caveats` a
        list, `fix` an object; unknown keys ignored). Checking the types is the caller's job
        (torchdoctor.record checks a loaded Record's findings)."""
        kwargs = {f.name: data[f.name] for f in fields(cls) if f.name in data}
        kwargs["fix"] = Fix.from_dict(data["fix"])
        if kwargs.get("caveats") is not None:
            kwargs["caveats"] = tuple(kwargs["caveats"])
        return cls(**kwargs)

    @property
    def rank_key(self) -> tuple[float, int]:
        return (-self.upside, -SEVERITIES.index(self.severity))


def new_finding(finding_id: str, layer: str, severity: str, title: str, upside: float, evidence: dict[str, Any],
                explanation: str, fix: Fix, knob: str | None = None) -> Finding:
    """A Finding with a known layer and severity, its upside clamped to 0-1 and rounded to 4 digits."""
    if layer not in LAYERS:
        raise ValueError(f"{finding_id}: unknown layer {layer!r}")
    if severity not in SEVERITIES:
        raise ValueError(f"{finding_id}: unknown severity {severity!r}")
    clamped = min(1.0, max(0.0, float(upside)))
    return Finding(finding_id, layer, severity, title, round(clamped, 4), evidence, explanation, fix, knob)


def severity_at(value: float, warning: float, problem: float) -> str | None:
    """'problem' at or above `problem`, 'warning' at or above `warning`, else None (silent).
    For a metric where lower is worse, pass negated values."""
    if value >= problem:
        return "problem"
    if value >= warning:
        return "warning"
    return None
