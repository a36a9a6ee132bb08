"""CompileCapture on real Dynamo runs (backend="eager": Dynamo's behaviour without codegen)."""

from __future__ import annotations

import subprocess
import sys

import torch
import torch._dynamo

from torchdoctor.observe.probes.compile import CompileCapture


def break_on_item(x: torch.Tensor) -> torch.Tensor:
    y = x * 2
    if y.sum().item() > 1e9:  # the graph break's line
        y = y - 1
    return y + 1


BREAK_LINE = break_on_item.__code__.co_firstlineno + 2


def capture(run) -> dict:
    torch._dynamo.reset()
    cap = CompileCapture()
    cap.start()
    try:
        run()
    finally:
        report = cap.stop()
    return report.to_dict()


def test_graph_breaks_name_the_users_line_and_reason():
    fn = torch.compile(break_on_item, backend="eager")
    report = capture(lambda: fn(torch.randn(4)))
    assert report["graph_count"] == 2 and report["graph_break_count"] == 1
    (brk,) = report["graph_breaks"]
    assert brk["filename"] == __file__ and brk["lineno"] == BREAK_LINE
    assert "item()" in brk["reason"]


def test_recompilations_give_the_guard_that_failed_and_the_limit_when_hit():
    fn = torch.compile(lambda x, n: x + n, backend="eager", dynamic=False)

    def run() -> None:
        with torch._dynamo.config.patch(recompile_limit=2):
            for n in range(4):
                fn(torch.randn(2), n + 0.5)

    report = capture(run)
    assert "n == 0.5" in report["recompiles"][0]["guard"]
    assert report["recompile_limit_hit"] == {"config": "recompile_limit", "limit": 2}


def test_a_model_dynamo_cannot_trace_is_reported_with_dynamos_reason():
    def untraceable(x: torch.Tensor) -> torch.Tensor:
        print("side effect")
        return x + 1

    fn = torch.compile(untraceable, backend="eager", fullgraph=True)

    def run() -> None:
        try:
            fn(torch.randn(2))
        except torch._dynamo.exc.Unsupported:
            pass  # the script's problem; the capture must still say why

    report = capture(run)
    (failure,) = report["failures"]
    assert failure["function"] == "untraceable" and "print" in failure["fail_reason"]


def test_a_run_without_torch_compile_reports_nothing():
    cap = CompileCapture()
    cap.start()
    torch.randn(3).sum()
    assert not cap.stop().used


def test_inductor_compile_time_is_measured():
    fn = torch.compile(lambda x: (x.sin() + 1).sum(), backend="inductor")
    report = capture(lambda: fn(torch.randn(8)))
    assert report["graph_count"] == 1 and report["compile_time_s"] > 0


FRESH_PROCESS = """
import sys, torch
from torchdoctor.observe.probes.compile import CompileCapture
cap = CompileCapture()
cap.start()
if sys.argv[1] == "compile":
    torch.compile(lambda x: x * 2 + 1, backend="eager")(torch.randn(3))
report = cap.stop()
print("dynamo" if "torch._dynamo" in sys.modules else "no dynamo", report.graph_count if report.used else None)
"""


def test_the_capture_imports_no_dynamo_and_still_sees_a_compile_that_imports_it_after_start():
    """In a fresh process, where torch has not imported Dynamo: a run that never compiles does not
    pay for Dynamo's imports, and one whose torch.compile imports it after start() is still counted."""
    def run(mode: str) -> str:
        proc = subprocess.run([sys.executable, "-c", FRESH_PROCESS, mode], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    assert run("none") == "no dynamo None"
    assert run("compile") == "dynamo 1"
