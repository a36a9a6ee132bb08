"""Nothing reaches a console without the sanitiser (report/safe_text.py).

Every call that prints (`print`, `console.print`, `console.out`, `typer.echo`, `sys.stdout.write`,
...) in the layers that talk to the terminal (cli/, report/, workflow/) is read from the source:
each argument must be provably safe, or be on the reviewed list below with the reason it is.

Provably safe:
- a constant;
- a call to the sanitiser (`clean`, `markup`, `plain`, `cell`), or to a formatter of numbers
  (`len`, `int`, `float`, `round`, the `fmt_*` of report/format.py but `fmt_phase`);
- an f-string or `+` of safe parts, a part with a numeric format spec (`{x:.2f}`, `{n:,}`), which
  raises rather than prints a string;
- a name bound in the same function only to safe values; a value of a module's dict of constants;
- a rich `Table` (its cells are rich Text or markup; `cell()` makes them safe), as a name bound
  only to `Table(...)` in the same function, or a call of a function annotated `-> Table`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import torchdoctor

PACKAGE = Path(torchdoctor.__file__).parent
SCANNED = ("cli", "report", "workflow")
_PRINTERS = {"print", "echo", "out", "rule", "log"}
_SAFE_CALLS = {"clean", "markup", "plain", "cell", "for_stream", "len", "int", "float", "round",
               "fmt_seconds", "fmt_percent", "fmt_bytes", "fmt_count"}  # fmt: skip
_NUMERIC_SPECS = tuple("dfeEgGn%xXbo,")
#: (module, argument as written) -> why it is safe. A new entry needs the same proof.
REVIEWED = {
    ("cli/bench.py", "data.decode() + '\\n'"): "orjson output: control characters are \\u escapes",
    ("report/check.py", "to_json(result).decode() + '\\n'"): "orjson output: control characters are \\u escapes",
    ("report/check.py", "''.join((line + '\\n' for line in to_annotations(result)))"):
        "GitHub workflow commands, their texts cleaned (clean in _escape_data)",
    ("cli/help.py", "Panel(table, border_style=rich_utils.STYLE_OPTIONS_PANEL_BORDER, title=name, "
                    "title_align=rich_utils.ALIGN_OPTIONS_PANEL)"): "the CLI's own option names and help",
    ("report/console.py", "renderable"): "findings_renderables: cells and lines made with cell/plain/markup",
    ("report/console_findings.py", "*findings_renderables(findings, max_fixes)"):
        "cells and lines made with cell/plain/markup",
    ("report/tune.py", "text"): "_line: every caller passes markup whose values went through markup()",
    ("report/tune.py", "reasons"): "row_notes of plain() texts",
    ("report/tune.py", "findings"): "row_notes of clean() keys and cell() texts",
    ("report/tune.py", "Syntax(code, lexer, theme='ansi_dark', word_wrap=True)"):
        "Syntax highlights the code as tokens; the diff is cleaned before (clean in _diff)",
    ("report/tune.py", "code.rstrip('\\n')"): "the diff, cleaned before (clean in _diff)",
}


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def _is_printer(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "write":
        return _name(func.value) in ("stdout", "stderr")
    return _name(func) in _PRINTERS


def _modules() -> dict[str, ast.Module]:
    return {path.relative_to(PACKAGE).as_posix(): ast.parse(path.read_text(encoding="utf-8"))
            for folder in SCANNED for path in sorted((PACKAGE / folder).rglob("*.py"))}


def _table_builders(trees: list[ast.Module]) -> set[str]:
    """The functions annotated `-> Table`."""
    return {f.name for tree in trees for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
            and f.returns is not None and ast.unparse(f.returns).strip("'\"") == "Table"}


def _constant_maps(tree: ast.Module) -> set[str]:
    """The module's names bound to a dict literal of constants (`_TITLES = {PASS: "passed"}`)."""
    return {t.id for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.value, ast.Dict)
            and all(isinstance(v, ast.Constant) for v in n.value.values) for t in n.targets if isinstance(t, ast.Name)}


