"""Compute-layer rules: is the device busy, and what keeps it from being busy or fast.

Sources: the guides' key-metrics table (/work/shared/guides/002_*: GPU utilisation, CPU total far
above CUDA total, kernel-launch share, a single operator abnormally slow) and troubleshooting table
(GPU utilisation below 50%); HolisticTraceAnalysis' definitions of idle time (host wait, kernel
wait) and kernel launch statistics; PyTorch docs for the switches named in each rule.
"""

from __future__ import annotations

import re
import statistics

from torchdoctor.probe_values import COMPILE_SPEED
from torchdoctor.rules.base import Fix, Hit, MissingEvidence, rule, severity_at
from torchdoctor.rules.capabilities import gated_fix, precision_fix, run_precision
from torchdoctor.rules.evidence import Evidence
from torchdoctor.trace.summary.rank import OpFigures, RankSummary
from torchdoctor.trace.summary.window import Window
from torchdoctor.rules.probed import measured_evidence, measured_phrase, no_clear_gain

UTIL_WARNING = 0.70  # GPU busy share of the step below this: warning (docs/rules.md, TD-COMP-001)
UTIL_PROBLEM = 0.50
HOST_WAIT_SHARE = 0.5  # of the device's idle time spent waiting for the host
LAUNCH_SHORT_SHARE = 0.5  # kernels shorter than their launch call
OPS_PER_STEP = 300  # host operators per step before per-op overhead is worth a look
OVERHEAD_WARNING, OVERHEAD_PROBLEM = 0.15, 0.35  # step share lost to per-op overhead
HOT_OP_WARNING, HOT_OP_PROBLEM = 0.35, 0.55  # one operator's share of the step
HOT_OP_MIN_DISTINCT = 5  # operators needed before one of them can stand out
HOT_OP_MIN_MEAN_US = 100.0  # per call: a share made of many tiny calls is TD-COMP-003's, not one slow op
#: A profiled step longer than this times the shortest was slowed by the host's load (calm steps of the
#: Trainer field script vary by up to 9%, of the tiny-ops workload 2%; the stalls seen under load, 17% and more).
DISTURBED_STEP = 1.15
#: Timed steps the profiled step is set against: the last of the timing window, which ends two steps
#: (the profiler's wait and warm-up) before the first profiled one.
NEIGHBOUR_STEPS = 5
SYNC_WARNING, SYNC_PROBLEM = 0.05, 0.20  # device idle share right after sync calls
SYNC_INFO = 0.01  # below the warning, syncs that cost at least this share of the window are named (info)
PHASE_WARNING, PHASE_PROBLEM = 0.20, 0.40  # optimizer / outside-phase shares of a step
TENSOR_CORE_MAJOR = 7  # compute capability from which NVIDIA GPUs have Tensor Cores (Volta)
# Operators that are expected to dominate a healthy step (dense math and communication).
# Copies and dtype conversions (aten::copy_, aten::to) are not among them: converting tensors every step
# is a cost worth naming (the guides' "copies at the top of the profile"). Device transfers
# (memcpy/memset kernels) are, and have their own rules (TD-DATA-006).
#: A pooling layer is the network's own work beside the convolution it follows: on a CPU, a small
#: CNN's `max_pool2d_with_indices` takes 40% of its step, and the usual fix (channels_last) took
#: 4-6% off that step (benchmarks/results/2026-12-07-blind-false-alarms.md).
_EXPECTED_HEAVY = re.compile(r"mm|matmul|conv|linear|gemm|attention|cudnn|mkldnn|nccl|gloo|memcpy|memset"
                             r"|embedding|lstm|gru|rnn|pool|ProfilerStep", re.IGNORECASE)
#: The operators that copy or convert a tensor (dtype or device).
_CONVERSION = re.compile(r"^aten::(to|_to_copy|copy_|_copy_from|_copy_from_and_resize)$")


def _median_step_us(rank: RankSummary) -> float:
    if not rank.step_us_median:
        raise MissingEvidence("trace step times")
    return float(rank.step_us_median)


