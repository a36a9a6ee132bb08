"""Compute-layer rules: is the device busy, and what keeps it from being busy or fast.

Sources: the guides' key-metrics table (/work/shared/guides/002_*: GPU utilisation, CPU total far
above CUDA total, kernel-launch share, a single operator abnormally slow) and troubleshooting table
(GPU utilisation below 50%); HolisticTraceAnalysis' definitions of idle time (host wait, kernel
wait) and kernel launch statistics; PyTorch docs for the switches named in each rule.
"""

from __future__ import annotations

import re
import statistics

from torchdoctor.rules.base import Fix, Hit, MissingEvidence, rule, severity_at
from torchdoctor.rules.evidence import Evidence

UTIL_WARNING = 0.70  # GPU busy share of the step below this: warning (issue 4, guides' 50% row)
UTIL_PROBLEM = 0.50
HOST_WAIT_SHARE = 0.5  # of the device's idle time spent waiting for the host
LAUNCH_SHORT_SHARE = 0.5  # kernels shorter than their launch call
OPS_PER_STEP = 300  # host operators per step before per-op overhead is worth a look
OVERHEAD_WARNING, OVERHEAD_PROBLEM = 0.15, 0.35  # step share lost to per-op overhead
HOT_OP_WARNING, HOT_OP_PROBLEM = 0.35, 0.55  # one operator's share of the step
HOT_OP_MIN_DISTINCT = 5  # operators needed before one of them can stand out
HOT_OP_MIN_MEAN_US = 100.0  # per call: a share made of many tiny calls is TD-COMP-003's, not one slow op
SYNC_WARNING, SYNC_PROBLEM = 0.05, 0.20  # device idle share right after sync calls
PHASE_WARNING, PHASE_PROBLEM = 0.20, 0.40  # optimizer / outside-phase shares of a step
# Operators that are expected to dominate a healthy step (dense math and communication).
_EXPECTED_HEAVY = re.compile(r"mm|matmul|conv|linear|gemm|attention|cudnn|mkldnn|nccl|gloo|memcpy|memset"
                             r"|embedding|lstm|gru|rnn|copy_|ProfilerStep", re.IGNORECASE)


def _median_step_us(rank: dict) -> float:
    if not rank.get("step_us_median"):
        raise MissingEvidence("trace step times")
    return float(rank["step_us_median"])


def _model_fraction(ev: Evidence, rank: dict) -> float:
    """Share of the profiled step in the model (not loading, not the optimizer), capped by the timed
    steps' forward + backward share when there are timed steps (so between-step work is excluded)."""
    shares = rank.get("shares") or {}
    traced = 1.0 - (shares.get("dataloader_fraction") or 0.0) - (shares.get("optimizer_fraction") or 0.0)
    try:
        return min(traced, ev.summary("forward_fraction") + ev.summary("backward_fraction"))
    except MissingEvidence:
        return traced


def host_overhead_share(ev: Evidence, rank: dict) -> float:
    """Share of the profiled step lost to per-operator overhead on the host: the model's share
    (forward and backward; loading, optimizer and between-step work have their own rules) less the
    self time of operators above the trace's small-op limit."""
    host = rank["host"]
    big_self_us = (host["self_total_us"] - host["small_ops_self_us"]) / max(1, rank.get("steps_count") or 1)
    return max(0.0, _model_fraction(ev, rank) - big_self_us / _median_step_us(rank))


def data_wait_share(ev: Evidence) -> float:
    """Share of the profiled step the host spent waiting for its next batch (the trace's DataLoader
    share, else the timed steps'). The GPU idles "waiting on the host" meanwhile, but the cause is
    the loader, which the data-layer rules name with their own fix: the host-bound and launch-bound
    rules leave this share out (measured on an H200, docs/gpu.md: the demo's GPU idled 99% of a step
    that waited 95% for data, and torch.compile was proposed for it)."""
    try:
        share = (ev.trace_rank().get("shares") or {}).get("dataloader_fraction")
        if share is not None:
            return float(share)
    except MissingEvidence:
        pass
    try:
        return ev.summary("data_wait_fraction")
    except MissingEvidence:
        return 0.0


def gpu_utilisation(ev: Evidence) -> float:
    ev.device()
    values = [s["gpu_utilisation_fraction"] for s in ev.trace_rank()["steps"]
              if s.get("gpu_utilisation_fraction") is not None]
    if not values:
        raise MissingEvidence("GPU utilisation per step")
    return statistics.median(values)