class _Proof:
    """Whether a printed expression is provably safe, in the scope (a function) it is printed from."""

    def __init__(self, tables: set[str], constant_maps: set[str]) -> None:
        self.tables, self.constant_maps = tables, constant_maps

    def safe(self, node: ast.expr, scope: ast.AST, seen: frozenset[str] = frozenset()) -> bool:
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.Call):
            return self._safe_call(node)
        if isinstance(node, ast.JoinedStr):
            return all(self._safe_part(part, scope, seen) for part in node.values)
        if isinstance(node, ast.BinOp):
            return self.safe(node.left, scope, seen) and self.safe(node.right, scope, seen)
        if isinstance(node, ast.IfExp):
            return self.safe(node.body, scope, seen) and self.safe(node.orelse, scope, seen)
        if isinstance(node, ast.Name):
            return self._bound_safely(node.id, scope, seen)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            return node.value.id in self.constant_maps
        return False

    def _safe_call(self, call: ast.Call) -> bool:
        name = _name(call.func)
        if name == "Text":  # a rich Text of a constant
            return all(isinstance(arg, ast.Constant) for arg in call.args)
        return name in _SAFE_CALLS or name in self.tables

    def _safe_part(self, part: ast.expr, scope: ast.AST, seen: frozenset[str]) -> bool:
        if isinstance(part, ast.Constant):
            return True
        assert isinstance(part, ast.FormattedValue)
        spec = ast.unparse(part.format_spec).strip("'\"") if part.format_spec else ""
        return spec.endswith(_NUMERIC_SPECS) or self.safe(part.value, scope, seen)

    def _bound_safely(self, name: str, scope: ast.AST, seen: frozenset[str]) -> bool:
        """Whether `name` is bound in `scope` only to safe values or tables (and bound at all)."""
        values = [n.value for n in ast.walk(scope) if isinstance(n, (ast.Assign, ast.AugAssign))
                  and any(isinstance(t, ast.Name) and t.id == name for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))]
        if name in seen or not values:
            return False
        return all(isinstance(v, ast.Call) and _name(v.func) in ("Table", *self.tables)
                   or self.safe(v, scope, seen | {name}) for v in values)


def _unproven() -> list[tuple[str, int, str]]:
    """(module, line, argument) for each printed argument that is not provably safe."""
    trees = _modules()
    tables, found = _table_builders(list(trees.values())), []
    for module, tree in trees.items():
        proof = _Proof(tables, _constant_maps(tree))
        for scope in [tree, *(f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)))]:
            found += [(module, call.lineno, ast.unparse(arg)) for call in _direct_calls(scope)
                      for arg in call.args if not proof.safe(arg, scope)]
    return found


def unsanitised_prints() -> list[str]:
    """`module:line: argument` for each printed argument that is neither provably safe nor reviewed."""
    return [f"{module}:{line}: {shown}" for module, line, shown in _unproven() if (module, shown) not in REVIEWED]


def _direct_calls(scope: ast.AST) -> list[ast.Call]:
    """The printing calls in `scope` itself, not in the functions nested in it (scanned on their own)."""
    calls, todo = [], list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Call) and _is_printer(node):
            calls.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return calls


def test_every_printed_argument_in_the_terminal_layers_is_sanitised_or_reviewed():
    assert unsanitised_prints() == []


def test_the_scan_refuses_an_untrusted_value_printed_as_markup_and_accepts_it_through_markup():
    scope = ast.parse("def f(c, w, n):\n    c.print(f'warning: {w}')\n    c.print(f'{markup(w)}: {n:.1f}')\n").body[0]
    first, second = sorted(_direct_calls(scope), key=lambda call: call.lineno)
    proof = _Proof(set(), set())
    assert (proof.safe(first.args[0], scope), proof.safe(second.args[0], scope)) == (False, True)


def test_every_reviewed_entry_is_still_printed_and_not_provable():
    assert set(REVIEWED) - {(module, shown) for module, _, shown in _unproven()} == set()
