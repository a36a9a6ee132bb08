"""Configuration rules: debug switches and deprecated APIs left in a training run.

Sources: PyTorch docs for CUDA_LAUNCH_BLOCKING ("for debugging"), TORCH_LOGS, TORCH_DISTRIBUTED_DEBUG
and NCCL_DEBUG; the torch.amp docs (torch.cuda.amp.* deprecated); the guides' README note on AMP.
"""

from __future__ import annotations

from torchdoctor.capability import requirement, supports
from torchdoctor.rules.capabilities import run_precision, run_torch
from torchdoctor.rules.base import Fix, Hit, rule
from torchdoctor.rules.evidence import Evidence

#: Debug settings and the values that slow a run (None: any value).
DEBUG_ENV = {"CUDA_LAUNCH_BLOCKING": {"1"}, "TORCH_LOGS": None, "TORCH_COMPILE_DEBUG": {"1"},
             "TORCH_DISTRIBUTED_DEBUG": {"DETAIL", "INFO"}, "NCCL_DEBUG": {"INFO", "TRACE"},
             "TORCH_SHOW_CPP_STACKTRACES": {"1"}}
#: Settings that serialise the whole device, so their cost scales with the launch count.
SERIALISING_ENV = {"CUDA_LAUNCH_BLOCKING"}


@rule("TD-CONF-001", "config")
def debug_environment(ev: Evidence) -> Hit | None:
    """Debug environment variables are set for a measured run."""
    env_vars = ev.env_vars()
    found = {k: v for k, v in env_vars.items()
             if k in DEBUG_ENV and (DEBUG_ENV[k] is None or str(v).upper() in DEBUG_ENV[k])}
    if not found:
        return None
    serialising = bool(set(found) & SERIALISING_ENV) and ev.uses_gpu()
    return Hit("problem" if serialising else "warning", "debug settings in the environment: " + ", ".join(found),
               0.0, {"env_vars": found},
               "CUDA_LAUNCH_BLOCKING makes every kernel launch synchronous; debug logging adds host work.",
               Fix("Unset them for training and benchmarks.", "unset " + " ".join(found)))


@rule("TD-CONF-002", "config", lint_topic="config.deprecated_api")
def deprecated_amp(ev: Evidence) -> Hit | None:
    """torch.cuda.amp.* is deprecated in favour of torch.amp.* (lint proves the call); a hint only.
    Not raised where the run's torch is known to predate torch.amp.GradScaler (2.3): there
    torch.cuda.amp is the API. The autocast dtype named is one the device runs (bf16 from Ampere on,
    fp16 otherwise and where the device is not known)."""
    hits = ev.lint_hits("config.deprecated_api")
    if not hits or supports("amp_grad_scaler", run_torch(ev)) is False:
        return None
    dtype = "bfloat16" if run_precision(ev).bf16 else "float16"
    return Hit("info", "deprecated torch.cuda.amp API", 0.0, {"lint": hits},
               "torch.cuda.amp.autocast/GradScaler warn and will be removed; torch.amp takes the device.",
               Fix("Use torch.amp" + (f" ({needs})." if (needs := requirement("amp_grad_scaler", run_torch(ev)))
                                      else "."),
                   f"with torch.amp.autocast('cuda', dtype=torch.{dtype}): ...\n"
                   "scaler = torch.amp.GradScaler('cuda')"))


_WINDOW_STATES = {
    "capture": ("the trace window is a CUDA/HIP graph capture: launches are recorded, not run",
                "During a stream capture kernel launches are recorded into a graph and almost no kernel runs, so "
                "GPU utilisation and idle time say nothing about the workload; no utilisation finding is raised.",
                Fix("Profile steps that replay the captured graph, after the capture (warm-up) steps.",
                    "schedule=torch.profiler.schedule(wait=5, warmup=2, active=3)  # past the capture")),
    "no_device_work": ("no device work in the trace window of a GPU run",
                       "The trace comes from a GPU run but no kernel, copy or memset ran in the analysed window "
                       "(device activities not recorded, or the window holds no GPU work); utilisation is not measured.",
                       Fix("Record the device activities over steps that run GPU work.",
                           "torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], ...)")),
    "graph_replay_without_kernels": ("graph replays whose kernels the trace does not show",
                                     "The window launches CUDA/HIP graphs but their kernels are missing from the trace, so "
                                     "the GPU would look idle while it runs them; utilisation is not reported.",
                                     Fix("Use a profiler/driver that records kernels inside graphs (CUDA 11.7+ CUPTI, "
                                         "recent ROCm), or profile without graphs.", "")),
}


@rule("TD-CONF-003", "config")
def window_not_measurable(ev: Evidence) -> Hit | None:
    """The trace window cannot say how busy the device is: a CUDA/HIP graph capture (most launches fall
    between StreamBeginCapture and StreamEndCapture), a GPU run with no device event in the window, or
    graph replays whose kernels are not in the trace. Info, upside 0: it names the window instead of
    ranking a utilisation it cannot measure (trace `window.state`, docs/trace.md)."""
    window = ev.window()
    if window.state not in _WINDOW_STATES:
        return None
    title, explanation, fix = _WINDOW_STATES[window.state]
    return Hit("info", title, 0.0, {"window_state": window.state, "window": window.kind,
                                    "window_us": round(window.figure("span_us"), 1)}, explanation, fix)
