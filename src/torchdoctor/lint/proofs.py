"""What an expression is proven to be, from qualified names and assignments in the same file.

Each predicate answers True only when the source proves it; an unknown (a function parameter, a
value from another module, a name bound twice to different things) answers False.
"""

from __future__ import annotations

import libcst as cst

from torchdoctor.lint.args import argument, is_cuda_device, literal_bool
from torchdoctor.lint.base import LintVisitor
from torchdoctor.lint.tree import visit, walk

DATALOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})

#: Callables whose first argument is what they iterate over.
_ITERATION_WRAPPERS = frozenset(
    {"builtins.enumerate", "builtins.iter", "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.std.tqdm"}
)

#: Context managers and decorators that turn autograd off.
GRAD_DISABLERS = frozenset(
    {
        "torch.no_grad",
        "torch.inference_mode",
        "torch.autograd.no_grad",
        "torch.autograd.inference_mode",
        "torch.autograd.grad_mode.no_grad",
        "torch.autograd.grad_mode.inference_mode",
    }
)
_GRAD_SWITCHES = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled"})

#: torch functions that always return a tensor (a conservative subset).
_TENSOR_FUNCTIONS = frozenset(
    f"torch.{name}"
    for name in (
        "tensor randn rand randint zeros ones empty full arange linspace eye stack cat "
        "matmul mm bmm sum mean max min abs exp log sqrt softmax sigmoid tanh relu"
    ).split()
)

_MAX_DEPTH = 4


def is_dataloader(visitor: LintVisitor, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """`expr` evaluates to a `torch.utils.data.DataLoader` (possibly wrapped in enumerate/tqdm)."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expr, cst.Call):
        name = visitor.qualified_name(expr)
        if name in DATALOADERS:
            return True
        first = argument(expr, "iterable", 0)
        return name in _ITERATION_WRAPPERS and first is not None and (
            is_dataloader(visitor, first.value, depth + 1)
        )
    values = _bound_values(visitor, expr)
    return bool(values) and all(is_dataloader(visitor, v, depth + 1) for v in values)


def is_tensor(visitor: LintVisitor, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """`expr` is a tensor: a torch function's result, a loss module's output, or a name bound
    only to those."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expr, cst.Call):
        name = visitor.qualified_name(expr) or ""
        if name in _TENSOR_FUNCTIONS or name.startswith("torch.nn.functional."):
            return True
        modules = _bound_values(visitor, expr.func)
        return bool(modules) and all(_is_loss_module(visitor, v) for v in modules)
    values = _bound_values(visitor, expr)
    return bool(values) and all(is_tensor(visitor, v, depth + 1) for v in values)


def disables_grad(visitor: LintVisitor, expr: cst.BaseExpression) -> bool:
    """`expr` (a `with` item or a decorator) turns autograd off."""
    return visitor.qualified_name(expr) in GRAD_DISABLERS or switches_grad_off(visitor, expr)


def switches_grad_off(visitor: LintVisitor, expr: cst.BaseExpression) -> bool:
    """`expr` is `torch.set_grad_enabled(False)` (as a call or a context manager)."""
    if not isinstance(expr, cst.Call) or visitor.qualified_name(expr) not in _GRAD_SWITCHES:
        return False
    mode = argument(expr, "mode", 0)
    return mode is not None and literal_bool(mode.value) is False


def uses_cuda(module: cst.Module) -> bool:
    """The file moves something to a CUDA device: a `.cuda()` call or a "cuda[:N]" literal."""
    return any(
        (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "cuda")
        or (isinstance(node, cst.SimpleString) and is_cuda_device(node))
        for node in walk(module)
    )


def _is_loss_module(visitor: LintVisitor, expr: cst.BaseExpression) -> bool:
    name = visitor.qualified_name(expr) if isinstance(expr, cst.Call) else None
    return bool(name) and name.startswith("torch.nn.") and name.endswith("Loss")


def _bound_values(visitor: LintVisitor, expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """Values bound to a name (all its bindings) or to `<anything>.attr` anywhere in the file."""
    if isinstance(expr, cst.Name):
        return visitor.assigned_values(expr) or []
    if isinstance(expr, cst.Attribute):
        return visitor.attribute_values(expr.attr.value)
    return []


def uses_grad_as_tensor(module: cst.Module) -> bool:
    """The file uses some `<x>.grad` as a tensor: anything but assigning it (`p.grad = None`) or
    comparing it with `is`/`is not` (`p.grad is None`). Such code assumes the gradient exists
    after `zero_grad()`, which holds only with `set_to_none=False`."""
    finder = _GradUses()
    visit(module, [finder])
    return finder.as_tensor


class _GradUses:
    """Finds a `.grad` attribute used other than as an assignment target or an identity test."""

    def __init__(self) -> None:
        self.as_tensor = False
        self._harmless: set[int] = set()

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._harmless.add(id(node.target))

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if all(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in node.comparisons):
            self._harmless.update(id(n) for n in (node.left, *(c.comparator for c in node.comparisons)))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "grad" and id(node) not in self._harmless:
            self.as_tensor = True
