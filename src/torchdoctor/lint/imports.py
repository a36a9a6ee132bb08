"""Which of the project's own files a module's import statements load.

Hand-written because nothing at hand answers it without running code: libcst's `FullRepoManager`
only maps a file's own path to its dotted name (for `FullyQualifiedNameProvider`), and
`importlib.util.find_spec` executes the parent packages' `__init__.py` and searches
site-packages. This resolver only looks at paths: a name resolves to a `.py` file under one of the
project's boundaries or to nothing, so standard-library and third-party modules (installed
elsewhere) never resolve.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import libcst as cst


@dataclass(frozen=True)
class ImportTarget:
    """A module an import statement may load: its dotted name and, for a relative import, the
    folder it is relative to (`None`: absolute, searched on the roots like `sys.path`)."""

    dotted: str
    base: Path | None = None


def import_targets(module: cst.Module, here: Path) -> list[ImportTarget]:
    """The modules `module` (the file in folder `here`) may import. Imports inside functions
    count: a lazy import still loads the module when the function runs."""
    collector = _ImportStatements()
    module.visit(collector)
    targets: list[ImportTarget] = []
    for node in collector.found:
        if isinstance(node, cst.Import):
            targets.extend(ImportTarget(_dotted(alias.name)) for alias in node.names)
        else:
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


class _ImportStatements(cst.CSTVisitor):
    """Collects import statements without descending into expressions (which hold none): a
    third of the time of `matchers.findall`, and every linted file of a program is read."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[cst.Import | cst.ImportFrom] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            self.found.append(node)
            return False
        return not isinstance(node, cst.BaseExpression)


def _from_targets(node: cst.ImportFrom, here: Path) -> list[ImportTarget]:
    """`from pkg import name` loads `pkg`, and `pkg/name.py` when `name` is a submodule."""
    base = None
    if node.relative:
        base = here
        for _ in range(len(node.relative) - 1):
            base = base.parent
    module = _dotted(node.module) if node.module else ""
    targets = [ImportTarget(module, base)] if module else []
    if not isinstance(node.names, cst.ImportStar):
        prefix = f"{module}." if module else ""
        names = [alias.name for alias in node.names if isinstance(alias.name, cst.Name)]
        targets.extend(ImportTarget(prefix + name.value, base) for name in names)
    return targets


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return node.value if isinstance(node, cst.Name) else ""


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
