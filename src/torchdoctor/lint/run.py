"""The public entry points: lint paths, lint a script with its local imports, plan fixes.

Each run builds one :class:`~torchdoctor.lint.program.Program` from what it lints, so checks
about the whole program see the same modules whether a file is reported, fixed or only read."""

from __future__ import annotations

import difflib
import io
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from torchdoctor.errors import ScriptNotFoundError
from torchdoctor.lint.budget import FILE_SECONDS
from torchdoctor.lint.engine import fix_source, lint_source
from torchdoctor.inputs import read_capped
from torchdoctor.outputs import write_atomic
from torchdoctor.lint.files import python_files
from torchdoctor.lint.program import MAX_SOURCE_BYTES, Program, ProgramView
from torchdoctor.lint.result import FileError, LintResult, SkippedFile
from torchdoctor.lint.selection import Selection


def lint_paths(
    paths: Iterable[str | Path],
    *,
    select: Iterable[str] = (),
    ignore: Iterable[str] = (),
    file_seconds: float = FILE_SECONDS,
) -> LintResult:
    """Lint files and folders (recursively, `*.py`). A file that cannot be parsed is reported in
    `errors` and the others are still linted; non-Python files given explicitly are `skipped`, and
    so is a file too large, nested too deeply, or not analysed within `file_seconds` of CPU time
    (:mod:`torchdoctor.lint.budget`).

    Raises :class:`~torchdoctor.lint.selection.LintUsageError` for a missing path or an unknown
    code prefix in `select`/`ignore`.
    """
    selection = Selection(tuple(select), tuple(ignore))
    given = [Path(p) for p in paths]
    files, skipped = python_files(given)
    report = _lint_files(files, selection, Program.of(given, files), file_seconds)
    return LintResult(report.violations, report.errors, (*skipped, *report.skipped), report.files_checked)


def lint_script_with_local_imports(script: Path) -> LintResult:
    """Lint `script` and the local modules it imports, transitively, with every check."""
    script = Path(script)
    if not script.is_file():
        raise ScriptNotFoundError(f"script not found: {script}")
    program = Program.of([script], [script])
    imported = program.closure(script)[1:]  # the script itself keeps the path as given
    return _lint_files([script, *imported], Selection(), program, FILE_SECONDS)


@dataclass(frozen=True)
class FileFix:
    """A file's text before and after the safe fixes."""

    path: Path
    before: str
    after: str
    encoding: str = "utf-8"

    def write(self) -> None:
        """Replace the file's contents with `after`, in the file's own encoding and newlines, whole
        or not at all (the file a link points to, its mode kept); OutputError naming the file when
        it cannot be written, a read-only file included."""
        write_atomic(self.path.resolve(), self.after.encode(self.encoding), what="the fixed file")

    def diff(self) -> str:
        """Unified diff from `before` to `after`; relative paths get git's `a/` and `b/`."""
        old, new = ("", "") if self.path.is_absolute() else ("a/", "b/")
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                fromfile=f"{old}{self.path}",
                tofile=f"{new}{self.path}",
            )
        )


def plan_fixes(
    paths: Iterable[str | Path],
    *,
    select: Iterable[str] = (),
    ignore: Iterable[str] = (),
    file_seconds: float = FILE_SECONDS,
) -> list[FileFix]:
    """The files the safe fixes would change, with their new text; nothing is written. A file
    lint skips (too large, too deep, too slow within `file_seconds`) is left unchanged."""
    selection = Selection(tuple(select), tuple(ignore))
    given = [Path(p) for p in paths]
    files, _ = python_files(given)
    program = Program.of(given, files)
    fixes = []
    for path in files:
        source = _read(path)
        if isinstance(source, tuple):
            text, encoding = source
            fixed = fix_source(text, selection, ProgramView(program, path), file_seconds)
            if fixed != text:
                fixes.append(FileFix(path, text, fixed, encoding))
    return fixes


def _lint_files(files: list[Path], selection: Selection, program: Program, seconds: float) -> LintResult:
    violations, errors, skipped, checked = [], [], [], 0
    for path in files:
        source = _read(path)
        view = ProgramView(program, path)
        result = lint_source(source[0], str(path), selection, view, seconds) if isinstance(source, tuple) else None
        error = source if isinstance(source, FileError) else result.error
        if error is not None:
            errors.append(error)
        elif result.skipped is not None:
            skipped.append(SkippedFile(str(path), result.skipped))
        else:
            checked += 1
            violations.extend(result.violations)
    return LintResult(tuple(violations), tuple(errors), tuple(skipped), checked)


def _read(path: Path) -> tuple[str, str] | FileError:
    """(text, encoding): decoded as Python does (PEP 263 cookie, BOM, else UTF-8), newlines kept."""
    try:
        data = read_capped(path, MAX_SOURCE_BYTES)
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding), encoding
    except (OSError, UnicodeDecodeError, SyntaxError) as exc:
        return FileError(str(path), f"cannot read: {exc}")