@rule("TD-COMP-001", "compute")
def low_gpu_utilisation(ev: Evidence) -> Hit | None:
    """The GPU is busy for less than 70% (warning) or 50% (problem) of the step. Guides' key-metrics
    row "GPU utilisation ~100% is best" and troubleshooting row "below 50%"."""
    util = gpu_utilisation(ev)
    severity = severity_at(-util, -UTIL_WARNING, -UTIL_PROBLEM)
    if severity is None:
        return None
    idle = ev.device()["idle"]
    return Hit(severity, f"GPU busy only {util:.0%} of the step", 1.0 - util,
               {"gpu_utilisation_fraction": round(util, 4),
                "idle_host_wait_fraction": idle.get("host_wait_fraction"),
                "idle_sync_fraction": idle.get("sync_fraction")},
               "Kernels run for this share of the step; the rest of the time the GPU has nothing queued. "
               "The findings below name the cause (host overhead, data, synchronisation).",
               Fix("Find what the GPU waits for (see the other findings) and overlap or remove it.",
                   "torchdoctor diagnose --html report.html -- train.py  # look at the step timeline"))


@rule("TD-COMP-002", "compute", knob="compile")
def host_bound(ev: Evidence) -> Hit | None:
    """The GPU idles mostly because the host has not launched the next kernel yet (HTA idle time:
    host wait), not counting the step's wait for data (the data rules'). Guides' key-metrics row
    "CPU total time far above CUDA total time"."""
    device = ev.device()
    temporal, idle = device["temporal"], device["idle"]
    host_wait = idle.get("host_wait_fraction") or 0.0
    data = data_wait_share(ev)  # the loader's share: TD-DATA-00x's, not this rule's
    share = max(0.0, temporal["idle_fraction"] * host_wait - data)
    severity = severity_at(share, 1 - UTIL_WARNING, 1 - UTIL_PROBLEM)
    if severity is None or host_wait < HOST_WAIT_SHARE:
        return None
    return Hit(severity, f"GPU idle {share:.0%} of the time waiting on the host", share,
               {"device_idle_fraction": round(temporal["idle_fraction"], 4),
                "idle_host_wait_fraction": round(host_wait, 4), "data_wait_fraction": round(data, 4),
                "device_span_us": temporal["span_us"]},
               "The CPU side (Python, operator dispatch, launches) is slower than the kernels it feeds; "
               "time spent waiting for the next batch is left out (the data findings cover it).",
               Fix("Cut host work per kernel: fuse with torch.compile, use CUDA graphs for small steps.",
                   "model = torch.compile(model)  # or mode='reduce-overhead' for CUDA graphs"))


@rule("TD-COMP-003", "compute", knob="compile")
def launch_bound(ev: Evidence) -> Hit | None:
    """Many tiny operators or kernels per step: dispatch/launch overhead outweighs the work (on a GPU:
    the idle share outside the data wait times the share of kernels shorter than their launch). Guides'
    key-metrics row "kernel launch share high -> torch.compile fusion"; HTA launch statistics."""
    rank = ev.trace_rank()  # profiler overhead inflates tiny-op steps: no representativeness check
    try:
        if ev.anomaly_detection():
            return None  # anomaly mode inflates every operator: TD-COMP-007 explains the overhead
    except MissingEvidence:
        pass
    if ev.single_sample_inference():
        return None  # batching requests amortises the overhead: TD-COMP-018's fix
    if rank.get("device"):
        launches = rank["device"]["launches"]
        short = launches.get("gpu_shorter_than_launch_fraction") or 0.0
        data = data_wait_share(ev)  # idle while the host waits for data is not launch overhead
        share = max(0.0, rank["device"]["temporal"]["idle_fraction"] - data) * short
        evidence = {"launches_per_step": launches["launches_per_step"], "kernels_shorter_than_launch_fraction":
                    round(short, 4), "median_kernel_us": launches.get("median_gpu_us"),
                    "median_launch_us": launches.get("median_cpu_us"), "data_wait_fraction": round(data, 4)}
        if short < LAUNCH_SHORT_SHARE:
            return None
    else:
        steps = max(1, rank.get("steps_count") or 1)
        host = rank["host"]
        per_step = host["ops_count"] / steps  # all ops: a loaded CPU pushes tiny ops over the small-op limit
        share = host_overhead_share(ev, rank)
        evidence = {"ops_per_step": round(per_step, 1), "small_ops_per_step": round(host["small_ops_count"] / steps, 1),
                    "step_us_median": round(_median_step_us(rank), 1)}
        if per_step < OPS_PER_STEP:
            return None
    severity = severity_at(share, OVERHEAD_WARNING, OVERHEAD_PROBLEM)
    if severity is None:
        return None
    return Hit(severity, f"many tiny operators: about {share:.0%} of the step is per-operator overhead", share,
               evidence, "Each operator pays a fixed dispatch (and on GPUs, launch) cost that here exceeds its work.",
               Fix("Fuse the small operators (torch.compile) or batch the work into fewer, larger tensors.",
                   "model = torch.compile(model)"))


