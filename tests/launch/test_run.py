"""LaunchConfig refuses what cannot be a launch: a timeout must be a number of seconds > 0."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from torchdoctor.launch import LaunchConfig


@pytest.mark.parametrize("timeout", [0.0, -3.0, math.nan, math.inf])
def test_a_timeout_that_is_not_a_positive_number_is_refused(timeout):
    with pytest.raises(ValueError, match="timeout must be a number of seconds > 0"):
        LaunchConfig(timeout_s=timeout)


@pytest.mark.parametrize("value", ["0", "-3", "nan"])
def test_diagnose_refuses_such_a_timeout_as_a_usage_error(tmp_path, value):
    script = tmp_path / "s.py"
    script.write_text("print('never run')\n")
    proc = subprocess.run([sys.executable, "-m", "torchdoctor", "diagnose", f"--timeout={value}", "--no-save", "--",
                           str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2 and "timeout must be a number of seconds > 0" in proc.stderr
    assert "never run" not in proc.stdout
