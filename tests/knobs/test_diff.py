"""The permanent form: a unified diff against the user's script at the call site."""

from __future__ import annotations

from pathlib import Path

from torchdoctor.knobs.diff import unified_diff

SCRIPT = '''from torch.utils.data import DataLoader
loader = DataLoader(
    dataset,
    batch_size=32,
    num_workers=0,  # keep
)
optimizer.zero_grad()
'''


def test_diff_edits_the_call_sites_and_keeps_layout_and_comments(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    diff = unified_diff(script, {"num_workers": 3, "pin_memory": True, "zero_grad_set_to_none": True})
    assert diff is not None
    assert "-    num_workers=0,  # keep\n+    num_workers=3,  # keep\n" in diff
    assert "+    pin_memory=True,\n" in diff
    assert "+optimizer.zero_grad(set_to_none=True)\n" in diff


def test_no_diff_when_no_knob_has_a_call_site_in_the_script(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("import torch\n")
    assert unified_diff(script, {"num_workers": 2}) is None
    assert unified_diff(script, {"autocast_bf16": True}) is None
