"""The rule registry (Findings themselves live in torchdoctor.finding).

A rule is a small function decorated with :func:`rule`. It takes the :class:`Evidence` of one Record,
returns a :class:`Hit` when the problem it names is measured (or None when it is not), and raises
:class:`MissingEvidence` when the Record lacks what it reads, so the engine skips it with a note.
The decorator adds what is fixed per rule (id, layer, knob, the lint topic that backs it) and keeps
the rule in :data:`REGISTRY`; the rule modules are imported once by :func:`all_rules`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

from torchdoctor.discovery import import_submodules
from torchdoctor.finding import LAYERS, SEVERITIES, Finding, Fix, new_finding, severity_at

__all__ = ["LAYERS", "REGISTRY", "SEVERITIES", "Finding", "Fix", "Hit", "MissingEvidence", "Rule", "all_rules",
           "hit_of", "measured", "rule", "severity_at"]

T = TypeVar("T")


class MissingEvidence(Exception):
    """Raised by an evidence accessor: the Record has no value for `what`."""

    def __init__(self, what: str) -> None:
        super().__init__(f"no {what} in the Record")
        self.what = what


def measured(value: T | None, what: str) -> T:
    """`value`, or MissingEvidence naming `what` when the Record holds None for it."""
    if value is None:
        raise MissingEvidence(what)
    return value


@dataclass(frozen=True)
class Hit:
    """What a rule returns when it fires; `upside` is derived from the evidence it cites."""

    severity: str
    title: str
    upside: float
    evidence: dict[str, Any]
    explanation: str
    fix: Fix
    knob: str | None = None  # the knob tune tries for this fix where it is not the rule's own; "": none


def hit_of(finding: Finding | None) -> Hit | None:
    """The Hit of a Finding built outside the rules (compile advice, the distributed analysis), so a rule
    that reports the same problem under the same id gives the same finding."""
    if finding is None:
        return None
    return Hit(finding.severity, finding.title, finding.upside, finding.evidence, finding.explanation, finding.fix)


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
        return new_finding(self.id, self.layer, hit.severity, hit.title, hit.upside, hit.evidence,
                           hit.explanation, hit.fix,
                           self.knob if hit.knob is None else hit.knob or None)


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
