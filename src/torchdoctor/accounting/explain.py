"""Which findings explain which slices of the waterfall, and which slices stay unexplained.

A finding explains a slice when its rule is about what the slice measures: the table below, one
row per slice kind (script and trace slices alike), read against the finding ids' prefixes. A slice
of at least MATTERS of the step that no finding explains is shown as **unexplained**, with its
operators and the script's line, and becomes the generic finding UNEXPLAINED_ID (rules/accounting.py)
when it is a cost below a speed of light.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from torchdoctor.accounting.section import Accounting, Slice
from torchdoctor.finding import Finding

#: A slice this share of the step or more matters: explained by a finding, or shown unexplained.
MATTERS = 0.10
#: The generic finding of a large cost below its speed of light that no other finding explains.
UNEXPLAINED_ID = "TD-COMP-025"
#: Slice kind -> the ids (or id prefixes) of the findings that explain it.
EXPLAINS: dict[str, tuple[str, ...]] = {
    "data_wait": ("TD-DATA-",),
    "dataloader": ("TD-DATA-",),
    "outside_model": ("TD-COMP-013", "TD-COMP-011", "TD-COMP-016", "TD-COMP-017", "TD-COMP-026"),
    "other": ("TD-COMP-013", "TD-COMP-003", "TD-COMP-002"),
    "between_ops": ("TD-COMP-003", "TD-COMP-007", "TD-COMP-008", "TD-COMP-018", "TD-COMP-016"),
    "small_ops": ("TD-COMP-003", "TD-COMP-018", "TD-COMP-012", "TD-COMP-011"),
    "syncs": ("TD-COMP-005",),
    "runtime": ("TD-COMP-005", "TD-COMP-003", "TD-COMP-002"),
    "compute_below_peak": ("TD-COMP-006", "TD-COMP-009", "TD-COMP-015", "TD-COMP-020", "TD-COMP-040"),
    "kernel": ("TD-COMP-006", "TD-COMP-010", "TD-COMP-015"),
    "memory_bound": ("TD-COMP-004", "TD-COMP-009", "TD-COMP-012", "TD-COMP-041", "TD-COMP-047"),
    "cpu_exec": ("TD-COMP-004", "TD-COMP-003", "TD-COMP-009"),
    "communication": ("TD-SCALE-",),
    "device_beyond_ideal": ("TD-COMP-001", "TD-COMP-006", "TD-COMP-010", "TD-COMP-015", "TD-SCALE-017"),
}
#: Slices never "unexplained": the speed of light itself (the FLOPs at the peak, the memory-bound
#: operators' time at theirs), and a trace's device kernels and host
#: operators, the work itself, which a trace gives no peak to weigh against.
EXPECTED = frozenset({"ideal", "memory_at_speed", "kernel", "cpu_exec"})
#: Slices of operators: expected when every operator in them runs near its speed of light (no `ops`).
OPERATOR_SLICES = frozenset({"compute_below_peak", "memory_bound", "small_ops"})


def explaining(kind: str, findings: Iterable[Finding]) -> tuple[str, ...]:
    """The ids of the findings that explain a slice of `kind`, in their order: by the table, and the
    generic finding for the slice it names (`evidence["slice"]`)."""
    prefixes = EXPLAINS.get(kind, ())
    return tuple(f.id for f in findings if any(f.id.startswith(p) for p in prefixes)
                 or (f.id == UNEXPLAINED_ID and f.evidence.get("slice") == kind))


def explained(accounting: Accounting, findings: Iterable[Finding]) -> Accounting:
    """The accounting with each slice's `explained_by` set from the diagnosis' findings."""
    findings = tuple(findings)
    slices = tuple(replace(s, explained_by=explaining(s.kind, findings)) for s in accounting.slices)
    return replace(accounting, slices=slices)


def unexplained(accounting: Accounting) -> tuple[Slice, ...]:
    """The slices that matter and that no specific finding explains (after `explained`): none at all,
    or only the generic UNEXPLAINED_ID, which reports them. A slice of operators that all run near
    their speed of light (healthy, so none is listed in it) is expected, not unexplained."""
    return tuple(s for s in accounting.slices if s.share >= MATTERS and s.kind not in EXPECTED
                 and not (s.kind in OPERATOR_SLICES and not s.ops) and not set(s.explained_by) - {UNEXPLAINED_ID})