def _model_fraction(ev: Evidence, rank: RankSummary) -> float:
    """Share of the profiled step in the model (not loading, not the optimizer), capped by the timed
    steps' forward + backward share when there are timed steps (so between-step work is excluded)."""
    traced = 1.0 - (rank.shares.dataloader_fraction or 0.0) - (rank.shares.optimizer_fraction or 0.0)
    try:
        return min(traced, ev.summary("forward_fraction") + ev.summary("backward_fraction"))
    except MissingEvidence:
        return traced


def host_overhead(ev: Evidence, rank: RankSummary) -> dict[str, float]:
    """Per-operator overhead on the host in an unprofiled step: the model's time in the profiled
    step (forward and backward; loading, optimizer and between-step work have their own rules) less
    the self time of operators above the trace's small-op limit, less what the profiler itself added.

    The profiler pays a cost at every operator it records, so a step of many tiny operators is
    longer profiled than timed; that difference is overhead the unprofiled script never pays, and
    fusing cannot win it back. All of it is taken off (most of it falls on the many small operators
    that make this overhead; the rest, on the optimizer's, makes the claim a little low). Measured
    on the HF Trainer field script (docs/field.md): profiled 13.7 ms, timed 10.0 ms; the overhead
    counted in the profiled step claimed 30% where compiling measured x1.00-x1.06; less the profiler's
    3.7 ms it is 3%. The profiled step is set against the timed steps nearest to it in time
    (NEIGHBOUR_STEPS): on a shared machine the load drifts over a run, and against the whole timing
    window a run whose early steps were slowed showed no difference to take off. With a trace alone
    (no timed steps) nothing is taken off.

    Profiled steps the host's load slowed are left out (`_undisturbed_step`): a tiny call
    descheduled by another process lasts past the small-op limit and would count as big work as
    well as inside the profiler's difference, taken off twice.

    `share`: of the timed step (the profiled one without timed steps); the figures in microseconds."""
    profiled_us, big_self_us = _undisturbed_step(rank)
    try:
        timed_us = statistics.median(ev.step_walls_s()[-NEIGHBOUR_STEPS:]) * 1e6
    except MissingEvidence:
        timed_us = profiled_us
    profiler_us = max(0.0, profiled_us - timed_us)
    overhead_us = max(0.0, _model_fraction(ev, rank) * profiled_us - big_self_us - profiler_us)
    return {"share": overhead_us / timed_us, "overhead_us": overhead_us, "profiled_step_us": profiled_us,
            "timed_step_us": timed_us, "profiler_us": profiler_us}


def _undisturbed_step(rank: RankSummary) -> tuple[float, float]:
    """(wall, self time of the operators above the small-op limit) of a profiled step the host's
    load left alone, in microseconds: the medians over the profiled steps within DISTURBED_STEP of
    the shortest (over all steps without per-step detail).

    A busy neighbour process deschedules calls at random, and a tiny call held for a time slice
    passes the small-op limit. Seen in CI on the zoo's compute_tiny_ops, and reproduced beside two
    busy processes (1 run in 5): profiled at 40.4 ms a step for 14.6 ms timed, with 14.8 ms of such
    work a step (1.4-1.7 ms in calm runs), the stall was taken off twice and the overhead came out
    0. In another loaded run the two profiled steps took 25.0 and 21.3 ms with 5.9 and 1.7 ms of it.
    Not simply the shortest step: of three calm steps it is the one whose calls crossed the limit
    least, and on the Trainer that claimed 19% for the medians' 14-17%."""
    steps = [s for s in rank.steps if s.host.keys and s.wall_us]
    if not steps:
        return _median_step_us(rank), (rank.host.self_total_us - rank.host.small_ops_self_us) / max(1, rank.steps_count)
    shortest = min(s.wall_us for s in steps)
    calm = [s for s in steps if s.wall_us <= DISTURBED_STEP * shortest]
    return (float(statistics.median(s.wall_us for s in calm)),
            float(statistics.median(s.host.self_total_us - s.host.small_ops_self_us for s in calm)))


def host_overhead_share(ev: Evidence, rank: RankSummary) -> float:
    """`host_overhead(...)["share"]`: the share of an unprofiled step lost to per-operator overhead."""
    return host_overhead(ev, rank)["share"]


def gpu_utilisation(ev: Evidence) -> float:
    """Share of the trace window with a kernel running (the least busy device's; docs/trace.md)."""
    return ev.device_window().figure("kernel_utilisation_fraction")


