"""Caveats: what changes how every figure of a Record reads, and the findings that it weakens.

A trace cut mid-write, events skipped for NaN times, junk items, repaired fields: the analysis
still runs, but its figures read differently (a GPU trace cut before its GPU events looks idle).
The trace analysis lists those problems as `caveats` (docs/trace.md). A busy machine is another:
other processes that used a material share of the machine's cores while the steps were timed
(environment.system's OTHERS_MATERIAL) slow and scatter every step, so each timing figure reads
slower and wider than the script runs alone. Here they are gathered for a Record (its `caveats`)
and written on every finding, so that no reader of the console, the JSON or the HTML takes a
figure or a weakened finding at full value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from torchdoctor.environment import Environment, SystemSection
from torchdoctor.environment.system import others_material
from torchdoctor.finding import Finding
from torchdoctor.jsonfields import readable
from torchdoctor.record import Record
from torchdoctor.trace.summary.trace_summary import TraceSummary

LOW, NORMAL = "low", "normal"


def record_caveats(record: Record) -> list[str]:
    """The caveats of `record`, in order: its trace analysis', then a busy machine's."""
    trace = readable(TraceSummary.from_dict, record.trace)
    busy = machine_load_caveat(record)
    return [*(trace.caveats if trace is not None else ()), *([busy] if busy else [])]


def machine_load_caveat(record: Record) -> str | None:
    """'other processes used 1.1 of the machine's 2 cores (55%) while the steps were timed; the step
    time ranged 0.021 s-0.634 s (p10-p90): ...' when their load over the timing window was material;
    None on a quiet machine, or when the load or the machine's cores were not recorded."""
    cpu = Environment.or_empty(record.env).cpu
    cores = cpu.logical_cores if cpu is not None else None
    others = SystemSection.summary_of(record.system).other_cores(cores)
    if others is None or not cores or not others_material(others, cores):
        return None
    summary = record.summary
    spread = (f"; the step time ranged {summary.step_s_p10:.3g} s-{summary.step_s_p90:.3g} s (p10-p90)"
              if summary.step_s_p10 is not None and summary.step_s_p90 is not None else "")
    return (f"other processes used {others:.1f} of the machine's {cores} cores ({others / cores:.0%}) while the "
            f"steps were timed{spread}: every timing figure is disturbed (slower and more scattered than the "
            "script runs alone), so compare runs only side by side on this machine")


def qualify_findings(findings: Sequence[Finding], caveats: Sequence[str]) -> list[Finding]:
    """Each finding with `confidence` ("low" when there are caveats, else "normal") and the
    `caveats` that lowered it; every finding shares them, as any figure may come from the input."""
    confidence = LOW if caveats else NORMAL
    return [replace(finding, confidence=confidence, caveats=tuple(caveats)) for finding in findings]
