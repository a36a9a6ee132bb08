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


HELD = '''import os
import torch

torch.set_num_threads(16)
os.environ["OMP_NUM_THREADS"] = "16"
# debugging aid
torch.autograd.set_detect_anomaly(True)
with torch.autograd.detect_anomaly():
    step()
if True:
    torch.autograd.set_detect_anomaly(True)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
'''


def _call(line: int, knob: str, call: str, tmp: Path, **extra) -> dict:
    return {"knob": knob, "call": call, "file": str(tmp), "line": line, "code": HELD.splitlines()[line - 1],
            "action": "ignored", **extra}


def test_the_diff_edits_the_very_lines_that_undid_a_knob(tmp_path: Path) -> None:
    from torchdoctor.knobs.diff import knob_changes

    script = tmp_path / "train.py"
    script.write_text(HELD)
    intercepted = [_call(4, "threads", "torch.set_num_threads(16)", script),
                   _call(5, "threads", "os.environ['OMP_NUM_THREADS'] = '16'", script, variable="OMP_NUM_THREADS"),
                   _call(7, "no_anomaly_detection", "torch.autograd.set_detect_anomaly(True)", script),
                   _call(8, "no_anomaly_detection", "torch.autograd.detect_anomaly()", script),
                   _call(11, "no_anomaly_detection", "torch.autograd.set_detect_anomaly(True)", script)]
    changes, diff = knob_changes(script, {"threads": 1, "no_anomaly_detection": True}, intercepted)
    lines = diff.splitlines()
    for line in ("-torch.set_num_threads(16)", "+torch.set_num_threads(1)", '-os.environ["OMP_NUM_THREADS"] = "16"',
                 '+os.environ["OMP_NUM_THREADS"] = "1"', "-torch.autograd.set_detect_anomaly(True)",
                 "-with torch.autograd.detect_anomaly():", "-    step()", "+step()",
                 "-    torch.autograd.set_detect_anomaly(True)", "+    pass"):
        assert line in lines, diff
    assert not [line for line in lines if line.startswith("+") and "anomaly" in line]
    assert " # debugging aid\n" in diff  # the comment above a deleted line stays
    sites = {c["knob"]: c["sites"] for c in changes}
    assert sites["threads"][0]["advice"] == "train.py:4: change `torch.set_num_threads(16)` to use 1"
    assert sites["no_anomaly_detection"][0]["advice"].startswith("train.py:7: delete")


def test_snippets_name_the_scripts_own_optimizer_class_and_variables(tmp_path: Path) -> None:
    from torchdoctor.knobs.diff import knob_changes
    from torchdoctor.record import Record

    script = tmp_path / "train.py"
    script.write_text(HELD)
    record = Record(env={"optimizers": [{"class": "SGD"}], "models": [{"class": "Sequential"}]})
    changes, _ = knob_changes(script, {"optimizer_impl": "foreach", "compile": {"mode": "default"}}, (), record)
    snippets = {c["knob"]: c["snippet"] for c in changes}
    assert snippets["optimizer_impl"] == "opt = torch.optim.SGD(net.parameters(), ..., foreach=True)"
    assert snippets["compile"].startswith("net = torch.compile(net")


NANOGPT_OPTIMIZER = '''import torch
extra_args = dict(fused=True) if use_fused else dict()
optimizer = torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, **extra_args)
'''


def test_a_keyword_a_double_star_mapping_may_carry_is_merged_into_it_not_given_twice(tmp_path: Path) -> None:
    script = tmp_path / "model.py"
    script.write_text(NANOGPT_OPTIMIZER)
    diff = unified_diff(script, {"optimizer_impl": "fused"})
    edited = "optimizer = torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, **{**extra_args, 'fused': True})"
    assert f"+{edited}\n" in diff
    # On both paths of the script (extra_args with and without fused) the edited call is valid.
    for use_fused in (True, False):
        calls = []
        namespace = {"use_fused": use_fused, "optim_groups": [], "learning_rate": 0.1, "betas": (0.9, 0.99)}
        exec(NANOGPT_OPTIMIZER.splitlines()[1], namespace)
        exec(edited.replace("torch.optim.AdamW", "record"), {**namespace, "record": lambda *a, **k: calls.append(k)})
        assert calls[0]["fused"] is True


def test_a_line_recorded_by_several_runs_is_one_site(tmp_path: Path) -> None:
    from torchdoctor.knobs.diff import knob_changes

    script = tmp_path / "train.py"
    script.write_text(HELD)
    same = _call(7, "no_anomaly_detection", "torch.autograd.set_detect_anomaly(True)", script)
    changes, diff = knob_changes(script, {"no_anomaly_detection": True}, [same, dict(same), dict(same)])
    assert len(changes[0]["sites"]) == 1
    assert diff.count("-torch.autograd.set_detect_anomaly(True)") == 1
