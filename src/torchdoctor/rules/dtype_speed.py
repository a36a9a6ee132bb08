"""Compute-layer rule about the dtype the matrix products run in, weighed on this device.

A dtype is fast or slow per device, not in general: float64 runs at half float32's rate on a CPU's
vector units and at 1/32-1/64 of it on most GPUs; float16 is fast on a GPU's Tensor Cores, but a
CPU without fp16 arithmetic (no AVX512-FP16 or AMX-FP16, no Arm fp16 extension) converts every
element and runs several times slower than float32 (this machine measured fp16 0.7 GFLOP/s
against fp32's 18.5). So the rule reads what the operator-costs probe measured on the run's own
device (observe/probes/op_costs.py, peaks.py): the matrix products' time per dtype, and each
dtype's matrix-product peak against float32's, which it always measures as the reference.

Sources: PyTorch docs "torch.set_default_dtype", "Tensor Attributes" (dtypes), "CPU threading"
and the CPU AMP docs (bf16 autocast pays where the ISA has AVX512-BF16 or AMX-BF16); the guides'
precision section (fp32 or a reduced precision the device runs natively, never fp64 for training).
"""

from __future__ import annotations

from typing import Any

from torchdoctor.capability import BF16_ISA
from torchdoctor.probe_values import OP_COSTS
from torchdoctor.rules.base import Fix, Hit, MissingEvidence, rule, severity_at
from torchdoctor.rules.capabilities import run_isa_flags
from torchdoctor.rules.evidence import Evidence

#: The dtype every other is weighed against, and whose peak the probe always measures.
REFERENCE = "fp32"
#: A dtype whose measured matrix-product peak is this many times below fp32's is slow on the device
#: (fp64 measures about 2x on a CPU's vector units, fp16 without native arithmetic 10-30x).
SLOWER = 1.3
#: The claimed upside from which the rule reports, a warning, a problem.
REPORTED, WARNING, PROBLEM = 0.05, 0.10, 0.25
NAMES = {"fp64": "float64", "fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}


@rule("TD-COMP-040", "compute")
def slow_matmul_dtype(ev: Evidence) -> Hit | None:
    """Matrix products run in a dtype whose matrix-product peak, measured on this run's device, is
    SLOWER (1.3x) or more below float32's: float64 on most devices, float16 on a CPU without fp16
    arithmetic. Evidence: the operator-costs probe's operator groups in that dtype with FLOPs (their
    self time per profiled step on a CPU; on a GPU their FLOPs at the dtype's peak, the least time
    they take) and its measured peaks. Upside: that time x (1 - the dtype's peak /
    fp32's), the time the same FLOPs take at float32's measured rate, over the profiled step;
    reported from 5%. The fix names float32, and bfloat16 only on a CPU whose recorded ISA flags
    have bf16 instructions (capability.device's BF16_ISA) when the script chose a narrow dtype."""
    costs = OP_COSTS.of(ev.record)
    if not costs or not costs.get("complete"):
        raise MissingEvidence("probes.op_costs")
    peaks = costs.get("peaks") or {}
    rates = {d: float(v) for d, v in (peaks.get("flops_per_s") or {}).items() if v}
    if REFERENCE not in rates:
        raise MissingEvidence("probes.op_costs.peaks.flops_per_s.fp32")
    slow = {d: rates[REFERENCE] / r for d, r in rates.items() if rates[REFERENCE] / r >= SLOWER}
    step = float(costs.get("step_s") or 0.0)
    device = str(peaks.get("device") or "cpu")
    timed = _time_by_dtype(costs.get("ops") or [], slow, rates if device != "cpu" else None)
    if not timed or step <= 0:
        return None
    dtype = max(timed, key=lambda d: timed[d][0] * (1 - 1 / slow[d]))
    seconds, top = timed[dtype]
    share = min(1.0, seconds / step)
    upside = share * (1 - 1 / slow[dtype])
    if upside < REPORTED:
        return None
    evidence = {"dtype": dtype, "matmul_share_fraction": round(share, 4), "slower_than_fp32": round(slow[dtype], 2),
                f"peak_flops_per_s_{dtype}": round(rates[dtype]), "peak_flops_per_s_fp32": round(rates[REFERENCE]),
                "device": device, "largest_op": top.get("name"), "largest_op_shapes": top.get("shapes"),
                "source": top.get("source"), "upside_basis": "measured peaks"}
    where = f" ({top['source']})" if top.get("source") else ""
    return Hit(severity_at(upside, WARNING, PROBLEM) or "info",
               f"{share:.0%} of the step: matrix products in {NAMES.get(dtype, dtype)}, "
               f"{slow[dtype]:.1f}x slower than float32 on this {device}",
               upside, evidence,
               f"This {device} measured {rates[dtype] / 1e9:.3g} GFLOP/s for a {dtype} matrix product against "
               f"{rates[REFERENCE] / 1e9:.3g} GFLOP/s in fp32; the script's {dtype} matrix products, largest "
               f"{top.get('name')}{where}, take {share:.0%} of the step. The same products in float32 would "
               f"take {1 / slow[dtype]:.0%} of that time.",
               _fix(dtype, device, run_isa_flags(ev)))


def _time_by_dtype(ops: list[dict[str, Any]], dtypes: dict[str, float],
                   rates: dict[str, float] | None) -> dict[str, tuple[float, dict[str, Any]]]:
    """{dtype: (seconds per step of its operator groups with FLOPs, its largest group)} for the
    dtypes in `dtypes`: their self time on a CPU (`rates` None); on a GPU, whose kernels the probe's
    CPU profile does not time (an operator's self time there is its launch), their FLOPs at the
    dtype's measured peak (`rates`), the least time they can take."""
    timed: dict[str, tuple[float, dict[str, Any]]] = {}
    for op in ops:
        dtype = op.get("dtype")
        if dtype not in dtypes or not op.get("flops"):
            continue
        seconds, top = timed.get(dtype, (0.0, op))
        took = float(op["flops"]) / rates[dtype] if rates else float(op.get("self_s") or 0.0)
        timed[dtype] = (seconds + took, top)
    return timed


def _fix(dtype: str, device: str, isa: frozenset[str] | None) -> Fix:
    """float32 for float64 (the default dtype back, float64 kept where a computation needs it);
    float32, or bfloat16 where the CPU's ISA computes it, for a narrow dtype."""
    if dtype == "fp64":
        return Fix("Compute in float32; keep float64 only for the computations that need it.",
                   "torch.set_default_dtype(torch.float32)  # the default\n"
                   "model = model.float()  # and the inputs: x = x.float()")
    bf16 = sorted(isa & BF16_ISA) if device == "cpu" and isa and dtype != "bf16" else []
    if bf16:
        return Fix(f"Compute in float32 on this {device}, or in bfloat16, which this CPU's ISA computes "
                   f"natively ({', '.join(bf16)}); keep {NAMES.get(dtype, dtype)} for a GPU.",
                   "model = model.float()  # and the inputs: x = x.float()\n"
                   "# or: model = model.to(torch.bfloat16); x = x.to(torch.bfloat16)")
    return Fix(f"Compute in float32 on this {device}; keep {NAMES.get(dtype, dtype)} for a device that runs it fast.",
               "model = model.float()  # and the inputs: x = x.float()")
