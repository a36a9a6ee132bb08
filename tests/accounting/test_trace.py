"""`diagnose --trace` on a healthy trace: the trace's breakdown as the waterfall (its shares adding
up to the step), its largest operators as cost centres, no peak ("peak not measured"), and a report
without findings that says what was checked instead of a bare "no findings"."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import torch
from rich.console import Console

from torchdoctor.workflow.diagnose import DiagnoseOutputs, diagnose_traces


def _healthy_trace(path: Path) -> Path:
    """A real profiler trace of a few steps of an MLP fed from memory (nothing waits, few operators),
    its matrix products large enough (about 0.1 s a step) that a loaded machine's slower dispatch
    of its ~140 operators stays a few percent of the step."""
    model = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 1024))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 1024)
    with torch.profiler.profile() as prof:
        for _ in range(4):
            opt.zero_grad()
            model(x).square().mean().backward()
            opt.step()
            prof.step()
    prof.export_chrome_trace(str(path))
    return path


def test_a_healthy_trace_shows_its_breakdown_and_what_was_checked(tmp_path: Path):
    console = Console(file=StringIO(), width=80, color_system=None, record=True)
    record = diagnose_traces([_healthy_trace(tmp_path / "trace.json")],
                             DiagnoseOutputs(console=console, save=False))
    accounting = record.accounting
    assert accounting["source"] == "trace" and accounting["mfu"] is None
    assert abs(sum(s["seconds"] for s in accounting["slices"]) - accounting["step_s"]) <= 1e-9
    assert accounting["notes"][0].startswith("peak not measured")
    text = console.export_text()
    assert [f.id for f in record.findings if f.severity != "info"] == [], text
    assert "Speed of light" in text and "rules checked, none found a bottleneck" in text
    assert "in aten::" in text
