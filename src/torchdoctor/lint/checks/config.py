"""TDL5xx, config layer: deprecated APIs.

Source: PyTorch AMP documentation ("torch.cuda.amp.autocast(args...) is deprecated. Please use
torch.amp.autocast("cuda", args...) instead", same for GradScaler and torch.cpu.amp); TorchFix's
deprecated-symbols table. Twin of the config-layer diagnosis rule on deprecated APIs.
"""

from __future__ import annotations

import libcst as cst

from torchdoctor.lint.args import with_leading
from torchdoctor.lint.base import Check, LintVisitor

DEPRECATED_AMP = Check(
    "TDL501",
    "deprecated_api",
    "deprecated AMP API: {subject}",
)

#: Deprecated qualified name -> (device type, name under torch.amp).
_DEPRECATED = {
    f"torch.{device}.amp.{path}": (device, path.rsplit(".", 1)[-1])
    for device in ("cuda", "cpu")
    for path in ("autocast", "GradScaler", "autocast_mode.autocast", "grad_scaler.GradScaler")
}


class DeprecatedAmpVisitor(LintVisitor):
    """Flags `torch.cuda.amp.autocast/GradScaler` (and the `torch.cpu.amp` ones).

    Fixed only when written as `<torch>.<device>.amp.<Name>(keyword arguments)`: the new APIs take
    the device first, so positional arguments would shift, and a `from torch.cuda.amp import ...`
    name would need its import rewritten too.
    """

    CHECKS = (DEPRECATED_AMP,)
    TRIGGERS = (("amp",), ("autocast", "GradScaler"))

    def visit_Call(self, node: cst.Call) -> None:
        name = self.qualified_name(node)
        if name not in _DEPRECATED:
            return
        device, new_name = _DEPRECATED[name]
        fixed = None
        root = _torch_root(node.func, device)
        if root is not None and all(arg.keyword is not None for arg in node.args):
            amp = cst.Attribute(value=root, attr=cst.Name("amp"))
            call = node.with_changes(func=cst.Attribute(value=amp, attr=cst.Name(new_name)))
            fixed = with_leading(call, cst.SimpleString(f'"{device}"'))
        subject = f'`{name}(...)` -> `torch.amp.{new_name}("{device}", ...)`'
        self.hit(DEPRECATED_AMP, node, replacement=fixed, subject=subject)


def _torch_root(func: cst.BaseExpression, device: str) -> cst.BaseExpression | None:
    """`X` when `func` is spelled `X.<device>.amp.<name>`, else None."""
    amp = func.value if isinstance(func, cst.Attribute) else None
    dev = amp.value if isinstance(amp, cst.Attribute) and amp.attr.value == "amp" else None
    if isinstance(dev, cst.Attribute) and dev.attr.value == device:
        return dev.value
    return None
