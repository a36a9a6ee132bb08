"""One trace read two ways must give the same columns: the check shared by the fast-path and the
two-process tests."""

from __future__ import annotations

import numpy as np

COLUMNS = ("kind", "name_id", "ts_us", "dur_us", "pid", "tid", "stream", "correlation", "external_id", "bytes")


def assert_same_trace(a, b) -> None:
    """Equal names, columns, metadata, dialect, memory events, warnings, truncation and rank."""
    assert a.names == b.names
    for column in COLUMNS:
        assert np.array_equal(getattr(a, column), getattr(b, column)), column
    assert (a.metadata, a.dialect, a.memory, a.warnings, a.truncated, a.rank) == \
        (b.metadata, b.dialect, b.memory, b.warnings, b.truncated, b.rank)
