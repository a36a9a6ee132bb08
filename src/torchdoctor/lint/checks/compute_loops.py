"""TDL2xx, compute layer, part 1: work repeated or serialised by the loop it sits in.

Sources: PyTorch Performance Tuning Guide ("Avoid unnecessary CPU-GPU synchronization",
"Disable gradient calculation for validation or inference"); torch.compile documentation
(compile once, call many times). Twins of the diagnosis rules on host-device syncs in the step,
grad mode without backward, and recompilation.
"""

from __future__ import annotations

import libcst as cst

from torchdoctor.lint.base import Check, LintVisitor
from torchdoctor.lint.program import ProgramView
from torchdoctor.lint.proofs import disables_grad, is_dataloader, is_tensor, switches_grad_off
from torchdoctor.lint.tree import SourceTree, walk

HOST_SYNC = Check(
    "TDL201",
    "host_sync",
    "{subject} inside a loop over a DataLoader blocks until the device catches up, every step; "
    "keep values on the device and synchronise once after the loop (or every N steps)",
)
EVAL_WITH_GRAD = Check(
    "TDL206",
    "grad_without_backward",
    "loop after `.eval()` runs with autograd on but never calls backward; "
    "wrap it in `with torch.inference_mode():` (or `torch.no_grad()`)",
)
COMPILE_IN_LOOP = Check(
    "TDL209",
    "compile_in_loop",
    "torch.compile called inside a loop wraps (and may recompile) the model every iteration; "
    "compile once before the loop",
)

_SYNC_METHODS = ("item", "cpu", "numpy", "tolist")
_COMPILE = frozenset({"torch.compile"})


class HostSyncInDataLoaderLoopVisitor(LintVisitor):
    """Flags `.item()`, `.cpu()`, `.numpy()`, `.tolist()` and `print(<tensor>)` run by the body
    of a `for` loop whose iterable is proven to be a DataLoader; a sync outside any such loop is
    not. A sync under an `if` testing a modulo (`if step % 50 == 0:`) is the advised
    "synchronise every N steps", and one under `if i == 0:` runs once: neither is flagged."""

    CHECKS = (HOST_SYNC,)
    TRIGGERS = (("DataLoader",), ("item", "cpu", "numpy", "tolist", "print"))

    def visit_Call(self, node: cst.Call) -> None:
        subject = self._sync_subject(node)
        if subject and not self._every_n_steps(node) and any(
            isinstance(loop, cst.For) and is_dataloader(self, loop.iter)
            for loop in self.enclosing_loops(node)
        ):
            self.hit(HOST_SYNC, node, subject=subject)

    def _every_n_steps(self, node: cst.Call) -> bool:
        """`node` runs under an `if` of the loop body that picks some steps: a modulo
        (`if step % 50 == 0:`) or an equality with a number (`if i == 0:`, once per loop)."""
        child: cst.CSTNode = node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.For, cst.While)):
                return False
            if isinstance(ancestor, cst.If) and child is not ancestor.test and _picks_steps(ancestor.test):
                return True
            child = ancestor
        return False

    def _sync_subject(self, node: cst.Call) -> str | None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _SYNC_METHODS and not node.args:
            return f"`.{func.attr.value}()`"
        if self.qualified_name(node) == "builtins.print" and any(
            is_tensor(self, arg.value) for arg in node.args if arg.keyword is None
        ):
            return "`print(tensor)`"
        return None


class EvalLoopWithGradVisitor(LintVisitor):
    """Flags a loop that follows `<x>.eval()` in the same block (no `.train()` in between) when
    nothing turns autograd off: no enclosing `with`/decorator, no `with` inside the loop, no
    `torch.set_grad_enabled(False)` in the file, and no `.backward()` in the loop."""

    CHECKS = (EVAL_WITH_GRAD,)
    TRIGGERS = (("eval",),)

    def __init__(self, tree: SourceTree, program: ProgramView | None = None) -> None:
        super().__init__(tree, program)
        self._grad_switched_off: bool | None = None

    def grad_switched_off(self) -> bool:
        """`torch.set_grad_enabled(False)` is called somewhere in the file (walked once, and only
        after an `.eval()`)."""
        if self._grad_switched_off is None:
            self._grad_switched_off = any(
                isinstance(node, cst.Call) and switches_grad_off(self, node) for node in walk(self.module)
            )
        return self._grad_switched_off

    def visit_For(self, node: cst.For) -> None:
        self._check(node)

    def visit_While(self, node: cst.While) -> None:
        self._check(node)

    def _check(self, loop: cst.For | cst.While) -> None:
        if _mode_before(self.parent(loop), loop) != "eval" or self.grad_switched_off():
            return
        if self._grad_off_around(loop) or _calls_method(loop.body, "backward"):
            return
        if any(self._turns_grad_off(w) for w in walk(loop.body) if isinstance(w, cst.With)):
            return
        self.hit(EVAL_WITH_GRAD, loop)

    def _grad_off_around(self, node: cst.CSTNode) -> bool:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.With) and self._turns_grad_off(ancestor):
                return True
            if isinstance(ancestor, cst.FunctionDef):
                return any(disables_grad(self, d.decorator) for d in ancestor.decorators)
        return False

    def _turns_grad_off(self, with_node: cst.CSTNode) -> bool:
        return isinstance(with_node, cst.With) and any(
            disables_grad(self, item.item) for item in with_node.items
        )


class CompileInLoopVisitor(LintVisitor):
    """Flags `torch.compile(...)` run by the body of a loop (a `def` inside the loop is not)."""

    CHECKS = (COMPILE_IN_LOOP,)
    TRIGGERS = (("compile",),)

    def visit_Call(self, node: cst.Call) -> None:
        if self.qualified_name(node) in _COMPILE and self.enclosing_loop(node) is not None:
            self.hit(COMPILE_IN_LOOP, node)


def _picks_steps(test: cst.BaseExpression) -> bool:
    """`test` holds on some steps only: it has a modulo, or compares with `==` to an integer."""
    return any(
        (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo))
        or (isinstance(node, cst.Comparison) and any(_equals_int(c) for c in node.comparisons))
        for node in walk(test)
    )


def _equals_int(target: cst.ComparisonTarget) -> bool:
    return isinstance(target.operator, cst.Equal) and isinstance(target.comparator, cst.Integer)


def _mode_before(block: cst.CSTNode | None, loop: cst.BaseStatement) -> str | None:
    """"eval" or "train": the last `<x>.eval()`/`<x>.train()` statement before `loop` in `block`."""
    body = getattr(block, "body", None)
    if not isinstance(body, (list, tuple)):
        return None
    position = next((i for i, statement in enumerate(body) if statement is loop), 0)
    mode = None
    for statement in body[:position]:
        for method in ("eval", "train"):
            if _calls_method(statement, method, top_level=True):
                mode = method
    return mode


def _calls_method(node: cst.CSTNode, method: str, *, top_level: bool = False) -> bool:
    """`node` contains a `<x>.<method>(...)` call; with `top_level`, only as a bare statement."""
    if top_level:
        body = node.body if isinstance(node, cst.SimpleStatementLine) else ()
        return len(body) == 1 and isinstance(body[0], cst.Expr) and _is_method_call(body[0].value, method)
    return any(_is_method_call(n, method) for n in walk(node))


def _is_method_call(node: cst.CSTNode, method: str) -> bool:
    """`node` is `<x>.<method>(...)`."""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == method
