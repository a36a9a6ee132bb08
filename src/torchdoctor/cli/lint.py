"""`torchdoctor lint PATH...`: the static checks, with text/JSON/SARIF output and safe fixes.

Exit status: 0 when clean, 1 when violations (or unreadable files) remain, 2 on usage errors.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer


class OutputFormat(str, Enum):
    text = "text"
    json = "json"
    sarif = "sarif"


def register(app: typer.Typer) -> None:
    app.command("lint")(lint)


def lint(
    paths: List[Path] = typer.Argument(..., help="Python files or folders (searched recursively)."),
    output_format: OutputFormat = typer.Option(OutputFormat.text, "--format", help="Output format."),
    select: Optional[List[str]] = typer.Option(
        None, "--select", help="Only these codes or prefixes (TDL1, TDL201); comma-separated or repeated."
    ),
    ignore: Optional[List[str]] = typer.Option(None, "--ignore", help="Skip these codes or prefixes."),
    fix: bool = typer.Option(False, "--fix", help="Apply the safe fixes, show their diff on stderr."),
    diff: bool = typer.Option(False, "--diff", help="Print the safe fixes as a unified diff; write nothing."),
) -> None:
    """Find PyTorch performance problems in source code, without running it (codes in docs/lint.md)."""
    import sys

    from rich.console import Console

    from torchdoctor.lint import lint_paths, plan_fixes
    from torchdoctor.lint.output import render
    from torchdoctor.report.safe_text import clean, for_stream, markup

    chosen = {"select": _codes(select), "ignore": _codes(ignore)}
    err = Console(stderr=True, highlight=False)
    if diff:  # preview only: the diff on stdout, nothing written
        fixes = plan_fixes(paths, **chosen)
        for planned in fixes:
            typer.echo(for_stream(planned.diff(), sys.stdout), nl=False)
        err.print(f"{len(fixes)} file(s) would be changed by --fix")
        raise typer.Exit(1 if fixes else 0)
    if fix:
        fixes = plan_fixes(paths, **chosen)
        for planned in fixes:
            err.out(clean(planned.diff()), end="")
            planned.write()
        err.print(f"fixed {len(fixes)} file(s)")
    report = lint_paths(paths, **chosen)
    text = render(report, output_format.value)
    if text:  # JSON and SARIF escape control characters themselves
        typer.echo(clean(text) if output_format.value == "text" else for_stream(text, sys.stdout))
    for skipped in report.skipped:
        err.print(f"note: {markup(skipped.path)}: {markup(skipped.reason)}")
    fixable = sum(v.fixable for v in report.violations)
    err.print(
        f"{len(report.violations)} violation(s), {fixable:d} fixable with --fix, "
        f"{len(report.errors)} unreadable file(s), in {report.files_checked:d} file(s) checked"
    )
    raise typer.Exit(0 if report.clean else 1)


def _codes(values: list[str] | None) -> tuple[str, ...]:
    return tuple(code.strip() for value in values or () for code in value.split(",") if code.strip())
