"""Inference-loop rules: a loop of forward calls that never calls backward
(`step_detection == "forward"`). Grad mode left on is TD-COMP-008 (rules/compute.py).

Sources: PyTorch "CPU threading and TorchScript inference" and the serving guides (batching
amortises the per-call overhead), torch.compile docs on dynamic shapes (every new shape is a
recompile unless marked dynamic), torchao's int8 dynamic quantisation (Linear-heavy CPU models).
"""

from __future__ import annotations

import re

from torchdoctor.estimates.shapes import MIN_STEPS, SizeSpread, size_spread
from torchdoctor.rules.capabilities import gated_fix
from torchdoctor.rules.base import Fix, Hit, MissingEvidence, rule, severity_at
from torchdoctor.rules.compute import OVERHEAD_PROBLEM, OVERHEAD_WARNING, gpu_utilisation, host_overhead_share
from torchdoctor.rules.evidence import Evidence

LINEAR_SHARE = 0.5  # Linear kernels' share of the profiled CPU time for an int8 candidate
_LINEAR_OPS = re.compile(r"^aten::(addmm|mm|linear|matmul|_addmm_activation)$")


@rule("TD-COMP-018", "compute")
def unbatched_inference(ev: Evidence) -> Hit | None:
    """Inference one sample per call (batch size 1) while per-call overhead dominates the step:
    the host-side overhead share of the profiled step (CPU), or the GPU's idle share."""
    if not ev.single_sample_inference():
        return None
    try:
        share = 1.0 - gpu_utilisation(ev)
        measure = "gpu_idle_fraction"
    except MissingEvidence:
        share, measure = _cpu_call_overhead(ev)
    severity = severity_at(share, OVERHEAD_WARNING, OVERHEAD_PROBLEM)
    if severity is None:
        return None
    return Hit(severity, f"inference one sample at a time: {share:.0%} of each call is per-call overhead", share,
               {"batch_size_median": 1, measure: round(share, 4),
                "step_ms_median": round(ev.summary("step_s") * 1e3, 3)},
               "Each call pays Python, dispatch and launch costs that do not grow with the batch; "
               "one call on N samples costs little more than one call on one.",
               Fix("Batch requests (a dynamic batcher: max batch size and a short max wait).",
                   "batch = torch.cat(pending_requests)   # or: torchdoctor serve MODEL --max-batch-size 32 "
                   "--max-delay-ms 5\nwith torch.inference_mode():\n    outputs = model(batch).split(1)"))


def _cpu_call_overhead(ev: Evidence) -> tuple[float, str]:
    """(share of a timed CPU step that is per-call cost, its evidence key): the host per-operator
    overhead inside the model (`host_overhead_share`) plus the step's time outside the model call
    (the data wait and the rest of the loop: `data_wait_fraction` + `other_fraction` of the timed
    steps). With one sample a call, fetching that one sample and running the loop's body are paid
    once per sample, and a batch shares them."""
    overhead = host_overhead_share(ev, ev.trace_rank())
    try:
        outside = ev.summary("data_wait_fraction") + ev.summary("other_fraction")
    except MissingEvidence:
        return overhead, "per_op_overhead_fraction"
    return min(1.0, overhead + outside), "per_call_fraction"


def _size_spread(ev: Evidence) -> SizeSpread:
    """The first-input sizes over the observed steps (estimates.shapes)."""
    spread = size_spread(ev.step_elements())
    if spread is None:
        raise MissingEvidence(f"input sizes of {MIN_STEPS} or more steps")
    return spread


_PAD = ("length = min(b for b in (64, 128, 256, 512) if b >= x.shape[1])\n"
        "x = torch.nn.functional.pad(x, (0, length - x.shape[1]))")


@rule("TD-COMP-019", "compute", knob="compile")
def varying_input_shapes(ev: Evidence) -> Hit | None:
    """The outermost model's first input changes size from step to step (`env.distributed_runtime.
    step_elements`), which makes torch.compile and CUDA graphs recompile or record per shape. Not a
    cost in eager mode, so info; when the script compiles, TD-COMP-021 measures the recompiles."""
    spread = _size_spread(ev)
    if not spread.varies or ev.compile_used():
        return None
    distinct, dominant, steps = spread.distinct, spread.dominant, spread.steps
    return Hit("info", f"input sizes vary: {distinct} sizes in {steps} steps", 0.0,
               {"distinct_input_sizes": distinct, "steps": steps, "most_common_size_fraction": round(dominant, 4)},
               "torch.compile specialises on shapes: each new shape recompiles (until it marks the dimension "
               "dynamic), and CUDA graphs record once per shape.",
               gated_fix(ev, "compile", Fix("Before compiling, pad or bucket inputs to a few fixed lengths, or "
                                            "torch.compile(model, dynamic=True) (what tune's compile knob tries when "
                                            "shapes vary).", _PAD), _PAD))



@rule("TD-COMP-020", "compute")
def int8_candidate(ev: Evidence) -> Hit | None:
    """A CPU inference loop whose profiled time is mostly Linear layers (addmm/mm/linear in the trace
    host top list): int8 dynamic quantisation often speeds these up within tolerance. Not measured
    here, so info with upside 0; `torchdoctor infer` measures it and checks the outputs."""
    if ev.step_detection() != "forward" or not ev.runs_on_cpu_only():
        return None
    rank = ev.profiled_rank()
    window_us = rank.window_us
    linear_us = sum(o.self_us for o in rank.host.top_by_self_time if _LINEAR_OPS.match(o.name))
    share = linear_us / window_us if window_us else 0.0
    if share < LINEAR_SHARE:
        return None
    return Hit("info", f"Linear layers take {share:.0%} of the CPU time: int8 may speed them up", 0.0,
               {"linear_op_share_fraction": round(share, 4), "window_us": round(window_us, 1)},
               "Dynamic int8 quantisation stores Linear weights in int8 and runs int8 matmuls; on CPUs with "
               "VNNI/AMX this is often faster, at a small accuracy cost that must be checked.",
               Fix("Measure it on your model and inputs (speed and output difference), then apply it.",
                   "torchdoctor infer my_module:make_model   # measures the int8 variant against eager\n"
                   "from torchao.quantization import quantize_, Int8DynamicActivationInt8WeightConfig\n"
                   "quantize_(model, Int8DynamicActivationInt8WeightConfig())"))
