"""The host-call rules on a real script in a real subprocess: what its own code called in the
profiled steps (counted, so the load of the machine does not change them) and the warning torch
showed it."""

from __future__ import annotations

import pytest

from tests.observe.helpers import FAST, run_diagnose

pytestmark = pytest.mark.slow

BATCH, OUT = 32, 4


def test_element_reads_row_by_row_gradients_and_a_slow_path_warning_are_found_by_their_counts(tmp_path):
    proc, record = run_diagnose(tmp_path, "host_work.py", options=FAST)
    assert proc.returncode == 0, proc.stderr
    assert record.exit.reason == "completed"  # the gradient with respect to the input survives the memory step
    calls = record.probes["op_costs"]["script_calls"]
    reads = [c for c in calls["calls"] if c["callee"] == "Tensor.item"]
    assert [(c["caller"], c["count"]) for c in reads] == [("host_work.py:48 (<genexpr>)", BATCH * OUT)]
    assert calls["backward_passes"] == OUT + 1 and calls["forwards"] == 1
    (warning,) = [w for w in record.env["warnings"] if "numpy.ndarrays is extremely slow" in w["message"]]
    assert warning["file"].endswith("host_work.py") and warning["line"] == 26
    found = {f.id: f for f in record.findings}
    assert found["TD-COMP-034"].evidence["scalar_reads_per_step"] == BATCH * OUT
    assert found["TD-COMP-035"].evidence["caller_passes_per_step"] == OUT
    assert found["TD-COMP-037"].evidence["line"] == 26
    assert "extremely slow" in proc.stderr + proc.stdout  # shown to the user as without torchdoctor
