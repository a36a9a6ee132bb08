"""The result of linting: violations and unreadable files, as a frozen, JSON-ready value.

JSON contract (`LintResult.to_dict()`, stored as `Record.lint` and read back with
`LintResult.from_dict`, documented in docs/lint.md):
keys are only added within a `schema_version`; renaming, removing or changing a key's meaning
bumps `SCHEMA_VERSION`. Lines and columns are 1-based.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from torchdoctor.jsonfields import value_of

SCHEMA_VERSION = 1


@dataclass(frozen=True, kw_only=True)
class Violation:
    """One proven occurrence of a check, at `path:line:col` (1-based). A saved violation needs
    only its place; the other fields default to what a reader assumes of a Record without them."""

    code: str = ""
    layer: str = "config"
    message: str = ""
    path: str
    line: int
    col: int
    fixable: bool = False
    rule_hint: str = ""

    def to_text(self) -> str:
        return f"{self.location} {self.message}"

    @property
    def location(self) -> str:
        """`path:line:col CODE`: how a finding the violation backs cites it."""
        return f"{self.path}:{self.line}:{self.col} {self.code}"


@dataclass(frozen=True)
class FileError:
    """A file that could not be linted (syntax error, undecodable bytes, unreadable)."""

    path: str
    reason: str
    line: int | None = None
    col: int | None = None


@dataclass(frozen=True)
class SkippedFile:
    """A path given on the command line that is not a Python file, with why it was skipped."""

    path: str
    reason: str


@dataclass(frozen=True)
class LintResult:
    """Everything one lint run found; `files_checked` counts the files parsed successfully."""

    violations: tuple[Violation, ...] = ()
    errors: tuple[FileError, ...] = ()
    skipped: tuple[SkippedFile, ...] = ()
    files_checked: int = 0

    @property
    def clean(self) -> bool:
        """No violation and no unreadable file."""
        return not self.violations and not self.errors

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "files_checked": self.files_checked,
            "violations": [dataclasses.asdict(v) for v in self.violations],
            "errors": [dataclasses.asdict(e) for e in self.errors],
            "skipped": [dataclasses.asdict(s) for s in self.skipped],
        }

    @classmethod
    def from_dict(cls, data: Any) -> LintResult:
        """The LintResult of `to_dict`'s JSON (`Record.lint`): a missing list is empty, a missing
        count 0; a wrong type, or a violation without one of its fields, is a RecordFormatError."""
        return value_of(cls, data, "lint")
