"""Static lint: source-level twins of the diagnosis rules, proven from qualified names.

Public API (other stages use only these names)::

    lint_paths(paths, *, select=(), ignore=()) -> LintResult
    lint_script_with_local_imports(script) -> LintResult
    plan_fixes(paths, *, select=(), ignore=()) -> list[FileFix]
    all_checks() -> tuple[Check, ...]
"""

from __future__ import annotations

from torchdoctor.lint.base import Check
from torchdoctor.lint.registry import all_checks
from torchdoctor.lint.result import SCHEMA_VERSION, FileError, LintResult, SkippedFile, Violation
from torchdoctor.lint.run import FileFix, lint_paths, lint_script_with_local_imports, plan_fixes
from torchdoctor.lint.selection import LintUsageError

__all__ = [
    "SCHEMA_VERSION",
    "Check",
    "FileError",
    "FileFix",
    "LintResult",
    "LintUsageError",
    "SkippedFile",
    "Violation",
    "all_checks",
    "lint_paths",
    "lint_script_with_local_imports",
    "plan_fixes",
]
