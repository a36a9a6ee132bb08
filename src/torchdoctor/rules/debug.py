"""The script's own debugging tools left on during the measured steps: the autograd profiler and
gradcheck (anomaly detection: TD-COMP-007). Measured: `env.script_tools` is sampled at the timing
window's start, before torchdoctor's own profiler starts; gradcheck calls are timed in the window.

Sources: PyTorch docs for torch.profiler (overhead per recorded operator) and
torch.autograd.gradcheck (finite differences: two extra forwards per input element).
"""

from __future__ import annotations

from torchdoctor.rules.base import Fix, Hit, rule, severity_at
from torchdoctor.rules.evidence import Evidence

# Measured: forward+backward of a 6-layer 64-wide MLP at batch 32, CPU, one thread, best of 30:
# 0.216 ms without a profiler, 0.333 ms under torch.profiler.profile(CPU) (docs/rules.md).
PROFILER_SLOWDOWN = 1.5


def _lint(ev: Evidence, code: str) -> list[str]:
    return [hit for hit in ev.lint_hits("compute.debug_tools") if hit.endswith(code)]


@rule("TD-COMP-016", "compute", lint_topic="compute.debug_tools")
def script_profiler_on(ev: Evidence) -> Hit | None:
    """The script's own profiler (torch.profiler / autograd profiler) records every operator during
    the measured steps. Upside: the compute share times (1 - 1/PROFILER_SLOWDOWN), measured."""
    if not ev.script_tools().profiler_enabled:
        return None
    compute = ev.summary("forward_fraction") + ev.summary("backward_fraction") + ev.summary("optimizer_fraction")
    share = compute * (1 - 1 / PROFILER_SLOWDOWN)
    return Hit(severity_at(share, 0.05, 0.2) or "info", "the script's own profiler is on during training", share,
               {"profiler_enabled": True, "compute_fraction": round(compute, 4), "lint": _lint(ev, "TDL204")},
               "A running profiler records every operator call (and with record_shapes/with_stack, much more).",
               Fix("Profile a few steps with a schedule, or only when asked.",
                   "prof = torch.profiler.profile(schedule=torch.profiler.schedule(wait=5, warmup=1, active=3),\n"
                   "                              on_trace_ready=...)  # and call prof.step() each step"))


@rule("TD-COMP-017", "compute", lint_topic="compute.debug_tools")
def gradcheck_in_loop(ev: Evidence) -> Hit | None:
    """torch.autograd.gradcheck/gradgradcheck runs inside the measured steps. Upside: the measured
    time of those calls over the timing window."""
    tools = ev.script_tools()
    calls, spent_s = tools.gradcheck_calls or 0, tools.gradcheck_s or 0.0
    if not calls:
        return None
    share, window_s = ev.gradcheck_fraction(), ev.summary("window_s")
    return Hit(severity_at(share, 0.05, 0.2) or "info",
               f"gradcheck runs in the training loop ({share:.0%} of the time)",
               share, {"gradcheck_calls": calls, "gradcheck_s": round(spent_s, 6), "window_s": round(window_s, 6),
                       "lint": _lint(ev, "TDL205")},
               "gradcheck compares analytic gradients with finite differences: many extra forwards per call.",
               Fix("Check gradients in a unit test, not in the training loop.",
                   "def test_my_op_gradients():\n"
                   "    assert torch.autograd.gradcheck(my_op, (x.double().requires_grad_(),))"))
