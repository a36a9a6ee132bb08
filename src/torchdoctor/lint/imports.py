"""Which of the project's own files a module's import statements load.

Hand-written because nothing at hand answers it without running code: libcst's `FullRepoManager`
only maps a file's own path to its dotted name (for `FullyQualifiedNameProvider`), and
`importlib.util.find_spec` executes the parent packages' `__init__.py` and searches
site-packages. Import statements are read with `ast`, which parses a file about ten times
faster than libcst, and every linted file of a program is read. This resolver only looks at paths: a name resolves to a `.py` file under one of the
project's boundaries or to nothing, so standard-library and third-party modules (installed
elsewhere) never resolve.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import ast


@dataclass(frozen=True)
class ImportTarget:
    """A module an import statement may load: its dotted name and, for a relative import, the
    folder it is relative to (`None`: absolute, searched on the roots like `sys.path`)."""

    dotted: str
    base: Path | None = None


def import_targets(module: ast.Module, here: Path) -> list[ImportTarget]:
    """The modules `module` (the file in folder `here`) may import. Imports inside functions
    count: a lazy import still loads the module when the function runs."""
    targets: list[ImportTarget] = []
    for node in _statements(module):
        if isinstance(node, ast.Import):
            targets.extend(ImportTarget(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            targets.extend(_from_targets(node, here))
    return [t for t in targets if t.dotted]


def resolve(target: ImportTarget, roots: Sequence[Path], boundaries: Sequence[Path]) -> list[Path]:
    """The files importing `target` executes (its packages' `__init__.py`, then the module),
    resolved, and only those under a boundary. An absolute import is looked up on `roots` in
    order and the first root that holds it wins, as on `sys.path`."""
    bases = [target.base] if target.base is not None else roots
    for base in bases:
        files = [f.resolve() for f in _module_files(target.dotted, base)]
        inside = [f for f in files if any(f.is_relative_to(b) for b in boundaries)]
        if inside:
            return inside
    return []


def _statements(module: ast.Module) -> list[ast.stmt]:
    """Every statement of `module`, nested ones included, in source order (imports come in the
    order Python runs into them; expressions, which hold no statement, are not entered)."""
    found: list[ast.stmt] = []
    stack: list[ast.AST] = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.stmt):
            found.append(node)
        stack.extend(reversed([child for child in ast.iter_child_nodes(node) if not isinstance(child, ast.expr)]))
    return found


def _from_targets(node: ast.ImportFrom, here: Path) -> list[ImportTarget]:
    """`from pkg import name` loads `pkg`, and `pkg/name.py` when `name` is a submodule."""
    base = None
    if node.level:
        base = here
        for _ in range(node.level - 1):
            base = base.parent
    module = node.module or ""
    targets = [ImportTarget(module, base)] if module else []
    prefix = f"{module}." if module else ""
    targets.extend(ImportTarget(prefix + alias.name, base) for alias in node.names if alias.name != "*")
    return targets


def _module_files(dotted: str, base: Path) -> list[Path]:
    """Existing files that importing `dotted` from `base` executes; a folder without
    `__init__.py` is a namespace package and is descended into all the same."""
    files = []
    folder = base
    for part in dotted.split("."):
        package = folder / part
        files.extend(f for f in (package / "__init__.py", folder / f"{part}.py") if f.is_file())
        if not package.is_dir():
            break
        folder = package
    return files
