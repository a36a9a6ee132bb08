"""`torchdoctor lint PATH...`: the static checks, with text/JSON/SARIF output and safe fixes.

Exit status: 0 when clean, 1 when violations (or unreadable files) remain, 2 on usage errors,
5 when `--fix` could not write a fixed file (the others are still fixed and everything is linted).
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from torchdoctor.lint.run import FileFix


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
    file_seconds: Optional[float] = typer.Option(
        None, "--file-seconds", min=0.001,
        help="CPU seconds one file's analysis may take (default 10); a slower file is skipped with a note.",
    ),
) -> None:
    """Find PyTorch performance problems in source code, without running it (codes in docs/lint.md)."""
    import sys

    from rich.console import Console

    from torchdoctor.lint import lint_paths, plan_fixes
    from torchdoctor.lint.output import render
    from torchdoctor.outputs import OutputError
    from torchdoctor.report.safe_text import clean, for_stream, markup

    chosen: dict = {"select": _codes(select), "ignore": _codes(ignore)}
    if file_seconds is not None:
        chosen["file_seconds"] = file_seconds
    err = Console(stderr=True, highlight=False)
    if diff:  # preview only: the diff on stdout, nothing written
        fixes = plan_fixes(paths, **chosen)
        for planned in fixes:
            typer.echo(for_stream(planned.diff(), sys.stdout), nl=False)
        err.print(f"{len(fixes)} file(s) would be changed by --fix")
        raise typer.Exit(1 if fixes else 0)
    unwritten = _write_fixes(plan_fixes(paths, **chosen), err) if fix else 0
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
    raise typer.Exit(OutputError.exit_code if unwritten else 0 if report.clean else 1)


def _write_fixes(fixes: list[FileFix], err: Console) -> int:
    """Write each planned fix, its diff on stderr first; a file that cannot be written is named
    with the reason and the others are still fixed. Returns how many could not be written."""
    from torchdoctor.outputs import OutputError
    from torchdoctor.report.safe_text import clean, markup

    unwritten = 0
    for planned in fixes:
        err.out(clean(planned.diff()), end="")
        try:
            planned.write()
        except OutputError as exc:
            unwritten += 1
            err.print(f"error: {markup(str(exc))}")
    failed = f", {unwritten} could not be written" if unwritten else ""
    err.print(f"fixed {len(fixes) - unwritten} file(s){failed}")
    return unwritten


def _codes(values: list[str] | None) -> tuple[str, ...]:
    return tuple(code.strip() for value in values or () for code in value.split(",") if code.strip())
