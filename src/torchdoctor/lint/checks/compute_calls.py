"""TDL2xx, compute layer, part 2: single calls that waste device time.

Sources: PyTorch Performance Tuning Guide ("Create tensors directly on the target device",
"Disable debugging APIs", "Disable bias for convolutions directly followed by a batch norm",
"Use parameter.grad = None instead of model.zero_grad() or optimizer.zero_grad()");
TorchFix TOR402 (zero_grad set_to_none). Twins of the diagnosis rules on debug tools left on,
Conv bias before BatchNorm, and zero_grad(set_to_none=False).
"""

from __future__ import annotations

import libcst as cst

from torchdoctor.lint.args import argument, has_unpacking, is_cuda_device, literal_bool
from torchdoctor.lint.args import with_keyword
from torchdoctor.lint.base import Check, LintVisitor
from torchdoctor.lint.proofs import uses_grad_as_tensor

CPU_THEN_MOVE = Check(
    "TDL202",
    "cpu_then_move",
    "tensor created on the CPU then copied with {subject}; "
    "create it on the device directly with `device=`",
)
ANOMALY = Check(
    "TDL203",
    "debug_tools",
    "autograd anomaly detection is on ({subject}); it slows every backward pass, "
    "remove it outside debugging",
)
PROFILER = Check(
    "TDL204",
    "debug_tools",
    "profiler always on ({subject}); it slows every recorded step, "
    "guard it behind a flag or remove it from production runs",
)
GRADCHECK = Check(
    "TDL205",
    "debug_tools",
    "{subject} runs the model many times in float64; keep it in tests, not in training code",
)
ZERO_GRAD = Check(
    "TDL207",
    "zero_grad",
    "zero_grad(set_to_none=False) writes zeros into every gradient; "
    "drop the argument (set_to_none=True is the default) to save a memset per parameter",
)
CONV_BIAS_BN = Check(
    "TDL208",
    "conv_bias_before_bn",
    "{subject} has a bias directly before a BatchNorm, which subtracts it again; "
    "pass bias=False",
)

#: Factories whose result does not depend on the device's RNG: moving them is exactly
#: equivalent to `device=`, so the fix is safe. Random ones are flagged but not fixed, because
#: the CUDA generator draws different numbers than the CPU one.
_DETERMINISTIC_FACTORIES = frozenset(
    f"torch.{n}" for n in "tensor zeros ones empty full arange linspace logspace eye".split()
)
_RANDOM_FACTORIES = frozenset(f"torch.{n}" for n in "randn rand randint randperm".split())
_ANOMALY = frozenset(
    {
        "torch.autograd.set_detect_anomaly",
        "torch.autograd.detect_anomaly",
        "torch.autograd.anomaly_mode.set_detect_anomaly",
        "torch.autograd.anomaly_mode.detect_anomaly",
    }
)
_PROFILERS = frozenset(
    {"torch.profiler.profile", "torch.autograd.profiler.profile", "torch.autograd.profiler.emit_nvtx"}
)
_GRADCHECKS = frozenset(
    f"torch.autograd.{path}"
    for path in ("gradcheck", "gradgradcheck", "gradcheck.gradcheck", "gradcheck.gradgradcheck")
)
_CONVS = frozenset(f"torch.nn.Conv{d}d" for d in (1, 2, 3))
_NORMS = frozenset([*(f"torch.nn.BatchNorm{d}d" for d in (1, 2, 3)), "torch.nn.SyncBatchNorm"])


