"""The script's hooks on its modules, read off real modules: each function once per kind with the
number of modules it is on, whatever form the hook takes, and nothing torch registers itself."""

from __future__ import annotations

import functools

import torch
from torch import nn
from torch.nn.utils import parametrizations

from torchdoctor.observe.hooks import ModuleHook
from torchdoctor.observe.module_hooks import script_hooks


def check_finite(module: nn.Module, inputs: tuple, output: torch.Tensor) -> None:
    assert torch.isfinite(output).all()


class Recorder:
    def __call__(self, module: nn.Module, inputs: tuple, output: torch.Tensor) -> None:
        pass

    def before(self, module: nn.Module, inputs: tuple) -> None:
        pass


def test_a_check_on_every_module_is_one_hook_on_as_many_modules():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    for module in model.modules():
        module.register_forward_hook(check_finite)
    (hook,) = script_hooks(model)
    assert hook["function"] == "check_finite" and hook["kind"] == "forward" and hook["modules"] == 4
    assert hook["file"] == "test_module_hooks.py" and hook["line"] == check_finite.__code__.co_firstlineno


def test_methods_callable_objects_and_partials_are_named_by_the_code_they_run():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    model[0].register_forward_pre_hook(Recorder().before)
    model[0].register_forward_hook(Recorder())
    model[1].register_full_backward_hook(functools.partial(check_finite))
    found = {(h["function"], h["kind"]) for h in script_hooks(model)}
    assert found == {("before", "forward_pre"), ("__call__", "forward"), ("check_finite", "backward")}


def test_hooks_that_torch_or_torchdoctor_register_are_not_the_scripts():
    model = nn.Sequential(parametrizations.weight_norm(nn.Linear(4, 4)), nn.ReLU())
    model[0].register_forward_hook(lambda *_: None)  # torch's own code registers none of these
    model[1].register_forward_hook(ModuleHook(lambda *_: None))  # torchdoctor's own observation hook
    plain = nn.Sequential(parametrizations.weight_norm(nn.Linear(4, 4)))
    assert [h["kind"] for h in script_hooks(model)] == ["forward"]
    assert script_hooks(plain) == []
