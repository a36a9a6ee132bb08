"""Every command's `--help` reads at 80 columns: no internal type names (`<int>`, `<list[str]>`), and
each option's help beside a names column narrow enough to leave it most of the width."""

from __future__ import annotations

import re

import pytest
import typer
from typer.testing import CliRunner

from torchdoctor.cli import app

#: Where an option's help starts, at the latest: past it, a help of a sentence takes many lines.
HELP_COLUMN_MAX = 40
_INTERNAL_TYPE = re.compile(r"<(bool|int|float|str|path|list\[|tuple|datetime)")


def _command_paths() -> list[list[str]]:
    paths: list[list[str]] = [[]]
    todo: list[tuple[list[str], object]] = [([], typer.main.get_command(app))]
    while todo:
        path, group = todo.pop()
        for name, command in getattr(group, "commands", {}).items():
            paths.append([*path, name])
            todo.append(([*path, name], command))
    return paths


@pytest.mark.parametrize("path", _command_paths(), ids=lambda path: " ".join(path) or "torchdoctor")
def test_help_at_80_columns_names_no_internal_type_and_leaves_the_help_its_width(path: list[str]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80", "TERMINAL_WIDTH": "80"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert not _INTERNAL_TYPE.search(result.output), result.output
    assert all(len(line) <= 80 for line in lines), result.output
    for line in lines:
        row = re.match(r"│ (--\S.*?)\s{2,}[^\s│]", line)
        if row:
            assert row.end() - 1 <= HELP_COLUMN_MAX, line
