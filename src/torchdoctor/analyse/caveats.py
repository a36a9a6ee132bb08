"""Input caveats: what was wrong with a Record's input, and the findings that it weakens.

A trace cut mid-write, events skipped for NaN times, junk items, repaired fields: the analysis
still runs, but its figures read differently (a GPU trace cut before its GPU events looks idle).
The trace analysis lists those problems as `caveats` (docs/trace.md); here they are gathered for a
Record and written on every finding, so that no reader of the console, the JSON or the HTML takes
a weakened finding at full value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from torchdoctor.finding import Finding
from torchdoctor.jsonfields import readable
from torchdoctor.record import Record
from torchdoctor.trace.summary.trace_summary import TraceSummary

LOW, NORMAL = "low", "normal"


def record_caveats(record: Record) -> list[str]:
    """The input caveats of `record`'s analyses (today: its trace analysis), in order."""
    trace = readable(TraceSummary.from_dict, record.trace)
    return list(trace.caveats) if trace is not None else []


def qualify_findings(findings: Sequence[Finding], caveats: Sequence[str]) -> list[Finding]:
    """Each finding with `confidence` ("low" when there are caveats, else "normal") and the
    `caveats` that lowered it; every finding shares them, as any figure may come from the input."""
    confidence = LOW if caveats else NORMAL
    return [replace(finding, confidence=confidence, caveats=tuple(caveats)) for finding in findings]
