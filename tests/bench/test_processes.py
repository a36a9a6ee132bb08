"""compare_processes: real subprocesses, interleaved, with exit status and timeout handling."""

from __future__ import annotations

import sys
import time

import pytest

from torchdoctor.bench import (
    SLOWER,
    Command,
    Policy,
    VariantFailedError,
    VariantTimeoutError,
    compare_processes,
)
from torchdoctor.bench.processes import run_once_s

QUICK = Policy(min_rounds=5, max_rounds=8, budget_s=20, aa_control=False)


def sleeper(name: str, seconds: float) -> Command:
    return Command(name, (sys.executable, "-c", f"import time; time.sleep({seconds})"))


def test_a_process_that_sleeps_longer_is_called_slower():
    start = time.perf_counter()
    result = compare_processes([sleeper("A", 0.01), sleeper("B", 0.15)], policy=QUICK)
    elapsed_s = time.perf_counter() - start
    assert result.verdicts["B"].verdict == SLOWER
    # A sample spans a run from spawn to exit, so it is never shorter than the run's sleep (the
    # OS guarantees that however loaded the host), and the samples, in seconds, are disjoint
    # slices of the call. How close the medians come to 0.14 s apart: benchmarks/timing_targets.py.
    assert min(result.samples_s["A"]) >= 0.01 and min(result.samples_s["B"]) >= 0.15
    assert sum(sum(samples) for samples in result.samples_s.values()) <= elapsed_s


def test_scripts_run_with_this_interpreter_and_env_reaches_the_process(tmp_path):
    script = tmp_path / "check.py"
    script.write_text("import os, sys; sys.exit(0 if os.environ.get('TD_FLAG') == '1' else 5)")
    command = Command.script(str(script))
    assert command.argv == (sys.executable, str(script)) and command.name == str(script)
    assert run_once_s(Command("flag", command.argv, env={"TD_FLAG": "1"}), timeout_s=30) > 0
    with pytest.raises(VariantFailedError, match="status 5"):
        run_once_s(command, timeout_s=30)


def test_a_failing_process_is_reported_with_its_status_and_stderr():
    failing = Command("B", (sys.executable, "-c", "import sys; sys.stderr.write('boom here'); sys.exit(7)"))
    with pytest.raises(VariantFailedError, match=r"(?s)variant .B. exited with status 7.*boom here"):
        compare_processes([sleeper("A", 0), failing], policy=QUICK)


def test_a_missing_program_cannot_start():
    with pytest.raises(VariantFailedError, match="variant 'B' cannot start"):
        compare_processes([sleeper("A", 0), Command("B", ("/nonexistent/prog",))], policy=QUICK)


def test_a_hanging_process_group_is_killed_at_the_timeout():
    hang = Command("B", ("sh", "-c", "sleep 30 & sleep 30"))
    start = time.perf_counter()
    with pytest.raises(VariantTimeoutError, match=r"variant 'B' ran longer than the per-run timeout of 0.5 s"):
        compare_processes([sleeper("A", 0), hang], policy=QUICK, timeout_s=0.5)
    assert time.perf_counter() - start < 10
