"""The user's program as lint sees it, for checks whose truth depends on other files.

Lint reports each file on its own, but some facts belong to the process: `set_epoch` may be
called in `utils/train_utils.py` on the sampler `main.py` creates. Every linted file is taken as
a possible entry point; its program is the file and the local modules it imports, transitively
(:mod:`torchdoctor.lint.imports`). A file's *companions* are the other modules of every program it
belongs to: what it imports, what imports it, and what those import. A check asks about them
through :class:`ProgramView`.

Bounded: imports are followed at most `MAX_DEPTH` deep from an entry and at most `MAX_MODULES`
files are read; an unreadable or unparsable file is a module without imports or facts.
"""

from __future__ import annotations

import ast
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

import libcst as cst

from torchdoctor.inputs import read_capped
from torchdoctor.lint.budget import MAX_PARSED_BYTES
from torchdoctor.lint.imports import ImportTarget, import_targets, resolve
from torchdoctor.lint.nesting import too_deep

#: The largest source file read: generated modules reach a few megabytes; past this a file is
#: reported as unreadable rather than parsed (its syntax tree would take gigabytes).
MAX_SOURCE_BYTES = 16 * 1024 * 1024

#: Import hops followed from an entry file.
MAX_DEPTH = 10
#: Files one `Program` (one lint run) reads, linted ones included.
MAX_MODULES = 2000
#: Parsed modules kept at once (facts are kept, trees are re-parsed when evicted).
_PARSED_KEPT = 128
#: A folder holding one of these is a project root: the boundary, and a root of its imports.
_PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")

#: A question about one module, e.g. "does it call `.set_epoch(...)`". Must be hashable (a
#: module-level function): answers are kept per module.
ModuleFact = Callable[[cst.Module], bool]


def project_root(folder: Path) -> Path:
    """The nearest folder at or above `folder` with a project marker, else `folder` itself."""
    folder = folder.resolve()
    for candidate in (folder, *folder.parents):
        if any((candidate / marker).exists() for marker in _PROJECT_MARKERS):
            return candidate
    return folder


class Program:
    """The programs started from `entries`: import graph and per-module facts, read lazily.

    Absolute imports of an entry's program are looked up on the entry's own folder (Python's
    `sys.path[0]` when it runs as a script), then on `roots`; files outside `boundaries` are never
    read.
    """

    def __init__(self, entries: Iterable[Path], roots: Sequence[Path], boundaries: Sequence[Path]) -> None:
        self.entries = tuple(dict.fromkeys(p.resolve() for p in entries))
        self.roots = tuple(dict.fromkeys(r.resolve() for r in roots))
        self.boundaries = tuple(dict.fromkeys(b.resolve() for b in boundaries))
        self._closures: dict[Path, tuple[Path, ...]] = {}
        self._companions: dict[Path, tuple[Path, ...]] = {}
        self._targets: dict[Path, list[ImportTarget]] = {}
        self._facts: dict[tuple[ModuleFact, Path], bool] = {}
        self._read: set[Path] = set()
        self._parse = lru_cache(maxsize=_PARSED_KEPT)(_parse)

    @classmethod
    def of(cls, paths: Iterable[Path], files: Iterable[Path]) -> Program:
        """The programs of the linted `files`, found from the command-line `paths`: each path's
        folder (a file's parent) and its project root (and `src/` there) are import roots; the
        project root bounds what is read."""
        roots: list[Path] = []
        boundaries: list[Path] = []
        for path in paths:
            folder = path if path.is_dir() else path.parent
            project = project_root(folder)
            roots += [folder, project, project / "src"]
            boundaries.append(project)
        return cls(files, roots, boundaries)

    def closure(self, entry: Path) -> tuple[Path, ...]:
        """`entry` and the local modules it imports, transitively, breadth first (resolved)."""
        entry = entry.resolve()
        if entry not in self._closures:
            roots = (entry.parent, *self.roots)
            depth = {entry: 0}
            queue = deque([entry])
            while queue:
                path = queue.popleft()
                if depth[path] == MAX_DEPTH:
                    continue
                for imported in self._imports(path, roots):
                    if imported not in depth:
                        depth[imported] = depth[path] + 1
                        queue.append(imported)
            self._closures[entry] = tuple(depth)
        return self._closures[entry]

    def companions(self, path: Path) -> tuple[Path, ...]:
        """The other modules of every program (started from an entry) that `path` belongs to."""
        path = path.resolve()
        if path not in self._companions:
            found: dict[Path, None] = {}
            for entry in self._entries_reaching.get(path, ()):
                found.update(dict.fromkeys(self.closure(entry)))
            found.pop(path, None)
            self._companions[path] = tuple(found)
        return self._companions[path]

    def holds(self, fact: ModuleFact, path: Path) -> bool:
        """`fact` is true of the module at `path` (false when it cannot be read)."""
        key = (fact, path)
        if key not in self._facts:
            module = self._module(path)
            self._facts[key] = module is not None and fact(module)
        return self._facts[key]

    @cached_property
    def _entries_reaching(self) -> dict[Path, list[Path]]:
        """Module -> the entries whose program holds it (every entry's closure, built once)."""
        reaching: dict[Path, list[Path]] = defaultdict(list)
        for entry in self.entries:
            for module in self.closure(entry):
                reaching[module].append(entry)
        return reaching

    def _imports(self, path: Path, roots: Sequence[Path]) -> list[Path]:
        if path not in self._targets:
            module = self._syntax(path)
            self._targets[path] = [] if module is None else import_targets(module, path.parent)
        return [f for target in self._targets[path] for f in resolve(target, roots, self.boundaries)]

    def _module(self, path: Path) -> cst.Module | None:
        return self._parse(path) if self._readable(path) else None

    def _syntax(self, path: Path) -> ast.Module | None:
        return _syntax(path) if self._readable(path) else None

    def _readable(self, path: Path) -> bool:
        """`path` is among the first `MAX_MODULES` files this program reads."""
        if path not in self._read:
            if len(self._read) >= MAX_MODULES:
                return False
            self._read.add(path)
        return True


def _source(path: Path) -> bytes | None:
    """The bytes of `path` when it may be parsed: readable and within the size bound of a linted
    file (:mod:`torchdoctor.lint.budget`); None otherwise (linting it says why)."""
    try:
        data = read_capped(path, MAX_SOURCE_BYTES)
    except OSError:
        return None
    return None if len(data) > MAX_PARSED_BYTES else data


def _parse(path: Path) -> cst.Module | None:
    """`path` parsed by libcst (for the facts the checks ask), or None; a file nested too deeply
    for libcst's recursion is not parsed."""
    data = _source(path)
    try:
        return None if data is None or too_deep(data) else cst.parse_module(data)
    except (SyntaxError, cst.ParserSyntaxError, RecursionError):
        return None


def _syntax(path: Path) -> ast.Module | None:
    """`path` parsed by Python's own parser (for its imports), or None. That parser bounds its
    own nesting: a file too deep for it raises, it does not overflow."""
    data = _source(path)
    try:
        return None if data is None else ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


@dataclass(frozen=True)
class ProgramView:
    """One linted file seen as part of its program(s). Without a program (a source text linted
    on its own) it has no companions."""

    program: Program | None = None
    path: Path | None = None

    def any_companion(self, fact: ModuleFact) -> bool:
        """`fact` holds for some other module of the file's programs."""
        if self.program is None or self.path is None:
            return False
        return any(self.program.holds(fact, other) for other in self.program.companions(self.path))
