"""Bad input: each gets a clear message, the partial Record is kept, and the exit code tells."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tests.observe.helpers import FAST, SCRIPTS, run_diagnose

from torchdoctor.errors import OutDirInUseError
from torchdoctor.launch import ObserveConfig, observe

pytestmark = pytest.mark.slow


def test_a_missing_script_is_a_one_line_error(tmp_path):
    proc, record = run_diagnose(tmp_path, "does_not_exist.py")
    assert proc.returncode == 2 and record is None
    assert "script not found" in proc.stderr and "Traceback" not in proc.stderr


def test_a_script_that_raises_shows_its_own_traceback_and_keeps_the_partial_record(tmp_path):
    proc, record = run_diagnose(tmp_path, "raises.py", options=FAST + ["--steps", "50"])
    assert proc.returncode == 1
    assert "ValueError: bad batch at step 12" in proc.stderr
    assert 'raises.py", line 10, in check' in proc.stderr
    assert "torchdoctor/observe" not in proc.stderr and "runpy" not in proc.stderr
    assert record.exit.reason == "script_error" and "ValueError" in record.exit.traceback
    assert record.summary.num_steps == 12 - 2  # the steps measured before it raised


@pytest.mark.parametrize("how, code, reason", [("sys", 4, "sys_exit"), ("os", 5, "os_exit")])
def test_sys_exit_and_os_exit_keep_the_scripts_exit_code(tmp_path, how, code, reason):
    proc, record = run_diagnose(tmp_path, "exits.py", "5", how, str(code))
    assert proc.returncode == code
    assert record.exit.reason == reason
    assert record.summary.num_steps == 3  # 5 steps - 2 warm-up
    assert "leaving after 5 steps" in proc.stdout


def test_a_script_that_ends_before_the_windows_complete_reports_what_was_measured(tmp_path):
    proc, record = run_diagnose(tmp_path, "exits.py", "5", "return", "0")
    assert proc.returncode == 0
    assert record.exit.reason == "script_finished"
    assert record.summary.num_steps == 3
    assert "the script ended after 5 steps; 3 of 6 timed steps measured" in proc.stdout


def test_a_script_too_short_to_measure_fails_and_says_what_to_change(tmp_path):
    proc, record = run_diagnose(tmp_path, "exits.py", "2", "return", "0")
    assert proc.returncode == 3
    assert record.summary.num_steps == 0
    assert "lower --warmup-steps" in proc.stdout


def test_a_script_that_never_reaches_a_step_says_how_to_mark_one(tmp_path):
    proc, record = run_diagnose(tmp_path, "no_steps.py")
    assert proc.returncode == 3
    assert record.exit.reason == "no_steps"
    assert "torchdoctor.step()" in proc.stdout
    assert "sum of squares computed" in proc.stdout


def test_a_folder_holding_an_earlier_observation_is_refused_and_its_files_kept(tmp_path):
    """Observed twice into one folder, the second Record read the first run's profiler trace."""
    config = ObserveConfig(warmup_steps=2, timing_steps=6, profile_wait=0, profile_warmup=1, profile_active=2)
    first = observe(SCRIPTS / "exits.py", ["12", "return", "0"], config, out_dir=tmp_path)
    assert first.exit.reason == "completed" and first.artifacts["traces"]
    kept = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    with pytest.raises(OutDirInUseError, match="already holds an observation's results .*rank0.json"):
        observe(SCRIPTS / "exits.py", ["12", "return", "0"], config, out_dir=tmp_path)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()) == kept


def test_except_exception_does_not_swallow_the_stop_and_finally_blocks_run(tmp_path):
    proc, record = run_diagnose(tmp_path, "swallows.py")
    assert proc.returncode == 0, proc.stderr
    assert "swallowed" not in proc.stdout and "finally ran" in proc.stdout
    assert record.exit.reason == "completed"


def test_ctrl_c_saves_the_partial_record(tmp_path):
    out = tmp_path / "record.json"
    command = [sys.executable, "-m", "torchdoctor", "diagnose", *FAST, "--steps", "100000", "--json",
               str(out), "--store", str(tmp_path / "runs.db"), "--", str(SCRIPTS / "slow_loop.py")]
    # A terminal's Ctrl-C signals the whole foreground process group: parent and script alike.
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path, start_new_session=True)
    for line in proc.stdout:
        if "READY" in line:
            break
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    from torchdoctor.record import Record

    record = Record.load(out)
    assert record.exit.reason == "interrupted"
    assert record.summary.num_steps >= 1
    assert "Traceback" not in stderr


