"""`torchdoctor watch` on a real script run to its end: the whole run's wall time broken down, the
periodic checkpoint named by its function and line with its period, the leak seen, the periodic
profiler windows kept apart from the steady steps, the Ctrl-C'd run still reported."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from rich.console import Console

from torchdoctor.workflow.watch import _Follower

SCRIPT = '''import json, sys, time
import torch
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(3200, 32), torch.randn(3200, 1)),
                                     batch_size=32)
saved = []
kept = []

def save_checkpoint():
    start = time.perf_counter()
    time.sleep(0.25)
    saved.append(time.perf_counter() - start)

step = 0
for epoch in range(int(sys.argv[2])):
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        kept.append(torch.ones(2**18))  # 1 MiB a step, kept alive
        step += 1
        if step % 40 == 0:
            save_checkpoint()
        time.sleep(0.002)
json.dump({"saved_s": sum(saved), "saves": len(saved)}, open(sys.argv[1], "w"))
'''
SAVE_LINE = SCRIPT.splitlines().index("    time.sleep(0.25)") + 1


def _watch(tmp_path: Path, epochs: int, *options: str) -> subprocess.Popen:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    command = [sys.executable, "-m", "torchdoctor", "watch", "--store", str(tmp_path / "runs.db"),
               "--no-profile", "--no-memory",
               "--progress-every", "1", "--json", str(tmp_path / "record.json"), *options, "--",
               str(script), str(tmp_path / "truth.json"), str(epochs)]
    return subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "COLUMNS": "80"})


@pytest.mark.slow
def test_a_whole_run_is_broken_down_and_its_periodic_checkpoint_named_by_its_line(tmp_path):
    proc = _watch(tmp_path, 3, "--profile-every", "0.02")  # a profiler window every 1.2 s
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    whole = json.loads((tmp_path / "record.json").read_text())["whole_run"]
    truth = json.loads((tmp_path / "truth.json").read_text())
    assert whole["ended"] == "script_finished" and whole["steps"] == 300
    assert sum(p["seconds"] for p in whole["parts"]) == pytest.approx(whole["wall_s"], rel=1e-6)
    saves = [p for p in whole["parts"] if p["cause"] == f"save_checkpoint (train.py:{SAVE_LINE})"]
    slow = next(p for p in saves if p["kind"] == "slow")
    assert slow["period_steps"] == 40 and slow["steps"] == 7
    # the 7 saves within the run (the last one, after step 280, ends in the 20 steps before the end)
    assert sum(p["seconds"] for p in saves) == pytest.approx(truth["saved_s"], rel=0.2)
    kinds = {t["kind"] for t in whole["trends"]}
    assert {"checkpoint", "memory_growth"} <= kinds
    findings = {f["id"]: f for f in json.loads((tmp_path / "record.json").read_text())["findings"]}
    assert {"TD-COMP-030", "TD-MEM-006"} <= set(findings)  # ranked among the windows' findings
    assert findings["TD-COMP-030"]["evidence"]["period_steps"] == 40
    assert "TD-COMP-030" in out
    assert "Whole run" in out and "save_checkpoint (train.py:" in out
    assert "torchdoctor watch:" in err  # the progress line, in a pipe
    assert all(len(line) <= 80 for line in out.splitlines())
    # the periodic profiler windows: the first at the lean observation's start, then every 1.2 s (the
    # seven saves alone take 1.75 s)
    assert whole["profiles_seen"] >= 2 and len(whole["profiles"]) == whole["profiles_seen"]
    windows = next(p for p in whole["parts"] if p["label"] == "torchdoctor's periodic profiler windows")
    # warm-up, 5 profiled, the stop: 7 steps each, less a save that fell in a window (the save's)
    assert 0 <= 7 * whole["profiles_seen"] - windows["steps"] <= whole["profiles_seen"]
    assert "aten::addmm" in {op["name"] for w in whole["profiles"] for op in w["ops"]}
    assert "periodic profiler windows: " in out


@pytest.mark.slow
def test_a_run_stopped_with_ctrl_c_still_reports_what_it_saw(tmp_path):
    proc = _watch(tmp_path, epochs=100)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(b'"lean_start"' in p.read_bytes()
                                                  for p in tmp_path.rglob("*.watch.jsonl")):
        time.sleep(0.5)  # until the lean observation has begun
    time.sleep(2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    whole = json.loads((tmp_path / "record.json").read_text())["whole_run"]
    assert whole["ended"] == "interrupted" and whole["steps"] > 40
    assert any(p["kind"] == "steady" and p["seconds"] > 0 for p in whole["parts"])


def _stream(path: Path) -> None:
    ends = [int(10_000 * (i + 1)) for i in range(50)]
    lines = [{"mark": {"name": "epoch", "t_us": 0, "step": 0, "length": 100}},
             {"steps": {"first": 0, "end_us": ends, "data_us": [0] * 50}}, {"mem": [50, 500_000, 2**30, None]}]
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))


@pytest.mark.parametrize("terminal", [True, False])
def test_the_run_is_followed_live_on_a_terminal_and_line_by_line_in_a_pipe(tmp_path, terminal):
    _stream(tmp_path / "rank0.watch.jsonl")
    console = Console(file=io.StringIO(), width=80, force_terminal=terminal, color_system=None)
    follower = _Follower(tmp_path / "rank0.watch.jsonl", 0.05, console, refresh_s=0.05)
    follower.start()
    time.sleep(0.5)
    follower.stop.set()
    follower.join(timeout=5)
    out = console.file.getvalue()
    assert not follower.is_alive()
    if terminal:  # a panel redrawn in place, cleared at the end (the report follows)
        assert "torchdoctor watch" in out and "step 50/100" in out and "\x1b[" in out
    else:
        assert out.splitlines()[0].startswith("torchdoctor watch: 0.0 min, 50 steps, median step 10.00 ms")


RANKS_SCRIPT = '''import json, sys, time
import torch
import torch.distributed as dist
torch.set_num_threads(1)
dist.init_process_group("gloo")
rank = dist.get_rank()
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(16, 16))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
straggled = 0.0

def straggle():
    global straggled
    start = time.perf_counter()
    time.sleep(0.04)
    straggled += time.perf_counter() - start

for step in range(300):
    optimizer.zero_grad()
    loss = model(torch.randn(8, 16)).sum()
    if rank == 1 and 100 <= step < 150:
        straggle()
    time.sleep(0.01)
    loss.backward()  # DDP's all_reduce: every rank waits here for the slowest
    optimizer.step()
if rank == 1:
    json.dump({"straggled_s": straggled}, open(sys.argv[1], "w"))
dist.destroy_process_group()
'''


@pytest.mark.slow
def test_every_rank_of_a_torchrun_job_streams_and_the_straggler_is_found_when_and_by_how_much(tmp_path):
    script = tmp_path / "ranks.py"
    script.write_text(RANKS_SCRIPT)
    command = [sys.executable, "-m", "torchdoctor", "watch", "--nproc-per-node", "2", "--store",
               str(tmp_path / "runs.db"), "--no-profile", "--no-memory", "--no-periodic-profile", "--json",
               str(tmp_path / "record.json"), "--", str(script), str(tmp_path / "truth.json")]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": "80"})
    assert done.returncode == 0, done.stderr
    whole = json.loads((tmp_path / "record.json").read_text())["whole_run"]
    assert [(r["rank"], r["steps"], r["ended"]) for r in whole["ranks"]] == [(0, 300, "script_finished"),
                                                                          (1, 300, "script_finished")]
    assert all(0 < r["goodput_s"] < r["wall_s"] for r in whole["ranks"])
    assert len(list((tmp_path / "runs").rglob("rank*.watch.jsonl"))) == 2
    worst = whole["stragglers"][0]
    # rank 0 waits in backward for rank 1 in steps 100-149: their step times are alike, rank 1's own is not
    assert worst["rank"] == 1 and 90 <= worst["first_step"] <= 105 and 145 <= worst["last_step"] <= 165
    assert worst["step_s"] >= 2 * worst["others_step_s"] and worst["start_s"] < worst["end_s"] <= whole["wall_s"]
    truth = json.loads((tmp_path / "truth.json").read_text())["straggled_s"]
    assert worst["lost_s"] == pytest.approx(truth, rel=0.3)
    assert all(s["lost_s"] < 0.3 * worst["lost_s"] for s in whole["stragglers"][1:])
    assert "goodput by rank" in done.stdout and "straggler: rank 1, steps" in done.stdout
    assert all(len(line) <= 80 for line in done.stdout.splitlines())


@pytest.mark.slow
def test_a_model_traced_every_batch_runs_to_its_end_with_profiler_windows_between_the_traces(tmp_path):
    """The lean observation does not count the tracer's forwards as steps, so no periodic profiler
    window begins or steps inside torch.jit.trace (which would fail the script's trace)."""
    script = Path(__file__).resolve().parents[1] / "observe" / "scripts" / "traced_each_batch.py"
    command = [sys.executable, "-m", "torchdoctor", "watch", "--store", str(tmp_path / "runs.db"), "--no-profile",
               "--no-memory", "--profile-every", "0.01", "--json", str(tmp_path / "record.json"), "--",
               str(script), "600"]
    proc = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "Tried to trace" not in proc.stderr, proc.stderr[-2000:]
    whole = json.loads((tmp_path / "record.json").read_text())["whole_run"]
    assert whole["ended"] == "script_finished" and whole["steps"] >= 600
    (stream,) = tmp_path.glob("runs/*/rank0.watch.jsonl")
    assert any('"profile"' in line for line in stream.read_text().splitlines())
