"""`max_self_us` of the host top list: the longest single call's self time of each operator."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchdoctor.trace import TraceConfig, analyse_traces


def test_the_longest_call_lies_between_the_mean_call_and_the_operators_total(cpu_trace: Path) -> None:
    top = analyse_traces([cpu_trace], TraceConfig(top_n=1000)).to_dict()["ranks"][0]["host"]["top_by_self_time"]
    assert any(op["count"] > 1 and op["max_self_us"] > op["mean_self_us"] * 1.01 for op in top)
    for op in top:
        assert op["mean_self_us"] <= op["max_self_us"] * (1 + 1e-9) <= op["self_us"] * (1 + 1e-9), op["name"]
        if op["count"] == 1:
            assert op["max_self_us"] == pytest.approx(op["self_us"]), op["name"]
