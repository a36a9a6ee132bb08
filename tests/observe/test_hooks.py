"""The hooks, in process: what they feed the step clock, and that uninstall undoes everything."""

from __future__ import annotations

import time

import torch
from torch.utils.data import DataLoader, TensorDataset

import torchdoctor
from torchdoctor.observe.facts import Facts
from torchdoctor.observe.hooks import Instrumentation
from torchdoctor.observe.steps import PhaseCallbacks, StepClock


def _installed(warmup=2, timing=3, steps_only=False):
    noop = lambda *args: None  # noqa: E731
    clock = StepClock(warmup, timing, 0, PhaseCallbacks(noop, noop, noop, noop, noop, noop))
    instrumentation = Instrumentation(clock, Facts())
    instrumentation.install(steps_only=steps_only)
    return clock, instrumentation


def test_a_training_loop_feeds_every_part_of_the_step():
    clock, instrumentation = _installed()
    try:
        loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
        model = torch.nn.Linear(4, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
    finally:
        instrumentation.uninstall()
    assert clock.source == "optimizer" and clock.count == 5 and clock.done  # stops counting once done
    assert len(clock.samples) == 3
    for _, parts in clock.samples:
        assert parts.data_ns > 0 and parts.forward_ns > 0 and parts.backward_ns > 0 and parts.optimizer_ns > 0
        assert parts.batch_size == 8 and parts.loss is not None and not parts.loss.requires_grad
    assert instrumentation._discovery is None  # the global discovery hook came off after two steps


def test_steps_only_times_the_optimizers_steps_and_patches_nothing_else():
    """tune's confirmation (ObserveConfig.steps_only): the steps' wall times, from the optimizer's
    hooks, and no hook on loading, forward or backward (their calls would cost the script time)."""
    plain = (torch.utils.data.dataloader._BaseDataLoaderIter.__next__, torch.Tensor.backward, torch.autograd.backward)
    clock, instrumentation = _installed(steps_only=True)
    try:
        patched = (torch.utils.data.dataloader._BaseDataLoaderIter.__next__, torch.Tensor.backward,
                   torch.autograd.backward)
        global_hooks = dict(torch.nn.modules.module._global_forward_pre_hooks)
        loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
        model = torch.nn.Linear(4, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            time.sleep(0.002)
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
    finally:
        instrumentation.uninstall()
    assert patched == plain and not global_hooks and not model._forward_hooks and not model._forward_pre_hooks
    assert clock.source == "optimizer" and clock.count == 5 and len(clock.samples) == 3
    for wall_ns, parts in clock.samples:
        assert wall_ns >= 2e6 and parts.optimizer_ns > 0
        assert parts.data_ns == parts.forward_ns == parts.backward_ns == 0 and parts.loss is None


def test_the_hooks_own_time_is_not_the_steps(monkeypatch):
    """A hook body of ours that takes 20 ms (here: noting a backward) shows in `hooks_ns`, not in the
    step's wall time, nor in the part it ran beside; the script's own 2 ms sleep stays in the step."""
    clock, instrumentation = _installed()
    note_backward = instrumentation.facts.runtime.note_backward
    monkeypatch.setattr(instrumentation.facts.runtime, "note_backward", lambda: (time.sleep(0.02), note_backward()))
    try:
        model = torch.nn.Linear(4, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(5):
            time.sleep(0.002)  # the script's own work between its parts
            optimizer.zero_grad()
            model(torch.randn(8, 4)).sum().backward()
            optimizer.step()
    finally:
        instrumentation.uninstall()
    assert len(clock.samples) == 3
    for wall_ns, parts in clock.samples:
        assert parts.hooks_ns >= 20e6
        assert 2e6 <= wall_ns < 20e6, wall_ns
        assert parts.forward_ns + parts.backward_ns + parts.optimizer_ns <= wall_ns


def test_the_marker_is_live_only_while_installed():
    clock, instrumentation = _installed()
    torchdoctor.step()
    instrumentation.uninstall()
    torchdoctor.step()
    assert (clock.source, clock.count) == ("marker", 1)


def test_a_module_called_inside_an_outermost_module_is_not_an_outermost_module():
    clock, instrumentation = _installed()
    try:
        inner = torch.nn.Linear(2, 2)
        outer = torch.nn.Sequential(inner)
        outer(torch.randn(1, 2))
        inner(torch.randn(1, 2))  # called alone later: now it is outermost too
    finally:
        instrumentation.uninstall()
    assert [type(m).__name__ for m in instrumentation.facts._root_modules] == ["Sequential", "Linear"]
    assert clock.source == "forward" and clock.count == 1  # only the first root ends steps


class SequenceFirstLM(torch.nn.Module):
    """pytorch/examples' word_language_model: an LSTM fed `[seq_len, batch]` token ids."""

    def __init__(self, batch_first: bool = False, attention: bool = False) -> None:
        super().__init__()
        self.embed, self.rnn = torch.nn.Embedding(50, 8), torch.nn.LSTM(8, 8, batch_first=batch_first)
        self.attention = torch.nn.MultiheadAttention(8, 2, batch_first=True) if attention else None
        self.head = torch.nn.Linear(8, 50)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.rnn(self.embed(ids))[0])


def _batch_sizes(model: torch.nn.Module, ids: torch.Tensor) -> tuple[list[int | None], str | None]:
    clock, instrumentation = _installed()
    try:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(5):
            optimizer.zero_grad()
            model(ids).sum().backward()
            optimizer.step()
    finally:
        instrumentation.uninstall()
    return [parts.batch_size for _, parts in clock.samples], instrumentation.batch_note


def test_a_sequence_first_models_batch_is_its_inputs_second_dimension_not_the_sequence_length():
    assert _batch_sizes(SequenceFirstLM(), torch.randint(0, 50, (35, 20))) == ([20, 20, 20], None)
    assert _batch_sizes(SequenceFirstLM(batch_first=True), torch.randint(0, 50, (20, 35))) == ([20, 20, 20], None)


def test_a_model_with_sequence_layers_of_both_kinds_says_its_batch_is_ambiguous_instead_of_guessing():
    sizes, note = _batch_sizes(SequenceFirstLM(attention=True), torch.randint(0, 50, (35, 20)))
    assert sizes == [None, None, None] and "SequenceFirstLM holds both sequence-first and batch-first" in note


def _train_compiled(module: torch.nn.Module, steps: int) -> StepClock:
    """Trains `module`, compiled with the eager backend, under the hooks for `steps` steps; dynamo is
    reset afterwards so that the next test compiles (and counts) its own frames only."""
    import torch._dynamo

    clock, instrumentation = _installed()
    try:
        model = torch.compile(module, backend="eager")
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(steps):
            optimizer.zero_grad()
            model(torch.randn(2, 4)).sum().backward()
            optimizer.step()
    finally:
        instrumentation.uninstall()
        torch._dynamo.reset()
    return clock


def test_observing_a_compiled_model_causes_no_recompilation():
    import torch._dynamo
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    clock = _train_compiled(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()), steps=8)
    assert clock.done
    assert counters["stats"]["unique_graphs"] == 1, dict(counters["recompiles"])


def test_our_hooks_are_never_compiled_frames_of_the_users_program():
    import torch._dynamo
    from torch._dynamo.utils import get_compilation_metrics

    class Broken(torch.nn.Module):  # a graph break between two submodule calls
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)

        def forward(self, x):
            x = self.a(x)
            torch._dynamo.graph_break()
            return self.b(x)

    torch._dynamo.reset()
    before = len(get_compilation_metrics())
    _train_compiled(Broken(), steps=6)
    frames = [(m.co_name, m.co_filename) for m in list(get_compilation_metrics())[before:]]
    assert frames and not [f for f in frames if "torchdoctor" in f[1]], frames