def window_evidence(window: Window, *figures: str) -> dict:
    """The window's kind and span, which every window-based finding states, plus `figures` rounded."""
    return {"window": window.kind, "window_us": round(window.figure("span_us"), 1),
            **{name: round(window.figure(name), 4) for name in figures}}


IDLE_KEYS = ("idle_fraction", "idle_data_fraction", "idle_sync_fraction", "idle_host_fraction", "idle_device_fraction")


@rule("TD-COMP-001", "compute")
def low_gpu_utilisation(ev: Evidence) -> Hit | None:
    """Kernels run for less than 70% (warning) or 50% (problem) of the trace window (the TensorBoard
    plugin's GPU utilisation, its "< 50%" rule; guides' key-metrics row "GPU utilisation ~100% is
    best"). Upside: the idle share not waiting for data (the data wait is TD-DATA-009's, a data-layer
    fix). Not raised on a capture or a window without visible device work (TD-CONF-003)."""
    window = ev.device_window()
    util = window.figure("kernel_utilisation_fraction")
    severity = severity_at(-util, -UTIL_WARNING, -UTIL_PROBLEM)
    if severity is None:
        return None
    data = window.figure("idle_data_fraction")
    upside = max(0.0, window.figure("idle_fraction") - data)
    waits = f"; {data:.0%} of the window it waits for data" if data >= 0.01 else ""
    return Hit(severity, f"GPU runs kernels only {util:.0%} of the step window{waits}", upside,
               {**window_evidence(window, "kernel_utilisation_fraction", *IDLE_KEYS)},
               "Kernels run for this share of the window; the rest of the time the GPU has nothing to run. The idle "
               "time is split by what the host was doing: in the DataLoader (data), blocked in a sync (sync), "
               "or busy elsewhere (host); the findings below name each cause.",
               Fix("Find what the GPU waits for (see the other findings) and overlap or remove it.",
                   "torchdoctor diagnose --html report.html -- train.py  # look at the step timeline"))


@rule("TD-COMP-002", "compute", knob="compile")
def host_bound(ev: Evidence) -> Hit | None:
    """The GPU idles mostly because the host has not launched the next kernel yet (HTA idle time:
    host wait), not counting the step's wait for data: the window attributes idle time in the DataLoader
    to data (TD-DATA-009's, a data-layer fix). Guides' key-metrics row "CPU total time far above CUDA
    total time"."""
    window = ev.device_window()
    share, idle = window.figure("idle_host_fraction"), window.figure("idle_fraction")
    severity = severity_at(share, 1 - UTIL_WARNING, 1 - UTIL_PROBLEM)
    if severity is None or share < HOST_WAIT_SHARE * idle:
        return None
    return Hit(severity, f"GPU idle {share:.0%} of the step window waiting on the host", share,
               window_evidence(window, *IDLE_KEYS),
               "The CPU side (Python, operator dispatch, launches) is slower than the kernels it feeds; "
               "time spent waiting for the next batch is left out (the data findings cover it).",
               gated_fix(ev, "compile", Fix("Cut host work per kernel: fuse with torch.compile, use CUDA graphs "
                                            "for small steps.",
                                            "model = torch.compile(model)  # or mode='reduce-overhead' for CUDA graphs"),
                         "g = torch.cuda.CUDAGraph()  # capture the step once, replay it (torch >= 1.10)"))


