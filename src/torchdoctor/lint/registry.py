"""Every check, found by scanning `torchdoctor.lint.checks`: adding a visitor class to a module
there registers it; there is no hand-kept list."""

from __future__ import annotations

import inspect
from functools import cache

from torchdoctor.discovery import import_submodules
from torchdoctor.lint.base import Check, LintVisitor


@cache
def visitor_classes() -> tuple[type[LintVisitor], ...]:
    """The `LintVisitor` subclasses defined in the check modules, in code order."""
    found: list[type[LintVisitor]] = []
    for module in import_submodules("torchdoctor.lint.checks"):
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, LintVisitor) and cls.__module__ == module.__name__ and cls.CHECKS:
                found.append(cls)
    return tuple(sorted(found, key=lambda cls: cls.CHECKS[0].code))


@cache
def all_checks() -> tuple[Check, ...]:
    """Every check, sorted by code. Codes are unique (asserted by the registry tests)."""
    return tuple(sorted((c for cls in visitor_classes() for c in cls.CHECKS), key=lambda c: c.code))
