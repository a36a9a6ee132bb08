"""The speed-of-light accounting of a real run: `torchdoctor diagnose` on a small training script,
its operators profiled with FLOPs and stacks, this machine's peak measured and cached beside the
store, MFU and a waterfall that adds up to the measured step, printed at 80 columns."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = '''
import torch

def train_step(model, opt, x, y):
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()

model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(64, 128), torch.randn(64, 1)
for _ in range(200):
    train_step(model, opt, x, y)
'''


@pytest.mark.slow
def test_a_diagnosed_run_reports_mfu_and_a_waterfall_that_adds_up_to_its_step(tmp_path: Path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    out = tmp_path / "run.json"
    store = tmp_path / "store" / "runs.db"
    env = {**os.environ, "COLUMNS": "80", "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-m", "torchdoctor", "diagnose", "--warmup-steps", "2", "--steps", "4",
                           "--no-compile-probe", "--json", str(out), "--store", str(store), "--", str(script)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads(out.read_text())
    costs, accounting = record["probes"]["op_costs"], record["accounting"]
    assert costs["complete"] and costs["flops_by_dtype"]["fp32"] == costs["flops"] > 0
    assert accounting["source"] == "script" and accounting["peak_flops_per_s"]["fp32"] > 0
    assert accounting["mfu"] == pytest.approx(costs["flops"] / accounting["peak_flops_per_s"]["fp32"]
                                              / accounting["step_s"], rel=0.05) or accounting["busy"]
    assert sum(s["seconds"] for s in accounting["slices"]) == pytest.approx(accounting["step_s"], rel=0.02)
    assert any((c["source"] or "").startswith("train.py:4 (train_step)") for c in accounting["cost_centres"])
    assert (store.parent / "peaks.json").exists() or accounting["busy"]
    assert "Speed of light" in done.stdout and max(map(len, done.stdout.splitlines())) <= 80
