"""The permanent form of the kept knobs: one unified diff against the user's files, and a
snippet per knob in the script's own names.

Two kinds of edit, both with libcst (the files' formatting and comments are kept):
- site edits: the very line where the script undid a knob or built the object a knob rewrote,
  recorded while the knob ran (`torchdoctor.knobs.guard`; `Knob.site_edit` says how to change it:
  set keywords on the call, replace its arguments, change an assigned value, or delete the
  statement). These may be in any of the user's files (a helper module building the DataLoader).
- call edits (`Knob.call_edit`), for kept knobs no site was recorded for: keywords set on every
  call of the script to the named callee (e.g. `DataLoader(...)`).
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any, Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from torchdoctor.knobs.base import CallEdit, SiteEdit
from torchdoctor.knobs.names import callee_name, script_names


def _literal(value: Any, like: cst.BaseExpression | None = None) -> cst.BaseExpression:
    """`value` as source, a string in the quotes of the literal it replaces."""
    if isinstance(value, str) and isinstance(like, cst.SimpleString) and like.value[:1] in "\"'":
        quote = like.value[0]
        if quote not in value and "\\" not in value:
            return cst.SimpleString(f"{quote}{value}{quote}")
    return cst.parse_expression(repr(value))


def _set_keywords(call: cst.Call, kwargs: dict[str, Any]) -> cst.Call:
    """`call` with each keyword of `kwargs` set: an explicit one's value replaced, else merged into
    the call's last `**mapping` when it has one (that mapping may already carry the keyword on some
    path of the script, and a keyword given twice is a TypeError), else appended."""
    args = list(call.args)
    for name, value in kwargs.items():
        expression = _literal(value)
        for index, arg in enumerate(args):
            if arg.keyword is not None and arg.keyword.value == name:
                args[index] = arg.with_changes(value=_literal(value, arg.value))
                break
        else:
            starred = [i for i, arg in enumerate(args) if arg.star == "**"]
            if starred:
                args[starred[-1]] = _merged(args[starred[-1]], name, expression)
            else:
                args = _append(args, cst.Arg(keyword=cst.Name(name), value=expression, equal=_TIGHT_EQUAL))
    return call.with_changes(args=args)


def _merged(arg: cst.Arg, name: str, value: cst.BaseExpression) -> cst.Arg:
    """`**mapping` as `**{**mapping, "name": value}`: the keyword set whatever the mapping holds."""
    merged = cst.Dict([cst.StarredDictElement(arg.value), cst.DictElement(cst.SimpleString(repr(name)), value)])
    return arg.with_changes(value=merged)


class _SetKeywords(cst.CSTTransformer):
    def __init__(self, edit: CallEdit) -> None:
        self.edit = edit
        self.changed = 0

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        if callee_name(updated.func) not in self.edit.callees:
            return updated
        self.changed += 1
        return _set_keywords(updated, self.edit.kwargs)


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


class _EditSites(cst.CSTTransformer):
    """Apply site edits, each to the node that starts on (or spans) its line."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, edits: Sequence[tuple[int, SiteEdit]]) -> None:
        super().__init__()
        self.edits = list(edits)
        self.applied: set[int] = set()

    def _span(self, node: cst.CSTNode) -> tuple[int, int]:
        position = self.get_metadata(PositionProvider, node)
        return position.start.line, position.end.line

    def _matching(self, node: cst.CSTNode, actions: tuple[str, ...], *, start_only: bool = False) -> list[int]:
        start, end = self._span(node)
        return [i for i, (line, edit) in enumerate(self.edits) if edit.action in actions and i not in self.applied
                and (line == start if start_only else start <= line <= end)]

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        for index in self._matching(original, ("kwargs", "args")):
            edit = self.edits[index][1]
            if edit.callees and callee_name(updated.func) not in edit.callees:
                continue
            self.applied.add(index)
            if edit.action == "kwargs":
                updated = _set_keywords(updated, edit.kwargs)
            else:
                args = list(updated.args)
                for position, value in enumerate(edit.args):
                    if position < len(args) and args[position].keyword is None:
                        args[position] = args[position].with_changes(value=_literal(value, args[position].value))
                updated = updated.with_changes(args=args)
        return updated

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.Assign:
        for index in self._matching(original, ("assign",)):
            self.applied.add(index)
            updated = updated.with_changes(value=_literal(self.edits[index][1].value, updated.value))
        return updated

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine,
                                  updated: cst.SimpleStatementLine) -> Any:
        indices = self._matching(original, ("delete",))
        if indices:
            self.applied.update(indices)
            return updated.with_changes(body=[cst.Expr(cst.Name(_DELETED))])  # removed by its block
        return updated

    def leave_With(self, original: cst.With, updated: cst.With) -> Any:
        indices = self._matching(original, ("delete",), start_only=True)
        if indices and len(updated.items) == 1 and isinstance(updated.body, cst.IndentedBlock):
            self.applied.update(indices)
            return cst.FlattenSentinel(updated.body.body)
        return updated

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        body = _without_deleted(updated.body)
        if not body:  # its only statement was deleted
            body = [cst.SimpleStatementLine([cst.Pass()])]
        return updated.with_changes(body=body)

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        return updated.with_changes(body=_without_deleted(updated.body))


