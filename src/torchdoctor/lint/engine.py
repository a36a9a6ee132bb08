"""Running the checks over source text: violations for one file, and the safe fixes applied."""

from __future__ import annotations

import ast
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from torchdoctor.lint.base import Hit
from torchdoctor.lint.nesting import too_deep
from torchdoctor.lint.program import ProgramView
from torchdoctor.lint.registry import visitor_classes
from torchdoctor.lint.result import FileError, Violation
from torchdoctor.lint.selection import Selection, suppressed

#: Fix passes per file; a pass can only apply the outermost of two nested fixes.
_MAX_FIX_PASSES = 8


@dataclass(frozen=True)
class SourceLint:
    """Violations in one source text, or the reason it could not be parsed."""

    violations: tuple[Violation, ...] = ()
    error: FileError | None = None
    skipped: str | None = None
    """Why the source was not parsed though it may be valid (it nests too deeply), or None."""


def lint_source(
    source: str, path: str, selection: Selection, program: ProgramView | None = None
) -> SourceLint:
    """Lint `source` (the text of `path`) with the enabled checks, honouring `# noqa`; `program`
    answers the checks' questions about the other modules of the file's program."""
    reason = too_deep(source)
    if reason is not None:
        return SourceLint(skipped=reason)
    try:
        wrapper = MetadataWrapper(cst.parse_module(source))
        hits = _hits(wrapper, source, selection, program)
    except cst.ParserSyntaxError as exc:
        return SourceLint(error=_syntax_error(source, path, exc))
    except RecursionError:  # deeper than the token count could tell: never a traceback
        return SourceLint(skipped="too deeply nested to parse; skipped")
    positions = wrapper.resolve(PositionProvider) if hits else {}
    violations = []
    for hit in hits:
        start = positions[hit.node].start
        check = hit.check
        violations.append(
            Violation(
                code=check.code,
                layer=check.layer,
                message=hit.message,
                path=path,
                line=start.line,
                col=start.column + 1,
                fixable=hit.replacement is not None,
                rule_hint=check.rule_hint,
            )
        )
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


def fix_source(source: str, selection: Selection, program: ProgramView | None = None) -> str:
    """`source` with every safe fix of an enabled, unsuppressed check applied (unchanged when
    it does not parse); `program` as for :func:`lint_source`."""
    if too_deep(source) is not None:
        return source
    for _ in range(_MAX_FIX_PASSES):
        try:
            wrapper = MetadataWrapper(cst.parse_module(source))
        except cst.ParserSyntaxError:
            return source
        fixes = {id(h.node): h.replacement for h in _hits(wrapper, source, selection, program) if h.replacement}
        if not fixes:
            break
        fixed = wrapper.module.visit(_Replace(fixes)).code
        if fixed == source:
            break
        source = fixed
    return source


def _hits(
    wrapper: MetadataWrapper, source: str, selection: Selection, program: ProgramView | None
) -> list[Hit]:
    visitors = [
        cls(wrapper.module, program)
        for cls in visitor_classes()
        if any(selection.enabled(check.code) for check in cls.CHECKS) and cls.may_apply(source)
    ]
    if not visitors:  # no file text a check needs: skip the name resolution, the costly part
        return []
    wrapper.visit_batched(visitors)
    if not any(visitor.hits for visitor in visitors):
        return []
    lines = source.splitlines()
    positions = wrapper.resolve(PositionProvider)
    hits: list[Hit] = []
    for visitor in visitors:
        for hit in visitor.hits:
            line = positions[hit.node].start.line
            text = lines[line - 1] if line <= len(lines) else ""
            if selection.enabled(hit.check.code) and not suppressed(hit.check.code, text):
                hits.append(hit)
    return hits


class _Replace(cst.CSTTransformer):
    """Puts each fix's replacement in place of the node it was proven on (matched by identity)."""

    def __init__(self, fixes: dict[int, cst.CSTNode]) -> None:
        super().__init__()
        self.fixes = fixes

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):  # type: ignore[override]
        return self.fixes.get(id(original_node), updated_node)
