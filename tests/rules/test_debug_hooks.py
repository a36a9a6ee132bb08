"""TD-COMP-062, the script's hooks on its modules, on synthetic evidence: the hooks read off the
modules and their function's time in the profiled step, so that a cheap hook stays silent."""

from __future__ import annotations

from torchdoctor.record import Record

from tests.rules.test_host_calls import _call, _only, _record

HOOK = {"function": "check_finite", "file": "train.py", "line": 9, "kind": "forward", "modules": 49}


def _with_hooks(record: Record, hooks: list[dict]) -> Record:
    record.env["models"] = [{"class": "Sequential", "script_hooks": hooks}]
    return record


def test_a_check_hooked_on_every_module_costs_its_functions_share_of_the_step():
    calls = [_call("isfinite", "train.py:10 (check_finite)", 49, 0.012, in_model=True, ops_s=0.01),
             _call("bool", "train.py:10 (check_finite)", 49, 0.008, in_model=True)]
    finding = _only(_with_hooks(_record(calls), [HOOK]), "TD-COMP-062")
    assert finding.upside == 0.2 and "49 modules" in finding.title and "handle.remove()" in finding.fix.text
    framed = _only(_with_hooks(_record(calls, frames={"train.py:10 (check_finite)": 0.03}), [HOOK]), "TD-COMP-062")
    assert framed.upside == 0.3  # the function's own frames, Python time included


def test_a_cheap_hook_or_calls_of_another_function_are_not_a_hooks_cost():
    cheap = [_call("Tensor.mean", "train.py:10 (check_finite)", 49, 0.002, in_model=True)]
    elsewhere = [_call("isfinite", "train.py:30 (main)", 49, 0.03)]
    assert _only(_with_hooks(_record(cheap), [HOOK]), "TD-COMP-062") is None
    assert _only(_with_hooks(_record(elsewhere), [HOOK]), "TD-COMP-062") is None
    assert _only(_with_hooks(_record(elsewhere), []), "TD-COMP-062") is None
