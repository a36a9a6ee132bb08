"""The rules on how a script calls its model and data, on a real script in a real subprocess
(tests/observe/scripts/model_loops.py): counted calls, so the machine's load does not change them."""

from __future__ import annotations

import pytest

from tests.observe.helpers import FAST, run_diagnose

pytestmark = pytest.mark.slow

HEADS, BATCH = 16, 12


def test_a_model_deep_copied_per_step_per_head_layers_and_per_sample_text_work_are_counted(tmp_path):
    proc, record = run_diagnose(tmp_path, "model_loops.py", options=FAST)
    assert proc.returncode == 0, proc.stderr
    assert record.exit.reason == "completed"  # copy.deepcopy(model) works on an observed model
    calls = record.probes["op_costs"]["script_calls"]
    (copies,) = [c for c in calls["calls"] if c["callee"] == "copy.deepcopy"]
    assert copies["count"] == 1 and copies["caller"].endswith("(main)") and not copies["in_model"]
    heads = [c for c in calls["calls"] if c["callee"] == "nn.Module: Linear" and c["caller"].endswith("(<listcomp>)")]
    assert sum(c["count"] for c in heads) == 2 * HEADS  # the model's and the snapshot's forward
    (splits,) = [c for c in calls["calls"] if c["callee"] == "str.split"]
    assert splits["count"] == BATCH and splits["in_loading"] and splits["caller"].endswith("(__getitem__)")
    assert calls["loading_s"] > 0
    # whether TD-COMP-044/045/TD-DATA-012 report them rests on shares of the step, which the machine's
    # load moves: tests/rules/test_module_loops.py and test_data_getitem.py hold those on fixed values
