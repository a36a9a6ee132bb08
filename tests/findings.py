"""Findings for tests that care about a few fields: the rest take plain values."""

from __future__ import annotations

from typing import Any

from torchdoctor.finding import Finding, Fix


def finding(finding_id: str = "TD-TEST-001", *, upside: float = 0.1, knob: str | None = None, title: str = "a finding",
            severity: str = "warning", evidence: dict[str, Any] | None = None, fix: Fix = Fix("fix it")) -> Finding:
    """A compute-layer Finding with these fields."""
    return Finding(finding_id, "compute", severity, title, upside, evidence or {}, "why it matters", fix, knob)
