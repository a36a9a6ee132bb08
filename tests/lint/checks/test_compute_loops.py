"""TDL201 flags a host sync only where it runs every step: in the body of a loop over a
DataLoader, and not under an `if` that picks some steps."""

from __future__ import annotations

from pathlib import Path

from torchdoctor.lint import lint_paths
from tests.lint.files import write

HEADER = "from torch.utils.data import DataLoader\nloader = DataLoader(ds)\n"


def _lines(tmp_path: Path, body: str) -> list[int]:
    write(tmp_path, "train.py", HEADER + body)
    return [v.line for v in lint_paths([tmp_path], select=["TDL201"]).violations]


def test_a_sync_outside_any_loop_is_not_flagged(tmp_path: Path) -> None:
    body = "for x in loader:\n    loss = model(x)\nprint(loss.item())\ndef report():\n    return loss.item()\n"
    assert _lines(tmp_path, body) == []


def test_a_sync_under_an_if_that_runs_once_is_not_flagged(tmp_path: Path) -> None:
    body = "for i, x in enumerate(loader):\n    if i == 0:\n        save(x.cpu())\n"
    assert _lines(tmp_path, body) == []


def test_a_sync_in_the_test_of_an_if_runs_every_step_and_is_flagged(tmp_path: Path) -> None:
    body = "for i, x in enumerate(loader):\n    if i % 10 == 0 and x.sum().item() > 1:\n        pass\n"
    assert _lines(tmp_path, body) == [4]


def test_a_sync_under_an_if_on_a_value_is_flagged(tmp_path: Path) -> None:
    body = "for i, x in enumerate(loader):\n    if i == limit:\n        save(x.cpu())\n"
    assert _lines(tmp_path, body) == [5]
