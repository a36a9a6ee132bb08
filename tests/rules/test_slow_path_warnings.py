"""TD-COMP-037: a warning the script's process showed about speed, with the cost of the script's
function that raised it, on synthetic Records."""

from __future__ import annotations

import json
from pathlib import Path

from torchdoctor.record import Record
from torchdoctor.rules import diagnose

FIRES = Path(__file__).resolve().parent / "fixtures" / "TD-COMP-037" / "fires.json"


def _finding(warnings: list[dict], calls: list[dict], frames: dict):
    data = json.loads(FIRES.read_text())
    data["env"] = {"warnings": warnings}
    data["probes"]["op_costs"]["script_calls"].update(calls=calls, frames=frames)
    found = [f for f in diagnose(Record.from_dict(data), select=["TD-COMP-037"]).findings if f.id == "TD-COMP-037"]
    return found[0] if found else None


WARNING = {"category": "UserWarning", "message": "Creating a tensor from a list of numpy.ndarrays is extremely slow.",
           "file": "/home/user/train.py", "line": 37, "count": 1}
COLLATE = {"callee": "tensor", "caller": "train.py:35 (collate)", "count": 1, "wall_s": 0.02, "in_model": False}
MAIN = {"callee": "nn.Module: Net", "caller": "train.py:20 (main)", "count": 1, "wall_s": 0.06, "in_model": False}


def test_the_warning_is_costed_by_the_function_of_its_file_that_starts_nearest_above_its_line():
    finding = _finding([WARNING], [MAIN, COLLATE], {"train.py:35 (collate)": 0.025, "train.py:20 (main)": 0.1})
    assert finding.evidence["caller"] == "train.py:35 (collate)" and finding.upside == 0.25
    assert finding.title == "torch warned of a slow path at train.py:37"
    assert "np.stack" in finding.fix.code


def test_a_warning_raised_by_the_steps_own_loop_is_not_costed_by_an_unrelated_call():
    finding = _finding([{**WARNING, "line": 25}], [MAIN], {"train.py:20 (main)": 0.1})
    assert finding.upside == 0.0 and finding.evidence["caller"] is None
    assert "not measured" in finding.explanation


def test_warnings_not_about_speed_are_not_findings():
    assert _finding([{**WARNING, "message": "TypedStorage is deprecated."}], [COLLATE], {}) is None
