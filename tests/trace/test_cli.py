"""`torchdoctor trace analyze|diff` (cli/trace.py)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from torchdoctor.cli.trace import app


def test_analyze_prints_the_breakdown_and_writes_json(gpu_traces: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["analyze", str(gpu_traces / "a100-ddp2-rank0.json.gz"), "--json", str(out), "--top", "3"])
    assert result.exit_code == 0, result.output
    assert "step time breakdown" in result.output
    assert json.loads(out.read_text())["ranks"][0]["steps_count"] == 3


def test_analyze_rejects_a_bad_steps_range(gpu_traces: Path) -> None:
    result = CliRunner().invoke(app, ["analyze", str(gpu_traces / "a100-ddp2-rank0.json.gz"), "--steps", "a-b"])
    assert result.exit_code != 0 and "FIRST-LAST" in result.output


def test_diff_prints_both_tables(cpu_trace: Path, cpu_trace_tanh: Path) -> None:
    result = CliRunner().invoke(app, ["diff", str(cpu_trace), str(cpu_trace_tanh)])
    assert result.exit_code == 0, result.output
    assert "ops: per step" in result.output and "kernels: per step" in result.output


def test_analyze_reads_a_directory_in_worker_processes_and_names_what_it_left_out(gpu_traces: Path,
                                                                                  tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    folder = gpu_traces / "multirank-sampled"
    result = CliRunner().invoke(app, ["analyze", str(folder), str(tmp_path / "rank-7.json.gz"), "--jobs", "2",
                                      "--json", str(out), "--top", "3"])  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert [r["rank"] for r in report["ranks"]] == [0, 1]
    assert [Path(e["path"]).name for e in report["excluded"]] == ["rank-7.json.gz"]


def test_analyze_says_when_a_pattern_matches_no_trace(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["analyze", str(tmp_path)])
    assert result.exit_code != 0 and "no trace file" in result.output
