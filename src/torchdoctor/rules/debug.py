"""The script's own debugging tools left on during the measured steps: the autograd profiler,
gradcheck, and hooks on its modules (anomaly detection: TD-COMP-007). Measured: `env.script_tools`
is sampled at the timing window's start, before torchdoctor's own profiler starts; gradcheck calls
are timed in the window; the hooks are read off the modules at the end of the run
(`env.models[].script_hooks`) and their calls' cost from the operator-costs probe's `script_calls`.

Sources: PyTorch docs for torch.profiler (overhead per recorded operator),
torch.autograd.gradcheck (finite differences: two extra forwards per input element) and
`nn.Module.register_forward_hook` (the returned handle's `remove()`).
"""

from __future__ import annotations

from torchdoctor.environment import ScriptHook
from torchdoctor.rules.base import Fix, Hit, MissingEvidence, rule, severity_at
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


HOOKS_REPORTED, HOOKS_WARNING, HOOKS_PROBLEM = 0.05, 0.10, 0.25


def _hook_cost(hook: ScriptHook, calls: list[dict], frames: dict[str, float]) -> float:
    """Seconds a profiled step spent in `hook`'s function: its frames' time where the probe kept
    them, else the calls it made (one hook function can be registered on many modules)."""
    def mine(caller: str) -> bool:
        return caller.endswith(f" ({hook.function})") and caller.split(":")[0].endswith(hook.file or "")
    framed = sum(seconds for frame, seconds in frames.items() if mine(frame))
    made = sum(float(c.get("wall_s") or 0.0) for c in calls if mine(c["caller"]))
    return max(framed, made)


@rule("TD-COMP-062", "compute")
def module_hooks_every_call(ev: Evidence) -> Hit | None:
    """Hooks the script registered on its modules (`register_forward_hook` and the like, read off
    the outermost modules at the end of the run) run in every profiled step and take a share of it:
    a check or a logger that runs at every call of every module it is on (a NaN check on each
    layer's output, with a host sync per module on a GPU). Upside, estimated: the hook functions'
    share of the profiled step; reported from 5%."""
    hooks = [h for m in ev.models() for h in (m.script_hooks or ())]
    if not hooks:
        return None
    try:
        calls, step_s = ev.script_calls()
    except MissingEvidence:
        return None
    costs = [(h, _hook_cost(h, calls["calls"], calls.get("frames") or {})) for h in hooks]
    hook, seconds = max(costs, key=lambda item: item[1])
    share = min(1.0, sum(s for _, s in costs) / step_s)
    if share < HOOKS_REPORTED:
        return None
    where = f"{hook.file}:{hook.line}"
    return Hit(severity_at(share, HOOKS_WARNING, HOOKS_PROBLEM) or "info",
               f"the script's {hook.kind} hook {hook.function}() runs on {hook.modules} modules: "
               f"{share:.0%} of the step", share,
               {"hooks": [{"function": h.function, "source": f"{h.file}:{h.line}", "kind": h.kind,
                           "modules": h.modules} for h, _ in costs],
                "share_fraction": round(share, 4), "upside_basis": "estimated"},
               f"{hook.function} ({where}) is registered as a {hook.kind} hook on {hook.modules} module(s), so it "
               "runs at every call of each of them, in every step: its work (a check of the output, a "
               "statistic, a log line) takes "
               f"{share:.0%} of the step. A check such as torch.isfinite(...).all() read with bool() or "
               "item() also waits for the device once per module on a GPU.",
               Fix("Remove debugging hooks once they have answered their question (keep the handle that "
                   "register_forward_hook returns and call handle.remove()), or run them every N steps; to catch "
                   "NaNs, check the loss once a step, or use torch.autograd.detect_anomaly while debugging only.",
                   "handles = [m.register_forward_hook(check_finite) for m in model.modules()]\n"
                   "...  # once the NaN is found, or outside debugging runs:\n"
                   "for handle in handles:\n    handle.remove()\n"
                   "if not torch.isfinite(loss):   # one check a step\n    raise FloatingPointError(step)"))
