"""`torchdoctor memory -- SCRIPT`: the user's unmodified script, one step measured in place."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.observe.helpers import WIDE_ENV
from torchdoctor.record import Record

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def run_memory(tmp_path: Path, *options: str, script_args: tuple[str, ...] = ("--steps", "12"),
               script: Path = SCRIPTS / "train_gpt.py"):
    out = tmp_path / "record.json"
    command = [sys.executable, "-m", "torchdoctor", "memory", "--warmup-steps", "2", *options, "--json", str(out),
               "--store", str(tmp_path / "runs.db"), "--", str(script), *script_args]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=tmp_path, env=WIDE_ENV)
    return proc, Record.load(out) if out.exists() else None


@pytest.mark.slow
def test_the_peak_of_a_gpt_step_is_broken_down_with_estimates(tmp_path):
    proc, record = run_memory(tmp_path, "--memory-budget", "1GiB")
    assert proc.returncode == 0, proc.stderr
    b = record.memory["breakdown"]
    assert b["method"] == "mem_tracker" and b["batch_size"] == 4 and b["phase"] == "backward"
    assert max(b["categories_bytes"], key=b["categories_bytes"].get) == "activations"
    assert [m["name"] for m in b["modules"]][2:6] == [f"GPT.blocks.{i}" for i in range(4)]
    w = record.memory["what_if"]
    assert w["checkpointing_peak_bytes"] < b["peak_bytes"] and w["largest_batch_in_budget"] > 4
    assert "activation checkpointing of repeated blocks" in proc.stdout


@pytest.mark.slow
def test_a_script_that_ends_before_the_memory_step_is_reported(tmp_path):
    # 2 warm-up + 2 timed steps, then the script ends: the memory step never completes.
    proc, record = run_memory(tmp_path, script_args=("--steps", "4"))
    b = record.memory["breakdown"]
    assert "did not finish" in b["reason"]


OWN_OPTIMIZER_HOOK = """
import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

register_optimizer_step_post_hook(lambda *_: None)  # registered after torchdoctor's hooks
model = torch.nn.Linear(64, 64)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(12):
    optimizer.zero_grad()
    model(torch.randn(8, 64)).sum().backward()
    optimizer.step()
"""


@pytest.mark.slow
def test_a_script_with_its_own_global_optimizer_hook_is_measured(tmp_path):
    # Starting the memory window at an optimizer step's end registers MemTracker's global
    # optimizer hooks; torch must not be iterating the global post-hooks at that moment.
    script = tmp_path / "own_hook.py"
    script.write_text(OWN_OPTIMIZER_HOOK)
    proc, record = run_memory(tmp_path, script=script, script_args=())
    assert proc.returncode == 0, proc.stderr
    assert "mutated during iteration" not in proc.stderr
    b = record.memory["breakdown"]
    assert b["method"] == "mem_tracker" and b["reason"] is None
    assert b["categories_bytes"]["parameters"] == (64 * 64 + 64) * 4


def test_an_unreadable_budget_is_a_clear_error(tmp_path):
    proc, _ = run_memory(tmp_path, "--memory-budget", "lots")
    assert proc.returncode == 2 and "write it like 16GiB" in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_a_loop_that_evaluates_first_has_its_training_step_measured(tmp_path):
    """nanoGPT's loop: `estimate_loss()` under no_grad at iteration 0, then AdamW steps. The step
    measured is a training step, its peak holding gradients and optimizer state, and it says so."""
    proc, record = run_memory(tmp_path, script=SCRIPTS / "nanogpt_loop.py",
                              script_args=("--max-iters", "8", "--eval-interval", "5", "--eval-iters", "5"))
    assert proc.returncode == 0, proc.stderr
    assert record.step_detection == "optimizer" and record.memory["measured_step"] == "optimizer"
    b = record.memory["breakdown"]
    assert b["phase"] in ("backward", "optimizer")
    assert b["categories_bytes"]["gradients"] > 0 and b["categories_bytes"]["optimizer_state"] > 0
    assert "measured step: a training step (optimizer.step)" in proc.stdout
