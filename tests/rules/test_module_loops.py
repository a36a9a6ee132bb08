"""The rules on how the script calls its modules in a profiled step (rules/module_loops.py), on
synthetic probe values: a submodule called in a Python loop per forward, a model rebuilt per step."""

from __future__ import annotations

from tests.rules.test_host_calls import _call, _only, _record


def test_a_submodule_called_many_times_per_forward_is_a_loop_to_batch_or_fuse():
    heads = _call("nn.Module: Linear", "model.py:30 (forward)", 64, 0.04, in_model=True)
    finding = _only(_record([heads], batch=48), "TD-COMP-044")
    assert finding.evidence["calls_per_forward"] == 64 and finding.evidence["module"] == "Linear"
    assert abs(finding.upside - 0.4 * (1 - 1 / 64)) < 1e-3  # 40 ms of the 100 ms profiled step
    assert "torch.einsum" in finding.fix.code and "nn.GRU" in finding.fix.text


def test_a_few_layers_per_forward_or_once_per_sample_is_not_this_loop():
    layers = _call("nn.Module: Linear", "model.py:30 (forward)", 6, 0.04, in_model=True)
    assert _only(_record([layers]), "TD-COMP-044") is None
    per_sample = _call("nn.Module: Linear", "model.py:30 (forward)", 64, 0.04, in_model=True)
    assert _only(_record([per_sample], batch=64), "TD-COMP-044") is None  # TD-COMP-036's
    two_forwards = _call("nn.Module: Linear", "model.py:30 (forward)", 24, 0.04, in_model=True)
    assert _only(_record([two_forwards], forwards=2), "TD-COMP-044") is None  # 12 per forward


def test_a_loop_of_cheap_calls_is_not_reported():
    heads = _call("nn.Module: Linear", "model.py:30 (forward)", 64, 0.002, in_model=True)
    assert _only(_record([heads], batch=48), "TD-COMP-044") is None


def test_a_model_deep_copied_every_step_costs_the_copys_share_at_most_the_time_outside_the_model():
    copy = _call("copy.deepcopy", "train.py:36 (main)", 1, 0.03)
    finding = _only(_record([copy], other_s=0.05), "TD-COMP-045")
    assert finding.upside == 0.3 and finding.evidence["what"] == ["copies"]
    assert "copy_(p)" in finding.fix.code
    assert _only(_record([copy], other_s=0.02), "TD-COMP-045").upside == 0.2


def test_modules_built_and_a_checkpoint_loaded_every_step_add_up():
    calls = [_call("torch.nn.modules.linear.__init__", "serve.py:20 (__init__)", 4, 0.01),
             _call("torch.serialization.load", "serve.py:40 (predict)", 1, 0.02),
             _call("torch.nn.modules.module.load_state_dict", "serve.py:41 (predict)", 1, 0.01)]
    finding = _only(_record(calls, other_s=0.08), "TD-COMP-045")
    assert finding.upside == 0.4 and finding.evidence["what"] == ["builds", "loads"]
    assert finding.evidence["callee"] == "torch.serialization.load"


def test_set_up_calls_inside_the_forward_or_too_cheap_to_matter_are_not_a_rebuilt_model():
    inside = _call("torch.nn.modules.linear.__init__", "model.py:20 (forward)", 1, 0.03, in_model=True)
    cheap = _call("torch.nn.modules.loss.__init__", "train.py:50 (main)", 1, 0.001)
    assert _only(_record([inside, cheap], other_s=0.05), "TD-COMP-045") is None
