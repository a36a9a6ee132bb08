"""Running the checks over source text: violations for one file, and the safe fixes applied."""

from __future__ import annotations

import ast
from dataclasses import dataclass

import libcst as cst

from torchdoctor.lint.base import Hit
from torchdoctor.lint.budget import FILE_SECONDS, OverBudget, cpu_budget, too_large, too_slow
from torchdoctor.lint.nesting import too_deep
from torchdoctor.lint.program import ProgramView
from torchdoctor.lint.registry import visitor_classes
from torchdoctor.lint.result import FileError, Violation
from torchdoctor.lint.selection import Selection, suppressed
from torchdoctor.lint.tree import SourceTree

#: Fix passes per file; a pass can only apply the outermost of two nested fixes.
_MAX_FIX_PASSES = 8


@dataclass(frozen=True)
class SourceLint:
    """Violations in one source text, or the reason it could not be parsed."""

    violations: tuple[Violation, ...] = ()
    error: FileError | None = None
    skipped: str | None = None
    """Why the source was not analysed though it may be valid (too large, nested too deeply,
    too slow to analyse), or None."""


def lint_source(
    source: str,
    path: str,
    selection: Selection,
    program: ProgramView | None = None,
    seconds: float = FILE_SECONDS,
) -> SourceLint:
    """Lint `source` (the text of `path`) with the enabled checks, honouring `# noqa`; `program`
    answers the checks' questions about the other modules of the file's program. The analysis is
    bounded (:mod:`torchdoctor.lint.budget`): past `seconds` of CPU time it is abandoned and the
    source skipped."""
    reason = too_large(source)
    if reason is not None:
        return SourceLint(skipped=reason)
    try:
        with cpu_budget(seconds):
            return _lint_parsed(source, path, selection, program)
    except OverBudget:
        return SourceLint(skipped=too_slow(seconds))


def _lint_parsed(source: str, path: str, selection: Selection, program: ProgramView | None) -> SourceLint:
    reason = too_deep(source)
    if reason is not None:
        return SourceLint(skipped=reason)
    try:
        tree = SourceTree(cst.parse_module(source))
        hits = _hits(tree, source, selection, program)
        starts = tree.starts([hit.node for hit in hits]) if hits else []
    except cst.ParserSyntaxError as exc:
        return SourceLint(error=_syntax_error(source, path, exc))
    except RecursionError:  # deeper than the token count could tell: never a traceback
        return SourceLint(skipped="too deeply nested to parse; skipped")
    violations = [
        Violation(
            code=hit.check.code,
            layer=hit.check.layer,
            message=hit.message,
            path=path,
            line=line,
            col=column + 1,
            fixable=hit.replacement is not None,
            rule_hint=hit.check.rule_hint,
        )
        for hit, (line, column) in zip(hits, starts)
    ]
    violations.sort(key=lambda v: (v.line, v.col, v.code))
    return SourceLint(violations=tuple(violations))


def _syntax_error(source: str, path: str, exc: cst.ParserSyntaxError) -> FileError:
    """CPython's own message and position when it rejects the file too (they are what users
    know); libcst's otherwise (syntax newer than the libcst grammar)."""
    try:
        compile(source, path, "exec", flags=ast.PyCF_ONLY_AST)
    except SyntaxError as py_exc:
        return FileError(path, f"syntax error: {py_exc.msg}", py_exc.lineno, py_exc.offset)
    return FileError(path, f"cannot parse: {exc.message}", exc.editor_line, exc.editor_column)


def fix_source(
    source: str, selection: Selection, program: ProgramView | None = None, seconds: float = FILE_SECONDS
) -> str:
    """`source` with every safe fix of an enabled, unsuppressed check applied (unchanged when
    it does not parse, or is not analysed within the bounds of :func:`lint_source`); `program`
    as for :func:`lint_source`."""
    if too_large(source) is not None:
        return source
    try:
        with cpu_budget(seconds):
            return _fixed(source, selection, program)
    except OverBudget:
        return source


def _fixed(source: str, selection: Selection, program: ProgramView | None) -> str:
    if too_deep(source) is not None:
        return source
    for _ in range(_MAX_FIX_PASSES):
        try:
            tree = SourceTree(cst.parse_module(source))
        except cst.ParserSyntaxError:
            return source
        fixes = {id(h.node): h.replacement for h in _hits(tree, source, selection, program) if h.replacement}
        if not fixes:
            break
        fixed = tree.module.visit(_Replace(fixes)).code
        if fixed == source:
            break
        source = fixed
    return source


def _hits(tree: SourceTree, source: str, selection: Selection, program: ProgramView | None) -> list[Hit]:
    visitors = [
        cls(tree, program)
        for cls in visitor_classes()
        if any(selection.enabled(check.code) for check in cls.CHECKS) and cls.may_apply(source)
    ]
    if not visitors:  # no file text a check needs: no walk, no name resolution
        return []
    tree.visit(visitors)
    found = [hit for visitor in visitors for hit in visitor.hits if selection.enabled(hit.check.code)]
    if not found:
        return []
    lines = source.splitlines()
    starts = tree.starts([hit.node for hit in found])
    return [
        hit
        for hit, (line, _) in zip(found, starts)
        if not suppressed(hit.check.code, lines[line - 1] if line <= len(lines) else "")
    ]


class _Replace(cst.CSTTransformer):
    """Puts each fix's replacement in place of the node it was proven on (matched by identity)."""

    def __init__(self, fixes: dict[int, cst.CSTNode]) -> None:
        super().__init__()
        self.fixes = fixes

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):  # type: ignore[override]
        return self.fixes.get(id(original_node), updated_node)