@rule("TD-COMP-003", "compute", knob="compile")
def launch_bound(ev: Evidence) -> Hit | None:
    """Many tiny operators or kernels per step: dispatch/launch overhead outweighs the work (on a GPU:
    the idle share outside the data wait times the share of kernels shorter than their launch; on a
    CPU: what the observation's compile probe measured with the model compiled, 1 - 1/speed-up, and
    nothing when the probe did not judge it faster (rules/probed.py), else the per-operator overhead
    of an unprofiled step, `host_overhead`, marked "estimated").
    Guides' key-metrics row "kernel launch share high -> torch.compile fusion"; HTA launch statistics.

    The estimate is what compiling could win, not what it wins: on the Hugging Face Trainer field
    script it claimed 14-22% where compiling measured x1.00-x1.06 (graph breaks, Dynamo's guards),
    on the zoo's compute_tiny_ops x4.3 where it measured x7 (docs/field.md); hence the probe."""
    rank = ev.trace_rank()  # profiler overhead inflates tiny-op steps: no representativeness check
    try:
        if ev.anomaly_detection():
            return None  # anomaly mode inflates every operator: TD-COMP-007 explains the overhead
    except MissingEvidence:
        pass
    if ev.single_sample_inference():
        return None  # batching requests amortises the overhead: TD-COMP-018's fix
    if rank.has_device:
        window = ev.device_window()
        launches = ev.device().launches
        short = launches.gpu_shorter_than_launch_fraction or 0.0
        # idle while the host dispatches or the device starts the next launch; data and sync waits are not overhead
        dispatch = window.figure("idle_host_fraction") + window.figure("idle_device_fraction")
        share = dispatch * short
        evidence = {"launches_per_step": launches.launches_per_step, "kernels_shorter_than_launch_fraction":
                    round(short, 4), "median_kernel_us": launches.median_gpu_us,
                    "median_launch_us": launches.median_cpu_us,
                    **window_evidence(window, "idle_host_fraction", "idle_device_fraction")}
        if short < LAUNCH_SHORT_SHARE:
            return None
    else:
        steps = max(1, rank.steps_count)
        per_step = rank.host.ops_count / steps  # all ops: a loaded CPU pushes tiny ops over the small-op limit
        overhead = host_overhead(ev, rank)
        share = overhead["share"]
        evidence = {"ops_per_step": round(per_step, 1), "small_ops_per_step": round(rank.host.small_ops_count / steps, 1),
                    "profiled_step_us": round(overhead["profiled_step_us"], 1),
                    "timed_step_us": round(overhead["timed_step_us"], 1),
                    "profiler_overhead_us": round(overhead["profiler_us"], 1),
                    "per_op_overhead_us": round(overhead["overhead_us"], 1)}
        if per_step < OPS_PER_STEP:
            return None
    title, claim = f"many tiny operators: about {share:.0%} of the step is per-operator overhead", ""
    probe = COMPILE_SPEED.of(ev.record) or {}
    if not rank.has_device and probe.get("complete") and probe.get("speedup"):
        if no_clear_gain(probe):
            return None  # compiling measured no clear gain in this run, whatever the profile estimates
        estimated, share = share, max(0.0, 1 - 1 / probe["speedup"])
        evidence = {**measured_evidence(probe), "compile_s": round(probe["lead_in_s"], 2),
                    "estimated_share": round(estimated, 4), **evidence}
        title = f"many tiny operators: compiling the model took {share:.0%} off the step"
        how = f"alternating blocks compiled and eager, after {probe['lead_in_s']:.1f} s of compiling"
        claim = (f" Compiled, the step measured {measured_phrase(probe, how)}; "
                 f"the profile's estimate was {estimated:.0%}.")
    elif not rank.has_device:
        evidence["upside_basis"] = "estimated"
    severity = severity_at(share, OVERHEAD_WARNING, OVERHEAD_PROBLEM)
    if severity is None:
        return None
    return Hit(severity, title, share, evidence,
               "Each operator pays a fixed dispatch (and on GPUs, launch) cost that here exceeds its work." + claim,
               gated_fix(ev, "compile", Fix("Fuse the small operators (torch.compile) or batch the work into "
                                            "fewer, larger tensors.", "model = torch.compile(model)"),
                         "# batch the work: one operator on a stacked tensor instead of one per item"))