@pytest.mark.parametrize("typed", ["absolute", "pkg/show_env.py", "./pkg/../pkg/show_env.py"])
def test_the_script_sees_the_same_argv_path_and_output_as_under_plain_python(tmp_path, typed):
    script = tmp_path / "pkg" / "show_env.py"
    script.parent.mkdir()
    (script.parent / "helper_mod.py").write_text("VALUE = 'local import works'\n")
    script.write_text(
        "import sys, os\nimport helper_mod\n"
        "print(__name__, sys.argv, __file__, sys.path[0], os.getcwd(), helper_mod.VALUE)\n"
        "print('err line', file=sys.stderr)\nsys.exit(7)\n"
    )
    typed = str(script) if typed == "absolute" else typed  # plain Python keeps argv[0] as typed
    native = subprocess.run([sys.executable, typed, "a", "--b"], capture_output=True, text=True, cwd=tmp_path)
    observed = subprocess.run(
        [sys.executable, "-c", "import sys; from torchdoctor.launch import observe; "
         f"r = observe({typed!r}, ['a', '--b'], out_dir={str(tmp_path / 'o')!r}); sys.exit(r.exit.status)"],
        capture_output=True, text=True, cwd=tmp_path,
    )
    assert typed in native.stdout.split("[")[1]
    assert (observed.stdout, observed.stderr, observed.returncode) == (native.stdout, native.stderr, 7)


def test_a_knob_that_cannot_be_applied_is_reported_with_its_error(tmp_path):
    from torchdoctor.launch import ObserveConfig, observe

    config = ObserveConfig(warmup_steps=2, timing_steps=3, profile=False, knobs={"no_such_knob": 1})
    record = observe(SCRIPTS / "train_tensors.py", [], config, out_dir=tmp_path / "o")
    assert record.exit.reason == "setup_error" and record.exit.status == 1
    assert "could not set up the observation" in record.exit.message


def test_a_script_that_ignores_the_timeout_is_killed_after_the_grace_period(tmp_path, monkeypatch):
    import torchdoctor.launch.child as child_module
    import torchdoctor.launch.run as run_module
    from torchdoctor.launch import LaunchConfig, observe

    script = tmp_path / "stubborn.py"
    script.write_text("import time\ntime.sleep(60)\n")
    # The child ignores SIGINT from its first instruction (an ignored signal stays ignored across
    # exec, and Python then installs no handler), however long its imports take.
    command = run_module.build_command
    monkeypatch.setattr(run_module, "build_command",
                        lambda *a: ["sh", "-c", 'trap "" INT; exec "$@"', "sh", *command(*a)])
    monkeypatch.setattr(child_module, "STOP_GRACE_S", 1.0)
    record = observe(script, [], launch=LaunchConfig(timeout_s=2.0), out_dir=tmp_path / "o")
    assert (record.exit.reason, record.exit.status) == ("timeout", 124)
    assert "timeout of 2 s" in record.exit.message and "torchdoctor killed it" in record.exit.message


def test_an_expired_timeout_is_a_timeout_not_a_ctrl_c(tmp_path):
    proc, record = run_diagnose(tmp_path, "slow_loop.py", options=FAST + ["--steps", "100000", "--timeout", "3"])
    assert proc.returncode == 124, proc.stderr
    assert (record.exit.reason, record.exit.status) == ("timeout", 124)
    assert "ran past the timeout of 3 s" in record.exit.message and "Ctrl-C" not in record.exit.message


def test_a_model_traced_every_batch_is_observed_without_touching_its_traces(tmp_path):
    """Inside torch.jit.trace nothing of the observation runs: a step boundary there (a profiler
    step) would be recorded into the script's traced graph, or fail the trace. The model's calls
    outside the traces are the steps."""
    proc, record = run_diagnose(tmp_path, "traced_each_batch.py", "40")
    assert "Tried to trace" not in proc.stdout + proc.stderr
    assert record.exit.reason == "completed", record.exit
    assert record.step_detection == "forward" and record.summary.num_steps == 6
