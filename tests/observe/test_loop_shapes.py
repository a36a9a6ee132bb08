"""Step anatomy on every loop shape: the parts of a step never overlap, so the shares add to 1,
and a known sleep placed inside one part is counted in that part only.

Each shape runs in this process under the real hooks and step clock (the same Instrumentation
the observed child installs); the closure shape also runs end to end, `torchdoctor diagnose` in a
subprocess. The sleep (SLEEP_S) is the large, known effect: the part holding it measures at least
that much in every step, and the parts that do not hold it stay below it (they take
milliseconds on these tiny models).
"""

from __future__ import annotations

import statistics
import textwrap

import pytest
import torch

from tests.observe.helpers import run_diagnose
from torchdoctor.observe.facts import Facts
from torchdoctor.observe.hooks import Instrumentation
from torchdoctor.observe.steps import PhaseCallbacks, StepClock
from torchdoctor.observe.summary import summarise
from torchdoctor.record import StepSample

SLEEP_S = 0.05
OPTIONS = ["--no-profile", "--warmup-steps", "2", "--steps", "5"]
PARTS = ("data_wait", "forward", "backward", "optimizer")

HEADER = """
import time
import torch
torch.manual_seed(0)
SLEEP_S = %r

class Net(torch.nn.Module):
    def __init__(self, sleep=0.0):
        super().__init__()
        self.lin = torch.nn.Linear(8, 1)
        self.sleep = sleep
    def forward(self, x):
        if self.sleep:
            time.sleep(self.sleep)
        return self.lin(x)

x, y = torch.randn(16, 8), torch.randn(16, 1)
loss_fn = torch.nn.functional.mse_loss
""" % SLEEP_S

SHAPES = {
    # LBFGS calls the closure (forward + backward) several times inside optimizer.step.
    "lbfgs_closure": ("forward", """
model = Net(sleep=SLEEP_S)
opt = torch.optim.LBFGS(model.parameters(), lr=0.01, max_iter=2)
for step in range(12):
    def closure():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        return loss
    opt.step(closure)
"""),
    # Lightning's automatic optimisation: training_step runs inside the optimizer's closure.
    "closure_sleep_in_backward": ("backward", """
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(12):
    def closure():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.register_hook(lambda grad: time.sleep(SLEEP_S))  # runs inside backward
        loss.backward()
        return loss
    opt.step(closure)
"""),
    # A GAN: two models, two optimizers per step; the second optimizer sleeps.
    "gan_two_optimizers": ("optimizer", """
G, D = torch.nn.Linear(4, 8), torch.nn.Sequential(torch.nn.Linear(8, 1))
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
opt_g.register_step_pre_hook(lambda *args: time.sleep(SLEEP_S))
real = torch.randn(16, 8)
for step in range(12):
    fake = G(torch.randn(16, 4))
    opt_d.zero_grad()
    d_loss = D(real).mean() - D(fake.detach()).mean()
    d_loss.backward()
    opt_d.step()
    opt_g.zero_grad()
    g_loss = -D(fake).mean()
    g_loss.backward()
    opt_g.step()
"""),
    # Gradient accumulation: four forward/backward per optimizer step, batches from a DataLoader.
    "accumulation": ("forward", """
from torch.utils.data import DataLoader, TensorDataset
model = Net(sleep=SLEEP_S / 4)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(TensorDataset(torch.randn(512, 8), torch.randn(512, 1)), batch_size=8)
for i, (xb, yb) in enumerate(loader):
    loss_fn(model(xb), yb).backward()
    if i % 4 == 3:
        opt.step()
        opt.zero_grad()
"""),
    # DDP (gloo, one rank) accumulating under no_sync; the dataset's __getitem__ sleeps.
    "ddp_no_sync": ("data_wait", """
import contextlib, os
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
class Slow(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        time.sleep(SLEEP_S / 8)
        return torch.randn(8), torch.randn(1)
model = torch.nn.parallel.DistributedDataParallel(Net())
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for i, (xb, yb) in enumerate(DataLoader(Slow(), batch_size=4)):
    with model.no_sync() if i % 2 == 0 else contextlib.nullcontext():
        loss_fn(model(xb), yb).backward()
    if i % 2 == 1:
        opt.step()
        opt.zero_grad()
dist.destroy_process_group()
"""),
    # The optimizer built again for every batch (its state lost each time): each new one, over the
    # same parameters, takes the first one's place in ending the steps.
    "optimizer_rebuilt_each_step": ("forward", """
model = Net(sleep=SLEEP_S)
for step in range(12):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    opt.zero_grad()
    loss_fn(model(x), y).backward()
    opt.step()
"""),
    # A wrapper optimizer over the same parameters whose step runs the inner one's, both built
    # before any step: one step each, not two.
    "wrapper_optimizer": ("optimizer", """
class Wrapper(torch.optim.Optimizer):
    def __init__(self, inner):
        super().__init__(inner.param_groups, {})
        self.inner = inner
    def step(self, closure=None):
        time.sleep(SLEEP_S)
        return self.inner.step(closure)
model = Net()
opt = Wrapper(torch.optim.SGD(model.parameters(), lr=0.01))
for step in range(12):
    opt.zero_grad()
    loss_fn(model(x), y).backward()
    opt.step()
"""),
    # A torch.compile'd model stepped through a closure; the optimizer sleeps.
    "compiled_closure": ("optimizer", """
model = torch.compile(Net(), backend="aot_eager")
opt = torch.optim.SGD(model.parameters(), lr=0.01)
opt.register_step_pre_hook(lambda *args: time.sleep(SLEEP_S))
for step in range(12):
    def closure():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        return loss
    opt.step(closure)
"""),
}


