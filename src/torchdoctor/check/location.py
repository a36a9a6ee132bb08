"""Where B's extra time or memory went, from the figures of both sides and a `trace diff` of one
profiled window per side: values in, values out (`check.locate` gathers the profiles)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np

from torchdoctor.check.figures import PHASES
from torchdoctor.finding import Finding

#: A phase "grew" when it carries at least this share of the step's growth.
GREW_SHARE = 0.10
#: Rows of the trace diff kept in the location.
TOP_ROWS = 8
#: An operator or kernel is named when it grew by at least this share of the step's growth.
OP_SHARE = 0.10

_PROFILER_STEP = re.compile(r"^ProfilerStep#\d+$")


@dataclass(slots=True)
class Location:
    """Where B's extra time (or memory) went: phases of the step from the timed rounds, operators and
    kernels from one profiled step window per side (`trace diff`), findings that appeared or vanished."""

    phases: list[dict[str, Any]] = field(default_factory=list)
    ops: list[dict[str, Any]] = field(default_factory=list)
    kernels: list[dict[str, Any]] = field(default_factory=list)
    findings_appeared: list[dict[str, Any]] = field(default_factory=list)
    findings_vanished: list[dict[str, Any]] = field(default_factory=list)
    memory_categories: list[dict[str, Any]] = field(default_factory=list)
    traces: dict[str, str | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def grew(self) -> list[str]:
        """Phase and operator names that grew, largest first (for one-line summaries)."""
        names = [f"{p['phase']} phase" for p in self.phases if p["grew"]]
        return names + [o["name"] for o in self.ops[:3]]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def phase_changes(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per phase: median over observations of the mean time per step, A and B, and the change.
    `share` is the phase's part of the whole step's change; `grew` marks the phases behind it."""
    pa = [f["phases"] for f in a if f.get("phases")]
    pb = [f["phases"] for f in b if f.get("phases")]
    if not pa or not pb:
        return []
    rows = []
    for phase in PHASES:
        a_s, b_s = float(np.median([p[phase] for p in pa])), float(np.median([p[phase] for p in pb]))
        rows.append({"phase": phase, "a_s": a_s, "b_s": b_s, "delta_s": b_s - a_s})
    total = sum(r["delta_s"] for r in rows)
    for row in rows:
        row["share"] = row["delta_s"] / total if total > 0 else None
        row["grew"] = total > 0 and row["delta_s"] > 0 and row["delta_s"] >= GREW_SHARE * total
    return sorted(rows, key=lambda r: -r["delta_s"])


def grown_rows(rows: Sequence[dict[str, Any]], *, min_delta_us: float = 0.0,
               top: int = TOP_ROWS) -> list[dict[str, Any]]:
    """The rows of a `trace diff` table that cost B at least `min_delta_us` more per step, largest
    first. Self time of `ProfilerStep#N` ranges, where present, is summed as one row."""
    merged: dict[str, dict[str, Any]] = {}
    for row in rows:
        name = "ProfilerStep (Python between operators)" if _PROFILER_STEP.match(row["name"]) else row["name"]
        into = merged.setdefault(name, {"name": name, "us_per_step_a": 0.0, "us_per_step_b": 0.0,
                                        "count_per_step_a": 0.0, "count_per_step_b": 0.0, "status": row["status"]})
        for key in ("us_per_step_a", "us_per_step_b", "count_per_step_a", "count_per_step_b"):
            into[key] += row[key]
    for row in merged.values():
        row["delta_us_per_step"] = row["us_per_step_b"] - row["us_per_step_a"]
        if row["name"].startswith("ProfilerStep ("):
            row["status"] = "slower" if row["delta_us_per_step"] > 0 else "same"
    grown = [r for r in merged.values() if r["delta_us_per_step"] > max(min_delta_us, 0.0)
             and r["status"] in ("slower", "added")]
    return sorted(grown, key=lambda r: -r["delta_us_per_step"])[:top]


def operator_coverage(rows: Sequence[dict[str, Any]], step_delta_s: float) -> str | None:
    """A note when the profiled operators' self time explains less than half of the step's growth:
    the extra time is then spent outside torch operators."""
    if step_delta_s <= 0:
        return None
    ops_delta_s = sum(r["delta_us_per_step"] for r in rows) / 1e6
    if ops_delta_s >= 0.5 * step_delta_s:
        return None
    return (f"torch operators account for {ops_delta_s * 1e3:+.3f} ms of the step's {step_delta_s * 1e3:+.3f} ms: "
            "the extra time is spent outside them (the script's own Python, sleeps, I/O, waiting on a lock, a "
            "process or the data pipeline)")


def findings_changes(a: Sequence[Finding], b: Sequence[Finding]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(appeared, vanished): findings of B not in A and of A not in B, by rule id, each as check's
    JSON writes it (`id`, `severity`, `title`)."""
    def brief(f: Finding) -> dict[str, Any]:
        return {"id": f.id, "severity": f.severity, "title": f.title}

    ids_a, ids_b = {f.id for f in a}, {f.id for f in b}
    return [brief(f) for f in b if f.id not in ids_a], [brief(f) for f in a if f.id not in ids_b]


def memory_changes(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Bytes per category at the step's memory peak (first observation that has them, per side)."""
    ca = next((f["memory_categories"] for f in a if f.get("memory_categories")), {})
    cb = next((f["memory_categories"] for f in b if f.get("memory_categories")), {})
    rows = [{"category": k, "a_bytes": ca.get(k, 0), "b_bytes": cb.get(k, 0),
             "delta_bytes": cb.get(k, 0) - ca.get(k, 0)} for k in sorted(set(ca) | set(cb))]
    return sorted([r for r in rows if r["delta_bytes"]], key=lambda r: -r["delta_bytes"])
