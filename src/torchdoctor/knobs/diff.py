"""The permanent form of a knob: a unified diff against the user's script where the call site is
found (e.g. the `DataLoader(...)` call), else None and the knob's snippet is shown instead.

libcst keeps the script's formatting and comments, so the diff touches only the arguments.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import libcst as cst

from torchdoctor.knobs.base import CallEdit


def _callee_name(func: cst.BaseExpression) -> str | None:
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return None


class _SetKeywords(cst.CSTTransformer):
    def __init__(self, edit: CallEdit) -> None:
        self.edit = edit
        self.changed = 0

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        if _callee_name(updated.func) not in self.edit.callees:
            return updated
        args = list(updated.args)
        for name, value in self.edit.kwargs.items():
            expression = cst.parse_expression(repr(value))
            for index, arg in enumerate(args):
                if arg.keyword is not None and arg.keyword.value == name:
                    args[index] = arg.with_changes(value=expression)
                    break
            else:
                args = _append(args, cst.Arg(keyword=cst.Name(name), value=expression, equal=_TIGHT_EQUAL))
        self.changed += 1
        return updated.with_changes(args=args)


_TIGHT_EQUAL = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))


def _append(args: list[cst.Arg], new: cst.Arg) -> list[cst.Arg]:
    """Append keeping the call's layout: one argument per line (a trailing comma before a line
    break) gets a new line indented like the others, the last line's comment staying where it
    was; otherwise the new argument follows `, `."""
    if not args:
        return [new]
    last = args[-1]
    after = last.comma.whitespace_after if isinstance(last.comma, cst.Comma) else None
    if not isinstance(after, cst.ParenthesizedWhitespace):
        plain = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        return [*args[:-1], plain, new.with_changes(comma=last.comma)]
    between = args[-2].comma.whitespace_after if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) else after
    indent = between if isinstance(between, cst.ParenthesizedWhitespace) else after
    last = last.with_changes(comma=last.comma.with_changes(
        whitespace_after=after.with_changes(indent=indent.indent, last_line=indent.last_line)))
    new = new.with_changes(comma=last.comma.with_changes(
        whitespace_after=after.with_changes(first_line=cst.TrailingWhitespace())))
    return [*args[:-1], last, new]


def edit_source(source: str, edits: list[CallEdit]) -> str:
    """`source` with every edit applied to its matching calls (unchanged where none matches)."""
    module = cst.parse_module(source)
    for edit in edits:
        module = module.visit(_SetKeywords(edit))
    return module.code


def unified_diff(script: str | Path, values: dict[str, Any]) -> str | None:
    """A unified diff making the call-site knobs of `values` permanent in `script`, or None when
    no knob has a call site there (or the script cannot be parsed)."""
    from torchdoctor.knobs.base import REGISTRY

    edits = [e for e in (REGISTRY[n].call_edit(v) for n, v in values.items()) if e is not None]
    path = Path(script)
    if not edits or not path.is_file():
        return None
    source = path.read_text()
    try:
        edited = edit_source(source, edits)
    except cst.ParserSyntaxError:
        return None
    if edited == source:
        return None
    return "".join(difflib.unified_diff(source.splitlines(keepends=True), edited.splitlines(keepends=True),
                                        fromfile=f"a/{path.name}", tofile=f"b/{path.name}"))
