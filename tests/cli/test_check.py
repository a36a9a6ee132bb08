"""`torchdoctor check` on the command line: usage errors, and Ctrl-C in a real terminal-like process
group (what was measured is reported as undecided, exit 2)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from torchdoctor.cli import app
from tests.workflow.test_check import FAST, make_repo


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--", "train.py"], "give exactly one of --against REF"),
        (["--against", "main", "--baseline", "b", "--", "train.py"], "got --against, --baseline"),
        (["--against", "main"], "give the script after `--`"),
        (["--against", "main", "--max-slowdown", "lots", "--", "train.py"], "not 'lots'"),
        (["--against", "main", "--max-slowdown", "150%", "--", "train.py"], "max_slowdown must be a fraction"),
        (["--against", "main", "--min-rounds", "0", "--", "train.py"], "min_rounds"),
        (["--against", "main", "--json", "-", "--annotations", "--", "train.py"], "both write to stdout"),
    ],
)
def test_usage_errors(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["check", *args])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split()), result.output


@pytest.mark.slow
def test_ctrl_c_reports_what_was_measured_as_undecided(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, FAST)
    out = tmp_path / "result.json"
    # A process group of its own, as a terminal gives a command: Ctrl-C signals the whole group.
    proc = subprocess.Popen(
        [sys.executable, "-m", "torchdoctor", "check", "--against", "HEAD", "--warmup-steps", "2", "--steps", "6",
         "--timed-window", "0", "--min-rounds", "40", "--json", str(out), "--", "train.py"],
        cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    seen = []
    assert proc.stderr is not None
    for line in proc.stderr:
        seen.append(line)
        if line.startswith("check: round 2 ") or time.monotonic() > deadline:
            break
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 2, "".join(seen) + stderr + stdout
    data = orjson.loads(out.read_bytes())
    assert data["decision"] == "undecided" and data["stop_reason"] == "interrupted" and data["exit_code"] == 2
    assert data["rounds"] >= 2 and len(data["samples_s"]["A"]) == data["rounds"]
    assert data["reason"].startswith(f"interrupted (Ctrl-C) after {data['rounds']} complete round(s): measured so far")


def test_the_documented_workflow_uses_real_options(repo_root: Path) -> None:
    """examples/ci/torchdoctor-check.yml (docs/check.md): every option of its `torchdoctor check` exists."""
    import typer.main

    text = (repo_root / "examples" / "ci" / "torchdoctor-check.yml").read_text()
    command = re.search(r"torchdoctor check (--.*?) -- ", " ".join(text.split()))
    assert command is not None
    options = {token for token in command.group(1).split() if token.startswith("--")}
    known = {opt for param in typer.main.get_command(app).commands["check"].params for opt in param.opts}
    assert options and options <= known, options - known
    assert "fetch-depth: 0" in text