@rule("TD-COMP-004", "compute")
def hot_operator(ev: Evidence) -> Hit | None:
    """One operator (not a matmul/conv/communication) takes an abnormal share of the step, in every
    profiled host step (a one-off stall inflates one step's operator, not all), and on the host with
    its slowest call counted at its other calls' mean (`_typical_self_us`): a stall is not a hot
    operator. Guides' key-metrics row "single operator abnormally slow -> a non-optimal
    implementation"."""
    rank = ev.profiled_rank()
    window_us = _median_step_us(rank) * max(1, rank.steps_count)
    if rank.has_device:
        ev.device_window()  # a capture's or a replay's kernel shares rank nothing (TD-CONF-003)
        device = ev.device()
        span = device.temporal.span_us or window_us
        candidates = [(k.name, k.total_us / span) for k in device.kernels.top]
    else:
        candidates = [(o.name, _typical_self_us(o) / window_us) for o in rank.host.top_by_self_time
                      if _typical_self_us(o) / (o.count or 1) >= HOT_OP_MIN_MEAN_US]
    if len(rank.host.top_by_self_time) < HOT_OP_MIN_DISTINCT:
        return None  # a trace of a few operators has no "abnormal" share
    candidates = [c for c in candidates if not _EXPECTED_HEAVY.search(c[0])]
    if not candidates:
        return None
    name, share = max(candidates, key=lambda c: c[1])
    severity = severity_at(share, HOT_OP_WARNING, HOT_OP_PROBLEM)
    if severity is None or (not rank.has_device and not _hot_in_every_step(rank, name)):
        return None
    evidence = {"operator": name, "operator_share_fraction": round(share, 4), "window_us": round(window_us, 1)}
    if _CONVERSION.match(name):
        return _conversion_hit(ev, severity, name, share, evidence)
    return Hit(severity, f"one operator, {name}, takes {share:.0%} of the step", share, evidence,
               "An operator outside dense math rarely needs this much time; it is often a slow implementation "
               "or work that could be done once instead of every step.",
               Fix("Find the call in the profile and replace it (a fused/vectorised op, or compute it less often).",
                   "torchdoctor trace analyze TRACE --top 20  # with_stack=True shows where it is called"))


def _conversion_hit(ev: Evidence, severity: str, name: str, share: float, evidence: dict) -> Hit:
    """TD-COMP-004 when the hot operator copies or converts tensors: which tensors are converted each
    step (the accounting's cost centres of the conversion operators: dtype, shapes, the script's
    line), where the Record has the accounting; the operator alone otherwise."""
    try:
        centres = [c for c in ev.accounting().cost_centres if _CONVERSION.match(c.name)]
    except MissingEvidence:
        centres = []
    converted = [{"operator": c.name, "dtype": c.dtype, "shapes": c.shapes, "share_fraction": round(c.share, 4),
                  "source": c.source} for c in centres[:5]]
    first = (f": {converted[0]['dtype']} {converted[0]['shapes']}"
             + (f" at {converted[0]['source']}" if converted[0]["source"] else "")) if converted else ""
    return Hit(severity, f"copies and conversions ({name}) take {share:.0%} of the step{first}", share,
               {**evidence, "converted_tensors": converted},
               "The step copies or converts tensors (dtype or device) every time it runs; the work is the same "
               "each step and can usually be done once.",
               Fix("Convert once, outside the loop: keep the weights and the data in the dtype and on the device "
                   "they are used in, or convert the dataset ahead of the loop.",
                   "data = data.to(device, dtype=torch.float32)  # once, before the loop\n"
                   "for x in data.split(batch_size): ..."))


def _typical_self_us(op: OpFigures) -> float:
    """The operator's self time with its slowest call counted at the mean of the others. A process
    descheduled for a time slice stalls one call; a slow implementation is slow in every call. Seen
    in CI on the tabular autoencoder field script, profiled for one step: an operator ranked first at
    over 41% of the step, above anomaly detection's cost, where no operator's calls reach 100 us in
    calm runs (its four ReLU calls take 66-78 us each under anomaly mode)."""
    count = op.count or 1
    if count < 2 or op.max_self_us is None:
        return float(op.self_us)
    return (op.self_us - op.max_self_us) * count / (count - 1)


def _hot_in_every_step(rank: RankSummary, name: str) -> bool:
    """`name` passes the warning share in each profiled step that lists its operators."""
    for step in rank.steps:
        ops = {o.name: o.self_us for o in step.host.top_by_self_time}
        if ops and ops.get(name, 0.0) < HOT_OP_WARNING * step.wall_us:
            return False
    return True


def _sync_calls_by_name(rank: RankSummary) -> dict[str, int]:
    """Sync calls by name over every step: the rank's own totals, or, in a Record analysed before
    it had them, its steps' added up."""
    if "sync_calls" in rank.keys:
        return {name: calls.count for name, calls in rank.sync_calls.by_name.items()}
    names: dict[str, int] = {}
    for step in rank.steps:
        for name, calls in step.sync_calls.by_name.items():
            names[name] = names.get(name, 0) + calls.count
    return names


