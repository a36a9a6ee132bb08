"""TDL207 is never given where following it would break the program: code that uses a `.grad`
as a tensor after `zero_grad()` needs `set_to_none=False`, in the same file or in another module
of its program."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchdoctor.lint import lint_paths
from tests.lint.files import write

ZERO_GRAD = "optimizer.zero_grad(set_to_none=False)\n"


def _codes(folder: Path) -> list[tuple[str, int]]:
    return [(v.code, v.line) for v in lint_paths([folder], select=["TDL207"]).violations]


@pytest.mark.parametrize(
    "use",
    [
        "for p in params:\n    p.grad += g\n",
        "for p, g in zip(params, grads):\n    p.grad.add_(g)\n",
        "param.grad.copy_(update)\n",
        "param.grad.data.mul_(0.5)\n",
        "norm = model.weight.grad.norm()\n",
    ],
)
def test_a_file_that_uses_a_grad_as_a_tensor_keeps_its_zeros(tmp_path: Path, use: str) -> None:
    write(tmp_path, "server.py", ZERO_GRAD + use)
    assert _codes(tmp_path) == []


def test_a_grad_accumulated_in_another_module_of_the_program_keeps_its_zeros(tmp_path: Path) -> None:
    write(tmp_path, "train.py", "import accumulate\n" + ZERO_GRAD)
    write(tmp_path, "accumulate.py", "def add(p, g):\n    p.grad += g\n")
    assert _codes(tmp_path) == []


def test_grads_only_reset_or_tested_against_none_do_not_need_zeros(tmp_path: Path) -> None:
    write(tmp_path, "train.py", ZERO_GRAD + "p.grad = None\nif p.grad is not None:\n    pass\n")
    assert _codes(tmp_path) == [("TDL207", 1)]


def test_a_grad_used_by_an_unrelated_script_does_not_silence_the_check(tmp_path: Path) -> None:
    write(tmp_path, "train.py", ZERO_GRAD)
    write(tmp_path, "other.py", "p.grad += g\n")
    assert _codes(tmp_path) == [("TDL207", 1)]