def _assert_anatomy(step_detection, steps, sleeping_part):
    assert step_detection == "optimizer"
    summary = summarise(steps)
    fractions = [getattr(summary, f"{part}_fraction") for part in PARTS]
    assert sum(fractions) <= 1 + 1e-9, fractions
    assert sum(fractions) + summary.other_fraction == pytest.approx(1.0, abs=1e-6)
    for step in steps:  # the parts of one step are disjoint intervals within it
        assert sum(getattr(step, f"{part}_s") for part in PARTS) <= step.wall_s + 1e-6
    medians = {part: statistics.median(getattr(s, f"{part}_s") for s in steps) for part in PARTS}
    assert medians[sleeping_part] >= SLEEP_S, medians
    for part in PARTS:
        if part != sleeping_part:
            assert medians[part] < SLEEP_S, (part, medians)


def _observe_in_process(source):
    noop = lambda *args: None  # noqa: E731
    clock = StepClock(2, 5, 0, PhaseCallbacks(noop, noop, noop, noop, noop, noop))
    instrumentation = Instrumentation(clock, Facts())
    instrumentation.install()
    try:
        exec(compile(source, "<shape>", "exec"), {"__name__": "__main__"})
    finally:
        instrumentation.uninstall()
        torch._dynamo.reset()
    assert clock.done
    return clock.source, [
        StepSample(index=i, wall_s=wall / 1e9, data_wait_s=p.data_ns / 1e9, forward_s=p.forward_ns / 1e9,
                   backward_s=p.backward_ns / 1e9, optimizer_s=p.optimizer_ns / 1e9, batch_size=p.batch_size)
        for i, (wall, p) in enumerate(clock.samples)]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_parts_of_a_step_add_up_and_hold_their_own_time(shape):
    sleeping_part, body = SHAPES[shape]
    _assert_anatomy(*_observe_in_process(HEADER + textwrap.dedent(body)), sleeping_part)


@pytest.mark.slow
def test_a_closure_optimizer_adds_up_end_to_end(tmp_path):
    sleeping_part, body = SHAPES["lbfgs_closure"]
    script = tmp_path / "lbfgs_closure.py"
    script.write_text(HEADER + textwrap.dedent(body))
    proc, record = run_diagnose(tmp_path, str(script), options=OPTIONS)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _assert_anatomy(record.step_detection, record.steps, sleeping_part)
    summary = record.summary
    assert sum(getattr(summary, f"{part}_fraction") for part in (*PARTS, "other")) == pytest.approx(1.0, abs=1e-6)
