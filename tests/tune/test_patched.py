"""The diff checked by running it: the patched copy of the script runs a few steps in a real
subprocess, and a diff that breaks the script says so."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from torchdoctor.tune.config import TuneConfig
from torchdoctor.tune.patched import check_patched
from torchdoctor.tune.runner import TuneSetup

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def _setup(tmp_path: Path, script: Path) -> TuneSetup:
    return TuneSetup(script, [], TuneConfig(), store=None, work_dir=tmp_path / "work", tune_id="tune-test",
                     progress=None, stop_signal=lambda: None)


@pytest.mark.slow
def test_a_diff_that_breaks_the_script_on_its_path_is_caught_by_running_it(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    shutil.copy(SCRIPTS / "own_zero_grad.py", script)
    check = check_patched(_setup(tmp_path, script), {"zero_grad_set_to_none": True}, [], None)
    assert check["ok"] is False
    assert "TypeError" in check["reason"] and "set_to_none" in check["reason"]
    assert script.read_text() == (SCRIPTS / "own_zero_grad.py").read_text()  # the user's file is untouched


@pytest.mark.slow
def test_a_sound_diff_runs_its_steps_and_imports_the_scripts_unedited_modules(tmp_path: Path) -> None:
    (tmp_path / "helpers.py").write_text("import torch\n\ndef build():\n    return torch.nn.Linear(4, 1)\n")
    script = tmp_path / "train.py"
    script.write_text("import torch\nfrom helpers import build\n\nmodel = build()\n"
                      "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\nfor step in range(40):\n"
                      "    optimizer.zero_grad()\n    model(torch.randn(8, 4)).pow(2).mean().backward()\n"
                      "    optimizer.step()\n")
    check = check_patched(_setup(tmp_path, script), {"zero_grad_set_to_none": True}, [], None)
    assert check["ok"] is True and check["reason"].startswith("the patched script ran 2 steps")


def test_no_diff_no_check(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("import torch\n")
    assert check_patched(_setup(tmp_path, script), {"autocast_bf16": True}, [], None) is None
