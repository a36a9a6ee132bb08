"""A compute library switched off: oneDNN on the CPU (`torch.backends.mkldnn.enabled = False`) or
cuDNN on a GPU (`torch.backends.cudnn.enabled = False`), while convolutions run on that device.

Without them, torch runs every convolution through its reference kernels (`aten::_slow_conv2d_forward`
and its backward, `slow_conv3d`, `slow_conv_transpose2d`: an im2col and a matrix product per
sample), which are correct and slower. The switch is read from the Record (`env.torch`, as the
script left it) and the convolutions from the operator-costs probe's operators (grouped under
`aten::conv2d`, `aten::convolution_backward` and the like, whichever kernel runs beneath): the
switch and the names, not times, decide that the rule fires; the convolutions' share of the
profiled step sizes the upside.

Sources: `torch.backends.mkldnn` and `torch.backends.cudnn` docs (`enabled`: "controls whether
oneDNN/cuDNN is enabled"), the PyTorch issue "MKLDNN ... slower than normal cpu mode" (pytorch#32826,
where the measured cure was to leave it on), the Performance Tuning Guide ("Enable cuDNN auto-tuner").
"""

from __future__ import annotations

import re

from torchdoctor.rules.base import Fix, Hit, rule, severity_at
from torchdoctor.rules.evidence import Evidence

#: Convolution operators, forward and backward, whichever kernel runs them.
CONVOLUTIONS = re.compile(r"^aten::\w*conv")
#: How much faster oneDNN runs convolutions than the reference kernels, as the claim takes it: a
#: small CNN's whole step ran x1.29 faster with oneDNN on, its convolutions 83% of the step
#: (benchmarks/results/2026-12-07-blind-fifth.md); single convolutions, forward and backward, ran
#: x1.2 to x5.7 faster on four shapes. Not measured on a GPU, where cuDNN's lead is usually larger.
LIBRARY_SPEEDUP = 1.3
REPORTED, WARNING, PROBLEM = 0.05, 0.10, 0.25


@rule("TD-COMP-056", "compute")
def compute_library_off(ev: Evidence) -> Hit | None:
    """oneDNN is switched off (`torch.backends.mkldnn.enabled` False) while the step runs
    convolutions on the CPU, or cuDNN is switched off while it runs them on a GPU: they all run
    torch's reference kernels. Upside, estimated: the convolutions' share of the profiled step x
    (1 - 1/LIBRARY_SPEEDUP); reported from 5%."""
    switches = ev.switches()
    on_gpu = ev.uses_gpu()
    enabled, library, flag = ((switches.cudnn_enabled, "cuDNN", "torch.backends.cudnn.enabled") if on_gpu else
                              (switches.mkldnn_enabled, "oneDNN", "torch.backends.mkldnn.enabled"))
    if enabled is not False:
        return None
    ops, step_s = ev.profiled_ops()
    convs = [op for op in ops if CONVOLUTIONS.match(op.get("name") or "")]
    if not convs:
        return None
    conv_share = min(1.0, sum(float(op.get("self_s") or 0.0) for op in convs) / step_s)
    share = conv_share * (1 - 1 / LIBRARY_SPEEDUP)
    if share < REPORTED:
        return None
    top = max(convs, key=lambda op: float(op.get("self_s") or 0.0))
    names = sorted({op["name"] for op in convs})
    return Hit(severity_at(share, WARNING, PROBLEM) or "info",
               f"{library} is switched off: convolutions, {conv_share:.0%} of the step, run torch's reference kernels",
               share, {flag.removeprefix("torch.backends.").replace(".", "_"): False, "operators": names,
                       "largest": top["name"], "source": top.get("source"),
                       "reference_conv_fraction": round(conv_share, 4), "upside_basis": "estimated"},
               f"{flag} is False, so every convolution, forward and backward ({', '.join(names)}), runs torch's "
               f"reference implementation (an unfold and a matrix product per sample) instead of {library}'s "
               f"kernels; they take {conv_share:.0%} of the step. {library} ran the same convolutions "
               "1.2x to 5.7x faster on the shapes measured.",
               Fix(f"Leave {flag} at its default (True): remove the line that switches it off, and measure "
                   "before switching a backend off.",
                   f"# {flag} = False   # removed: the default, True, is faster"))
