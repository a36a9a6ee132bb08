"""The re-measurement's ruler (benchmarks/step_clock/sitecustomize.py) stamps a script's own steps.

tune's claims are held to benchmarks/tune_zoo.py's independent re-measurement, whose step times come
from this clock alone: one stamp per `optimizer.step()`, or, in a script without an optimizer, one per
call of the outermost module (never per submodule call, before or after it stops hooking every
module), the process ended once the limit was stamped, and a script that ends sooner keeps its stamps.
Each case runs a real script in a fresh interpreter with the folder on PYTHONPATH, as remeasure.py does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

STEP_CLOCK = REPO_ROOT / "benchmarks" / "step_clock"

#: A model whose outermost module calls two submodules, each of which calls another: a per-module
#: clock would stamp five times a call.
NESTED_MODEL = """
import sys
import torch

class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.inner(x))

model = torch.nn.Sequential(Block(), Block())
x = torch.randn(2, 4)
"""

OPTIMIZER_LOOP = NESTED_MODEL + """
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(int(sys.argv[1])):
    optimizer.zero_grad()
    (model(x).sum() + model(x).sum()).backward()  # two forwards a step: a forward clock would stamp twice
    optimizer.step()
    print("done", step, flush=True)
"""

INFERENCE_LOOP = NESTED_MODEL + """
with torch.no_grad():
    for step in range(int(sys.argv[1])):
        model(x)
        print("done", step, flush=True)
"""


def run_script(tmp_path: Path, source: str, steps: int, env: dict[str, str]) -> list[str]:
    """The lines the script printed in `steps` loop iterations, the clock's folder on PYTHONPATH."""
    script = tmp_path / "script.py"
    script.write_text(source)
    proc = subprocess.run([sys.executable, str(script), str(steps)], env={**env, "PYTHONPATH": str(STEP_CLOCK)},
                          capture_output=True, text=True, timeout=100, check=True)
    return proc.stdout.splitlines()


def run_clocked(tmp_path: Path, source: str, steps: int, limit: int) -> tuple[list[float], list[str]]:
    """The stamps the clock wrote and the lines the script printed, for `steps` loop iterations."""
    log = tmp_path / "steps.log"
    printed = run_script(tmp_path, source, steps, {**os.environ, "TD_STEP_LOG": str(log), "TD_STEP_LIMIT": str(limit)})
    return [float(v) for v in log.read_text().split()], printed


def test_an_optimizer_script_is_stamped_once_per_step_and_ended_at_the_limit(tmp_path: Path) -> None:
    stamps, printed = run_clocked(tmp_path, OPTIMIZER_LOOP, steps=50, limit=6)

    assert len(stamps) == 6
    assert stamps == sorted(stamps)
    # Ended at the sixth step's optimizer.step(), before its print: the rest of the loop never ran.
    assert printed[-1] == "done 4"


def test_a_script_without_an_optimizer_is_stamped_once_per_outermost_call(tmp_path: Path) -> None:
    # Two calls found by the global hooks, then eight by the outermost module's own hook.
    stamps, printed = run_clocked(tmp_path, INFERENCE_LOOP, steps=50, limit=10)

    assert len(stamps) == 10
    assert stamps == sorted(stamps)
    assert printed[-1] == "done 8"


def test_a_script_that_ends_before_the_limit_keeps_its_stamps(tmp_path: Path) -> None:
    stamps, printed = run_clocked(tmp_path, INFERENCE_LOOP, steps=4, limit=100)

    assert len(stamps) == 4
    assert printed[-1] == "done 3"


def test_without_a_log_the_clock_does_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "TD_STEP_LIMIT": "2"}
    env.pop("TD_STEP_LOG", None)

    printed = run_script(tmp_path, OPTIMIZER_LOOP, steps=5, env=env)

    assert printed[-1] == "done 4"
