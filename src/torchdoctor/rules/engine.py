"""Run every selected rule on a Record, merge the lint evidence, and rank the findings.

A rule whose evidence is missing (a CPU run has no device section, a trace-only Record has no
step timings) is skipped with a note in `Diagnosis.skipped`; it never stops the others. Lint hits
that no measured finding confirms become hints: severity "info", upside 0, id = the lint code;
hints that need a GPU (DEVICE_ONLY_LINT) are dropped on a run whose models stayed on the CPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable

from torchdoctor.accounting.explain import UNEXPLAINED_ID, explaining
from torchdoctor.errors import TorchDoctorError
from torchdoctor.finding import LAYERS, Finding, Fix
from torchdoctor.record import Record
from torchdoctor.rules.base import MissingEvidence, Rule, all_rules
from torchdoctor.rules.evidence import Evidence


LINT_PREFIX = "TDL"  # ids of lint hints are lint codes
# Hints about a GPU (pinned memory, host-device syncs, CPU-then-CUDA tensors, DataParallel) cannot
# apply to a run whose models stayed on the CPU: they are not shown with that run's findings.
DEVICE_ONLY_LINT = frozenset({"TDL102", "TDL201", "TDL202", "TDL401"})


class UnknownRuleError(TorchDoctorError):
    """--select/--ignore named no rule id, id prefix or layer."""


@dataclass
class Diagnosis:
    findings: list[Finding] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "TD-MEM-001: no memory.peak_reserved_bytes in the Record"


def _matches(rule_id: str, layer: str, selectors: Iterable[str]) -> bool:
    return any(rule_id.upper().startswith(s.upper()) or s.lower() == layer for s in selectors)


def _check_selectors(selectors: Iterable[str], rules: tuple[Rule, ...]) -> None:
    for s in selectors:
        if not any(_matches(r.id, r.layer, [s]) for r in rules) and not s.upper().startswith(LINT_PREFIX):
            raise UnknownRuleError(f"unknown rule {s!r}: give a rule id or prefix (e.g. TD-DATA, TD-COMP-003) "
                                   f"or a layer ({', '.join(LAYERS)})")


def selected_rules(select: Iterable[str] = (), ignore: Iterable[str] = ()) -> tuple[Rule, ...]:
    rules = all_rules()
    _check_selectors([*select, *ignore], rules)
    return tuple(r for r in rules if (not select or _matches(r.id, r.layer, select))
                 and not _matches(r.id, r.layer, ignore))


def _lint_hints(evidence: Evidence, covered_topics: set[str], select: Iterable[str],
                ignore: Iterable[str]) -> list[Finding]:
    try:
        violations = evidence.lint().violations
    except MissingEvidence:
        return []
    try:
        cpu_run = evidence.record.kind == "script" and evidence.runs_on_cpu_only()
    except MissingEvidence:
        cpu_run = False
    hints = []
    for v in violations:
        not_this_device = cpu_run and v.code in DEVICE_ONLY_LINT
        if not_this_device or v.rule_hint in covered_topics or (select and not _matches(v.code, v.layer, select)) \
                or _matches(v.code, v.layer, ignore):
            continue
        hints.append(Finding(v.code, v.layer, "info", f"static hint: {v.message}", 0.0,
                             {"lint": [v.location], "measured_cost": None},
                             "Found in the source; no cost was measured for it in this run.",
                             Fix(v.message), None))
    return hints


def _explained_elsewhere(findings: list[Finding]) -> list[Finding]:
    """The findings less the generic speed-of-light one where another finding explains its slice
    (accounting.explain): the specific finding says more."""
    others = [f for f in findings if f.id != UNEXPLAINED_ID]
    return [f for f in findings if f.id != UNEXPLAINED_ID or not explaining(str(f.evidence.get("slice")), others)]


OUTSIDE_ID = "TD-COMP-013"


def _outside_explained(findings: list[Finding]) -> list[Finding]:
    """The findings less TD-COMP-013 (time outside the model) where another finding names its
    longest call there: the script's function that made it (`evidence["caller"]`), or the call
    itself among the calls it explains (`evidence["loop_calls"]`, callee and caller). The specific
    finding says what that code does wrong and how to fix it."""
    outside = next((f for f in findings if f.id == OUTSIDE_ID), None)
    top = (outside.evidence.get("calls_outside") or [{}])[0] if outside else {}
    named = {"callee": top.get("callee"), "caller": top.get("caller")}
    if not named["caller"] or not any(f.evidence.get("caller") == named["caller"] or named in
                                      (f.evidence.get("loop_calls") or []) for f in findings if f.id != OUTSIDE_ID):
        return findings
    return [f for f in findings if f.id != OUTSIDE_ID]


def _with_sources(findings: list[Finding], evidence: Evidence) -> list[Finding]:
    """Each finding about an operator (`evidence["operator"]`) with the script's line that runs it,
    where the operator-costs probe found one (`evidence["source"]`)."""
    try:
        sources = {c.name: c.source for s in evidence.accounting().slices for c in s.ops if c.source}
        sources |= {c.name: c.source for c in evidence.accounting().cost_centres if c.source}
    except MissingEvidence:
        return findings
    return [replace(f, evidence={**f.evidence, "source": sources[f.evidence["operator"]]})
            if f.evidence.get("operator") in sources and "source" not in f.evidence else f for f in findings]


def diagnose(record: Record, *, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> Diagnosis:
    """Findings of the selected rules on `record`, ranked by upside then severity."""
    select, ignore = tuple(select), tuple(ignore)
    evidence, result = Evidence(record), Diagnosis()
    covered: set[str] = set()
    for r in selected_rules(select, ignore):
        try:
            hit = r.check(evidence)
        except MissingEvidence as exc:
            result.skipped.append(f"{r.id}: {exc}")
            continue
        except (KeyError, TypeError) as exc:  # a Record from an older or partial layout
            result.skipped.append(f"{r.id}: evidence in an unexpected layout ({type(exc).__name__}: {exc})")
            continue
        if hit is None:
            continue
        finding = r.finding(hit)
        if r.lint_topic:
            covered.add(r.lint_topic)
            lint = evidence.lint_hits(r.lint_topic)
            if lint and "lint" not in finding.evidence:
                finding = replace(finding, evidence={**finding.evidence, "lint": lint})
        result.findings.append(finding)
    result.findings = _with_sources(_outside_explained(_explained_elsewhere(result.findings)), evidence)
    result.findings.extend(_lint_hints(evidence, covered, select, ignore))
    result.findings.sort(key=lambda f: (*f.rank_key, f.id.startswith(LINT_PREFIX)))  # hints last on ties
    return result


def diagnose_record(record: Record, *, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> list[Finding]:
    """The ranked findings of `diagnose` (skipped-rule notes dropped)."""
    return diagnose(record, select=select, ignore=ignore).findings
