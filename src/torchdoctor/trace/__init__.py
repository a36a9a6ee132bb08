"""Kineto trace analysis: streaming load, per-step and overall figures, several ranks, diffs.

Public API (kept stable; see docs/trace.md):
    load_trace(path) -> Trace
    analyse_traces(paths, config=None) -> TraceAnalysis   (TraceAnalysis.to_dict() is JSON-ready)
    diff_traces(a, b) -> TraceDiff                       (TraceDiff.to_dict())
"""

from __future__ import annotations

from torchdoctor.trace.config import TraceConfig
from torchdoctor.trace.diff import TraceDiff, diff_traces
from torchdoctor.trace.events import Trace
from torchdoctor.trace.loader import load_trace
from torchdoctor.trace.analysis import SCHEMA_VERSION, TraceAnalysis, analyse_traces

__all__ = [
    "SCHEMA_VERSION", "Trace", "TraceConfig", "TraceDiff", "TraceAnalysis",
    "analyse_traces", "diff_traces", "load_trace",
]  # fmt: skip
