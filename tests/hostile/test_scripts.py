"""Hostile scripts, observed by the real CLI in a subprocess: a script that forks, that does not
compile, that swaps its optimizer's step mid-run. Each gets the answer docs/reliability.md
documents and leaves no process behind."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from tests.observe.helpers import WIDE_ENV
from torchdoctor.record import Record

pytestmark = pytest.mark.slow

SHORT = ["--warmup-steps", "2", "--steps", "5", "--no-profile", "--no-memory"]
TRAIN = """
import torch
model = torch.nn.Linear(8, 8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(40):
    optimizer.zero_grad()
    model(torch.randn(4, 8)).sum().backward()
    optimizer.step()
"""


def diagnose(tmp_path: Path, source: str | bytes, options: list[str] = SHORT,
             name: str = "script.py") -> tuple[subprocess.CompletedProcess[str], Record | None]:
    """`torchdoctor diagnose OPTIONS -- SCRIPT` on `source`, written to tmp_path/name."""
    script = tmp_path / name
    if isinstance(source, bytes):
        script.write_bytes(source)
    else:
        script.write_text(textwrap.dedent(source))
    out = tmp_path / "record.json"
    command = [sys.executable, "-m", "torchdoctor", "diagnose", *options, "--json", str(out),
               "--store", str(tmp_path / "runs.db"), "--", str(script)]
    proc = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=120, cwd=tmp_path,
                          env=WIDE_ENV)
    return proc, Record.load(out) if out.exists() else None


def test_a_child_the_script_forks_neither_overwrites_the_results_nor_ends_the_run(tmp_path):
    forks = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n    os._exit(0)\n"
    proc, record = diagnose(tmp_path, forks + TRAIN)
    assert proc.returncode == 0, proc.stderr
    assert record is not None and record.exit.reason == "completed"
    assert record.summary.num_steps == 5 and record.step_detection == "optimizer"
    assert "left 1 process(es) running; torchdoctor ended them" in proc.stdout



def test_a_script_whose_name_is_not_utf8_is_observed_to_its_end(tmp_path):
    name = os.fsdecode(b"run\xff.py")  # a file from another system: bytes the OS cannot decode
    proc, record = diagnose(tmp_path, TRAIN, ["--warmup-steps", "2", "--steps", "5", "--no-memory"], name=name)
    assert proc.returncode == 0, proc.stderr
    assert record is not None and record.exit.reason == "completed" and record.summary.num_steps == 5
    assert record.script.endswith("run\\xff.py")
    # torch's Python tracer fails on the name and leaves the process unsafe: it is not started
    op_costs = record.probes["op_costs"]
    assert op_costs["complete"] and op_costs["ops"] and op_costs["script_calls"] is None
    assert "cannot record the file name" in op_costs["reason"]


@pytest.mark.parametrize("source, error", [
    ("def f(:\n    pass\n", "script.py:1: SyntaxError: invalid syntax"),
    ("#!/bin/sh\necho hello\nfor i in 1 2; do echo $i; done\n", "script.py:2: SyntaxError: invalid syntax"),
    (b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00", "script.py: SyntaxError: source code string cannot contain null bytes"),
])  # fmt: skip
def test_a_script_that_does_not_compile_is_reported_with_its_own_error(tmp_path, source, error):
    proc, record = diagnose(tmp_path, source)
    assert proc.returncode == 1
    assert record.exit.reason == "script_error"
    assert record.exit.message == f"the script does not compile: {tmp_path}/{error}"
    assert "Traceback" not in proc.stderr and "torchdoctor" not in record.exit.traceback
    assert proc.stderr.splitlines()[-1] == error.split(": ", 1)[1]  # Python's own last line


#: Helpers that escape every mark but their subreaper: a clean environment, a session of their
#: own, and (the second) a fork every 20 ms whose parent exits, so that its pid keeps changing;
#: it appends a line to LOG at each hop and gives up by itself after a minute.
ESCAPES = """
import subprocess, sys
hop = ("import os, sys, time\\n"
       "end = time.time() + 60\\n"
       "while time.time() < end:\\n"
       "    if os.fork():\\n"
       "        os._exit(0)\\n"
       "    with open(sys.argv[1], 'a') as log:\\n"
       "        log.write(f'{os.getpgrp()}\\\\n')\\n"
       "    time.sleep(0.02)\\n")
quiet = {"env": {}, "start_new_session": True, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
helpers = [subprocess.Popen(["/bin/sleep", "60"], **quiet), subprocess.Popen([sys.executable, "-c", hop, LOG], **quiet)]
print("SLEEPER", helpers[0].pid, flush=True)
"""


def test_helpers_that_shed_the_mark_the_group_and_their_pid_do_not_outlive_the_run(tmp_path):
    log = tmp_path / "hops.log"
    proc, record = diagnose(tmp_path, ESCAPES.replace("LOG", repr(str(log))) + TRAIN)
    assert record is not None and record.exit.reason == "completed", proc.stderr
    sleeper = int(next(line for line in proc.stdout.splitlines() if line.startswith("SLEEPER")).split()[1])
    hops = log.read_text().splitlines()
    time.sleep(0.5)
    left = log.read_text().splitlines()
    try:
        assert hops, "the fork-hopping helper never ran"
        assert len(left) == len(hops), "the fork-hopping helper outlived the run"
        assert not psutil.pid_exists(sleeper) or psutil.Process(sleeper).status() == psutil.STATUS_ZOMBIE
    except AssertionError:  # nothing stays behind should the test fail
        for group in (int(hops[-1]) if hops else 0, sleeper):
            with contextlib.suppress(OSError):
                os.killpg(group, signal.SIGKILL)
        raise


def test_a_script_that_ignores_sigterm_ends_when_torchdoctor_is_killed(tmp_path):
    script = tmp_path / "script.py"
    script.write_text("import os, signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                      "print('READY', os.getpid(), flush=True)\ntime.sleep(300)\n")
    command = [sys.executable, "-m", "torchdoctor", "diagnose", *SHORT, "--no-save", "--", str(script)]
    run = subprocess.Popen(command, cwd=tmp_path, env=WIDE_ENV, stdout=subprocess.PIPE, text=True,
                           start_new_session=True)
    ready = next(line for line in run.stdout if line.startswith("READY"))
    child = psutil.Process(int(ready.split()[1]))
    run.kill()
    run.wait()
    try:
        child.wait(timeout=30)  # the lifeline's grace is 5 s
    except psutil.TimeoutExpired:
        child.kill()
        raise AssertionError("a script that ignores SIGTERM outlived its killed torchdoctor") from None


REPLACES_STEP = """
import torch
model = torch.nn.Linear(8, 8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 10)  # wraps optimizer.step itself


def manual_step():
    with torch.no_grad():
        for parameter in model.parameters():
            parameter -= 0.01 * parameter.grad


for step in range(40):
    if step == REPLACE_AT:
        optimizer.step = manual_step
    optimizer.zero_grad()
    model(torch.randn(4, 8)).sum().backward()
    optimizer.step()
    scheduler.step()
"""


@pytest.mark.parametrize("replace_at", [4, 99])  # 99: never replaced, the scheduler's wrapper alone
def test_a_script_that_replaces_its_optimizer_step_mid_run_is_counted_to_its_last_step(tmp_path, replace_at):
    options = ["--warmup-steps", "2", "--steps", "50", "--no-profile", "--no-memory"]  # more than it runs
    proc, record = diagnose(tmp_path, REPLACES_STEP.replace("REPLACE_AT", str(replace_at)), options=options)
    assert record is not None and record.exit.reason == "script_finished", proc.stderr
    assert record.exit.message.startswith("the script ended after 40 steps; 38 of 50 timed steps measured")
    assert record.step_detection == "optimizer"