_DELETED = "__torchdoctor_deleted__"


def _is_deleted(statement: cst.CSTNode) -> bool:
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr) and isinstance(statement.body[0].value, cst.Name)
            and statement.body[0].value.value == _DELETED)


def _without_deleted(body: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """The statements left, a deleted one's leading blank lines and comments passed on to the next."""
    kept: list[cst.BaseStatement] = []
    carried: list[cst.EmptyLine] = []
    for statement in body:
        if _is_deleted(statement):
            carried.extend(statement.leading_lines)
            continue
        if carried and hasattr(statement, "leading_lines"):
            statement = statement.with_changes(leading_lines=[*carried, *statement.leading_lines])
            carried = []
        kept.append(statement)
    return kept


def edit_source(source: str, edits: list[CallEdit]) -> str:
    """`source` with every call edit applied to its matching calls (unchanged where none matches)."""
    module = cst.parse_module(source)
    for edit in edits:
        module = module.visit(_SetKeywords(edit))
    return module.code


def edit_sites(source: str, edits: Sequence[tuple[int, SiteEdit]]) -> str:
    """`source` with each (line, SiteEdit) applied at that line."""
    return MetadataWrapper(cst.parse_module(source)).visit(_EditSites(edits)).code


def _label(path: Path, base: Path) -> str:
    try:
        return os.path.relpath(path, base) if path.is_relative_to(base) else str(path)
    except ValueError:
        return str(path)


def _file_diff(path: Path, edited: str, source: str, base: Path) -> str:
    label = _label(path, base)
    return "".join(difflib.unified_diff(source.splitlines(keepends=True), edited.splitlines(keepends=True),
                                        fromfile=f"a/{label}", tofile=f"b/{label}"))


def knob_changes(script: str | Path, values: dict[str, Any], intercepted: Sequence[dict[str, Any]] = (),
                 record: Any = None) -> tuple[list[dict[str, Any]], str | None]:
    """For the kept knobs `values`: one change per knob (`knob`, `value`, `snippet` in the
    script's names, `sites`: each line of the user's files to change, with `advice`) and one
    unified diff over every file with a site or call edit (None when there is none)."""
    changes, edited = _changes_and_edits(Path(script), values, intercepted, record)
    base = Path(script).resolve().parent
    diffs = [_file_diff(path.resolve(), text, path.read_text(), base) for path, text in edited.items()]
    return changes, "".join(diffs) or None


def patched_files(script: str | Path, values: dict[str, Any], intercepted: Sequence[dict[str, Any]] = (),
                  record: Any = None) -> dict[Path, str]:
    """Each user file `knob_changes`'s diff changes -> its text with the diff applied."""
    return _changes_and_edits(Path(script), values, intercepted, record)[1]


def _changes_and_edits(script: Path, values: dict[str, Any], intercepted: Sequence[dict[str, Any]],
                       record: Any) -> tuple[list[dict[str, Any]], dict[Path, str]]:
    """`knob_changes`'s changes, and each file its edits change -> the edited text."""
    from torchdoctor.knobs.base import REGISTRY, environment

    names = script_names(script, environment(record) if record is not None else None)
    by_file: dict[Path, list[tuple[int, SiteEdit]]] = {}
    sites: dict[str, list[dict[str, Any]]] = {name: [] for name in values}
    seen: set[tuple[Any, ...]] = set()
    for call in intercepted:
        name = call.get("knob")
        where = (name, call.get("file"), call.get("line"))
        if name not in values or not call.get("file") or where in seen:
            continue  # a line met again (each run, each trial records it) is one site
        seen.add(where)
        knob = REGISTRY[name]
        edit = knob.site_edit(values[name], call)
        sites[name].append({"file": call["file"], "line": call["line"], "code": call.get("code", ""),
                            "call": call.get("call"), "advice": knob.site_advice(values[name], call)})
        if edit is not None and Path(call["file"]).is_file():
            by_file.setdefault(Path(call["file"]), []).append((int(call["line"]), edit))
    call_edits = [e for n, v in values.items() if not sites[n]
                  for e in [REGISTRY[n].call_edit(v)] if e is not None]
    edited_files: dict[Path, str] = {}
    for path in [script] + [f for f in by_file if f.resolve() != script.resolve()]:
        edits = by_file.get(path) or by_file.get(path.resolve()) or []
        if not path.is_file():
            continue
        source = path.read_text()
        try:
            edited = edit_sites(source, edits) if edits else source
            if path == script and call_edits:
                edited = edit_source(edited, call_edits)
        except cst.ParserSyntaxError:
            continue
        if edited != source:
            edited_files[path] = edited
    changes = [{"knob": n, "value": v, "snippet": REGISTRY[n].code_change(v, names), "sites": sites[n]}
               for n, v in values.items()]
    return changes, edited_files


def unified_diff(script: str | Path, values: dict[str, Any],
                 intercepted: Sequence[dict[str, Any]] = ()) -> str | None:
    """A unified diff making the kept knobs `values` permanent (see `knob_changes`), or None."""
    return knob_changes(script, values, intercepted)[1]
