"""Looking events up by name: per name once, then per row (trace/events.py)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from torchdoctor.trace.events import ANNOTATION, CPU_OP, is_kind
from torchdoctor.trace.loader import load_trace

TRACE = Path(__file__).resolve().parent / "fixtures" / "cpu-only-dataloader-workers.json.gz"


def test_rows_named_are_the_rows_of_those_kinds_whose_name_matches() -> None:
    trace = load_trace(TRACE)
    pattern = re.compile(r"DataLoader|aten::")  # DataLoader spans are annotations, aten:: calls operators
    named = [row for row in range(len(trace)) if pattern.search(trace.names[trace.name_id[row]])]
    spans = [row for row in named if trace.kind[row] == ANNOTATION]
    assert spans and len(spans) < len(named)
    assert trace.rows_named(pattern, (ANNOTATION,)).tolist() == spans
    assert trace.rows_named(pattern, (CPU_OP, ANNOTATION)).tolist() == named
    assert np.array_equal(np.flatnonzero(trace.name_mask(pattern) & is_kind(trace.kind, (ANNOTATION,))), spans)


def test_a_name_no_event_has_gives_no_rows() -> None:
    trace = load_trace(TRACE)
    pattern = re.compile(r"cudaStreamBeginCapture")
    assert not trace.name_table(pattern).any()
    rows = trace.rows_named(pattern, (CPU_OP,))
    assert rows.size == 0 and rows.dtype == np.int64
    assert trace.name_mask(pattern, np.arange(5)).tolist() == [False] * 5
