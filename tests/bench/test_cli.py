"""`torchdoctor bench`: the three modes, the table, the JSON document and bad invocations."""

from __future__ import annotations

import json
import sys

import pytest
import typer
from typer.testing import CliRunner

from torchdoctor.bench import BenchInputError, VariantFailedError
from torchdoctor.cli import bench as bench_cli

FAST = ["--min-rounds", "5", "--max-rounds", "6", "--budget-s", "20"]


@pytest.fixture(scope="module")
def invoke():
    app = typer.Typer()
    app.callback()(lambda: None)
    bench_cli.register(app)
    runner = CliRunner()
    return lambda *args: runner.invoke(app, ["bench", *args])


def test_two_scripts_give_a_table_and_a_json_document_on_stdout(invoke, tmp_path):
    (tmp_path / "a.py").write_text("import time; time.sleep(0.01)")
    (tmp_path / "b.py").write_text("import time; time.sleep(0.12)")
    result = invoke("--script", str(tmp_path / "a.py"), "--script", str(tmp_path / "b.py"), *FAST, "--json", "-")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout[result.stdout.index("{"):])
    assert doc["schema_version"] == 1 and doc["kind"] == "torchdoctor.bench" and doc["mode"] == "scripts"
    assert doc["variants"][str(tmp_path / "b.py")] == f"{sys.executable} {tmp_path / 'b.py'}"
    (row,) = doc["results"]
    assert row["verdicts"][str(tmp_path / "b.py")]["verdict"] == "slower"
    assert {"median_s", "samples_s", "noise_floor", "aa_ratio", "rounds", "stop_reason"} <= set(row)


def test_command_mode_takes_a_after_the_double_dash_and_names_variants_by_letter(invoke, tmp_path):
    out = tmp_path / "r.json"
    result = invoke("--vs", f"{sys.executable} -c 'import time; time.sleep(0.1)'", *FAST,
                    "--json", str(out), "--", sys.executable, "-c", "pass")
    assert result.exit_code == 0, result.output
    assert "B / A" in result.stdout and f"A: {sys.executable} -c pass" in result.stdout
    assert json.loads(out.read_text())["results"][0]["verdicts"]["B"]["verdict"] == "slower"


def test_statement_mode_sweeps_a_parameter_into_table_rows(invoke):
    result = invoke("--stmt", "x + 1", "--stmt", "x * 2", "--setup", "x = torch.ones(N)",
                    "--param", "N=8,64", "--round-s", "0.005", "--min-rounds", "5", "--max-rounds", "5",
                    "--json", "-")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout[result.stdout.index("{"):])
    assert [r["label"] for r in doc["results"]] == ["N=8", "N=64"]
    assert doc["variants"] == {"A": "x + 1", "B": "x * 2"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give exactly one kind of variant"),
        (("--stmt", "1", "--script", "a.py"), "give exactly one kind of variant"),
        (("--stmt", "1"), "at least two variants"),
        (("--vs", "true"), "needs both"),
        (("--stmt", "1", "--stmt", "2", "--param", "N"), "NAME=v1,v2"),
        (("--stmt", "1", "--stmt", "2", "--name", "A"), "--name given 1 time"),
    ],
)
def test_bad_invocations_raise_a_user_error_that_says_what_to_do(invoke, args, message):
    result = invoke(*args)
    assert isinstance(result.exception, BenchInputError)
    assert message in str(result.exception)


def test_a_failing_command_is_a_user_error_naming_the_variant(invoke):
    result = invoke("--vs", "false", "--", "true")
    assert isinstance(result.exception, VariantFailedError)
    assert "variant 'B' exited with status 1" in str(result.exception)
