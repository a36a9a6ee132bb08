"""The fork server: observations forked from one interpreter that imported torch once, each a fresh
process with its own cwd, environment, import path, log, exit status and Ctrl-C."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path
from typing import Iterator

import psutil
import pytest

from torchdoctor.launch import LaunchConfig, ObserveConfig, observe
from torchdoctor.launch import forkserver
from torchdoctor.launch.forkserver import ForkServer, ForkServerError

pytestmark = pytest.mark.slow

CONFIG = ObserveConfig(warmup_steps=2, timing_steps=3, profile=False, memory=False, compile=False)

SCRIPT = """
import os, sys, time, torch
import helper_module  # found through the extra import path
print("cwd", os.getcwd(), "var", os.environ.get("TD_FORK_TEST"), "speed", os.environ.get("TD_CHECK_SPEED"),
      "rand", __import__("random").random(), flush=True)
model = torch.nn.Linear(2, 2)
for step in range(int(sys.argv[1])):
    time.sleep(float(os.environ.get("TD_FORK_SLEEP", "0.002")))
    model(torch.ones(1, 2)).sum().backward()
sys.exit(int(sys.argv[2]))
"""


@pytest.fixture(scope="module")
def server() -> Iterator[ForkServer]:
    srv = ForkServer(sys.executable).start()
    srv.wait_ready()
    yield srv
    srv.close()


@pytest.fixture
def script(tmp_path: Path) -> Path:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "helper_module.py").write_text("")
    path = tmp_path / "fork_script.py"
    path.write_text(SCRIPT)
    return path


def _observe(server: ForkServer, script: Path, tmp_path: Path, *args: str, name: str = "o", **launch) -> tuple:
    log = tmp_path / f"{name}.log"
    launch = LaunchConfig(server=server, log_path=str(log), python_path=[str(script.parent / "lib")], **launch)
    record = observe(script, list(args), CONFIG, launch, out_dir=tmp_path / name)
    return record, log.read_text()


def test_a_forked_observation_is_a_fresh_process_where_it_was_asked(server, script, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TD_FORK_TEST", "yes")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    first, log1 = _observe(server, script, tmp_path, "1000", "0", name="one", cwd=str(elsewhere))
    second, log2 = _observe(server, script, tmp_path, "1000", "0", name="two", cwd=str(elsewhere))
    assert first.exit.reason == "completed" and len(first.steps) == 3, first.exit
    assert first.cwd == str(elsewhere) and f"cwd {elsewhere} var yes" in log1
    assert log1.split("rand")[1] != log2.split("rand")[1]  # `random` reseeded in every child
    assert first.env["executable"] == sys.executable


def test_exit_status_and_a_script_that_ends_early(server, script, tmp_path) -> None:
    record, _ = _observe(server, script, tmp_path, "1", "7")
    assert record.exit.reason == "sys_exit" and record.exit.status == 7 and not record.steps


def test_the_caller_changes_the_servers_environment_not_replaces_it(server, python_wrapper, tmp_path, script,
                                                                   monkeypatch) -> None:
    """A wrapper that stands for the interpreter keeps its own settings (TD_CHECK_SPEED), and the
    caller's own changes (TD_FORK_TEST) come on top."""
    monkeypatch.setenv("TD_FORK_TEST", "from-the-caller")
    wrapped = ForkServer(str(python_wrapper)).start()
    try:
        record, log = _observe(wrapped, script, tmp_path, "1000", "0", name="wrapped")
    finally:
        wrapped.close()
    assert record.exit.reason == "completed"
    assert "var from-the-caller speed 0.66" in log
    record, log = _observe(server, script, tmp_path, "1000", "0", name="plain")
    assert "var from-the-caller speed None" in log


