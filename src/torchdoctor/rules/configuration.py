"""Configuration rules: debug switches and deprecated APIs left in a training run.

Sources: PyTorch docs for CUDA_LAUNCH_BLOCKING ("for debugging"), TORCH_LOGS, TORCH_DISTRIBUTED_DEBUG
and NCCL_DEBUG; the torch.amp docs (torch.cuda.amp.* deprecated); the guides' README note on AMP.
"""

from __future__ import annotations

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
    env_vars = ev.env("env_vars")
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
    """torch.cuda.amp.* is deprecated in favour of torch.amp.* (lint proves the call); a hint only."""
    hits = ev.lint_hits("config.deprecated_api")
    if not hits:
        return None
    return Hit("info", "deprecated torch.cuda.amp API", 0.0, {"lint": hits},
               "torch.cuda.amp.autocast/GradScaler warn and will be removed; torch.amp takes the device.",
               Fix("Use torch.amp.", "with torch.amp.autocast('cuda', dtype=torch.bfloat16): ...\n"
                   "scaler = torch.amp.GradScaler('cuda')"))