@rule("TD-COMP-004", "compute")
def hot_operator(ev: Evidence) -> Hit | None:
    """One operator (not a matmul/conv/communication) takes an abnormal share of the step, in every
    profiled host step (a one-off stall inflates one step's operator, not all). Guides' key-metrics
    row "single operator abnormally slow -> a non-optimal implementation"."""
    rank = ev.profiled_rank()
    window_us = _median_step_us(rank) * max(1, rank.get("steps_count") or 1)
    if rank.get("device"):
        span = rank["device"]["temporal"]["span_us"] or window_us
        candidates = [(k["name"], k["total_us"] / span) for k in rank["device"]["kernels"]["top"]]
    else:
        candidates = [(o["name"], o["self_us"] / window_us) for o in rank["host"]["top_by_self_time"]
                      if o.get("mean_self_us", HOT_OP_MIN_MEAN_US) >= HOT_OP_MIN_MEAN_US]
    if len(rank["host"]["top_by_self_time"]) < HOT_OP_MIN_DISTINCT:
        return None  # a trace of a few operators has no "abnormal" share
    candidates = [c for c in candidates if not _EXPECTED_HEAVY.search(c[0])]
    if not candidates:
        return None
    name, share = max(candidates, key=lambda c: c[1])
    severity = severity_at(share, HOT_OP_WARNING, HOT_OP_PROBLEM)
    if severity is None or (not rank.get("device") and not _hot_in_every_step(rank, name)):
        return None
    return Hit(severity, f"one operator, {name}, takes {share:.0%} of the step", share,
               {"operator": name, "operator_share_fraction": round(share, 4), "window_us": round(window_us, 1)},
               "An operator outside dense math rarely needs this much time; it is often a slow implementation "
               "or work that could be done once instead of every step.",
               Fix("Find the call in the profile and replace it (a fused/vectorised op, or compute it less often).",
                   "torchdoctor trace analyze TRACE --top 20  # with_stack=True shows where it is called"))


def _hot_in_every_step(rank: dict, name: str) -> bool:
    """`name` passes the warning share in each profiled step that lists its operators."""
    for step in rank.get("steps") or []:
        ops = {o["name"]: o["self_us"] for o in (step.get("host") or {}).get("top_by_self_time") or []}
        if ops and ops.get(name, 0.0) < HOT_OP_WARNING * step["wall_us"]:
            return False
    return True


@rule("TD-COMP-005", "compute", lint_topic="compute.host_sync")
def host_device_syncs(ev: Evidence) -> Hit | None:
    """The host blocks on the device inside the step (.item(), .cpu(), print(tensor)) and the GPU then
    idles. HTA idle time after sync calls; PyTorch "avoid unnecessary synchronisation" docs."""
    rank, device = ev.trace_rank(), ev.device()
    sync_share = device["temporal"]["idle_fraction"] * (device["idle"].get("sync_fraction") or 0.0)
    severity = severity_at(sync_share, SYNC_WARNING, SYNC_PROBLEM)
    if severity is None or not rank.get("sync_calls_per_step"):
        return None
    names = {}
    for step in rank["steps"]:
        for name, v in (step.get("sync_calls") or {}).get("by_name", {}).items():
            names[name] = names.get(name, 0) + v["count"]
    return Hit(severity, f"{rank['sync_calls_per_step']:.0f} host-device syncs per step; GPU idle {sync_share:.0%} after them",
               sync_share, {"sync_calls_per_step": rank["sync_calls_per_step"], "sync_calls_by_name": names,
                            "idle_after_sync_fraction": round(sync_share, 4)},
               "Each sync makes the CPU wait for the GPU to drain, then the GPU waits for the CPU to refill it.",
               Fix("Keep values on the device; read them once every N steps.",
                   "running = running + loss.detach()   # instead of loss.item() every step\n"
                   "if step % 100 == 0: print(running.item() / 100)"))


@rule("TD-COMP-006", "compute", knob="tf32")
def fp32_matmuls(ev: Evidence) -> Hit | None:
    """Matmul/conv kernels run in full fp32 on a GPU with Tensor Cores (TF32/bf16 unused). PyTorch
    docs "TensorFloat-32 on Ampere" and torch.amp; guides' AMP section (1.5-2x)."""
    kernels = ev.device()["kernels"]
    fp32 = [k for k in kernels["top"] if re.search(r"sgemm|gemm.*f32|fp32.*gemm|scudnn", k["name"], re.I)
            and not re.search(r"tf32|tensorop|bf16|f16|h\d*gemm", k["name"], re.I)]
    share = sum(k["share_fraction"] for k in fp32)
    util = gpu_utilisation(ev)
    severity = severity_at(share * util, 0.10, 0.30) or ("info" if share >= 0.1 else None)
    if severity is None:
        return None
    return Hit(severity, f"fp32 matmul kernels take {share:.0%} of GPU time", share * util / 2,
               {"fp32_gemm_kernel_share_fraction": round(share, 4), "gpu_utilisation_fraction": round(util, 4),
                "kernels": [k["name"][:80] for k in fp32[:3]]},
               "Full-precision matmuls skip the Tensor Cores; TF32 or bf16 autocast usually halve their time.",
               Fix("Allow TF32, or run the forward under bf16 autocast.",
                   "torch.set_float32_matmul_precision('high')\n"
                   "with torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(x)"))