def test_a_forward_under_no_grad_is_an_evaluation_once_the_script_has_an_optimizer():
    clock, instrumentation = _installed()
    try:
        model = torch.nn.Linear(4, 1)
        with torch.no_grad():
            model(torch.randn(2, 4))  # an inference script's forward: counted
        assert (clock.source, clock.held) == ("forward", 0)
    finally:
        instrumentation.uninstall()
    clock, instrumentation = _installed()
    try:
        model = torch.nn.Linear(4, 1)
        optimizer = torch.optim.AdamW(model.parameters())
        with torch.no_grad():
            for _ in range(3):
                model(torch.randn(2, 4))  # evaluation before training: held
        assert (clock.source, clock.count, clock.held) == (None, 0, 3)
        model(torch.randn(2, 4)).sum().backward()
        optimizer.step()
        assert (clock.source, clock.count) == ("optimizer", 1)
    finally:
        instrumentation.uninstall()
    assert instrumentation.optimizers_made == 1
    assert "counted_init" not in torch.optim.Optimizer.__init__.__qualname__  # uninstall undid the patch


def test_a_deep_copy_of_an_observed_model_is_made_and_shares_the_hooks_instead_of_copying_them():
    """`copy.deepcopy(model)` inside the loop (a frozen snapshot, an EMA model) works under
    observation: the root module's hooks carry torchdoctor's state, which must not be copied."""
    import copy

    clock, instrumentation = _installed(warmup=1, timing=2)
    try:
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(4):
            snapshot = copy.deepcopy(model).requires_grad_(False)
            x = torch.randn(8, 4)
            loss = torch.nn.functional.mse_loss(model(x), snapshot(x))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    finally:
        instrumentation.uninstall()
    assert clock.done and len(clock.samples) == 2
    (hook,) = snapshot._forward_hooks.values()  # copied before uninstall, so still there
    assert hook.method.__self__ is instrumentation
