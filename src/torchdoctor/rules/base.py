"""Findings and the rule registry.

A rule is a small function decorated with :func:`rule`. It takes the :class:`Evidence` of one Record,
returns a :class:`Hit` when the problem it names is measured (or None when it is not), and raises
:class:`MissingEvidence` when the Record lacks what it reads, so the engine skips it with a note.
The decorator adds what is fixed per rule (id, layer, knob, the lint topic that backs it) and keeps
the rule in :data:`REGISTRY`; the rule modules are imported once by :func:`all_rules`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from torchdoctor.discovery import import_submodules

SEVERITIES = ("info", "warning", "problem")
LAYERS = ("data", "compute", "memory", "scale", "config")



class MissingEvidence(Exception):
    """Raised by an evidence accessor: the Record has no value for `what`."""

    def __init__(self, what: str) -> None:
        super().__init__(f"no {what} in the Record")
        self.what = what


@dataclass(frozen=True)
class Fix:
    """What to change: one sentence and the code that does it."""

    text: str
    code: str = ""


@dataclass(frozen=True)
class Hit:
    """What a rule returns when it fires; `upside` is derived from the evidence it cites."""

    severity: str
    title: str
    upside: float
    evidence: dict[str, Any]
    explanation: str
    fix: Fix


@dataclass(frozen=True)
class Finding:
    """One located problem. `upside`: fraction (0-1) of step time (or memory, for the memory layer)
    that the fix can win back at most, computed from `evidence` (numbers with units in the keys)."""

    id: str
    layer: str
    severity: str
    title: str
    upside: float
    evidence: dict[str, Any]
    explanation: str
    fix: Fix
    knob: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def rank_key(self) -> tuple[float, int]:
        return (-self.upside, -SEVERITIES.index(self.severity))


@dataclass(frozen=True)
class Rule:
    """A registered rule: its fixed data and the function that looks at the evidence."""

    id: str
    layer: str
    check: Callable[[Any], Hit | None]
    knob: str | None = None
    lint_topic: str | None = None  # the lint `rule_hint` whose hits back this rule
    doc: str = field(default="", repr=False)

    def finding(self, hit: Hit) -> Finding:
        if hit.severity not in SEVERITIES:
            raise ValueError(f"{self.id}: unknown severity {hit.severity!r}")
        upside = min(1.0, max(0.0, float(hit.upside)))
        return Finding(self.id, self.layer, hit.severity, hit.title, round(upside, 4),
                       hit.evidence, hit.explanation, hit.fix, self.knob)


REGISTRY: dict[str, Rule] = {}


def rule(rule_id: str, layer: str, *, knob: str | None = None,
         lint_topic: str | None = None) -> Callable[[Callable[[Any], Hit | None]], Callable[[Any], Hit | None]]:
    """Register the decorated function as rule `rule_id` of `layer`; ids must be unique."""
    if layer not in LAYERS:
        raise ValueError(f"{rule_id}: unknown layer {layer!r}")

    def register(check: Callable[[Any], Hit | None]) -> Callable[[Any], Hit | None]:
        if rule_id in REGISTRY and REGISTRY[rule_id].check.__qualname__ != check.__qualname__:
            raise ValueError(f"rule id {rule_id} registered twice")
        REGISTRY[rule_id] = Rule(rule_id, layer, check, knob, lint_topic, (check.__doc__ or "").strip())
        return check

    return register


def all_rules() -> tuple[Rule, ...]:
    """Every rule, in id order (importing the rule modules fills the registry)."""
    import_submodules("torchdoctor.rules")
    return tuple(REGISTRY[k] for k in sorted(REGISTRY))


def severity_at(value: float, warning: float, problem: float) -> str | None:
    """'problem' at or above `problem`, 'warning' at or above `warning`, else None (silent).
    For a metric where lower is worse, pass negated values."""
    if value >= problem:
        return "problem"
    if value >= warning:
        return "warning"
    return None
