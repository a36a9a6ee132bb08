"""Locating a regression: phases and memory categories from the rounds' figures, operators,
kernels and findings from one profiled observation per side (`trace diff`)."""

from __future__ import annotations

from typing import Any

from torchdoctor.analyse import analyse_record
from torchdoctor.check.context import CheckContext
from torchdoctor.check.decisions import REGRESSION
from torchdoctor.check.location import (OP_SHARE, Location, findings_changes, grown_rows, memory_changes,
                                        operator_coverage, phase_changes)
from torchdoctor.check.runner import Runner
from torchdoctor.errors import CheckError
from torchdoctor.rules import diagnose_record


def locate(context: CheckContext, runner: Runner, a_figures: list[dict[str, Any]],
           b_figures: list[dict[str, Any]]) -> Location:
    """Where B's extra time or memory went. Profiles are skipped with --no-locate, when the step time
    did not regress, or when side A is a stored baseline; a failed or stopped profile is a note."""
    result = context.result
    location = Location(phases=phase_changes(a_figures, b_figures))
    memory = result.metric("peak_memory")
    if memory is not None and memory.gate == REGRESSION:
        location.memory_categories = memory_changes(a_figures, b_figures)
    if result.metrics[0].gate != REGRESSION:
        return location
    if "A" not in runner.sides:
        location.notes.append("side A is a stored baseline: no profile of it to diff against")
        return location
    if not context.options.locate:
        location.notes.append("profiling skipped (--no-locate)")
        return location
    try:
        profile_and_diff(context, runner, location)
    except KeyboardInterrupt:
        location.notes.append(f"interrupted ({context.stop_name()}) while profiling: operators not located")
    except CheckError as exc:
        location.notes.append(f"profiling failed: {exc}")
    return location


def profile_and_diff(context: CheckContext, runner: Runner, location: Location) -> None:
    """One profiled observation per side; `location` gets their traces, the operators and kernels
    that grew, and the findings that appeared or vanished."""
    from torchdoctor.trace import diff_traces

    records = {}
    for name in ("A", "B"):
        context.progress.phase(f"profiling {name} to locate the slowdown")
        records[name] = analyse_record(runner.observe(name, purpose="profile", profile=True), lint=False)
    traces = {name: (r.artifacts.get("traces") or [None])[0] for name, r in records.items()}
    location.traces = traces
    if traces["A"] and traces["B"]:
        diff = diff_traces(traces["A"], traces["B"])
        step_delta_s = sum(p["delta_s"] for p in location.phases)
        floor_us = OP_SHARE * step_delta_s * 1e6
        location.ops = grown_rows(diff.ops, min_delta_us=floor_us)
        location.kernels = grown_rows(diff.kernels, min_delta_us=floor_us)
        note = operator_coverage(diff.ops, step_delta_s)
        if note:
            location.notes.append(note)
    else:
        location.notes.append("a side wrote no profiler trace: operators not compared")
    findings = {name: diagnose_record(r) for name, r in records.items()}
    location.findings_appeared, location.findings_vanished = findings_changes(findings["A"], findings["B"])