class CpuThenMoveVisitor(LintVisitor):
    """Flags `torch.<factory>(...)` immediately followed by `.cuda(...)` or `.to("cuda[:N]")`.

    Fixed (to `device=`) only for deterministic factories moved by a bare `.cuda()` or
    `.to("cuda...")`; other arguments (`non_blocking`, a dtype) would need a judgement.
    """

    CHECKS = (CPU_THEN_MOVE,)
    TRIGGERS = (("cuda",), ("tensor", "zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye", "rand"))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or not isinstance(func.value, cst.Call):
            return
        factory = func.value
        name = self.qualified_name(factory)
        if name not in _DETERMINISTIC_FACTORIES | _RANDOM_FACTORIES:
            return
        if has_unpacking(factory) or argument(factory, "device") is not None:
            return
        method = func.attr.value
        target = argument(node, "device", 0)
        moves_to_cuda = method == "cuda" or (
            method == "to" and target is not None and is_cuda_device(target.value)
        )
        if not moves_to_cuda:
            return
        subject = f"`.{method}({'...' if node.args else ''})`"
        fixed = None
        if name in _DETERMINISTIC_FACTORIES and len(node.args) == (method == "to"):
            device = target.value if method == "to" else cst.SimpleString('"cuda"')
            fixed = with_keyword(factory, "device", device)
        self.hit(CPU_THEN_MOVE, node, replacement=fixed, subject=subject)


class DebugToolsVisitor(LintVisitor):
    """Flags anomaly detection switched on, profilers and gradcheck, unless the call sits under
    an `if` (assumed to be a debug flag) or inside a `test_*` function."""

    CHECKS = (ANOMALY, PROFILER, GRADCHECK)
    TRIGGERS = (("anomaly", "profile", "emit_nvtx", "gradcheck"),)

    def visit_Call(self, node: cst.Call) -> None:
        name = self.qualified_name(node)
        check = _debug_check(name, node)
        if check is None or self._guarded(node):
            return
        self.hit(check, node, subject=f"`{name}`")

    def _guarded(self, node: cst.CSTNode) -> bool:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.If, cst.IfExp)):
                return True
            if isinstance(ancestor, cst.FunctionDef):
                return ancestor.name.value.startswith("test")
        return False


def _debug_check(name: str | None, call: cst.Call) -> Check | None:
    enabled = argument(call, "enabled") or (
        argument(call, "mode", 0) if name and name.endswith("set_detect_anomaly") else None
    )
    if enabled is not None and literal_bool(enabled.value) is not True:
        return None  # switched off, or decided at run time
    if name in _ANOMALY:
        return ANOMALY
    if name in _PROFILERS:
        return PROFILER
    return GRADCHECK if name in _GRADCHECKS else None


class ZeroGradVisitor(LintVisitor):
    """Flags `<x>.zero_grad(set_to_none=False)` (the keyword spelled out; the receiver may be an
    optimizer or a module, both take it), unless any module of the program uses a `.grad` as a
    tensor (`p.grad += g`, `p.grad.add_(g)`, `p.grad.data`): with `set_to_none=True` those
    gradients are None after `zero_grad()` and that code would fail."""

    CHECKS = (ZERO_GRAD,)
    TRIGGERS = (("zero_grad",),)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "zero_grad"):
            return
        flag = argument(node, "set_to_none", 0)
        if flag is not None and literal_bool(flag.value) is False and not self.in_program(uses_grad_as_tensor):
            self.hit(ZERO_GRAD, node)


class ConvBiasBeforeBatchNormVisitor(LintVisitor):
    """Flags `nn.Conv*d(...)` with a bias (the default) directly followed by `nn.BatchNorm*d`
    among the positional arguments of `nn.Sequential(...)`."""

    CHECKS = (CONV_BIAS_BN,)
    TRIGGERS = (("Sequential",), ("Conv",), ("BatchNorm",))

    def visit_Call(self, node: cst.Call) -> None:
        if self.qualified_name(node) != "torch.nn.Sequential":
            return
        layers = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
        for layer, following in zip(layers, layers[1:]):
            if self._is_biased_conv(layer) and self.qualified_name(following) in _NORMS:
                self.hit(CONV_BIAS_BN, layer, subject=f"`{self.qualified_name(layer)}`")

    def _is_biased_conv(self, layer: cst.BaseExpression) -> bool:
        if not isinstance(layer, cst.Call) or self.qualified_name(layer) not in _CONVS:
            return False
        if has_unpacking(layer):
            return False
        bias = argument(layer, "bias", 7)
        return bias is None or literal_bool(bias.value) is True
