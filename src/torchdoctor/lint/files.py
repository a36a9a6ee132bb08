"""Which files to lint: paths expanded to Python files, and a script's local imports."""

from __future__ import annotations

from collections import deque
from pathlib import Path

import libcst as cst
import libcst.matchers as m

from torchdoctor.lint.result import SkippedFile
from torchdoctor.lint.selection import LintUsageError

#: Folders never descended into when a directory is given.
_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "site-packages"})


def python_files(paths: list[Path]) -> tuple[list[Path], list[SkippedFile]]:
    """Files to lint (`*.py`, directories searched recursively) and explicit paths skipped.

    Raises :class:`LintUsageError` for a path that does not exist.
    """
    files: list[Path] = []
    skipped: list[SkippedFile] = []
    for path in paths:
        if path.is_dir():
            files.extend(_walk(path))
        elif path.is_file() and path.suffix == ".py":
            files.append(path)
        elif path.exists():
            skipped.append(SkippedFile(str(path), "not a Python file (*.py); skipped"))
        else:
            raise LintUsageError(f"no such file or directory: {path}")
    return list(dict.fromkeys(files)), skipped


def _walk(folder: Path) -> list[Path]:
    found = []
    for path in sorted(folder.rglob("*.py")):
        parts = path.relative_to(folder).parts[:-1]
        hidden = any(p.startswith(".") or p in _SKIPPED_DIRS for p in parts)
        if not hidden and path.is_file():
            found.append(path)
    return found


def local_imports(script: Path) -> list[Path]:
    """`script` and, transitively, the modules it imports that live in its folder tree (where
    Python finds them when the script runs: the script's folder is `sys.path[0]`)."""
    root = script.resolve().parent
    seen = {script.resolve(): script}
    queue = deque([script.resolve()])
    while queue:
        for module in _imported_files(queue.popleft(), root):
            if module not in seen:
                seen[module] = module
                queue.append(module)
    return list(seen.values())


def _imported_files(path: Path, root: Path) -> list[Path]:
    try:
        tree = cst.parse_module(path.read_bytes())
    except (OSError, cst.ParserSyntaxError):
        return []  # reported when the file itself is linted
    found: list[Path] = []
    for node in m.findall(tree, m.Import() | m.ImportFrom()):
        for dotted, base in _import_targets(node, path.parent, root):
            found.extend(_module_files(dotted, base, root))
    return found


def _import_targets(node: cst.CSTNode, here: Path, root: Path) -> list[tuple[str, Path]]:
    """(dotted module name, folder it is relative to) for each module `node` may load."""
    if isinstance(node, cst.Import):
        return [(_dotted(alias.name), root) for alias in node.names]
    assert isinstance(node, cst.ImportFrom)
    base = root
    if node.relative:
        base = here
        for _ in range(len(node.relative) - 1):
            base = base.parent
    module = _dotted(node.module) if node.module else ""
    targets = [(module, base)] if module else []
    if not isinstance(node.names, cst.ImportStar):  # `from pkg import sub` may load pkg/sub.py
        prefix = f"{module}." if module else ""
        names = [alias.name for alias in node.names if isinstance(alias.name, cst.Name)]
        targets.extend((prefix + name.value, base) for name in names)
    return targets


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return node.value if isinstance(node, cst.Name) else ""


def _module_files(dotted: str, base: Path, root: Path) -> list[Path]:
    """Existing files under `root` that importing `dotted` from `base` executes."""
    if not dotted:
        return []
    files = []
    folder = base
    for part in dotted.split("."):
        folder = folder / part
        for candidate in (folder / "__init__.py", folder.with_suffix(".py")):
            resolved = candidate.resolve()
            if resolved.is_file() and resolved.is_relative_to(root):
                files.append(resolved)
    return files
