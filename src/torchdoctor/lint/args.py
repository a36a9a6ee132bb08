"""Reading and editing a call's arguments as written in the source (no evaluation)."""

from __future__ import annotations

import libcst as cst


def has_unpacking(call: cst.Call) -> bool:
    """True when `*args` or `**kwargs` hide which arguments are passed (nothing is then proven)."""
    return any(arg.star for arg in call.args)


def argument(call: cst.Call, name: str, position: int | None = None) -> cst.Arg | None:
    """The argument bound to parameter `name`, given by keyword or at `position` (0-based)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    if position is not None and position < len(positional):
        return positional[position]
    return None


def literal_int(expr: cst.BaseExpression) -> int | None:
    if isinstance(expr, cst.Integer):
        return int(expr.evaluated_value)
    return None


def literal_bool(expr: cst.BaseExpression) -> bool | None:
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return expr.value == "True"
    return None


def literal_str(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def is_cuda_device(expr: cst.BaseExpression) -> bool:
    """A string literal naming a CUDA device: "cuda" or "cuda:N"."""
    value = literal_str(expr)
    return value is not None and (value == "cuda" or value.startswith("cuda:"))


def with_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """`call` with `name=value` appended after its last argument, keeping the call's layout."""
    args = list(call.args)
    new = cst.Arg(value=value, keyword=cst.Name(name), equal=_TIGHT_EQUAL)
    if args:
        trailing = args[-1].comma
        separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        if isinstance(trailing, cst.Comma):  # one argument a line: keep that layout
            new = new.with_changes(comma=trailing)
            if len(args) >= 2 and isinstance(args[-2].comma, cst.Comma):
                separator = args[-2].comma
        args[-1] = args[-1].with_changes(comma=separator)
    return call.with_changes(args=[*args, new])


def with_leading(call: cst.Call, value: cst.BaseExpression) -> cst.Call:
    """`call` with `value` inserted as its first positional argument."""
    first = cst.Arg(value=value)
    if call.args:
        first = first.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return call.with_changes(args=[first, *call.args])


_TIGHT_EQUAL = cst.AssignEqual(
    whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
)
