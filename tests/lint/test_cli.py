"""`torchdoctor lint`: exit codes, formats, --diff and --fix, on a real app with the command."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import typer
from typer.testing import CliRunner

from torchdoctor.cli import lint as lint_command
from torchdoctor.lint import LintUsageError

SOURCE = "import torch\nx = torch.zeros(3).cuda()\n"


@pytest.fixture()
def invoke():
    app = typer.Typer()
    lint_command.register(app)
    app.command("noop", hidden=True)(lambda: None)  # keeps `lint` a named subcommand
    runner = CliRunner()
    return lambda *args: runner.invoke(app, ["lint", *map(str, args)])


def test_violations_exit_1_with_file_line_col_code_message(tmp_path: Path, invoke) -> None:
    path = tmp_path / "s.py"
    path.write_text(SOURCE)
    result = invoke(path)
    assert result.exit_code == 1
    assert result.stdout.startswith(f"{path}:2:5 TDL202 tensor created on the CPU")


def test_a_clean_file_exits_0(tmp_path: Path, invoke) -> None:
    path = tmp_path / "clean.py"
    path.write_text("import torch\nx = torch.zeros(3, device='cuda')\n")
    assert invoke(path).exit_code == 0


def test_json_format_prints_the_report(tmp_path: Path, invoke) -> None:
    path = tmp_path / "s.py"
    path.write_text(SOURCE)
    data = orjson.loads(invoke(path, "--format", "json").stdout)
    assert [v["code"] for v in data["violations"]] == ["TDL202"]


def test_diff_prints_the_fix_and_writes_nothing(tmp_path: Path, invoke) -> None:
    path = tmp_path / "s.py"
    path.write_text(SOURCE)
    result = invoke(path, "--diff")
    assert result.exit_code == 1
    assert '+x = torch.zeros(3, device="cuda")' in result.stdout
    assert path.read_text() == SOURCE


def test_fix_writes_the_file_and_exits_0_when_nothing_is_left(tmp_path: Path, invoke) -> None:
    path = tmp_path / "s.py"
    path.write_text(SOURCE)
    result = invoke(path, "--fix")
    assert result.exit_code == 0
    assert path.read_text() == 'import torch\nx = torch.zeros(3, device="cuda")\n'


def test_unknown_codes_are_a_usage_error_with_exit_code_2(tmp_path: Path, invoke) -> None:
    result = invoke(tmp_path, "--select", "TDL1,BOGUS")
    assert isinstance(result.exception, LintUsageError) and result.exception.exit_code == 2


def test_an_unknown_format_is_rejected_by_the_parser(tmp_path: Path, invoke) -> None:
    assert invoke(tmp_path, "--format", "xml").exit_code == 2
