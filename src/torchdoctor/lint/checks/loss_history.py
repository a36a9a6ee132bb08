"""TDL210, compute layer: a loss tensor summed across the training loop with its autograd history.

Source: the PyTorch FAQ, "My model reports cuda runtime error(2): out of memory" (`total_loss +=
loss` accumulates history across the training loop; keep `float(loss)` instead). Twin of the
diagnosis rule on memory that grows with the step count (TD-MEM-006).
"""

from __future__ import annotations

import re

import libcst as cst
import libcst.matchers as m

from torchdoctor.lint.base import Check, LintVisitor
from torchdoctor.lint.proofs import disables_grad, is_tensor

LOSS_HISTORY = Check(
    "TDL210",
    "loss_history",
    "`{subject}` in the training loop adds the loss with its autograd history, so every step's "
    "graph stays alive and memory grows; accumulate `loss.detach()` (no sync) or `float(loss)`",
)

_LOSS_NAME = re.compile(r"loss", re.I)
#: Calls whose result has no autograd history: a binding to one of them is already detached.
_DETACHING = frozenset({"detach", "item", "tolist", "float", "int"})
#: Calls that backpropagate through an argument or their receiver.
_BACKPROPAGATING = frozenset({"backward", "grad"})


class LossHistoryVisitor(LintVisitor):
    """Flags `total += x` and `total = total + x` (either order) run by the body of a loop, where
    `x` is a name backpropagated in that loop (`x.backward()`, `scaler.scale(x).backward()`,
    `accelerator.backward(x)`), or named like a loss and proven a tensor (a torch function's, a
    `torch.nn.functional` or a `torch.nn.*Loss` module's result) in a loop that calls backward.
    Not flagged, as detaching would break or change the code: `total` backpropagated anywhere in
    the function (`total.backward()`, `torch.autograd.grad(total, ...)`: a summed loss); `x`
    bound anywhere to a detached value (`.detach()`, `.item()`, `float(...)`); the sum under
    `torch.no_grad()`/`inference_mode()`."""

    CHECKS = (LOSS_HISTORY,)
    TRIGGERS = (("backward",),)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.AddAssign) and isinstance(node.target, cst.Name):
            self._check(node, node.target, node.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1 or not isinstance(target := node.targets[0].target, cst.Name):
            return
        value = node.value
        if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
            for own, added in ((value.left, value.right), (value.right, value.left)):
                if isinstance(own, cst.Name) and own.value == target.value:
                    self._check(node, target, added)
                    return

    def _check(self, node: cst.AugAssign | cst.Assign, total: cst.Name, added: cst.BaseExpression) -> None:
        loop = self.enclosing_loop(node)
        if loop is None or not isinstance(added, cst.Name) or added.value == total.value:
            return
        if not self._keeps_history(loop, added) or self._grad_off_around(node):
            return
        if _backpropagates(self._scope_of(node), total.value):
            return
        self.hit(LOSS_HISTORY, node, subject=self.module.code_for_node(node).strip())

    def _keeps_history(self, loop: cst.For | cst.While, added: cst.Name) -> bool:
        """`added` is a tensor with history in this loop: backpropagated in it, or a loss-named
        proven tensor in a loop that backpropagates; and never bound to a detached value."""
        values = self.assigned_values(added) or []
        if any(_detached(v) for v in values):
            return False
        if _backpropagates(loop.body, added.value):
            return True
        return bool(_LOSS_NAME.search(added.value)) and _backpropagates(loop.body) and is_tensor(self, added)

    def _grad_off_around(self, node: cst.CSTNode) -> bool:
        return any(
            isinstance(a, cst.With) and any(disables_grad(self, item.item) for item in a.items)
            for a in self.ancestors(node)
        )

    def _scope_of(self, node: cst.CSTNode) -> cst.CSTNode:
        """The function (or module) whose code runs `node`."""
        return list(self.ancestors(node))[-1]


def _backpropagates(tree: cst.CSTNode, name: str | None = None) -> bool:
    """`tree` calls `backward`/`grad` (method or function); with `name`, one whose receiver or
    arguments mention that name."""
    for call in m.findall(tree, m.Call(func=m.Attribute(attr=m.Name()) | m.Name())):
        func = call.func  # type: ignore[union-attr]
        called = func.attr.value if isinstance(func, cst.Attribute) else func.value
        if called not in _BACKPROPAGATING:
            continue
        if name is None or name in _names_in(call):
            return True
    return False


def _names_in(call: cst.Call) -> set[str]:
    """The names in a call's receiver and arguments, not attribute names (`out.loss` has `out`)."""
    parts = [a.value for a in call.args]
    if isinstance(call.func, cst.Attribute):
        parts.append(call.func.value)
    attributes = {id(a.attr) for part in parts for a in m.findall(part, m.Attribute())}
    return {n.value for part in parts for n in m.findall(part, m.Name()) if id(n) not in attributes}


def _detached(value: cst.BaseExpression) -> bool:
    """`value` has no autograd history: its outermost call is `.detach()`, `.item()`,
    `.tolist()`, `float(...)` or `int(...)`."""
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    called = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
    return called in _DETACHING
