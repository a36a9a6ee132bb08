"""The script's own words: which variables hold the model, the optimizer and the DataLoader, and
how the script writes the optimizer's class, so that snippets say `opt = torch.optim.SGD(net...`
for an SGD script instead of a generic AdamW.

Read with libcst from the script's assignments `NAME = Callee(...)` (chains such as
`Net().to(device)` included), matched against the classes the run saw (`record.env`: models,
optimizers). Where the model's construction is not in the script (a helper builds it), the
variable whose `.parameters()` the optimizer receives is the model.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import libcst as cst

from torchdoctor.environment import Environment
from torchdoctor.knobs.base import GENERIC, ScriptNames


def _callees(node: cst.BaseExpression) -> list[cst.Call]:
    """The calls of a chain `A(...).b(...).c(...)`, outermost first."""
    calls: list[cst.Call] = []
    while True:
        if isinstance(node, cst.Call):
            calls.append(node)
            node = node.func
        elif isinstance(node, cst.Attribute):
            node = node.value
        else:
            return calls


def callee_name(func: cst.BaseExpression) -> str | None:
    """The called name: `DataLoader` for `DataLoader(...)` and `torch.utils.data.DataLoader(...)`."""
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return None


class _Assignments(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: list[tuple[str, cst.Call]] = []  # (variable, call) for `variable = call...`

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1:
            self._note(node.targets[0].target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._note(node.target, node.value)

    def _note(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            for call in _callees(value):
                self.found.append((target.value, call))


def script_names(script: str | Path, env: Environment | None) -> ScriptNames:
    """The script's names for the model, the optimizer (and its class) and the DataLoader."""
    path = Path(script)
    try:
        module = cst.parse_module(path.read_text())
    except (OSError, UnicodeDecodeError, cst.ParserSyntaxError):
        return GENERIC
    env = env or Environment()
    visitor = _Assignments()
    module.visit(visitor)
    optimizer_classes = {o.class_name for o in env.optimizers}
    model_classes = {m.class_name for m in env.models}
    names: dict[str, str] = {}
    for variable, call in visitor.found:
        callee = callee_name(call.func)
        if "optimizer" not in names and callee in optimizer_classes:
            names["optimizer"] = variable
            names["optimizer_class"] = module.code_for_node(call.func)
            model = _parameters_owner(call)
            if model and "model" not in names:
                names["model_from_optimizer"] = model
        elif "model" not in names and callee in model_classes:
            names["model"] = variable
        elif "loader" not in names and callee == "DataLoader":
            names["loader"] = variable
    if "model" not in names and "model_from_optimizer" in names:
        names["model"] = names["model_from_optimizer"]
    names.pop("model_from_optimizer", None)
    return dataclasses.replace(GENERIC, **names)


def _parameters_owner(call: cst.Call) -> str | None:
    """`X` of an optimizer call's first argument `X.parameters()` (or `X.module.parameters()`)."""
    if not call.args:
        return None
    first = call.args[0].value
    if isinstance(first, cst.Call) and isinstance(first.func, cst.Attribute) and first.func.attr.value == "parameters":
        owner = first.func.value
        while isinstance(owner, cst.Attribute):
            owner = owner.value
        if isinstance(owner, cst.Name):
            return owner.value
    return None