@rule("TD-COMP-005", "compute", lint_topic="compute.host_sync")
def host_device_syncs(ev: Evidence) -> Hit | None:
    """The host blocks on the device inside the step (.item(), .cpu(), print(tensor), cudaMemcpy) and
    the GPU then idles: the trace window's idle gaps in which a blocking call ran or ended (`idle_sync`),
    warning from 5% of the window, info from 1%. HTA idle time (ours adds the sync split); PyTorch
    "avoid unnecessary synchronisation" docs."""
    rank, window = ev.trace_rank(), ev.device_window()
    sync_share = window.figure("idle_sync_fraction")
    severity = severity_at(sync_share, SYNC_WARNING, SYNC_PROBLEM) or ("info" if sync_share >= SYNC_INFO else None)
    if severity is None or not rank.sync_calls_per_step:
        return None
    names = _sync_calls_by_name(rank)
    return Hit(severity, f"{rank.sync_calls_per_step:.0f} host-device syncs per step; GPU idle {sync_share:.0%} after them",
               sync_share, {"sync_calls_per_step": rank.sync_calls_per_step, "sync_calls_by_name": names,
                            "idle_after_sync_fraction": round(sync_share, 4), **window_evidence(window)},
               "Each sync makes the CPU wait for the GPU to drain, then the GPU waits for the CPU to refill it.",
               Fix("Keep values on the device; read them once every N steps.",
                   "running = running + loss.detach()   # instead of loss.item() every step\n"
                   "if step % 100 == 0: print(running.item() / 100)"))


@rule("TD-COMP-006", "compute", knob="tf32")
def fp32_matmuls(ev: Evidence) -> Hit | None:
    """Matmul/conv kernels run without Tensor Cores on a GPU that has them: fp32 GEMM kernel names
    (sgemm, scudnn), or kernels of Tensor-Core-eligible operators (matmul, conv, linear, ...) none of
    which runs on Tensor Cores on a device of compute capability >= 7 (the TensorBoard plugin's
    Tensor Core rule, trace `facts.tensor_cores`). PyTorch docs "TensorFloat-32 on Ampere" and
    torch.amp; guides' AMP section (1.5-2x). Kernel shares are of device time (`window: kernels`)."""
    fp32 = [k for k in ev.device().kernels.top if re.search(r"sgemm|gemm.*f32|fp32.*gemm|scudnn", k.name, re.I)
            and not re.search(r"tf32|tensorop|bf16|f16|h\d*gemm", k.name, re.I)]
    share = sum(k.share_fraction for k in fp32)
    eligible, no_tc = _eligible_without_tensor_cores(ev)
    share = max(share, eligible)
    util = gpu_utilisation(ev)
    severity = severity_at(share * util, 0.10, 0.30) or ("info" if share >= 0.1 or no_tc else None)
    if severity is None:
        return None
    fix, knob = precision_fix(ev, run_precision(ev))
    return Hit(severity, f"matmul/conv kernels without Tensor Cores take {share:.0%} of GPU time", share * util / 2,
               {"fp32_gemm_kernel_share_fraction": round(share, 4), "gpu_utilisation_fraction": round(util, 4),
                "tensor_core_eligible_fraction": round(eligible, 4), "no_kernel_on_tensor_cores": no_tc,
                "kernels": [k.name[:80] for k in fp32[:3]], "window": "kernels"},
               "Full-precision matmuls skip the Tensor Cores; a reduced precision the device runs on them "
               "(TF32 or bf16 from Ampere on, fp16 on Volta and Turing) usually halves their time.",
               fix, knob)


def _eligible_without_tensor_cores(ev: Evidence) -> tuple[float, bool]:
    """(share of kernel time in Tensor-Core-eligible operators' kernels that do not use Tensor Cores,
    whether no kernel at all uses them while eligible kernels ran), on a device of compute capability
    >= 7; (0, False) when the trace does not say the device has Tensor Cores."""
    try:
        facts = ev.trace_facts()
    except MissingEvidence:
        return 0.0, False
    major = facts.device_properties[0].computeMajor if facts.device_properties else None
    tc = facts.tensor_cores
    if major is None or major < TENSOR_CORE_MAJOR or tc is None or not tc.kernel_us:
        return 0.0, False
    no_tc = not tc.tensor_core_kernel_us and tc.eligible_kernel_us > 0
    return tc.eligible_not_tensor_core_fraction, no_tc
