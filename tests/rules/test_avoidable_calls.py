"""The rules on calls that do work a standard API avoids (rules/avoidable_calls.py), on synthetic
probe values: what each needs besides the call itself, so that the same call made for a good
reason stays silent."""

from __future__ import annotations

from torchdoctor.record import Record

from tests.rules.test_host_calls import _call, _only, _record

MAIN, FORWARD = "train.py:30 (main)", "model.py:12 (forward)"


def _with_ops(record: Record, ops: list[dict]) -> Record:
    record.probes["op_costs"]["ops"] = ops
    return record


def test_a_layer_constructed_in_forward_every_step_costs_its_constructors_share():
    built = _call("torch.nn.modules.linear.__init__", FORWARD, 1, 0.03, in_model=True, ops_s=0.028)
    finding = _only(_record([built]), "TD-COMP-048")
    assert finding.upside == 0.3 and finding.severity == "problem"
    assert "inside forward" in finding.explanation and "__init__" in finding.fix.text


def test_a_layer_built_in_the_datasets_fetch_or_not_every_step_is_not_the_steps():
    in_fetch = {**_call("torch.nn.modules.linear.__init__", "data.py:8 (__getitem__)", 1, 0.03), "in_loading": True}
    now_and_then = _call("torch.nn.modules.linear.__init__", MAIN, 0.5, 0.03)
    assert _only(_record([in_fetch]), "TD-COMP-048") is None
    assert _only(_record([now_and_then]), "TD-COMP-048") is None


def test_an_inverse_every_step_is_advised_to_be_a_solve():
    inverse = _call("linalg_inv", FORWARD, 1, 0.02, in_model=True, ops_s=0.02)
    finding = _only(_record([inverse]), "TD-COMP-049")
    assert finding.upside == 0.2 and "linalg.solve" in finding.fix.text


def test_the_log_of_a_softmax_in_one_function_claims_the_log_and_its_backward():
    calls = [_call("torch.nn.functional.softmax", MAIN, 1, 0.01, ops_s=0.01), _call("log", MAIN, 1, 0.04, ops_s=0.03)]
    finding = _only(_record(calls), "TD-COMP-050")
    assert finding.upside == 0.6 and "log_softmax" in finding.fix.text


def test_a_log_and_a_softmax_in_different_functions_are_not_a_log_of_a_softmax():
    calls = [_call("torch.nn.functional.softmax", FORWARD, 1, 0.01, ops_s=0.01), _call("log", MAIN, 1, 0.04, ops_s=0.03)]
    assert _only(_record(calls), "TD-COMP-050") is None


def test_tensors_formatted_every_step_cost_at_most_the_time_outside_the_model():
    formatted = _call("torch._tensor.__format__", MAIN, 3, 0.05, ops_s=0.02)
    finding = _only(_record([formatted], other_s=0.03), "TD-COMP-051")
    assert finding.upside == 0.3 and "item()" in finding.fix.text


def test_printing_numbers_or_formatting_now_and_then_is_not_formatting_tensors_every_step():
    numbers = _call("print", MAIN, 1, 0.05)  # no operator ran inside: no tensor was formatted
    every_tenth = _call("torch._tensor.__format__", MAIN, 0.5, 0.05, ops_s=0.02)
    assert _only(_record([numbers], other_s=0.05), "TD-COMP-051") is None
    assert _only(_record([every_tenth], other_s=0.05), "TD-COMP-051") is None
    printed = _call("print", MAIN, 1, 0.05, ops_s=0.01)
    assert _only(_record([printed], other_s=0.05), "TD-COMP-051").upside == 0.5


def test_distribution_checks_need_the_constraint_reductions_from_the_same_function():
    built = _call("torch.distributions.normal.__init__", MAIN, 64, 0.04, ops_s=0.02)
    checks = {"name": "aten::all", "dtype": "bool", "shapes": "[2]", "count": 192, "self_s": 0.005, "flops": 0.0,
              "bytes": 0.0, "source": MAIN}
    finding = _only(_with_ops(_record([built]), [checks]), "TD-COMP-052")
    assert finding.upside == 0.2 and "validate_args=False" in finding.fix.code
    # A constructor that computes (a MultivariateNormal's Cholesky factor) without the checks' reductions.
    factored = _call("torch.distributions.multivariate_normal.__init__", MAIN, 1, 0.04, ops_s=0.03)
    assert _only(_with_ops(_record([factored]), []), "TD-COMP-052") is None


def test_a_penalty_summed_over_the_iterated_parameters_is_advised_as_weight_decay():
    loop = "train.py:38 (<genexpr>)"
    calls = [_call("torch.nn.modules.module.parameters", loop, 147, 0.005),
             _call("Parameter.pow", loop, 146, 0.01, ops_s=0.008), _call("Tensor.sum", loop, 146, 0.01, ops_s=0.008)]
    finding = _only(_record(calls, frames={loop: 0.025}, other_s=0.05), "TD-COMP-053")
    assert finding.upside == 0.25 and "weight_decay" in finding.fix.text  # the generator's 25 ms
    # The same method called as often on one parameter, or on parameters not iterated from the model.
    alone = [_call("Parameter.pow", loop, 146, 0.01, ops_s=0.008)]
    assert _only(_record(alone, frames={loop: 0.025}, other_s=0.05), "TD-COMP-053") is None


def test_an_optimizer_built_every_step_loses_its_state_and_costs_its_constructors_share():
    built = _call("torch.optim.adam.__init__", "train.py:18 (train_epoch)", 1, 0.02, ops_s=0.001)
    finding = _only(_record([built]), "TD-COMP-054")
    assert finding.upside == 0.2 and finding.evidence["built"] == "an optimizer"
    assert "state" in finding.explanation and "once, before the loop" in finding.fix.text


def test_a_trace_a_scheduler_or_a_scaler_every_step_is_set_up_repeated_and_each_is_named():
    named = {"torch.jit._trace.trace": "a TorchScript module",
             "torch.optim.lr_scheduler.__init__": "a learning-rate scheduler",
             "torch.amp.grad_scaler.__init__": "a gradient scaler",
             "torch.utils.data.dataloader.__init__": "a DataLoader"}
    for callee, what in named.items():
        finding = _only(_record([_call(callee, MAIN, 1, 0.05)]), "TD-COMP-054")
        assert finding.evidence["built"] == what, callee


def test_set_up_built_once_an_epoch_or_in_the_datasets_fetch_is_not_repeated_every_step():
    once_an_epoch = _call("torch.optim.adam.__init__", MAIN, 0.05, 0.02)
    in_fetch = {**_call("torch.jit._trace.trace", "data.py:8 (__getitem__)", 1, 0.03), "in_loading": True}
    an_optimizers_step = _call("torch.optim.adam.step", MAIN, 1, 0.02)
    for call in (once_an_epoch, in_fetch, an_optimizers_step):
        assert _only(_record([call]), "TD-COMP-054") is None