def test_ctrl_c_reaches_the_child_which_keeps_its_partial_results(server, script, tmp_path, monkeypatch) -> None:
    """A terminal's Ctrl-C reaches torchdoctor's process group only: the forked child leads a session
    of its own (launch.child owns it), as does the server, so torchdoctor passes the SIGINT on."""
    monkeypatch.setenv("TD_FORK_SLEEP", "0.5")  # 2 s until the window ends: time to interrupt it
    timer = threading.Timer(1.2, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        record, _ = _observe(server, script, tmp_path, "1000", "0", name="interrupted")
    finally:
        timer.cancel()
    assert record.exit.reason == "interrupted" and record.exit.status == 130
    assert os.getsid(server._proc.pid) == server._proc.pid  # the server, in its own session, was not reached
    monkeypatch.setenv("TD_FORK_SLEEP", "0.002")
    again, _ = _observe(server, script, tmp_path, "1000", "0", name="after")  # the server survived
    assert again.exit.reason == "completed"


LEAVER = """
import subprocess, sys, time, torch
helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
print("HELPER", helper.pid, flush=True)
model = torch.nn.Linear(2, 2)
while True:
    time.sleep(0.05)
    model(torch.ones(1, 2)).sum().backward()
"""


def test_a_stop_before_the_bootstrap_takes_over_ends_the_child_by_sigint(tmp_path) -> None:
    """Seen in a full test run: Ctrl-C reached a forked child after it had set its SIGINT handler and
    before the bootstrap handled stops; it exited 1 with no result, and `check` reported side A as
    failed instead of the check as interrupted. A plain Python ends by SIGINT there. (Once the child
    runs the server's program, an uncaught KeyboardInterrupt ends Python by SIGINT by itself.)"""
    _, answers = os.pipe()
    pid = os.fork()
    if pid == 0:  # the fork server's child, interrupted while it becomes the observed process

        def interrupted(path: str) -> None:
            raise KeyboardInterrupt

        os.chdir = interrupted
        forkserver._become_child({"argv": ["script.py"], "cwd": str(tmp_path), "log": str(tmp_path / "log")},
                                 answers)
    os.close(answers)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == -signal.SIGINT


def test_the_script_runs_one_frame_from_the_top_of_the_stack_as_in_a_plain_observation(server, tmp_path) -> None:
    """Code that walks the stack pays per frame (autograd's anomaly mode formats it at every node); a
    child that ran the script from inside the server's loop had seven frames of ours below it."""
    from tests.observe.helpers import SCRIPTS

    log = tmp_path / "depth.log"
    record = observe(SCRIPTS / "stack_depth.py", [], CONFIG, LaunchConfig(server=server, log_path=str(log)),
                     out_dir=tmp_path / "depth")
    assert record.exit.reason == "completed", record.exit
    assert "frames above the script: 1" in log.read_text()


def test_a_forked_child_past_the_timeout_is_stopped_and_what_it_started_is_ended(server, tmp_path) -> None:
    """The timeout's SIGINT reaches the forked child's group (exit 124, steps kept), and a helper it
    started in a session of its own is ended after it (found by its mark, launch.child)."""
    script, log = tmp_path / "leaver.py", tmp_path / "leaver.log"
    script.write_text(LEAVER)
    config = ObserveConfig(warmup_steps=2, timing_steps=100000, profile=False, memory=False, compile=False)
    launch = LaunchConfig(server=server, log_path=str(log), timeout_s=3.0)
    record = observe(script, [], config, launch, out_dir=tmp_path / "leaver")
    assert record.exit.reason == "timeout" and record.exit.status == 124, record.exit
    assert record.steps
    helper = int(log.read_text().split("HELPER")[1].split()[0])
    assert not psutil.pid_exists(helper) or psutil.Process(helper).status() == psutil.STATUS_ZOMBIE
    assert any("left 1 process(es) running" in w for w in record.warnings), record.warnings


def test_a_server_that_dies_is_reported(tmp_path) -> None:
    broken = tmp_path / "broken-python"
    broken.write_text("#!/bin/sh\nexit 3\n")
    broken.chmod(0o755)
    srv = ForkServer(str(broken)).start()
    with pytest.raises(ForkServerError, match=r"exited \(status 3\)"):
        srv.spawn(["x.py"], env=dict(os.environ), cwd=tmp_path)
    srv.close()


def test_without_the_server_the_same_launch_options_hold(script, tmp_path, monkeypatch) -> None:
    """A new interpreter per observation (`check --no-fork-server`): cwd, import path and log alike."""
    monkeypatch.setenv("TD_FORK_TEST", "plain")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    log = tmp_path / "plain.log"
    launch = LaunchConfig(cwd=str(elsewhere), python_path=[str(script.parent / "lib")], log_path=str(log),
                          python=sys.executable)
    record = observe(script, ["1000", "0"], CONFIG, launch, out_dir=tmp_path / "plain")
    assert record.exit.reason == "completed", record.exit
    assert record.cwd == str(elsewhere) and f"cwd {elsewhere} var plain" in log.read_text()


def test_a_server_launches_one_process_with_its_own_interpreter(server) -> None:
    with pytest.raises(ValueError, match="cannot launch torchrun ranks"):
        LaunchConfig(server=server, nproc_per_node=2)
    with pytest.raises(ValueError, match="the fork server runs"):
        LaunchConfig(server=server, python="/usr/bin/python3-other")
