"""The calls the script's own code made in the operator-costs probe's profiled steps, on a real
profiler: what was called, from which of the script's functions, how often per step, inside the
model or outside it; the model's forwards and the autograd engine's runs."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
import torch

from torchdoctor.observe.probes import op_costs
from torchdoctor.observe.probes.op_costs import ACTIVE, OpCostProbe, ScriptFiles
from torchdoctor.observe.probes.script_calls import callee_name

HERE = Path(__file__).resolve()
BATCH, OUT = 8, 3


class PerSample(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, OUT))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stack([self.net(sample) for sample in x])


def _rows(y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return torch.stack([torch.autograd.grad(y[:, i].sum(), x, create_graph=True)[0] for i in range(OUT)])


def _step(model: torch.nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor) -> int:
    y = model(x)
    penalty = _rows(y, x).pow(2).mean()
    opt.zero_grad()
    (y.sum() + penalty).backward()
    opt.step()
    gc.collect()
    return sum(1 for v in y.detach().flatten() if v.item() > 0)


def _profiled(step) -> dict:
    """The script calls of `step` run until the probe has recorded its steps."""
    probe = OpCostProbe("cpu", None, ScriptFiles(str(HERE.parent)))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(op_costs, "measure_peaks", lambda *_: {})  # the machine's peaks: not what is tested here
        probe.begin()
        done = False
        while not done:
            step()
            done = probe.step_end()
    value = probe.to_dict()
    assert value is not None and value["complete"] and value["steps"] == ACTIVE
    return value["script_calls"]


@pytest.fixture(scope="module")
def calls() -> dict:
    torch.manual_seed(0)
    model = PerSample()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    return _profiled(lambda: _step(model, opt, torch.randn(BATCH, 4, requires_grad=True)))


def _per_step(calls: dict, callee: str, function: str) -> list[dict]:
    return [c for c in calls["calls"] if c["callee"] == callee and c["caller"].endswith(f"({function})")]


def test_a_submodule_called_per_sample_is_counted_per_step_inside_the_model(calls):
    (looped,) = _per_step(calls, "nn.Module: Sequential", "<listcomp>")
    assert looped["count"] == BATCH and looped["in_model"]
    assert looped["caller"].startswith(f"{HERE.name}:")


def test_every_backward_pass_is_counted_and_the_model_forward_once(calls):
    (rows,) = _per_step(calls, "torch.autograd.grad", "<listcomp>")
    assert rows["count"] == OUT and not rows["in_model"]
    assert calls["backward_passes"] == OUT + 1  # the rows and the loss's backward
    assert calls["forwards"] == 1


def test_scalar_reads_and_a_garbage_collection_outside_the_model_are_named_with_their_caller(calls):
    (reads,) = _per_step(calls, "Tensor.item", "<genexpr>")
    assert reads["count"] == BATCH * OUT and not reads["in_model"]
    (collect,) = _per_step(calls, "collect", "_step")
    assert collect["count"] == 1 and collect["wall_s"] > 0
    assert calls["frames"][reads["caller"]] >= reads["wall_s"]  # the generator's time holds its calls'
    (driver,) = _per_step(calls, "sum", "_step")
    assert driver["wall_s"] < calls["frames"][reads["caller"]]  # sum() is not charged the generator's time


def test_the_time_a_call_spends_in_torch_operators_is_told_from_its_python(calls):
    (collect,) = _per_step(calls, "collect", "_step")
    assert collect["ops_s"] == 0  # a garbage collection runs no operator
    (rows,) = _per_step(calls, "torch.autograd.grad", "<listcomp>")
    assert 0 < rows["ops_s"] <= rows["wall_s"]  # the backward's operators, less its Python
    (reads,) = _per_step(calls, "Tensor.item", "<genexpr>")
    assert 0 < reads["ops_s"] < reads["wall_s"]  # aten::item inside each read, and the Python around it


@pytest.mark.parametrize(("recorded", "name"), [
    ("<built-in method item of Tensor object at 0x7f00>", "Tensor.item"),
    ("<built-in function collect>", "collect"),
    ("<built-in method tensor of type object at 0x7f00>", "tensor"),
    ("torch/autograd/__init__.py(434): grad", "torch.autograd.grad"),
    ("nn.Module: Sequential_0", "nn.Module: Sequential"),
    ("torchdoctor/observe/hooks.py(330): tensor_backward", "torch._tensor.backward"),
])
def test_a_callee_is_named_as_the_user_wrote_it(recorded, name):
    assert callee_name(recorded) == name


class Texts(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 1024

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.tensor([len(w) for w in f"sample {i} of the texts".split()])


def test_what_the_datasets_getitem_called_in_the_main_process_is_marked_as_loading():
    torch.manual_seed(0)
    model = torch.nn.Linear(5, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = iter(torch.utils.data.DataLoader(Texts(), batch_size=BATCH))
    calls = _profiled(lambda: model(next(batches).float()).sum().backward() or opt.step())
    (split,) = _per_step(calls, "str.split", "__getitem__")
    assert split["count"] == BATCH and split["in_loading"] and not split["in_model"]
    loading = {c["caller"].rsplit(" ", 1)[1] for c in calls["calls"] if c["in_loading"]}
    assert loading == {"(__getitem__)", "(<listcomp>)"}  # the dataset's code, not the step's
    getitem = sum(s for label, s in calls["frames"].items() if label.endswith("(__getitem__)"))
    assert 0 < calls["loading_s"] and getitem <= calls["loading_s"]


class Checkpointed(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()) for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
        return x


def test_a_call_through_a_decorators_wrapper_is_named_after_the_function_it_wraps():
    """`checkpoint` is wrapped by `torch._disable_dynamo`: the tracer sees the script call the
    wrapper, which runs checks of its own and then the function."""
    model = Checkpointed()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    calls = _profiled(lambda: model(torch.randn(BATCH, 8)).sum().backward() or opt.step())
    (checkpoints,) = _per_step(calls, "torch.utils.checkpoint.checkpoint", "forward")
    assert checkpoints["count"] == 3 and checkpoints["in_model"]
    assert not [c for c in calls["calls"] if c["callee"] == "torch._compile.inner"]
