"""The instrumentation installed in the observed process, and its undo.

Every hook does the least it can on the step's hot path, and charges what its body took to
torchdoctor (`PhaseTimer.charge`): the step's wall time leaves it out (observe.steps). Each patch
checks the process id it was installed in, so DataLoader workers forked from the script never
record (and never re-install) anything.

Hooks, and what they feed:
- `_BaseDataLoaderIter.__next__`: time blocked waiting for a batch, and the main thread's CPU time
  meanwhile (low: the wait is on storage or on workers); the batch size.
- `DataLoader.__init__`: the loader's settings (for the environment fingerprint).
- a global optimizer step pre-hook and a post-hook on each optimizer: optimizer time; the
  `optimizer` step source.
- `Tensor.backward` / `torch.autograd.backward`: backward time, the loss; the `backward` source.
- per-module forward hooks on the outermost modules: forward time; the `forward` source. The
  outermost modules are found by a global forward pre-hook, removed after two steps so that it
  does not slow the measured steps (kept when torch.compile ran by then; see `after_step`).
- `torch.compile`: that it was called, and how.
- `torch.autograd.gradcheck` / `gradgradcheck`: calls and their wall time (not on the hot path).
- `torch.save`: calls and their wall time (checkpoints saved inside the steps).
- `torchdoctor.step()`: the `marker` source.
- with `steps_only` (ObserveConfig), only the optimizer hooks and the marker.
- with an `OutputCapture` (tune's runs): the first outermost module's inputs and outputs during
  the steps after the timing window, sampled for the numerics check
  (`torchdoctor.observe.probes.outputs`).
"""

from __future__ import annotations

import functools
import os
import time
import warnings
import weakref
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import torch
import torch.utils.data.dataloader as dataloader_module
from torch.utils.hooks import RemovableHandle

import torchdoctor
from torchdoctor.observe.facts import Facts
from torchdoctor.observe.batch_layout import AMBIGUOUS, batch_dimension, batch_layout, batch_size
from torchdoctor.observe.gradients import optimized_ids
from torchdoctor.observe.probes.outputs import OutputCapture
from torchdoctor.observe.steps import PhaseTimer, StepClock


_OWN_HOOK_WARNING = r"Using `torch.compile\(module\)` when there are global hooks"


def _keep_out_of_dynamo() -> None:
    """Dynamo starts a frame at the first non-torch function it meets, and a global module hook
    is one (after a graph break, modules run eagerly under its frame callback): our hooks would be
    listed as compiled frames of the user's program. Skip their code (torch._dynamo is imported
    by then: torch.compile was called)."""
    try:
        from torch._dynamo.eval_frame import skip_code
    except ImportError:  # a torch without it: the frames are only listed, nothing breaks
        return
    for function in (Instrumentation._discover, Instrumentation._root_pre, Instrumentation._root_post,
                     ModuleHook.__call__):
        skip_code(function.__code__)


class ModuleHook:
    """A hook torchdoctor registers on one of the script's modules: calling it calls `method`.

    A deep copy of the module (`copy.deepcopy(model)`: an EMA model, a frozen snapshot) shares
    the hook instead of copying it: a bound method would drag torchdoctor's whole state (locks
    included, which cannot be copied) into the copy, and the copy's forwards are observed as the
    original's are."""

    __slots__ = ("method",)

    def __init__(self, method: Callable[..., Any]) -> None:
        self.method = method

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.method(*args, **kwargs)

    def __deepcopy__(self, memo: dict[int, Any]) -> ModuleHook:
        return self


class Instrumentation:
    """Installs the hooks feeding a StepClock and Facts; `uninstall` undoes every patch."""

    def __init__(self, clock: StepClock, facts: Facts, outputs: OutputCapture | None = None) -> None:
        self.clock = clock
        self.phases = PhaseTimer(clock)  # exclusive time of nested parts (closures run in step)
        self.facts = facts
        self.outputs = outputs
        self.pid = os.getpid()
        self._undo: list[Callable[[], None]] = []
        self._undo_optimizer: list[Callable[[], None]] = []  # the optimizer hooks': kept by `keep_step_hook`
        self.lean_step: Callable[[], None] | None = None  # set by `keep_step_hook`
        self._roots: dict[int, torch.nn.Module] = {}
        self._batch_dims: dict[int, int | None] = {}  # each root's batch dimension (batch_layout.py)
        self.batch_note: str | None = None  # why a root's batch size is not known
        self._root_depth = 0
        self._forward_token = (0, 0)
        self._first_root: torch.nn.Module | None = None
        self._first_optimizer: torch.optim.Optimizer | None = None  # the one whose steps end the script's
        # optimizers built after the first optimizer step ended: one may take the first one's place
        self._built_late: weakref.WeakSet[torch.optim.Optimizer] = weakref.WeakSet()
        self._discovery: RemovableHandle | None = None
        self._in_backward = False
        self.optimizers_made = 0  # optimizers constructed: a forward under no_grad may then be an evaluation
        self.optimizer_steps = 0  # steps ended by any optimizer (`_follow_replaced_steps` compares)
        self.loaders_aside = False  # while a probe iterates a DataLoader of its own (probes/handoff.py)

    @contextmanager
    def own_loaders(self) -> Iterator[None]:
        """DataLoaders made and iterated inside are torchdoctor's: not timed, not recorded."""
        self.loaders_aside = True
        try:
            yield
        finally:
            self.loaders_aside = False

    # -- install / uninstall ---------------------------------------------------------------
    def install(self, *, steps_only: bool = False) -> None:
        """Every hook; with `steps_only`, only those that end steps (optimizers, the marker):
        ObserveConfig.steps_only says why."""
        self._hook_optimizers()
        if not steps_only:
            self._patch_dataloader()
            self._patch_backward()
            self._count_optimizers()
            self._discovery = torch.nn.modules.module.register_module_forward_pre_hook(self._discover)
            self._undo.append(self._remove_discovery)
            self._silence_own_hook_warning()
        self._patch_compile()
        self._patch_gradcheck()
        self._patch_save()
        self._patch_warnings()
        self._undo.append(self.facts.runtime.install())
        torchdoctor._step_marker = self._marker
        self._undo.append(lambda: setattr(torchdoctor, "_step_marker", None))

    def _silence_own_hook_warning(self) -> None:
        """torch warns that compiling a module while global module hooks exist fires them twice;
        the global hook is ours (and handles that), so the script's user must not see the warning."""
        warnings.filterwarnings("ignore", message=_OWN_HOOK_WARNING)
        entry = warnings.filters[0]

        def remove() -> None:
            if entry in warnings.filters:
                warnings.filters.remove(entry)

        self._undo.append(remove)

    def uninstall(self) -> None:
        while self._undo:
            self._undo.pop()()
        while self._undo_optimizer:
            self._undo_optimizer.pop()()

    def keep_step_hook(self, step: Callable[[], None]) -> None:
        """Undo every hook but the optimizer's, whose step end of the first optimizer now calls
        `step` and nothing else (the whole run's lean observation, observe.lean). Why kept rather
        than replaced: this runs inside that optimizer's post-hook, and torch iterates the hook
        dicts live, so neither they nor a new hook may come or go from here."""
        while self._undo:
            self._undo.pop()()
        self.lean_step = step

    def _patch(self, owner: Any, name: str, replacement: Any) -> Any:
        original = owner.__dict__[name] if name in getattr(owner, "__dict__", {}) else getattr(owner, name)
        setattr(owner, name, replacement)
        self._undo.append(lambda: setattr(owner, name, original))
        return original

    def after_step(self) -> None:
        """Called once per step end: drops the discovery hook once step detection has settled.

        Not when torch.compile was called by then: Dynamo guards compiled code on the number of
        global forward pre-hooks, so removing ours would recompile every compiled graph once (a
        recompile torchdoctor caused, reported as the script's). Inside compiled code the hook
        never runs, so keeping it costs those scripts nothing.
        """
        if self._discovery is not None and self.clock.count >= 2 and not self.facts.compile_calls:
            self._remove_discovery()

    def _remove_discovery(self) -> None:
        if self._discovery is not None:
            self._discovery.remove()
            self._discovery = None

    # -- data ------------------------------------------------------------------------------
    def _patch_dataloader(self) -> None:
        iter_cls = dataloader_module._BaseDataLoaderIter
        original_next = iter_cls.__next__
        inst = self

        def timed_next(iterator: Any) -> Any:
            if os.getpid() != inst.pid or inst.loaders_aside:
                return original_next(iterator)
            token, cpu_start = inst.phases.enter(), time.thread_time_ns()
            try:
                batch = original_next(iterator)
            finally:
                inst.phases.leave(token, "data")
                inst.clock.current.data_cpu_ns += time.thread_time_ns() - cpu_start
            start = time.perf_counter_ns()
            if inst.clock.current.batch_size is None and inst.batch_note is None:
                inst.clock.current.batch_size = batch_size(batch)
            if inst.facts.batch_layout is None:
                inst.facts.batch_layout = batch_layout(batch)
            inst.phases.charge(start)
            return batch

        self._patch(iter_cls, "__next__", timed_next)
        loader_cls = dataloader_module.DataLoader
        original_init = loader_cls.__init__

        def recorded_init(loader: Any, *args: Any, **kwargs: Any) -> None:
            original_init(loader, *args, **kwargs)
            if os.getpid() == inst.pid and not inst.loaders_aside:
                inst.facts.add_dataloader(loader)

        self._patch(loader_cls, "__init__", recorded_init)

    # -- optimizer -------------------------------------------------------------------------
    def _hook_optimizers(self) -> None:
        """A global pre-hook finds every optimizer that steps; the step end is a hook on that optimizer.

        The step end must not be a global post-hook: work done at a step boundary (starting the
        memory window, whose MemTracker registers global optimizer hooks) would add to the global
        post-hook dict while torch iterates it, and torch raises "OrderedDict mutated during
        iteration" whenever the script registered a global post-hook of its own after ours. torch
        iterates an optimizer's own post-hooks only after the global ones, so from there the
        global dicts can change safely.
        """
        from torch.optim.optimizer import register_optimizer_step_pre_hook

        tokens: list[tuple[int, int]] = []  # one per open optimizer step: a wrapper steps another inside its own
        hooked: weakref.WeakSet[torch.optim.Optimizer] = weakref.WeakSet()  # ids would be reused after gc

        def pre(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
            if self.lean_step is not None:  # lean first: no system call
                # one built again mid-run ends the lean steps too; the usual one is known at once
                if optimizer is not self._first_optimizer and optimizer not in hooked:
                    hooked.add(optimizer)
                    self._undo_optimizer.append(optimizer.register_step_post_hook(post).remove)
                return
            if os.getpid() != self.pid:
                return
            start = time.perf_counter_ns()
            if optimizer not in hooked:
                hooked.add(optimizer)
                self._undo_optimizer.append(optimizer.register_step_post_hook(post).remove)
            self.phases.charge(start)
            tokens.append(self.phases.enter())

        def post(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
            if self.lean_step is not None:
                if self._ends_steps(optimizer):
                    self.optimizer_steps += 1  # a replaced step that called this one ended here
                    self.lean_step()
                return
            if os.getpid() != self.pid or not tokens:
                return
            self.phases.leave(tokens.pop(), "optimizer")
            start = time.perf_counter_ns()
            if tokens:  # stepped inside another optimizer's step (a wrapper's): the outer one ends the step
                self.facts.add_optimizer(optimizer)
                self.phases.charge(start)
                return
            self._optimizer_step_ended(optimizer, start)

        self._undo_optimizer.append(register_optimizer_step_pre_hook(pre).remove)
        self._follow_replaced_steps()

    def _count_optimizers(self) -> None:
        """Counts the optimizers the script constructs (every torch optimizer runs Optimizer.__init__)."""
        original = torch.optim.Optimizer.__init__

        def counted_init(optimizer: torch.optim.Optimizer, *args: Any, **kwargs: Any) -> None:
            self.optimizers_made += 1
            original(optimizer, *args, **kwargs)
            if self.optimizer_steps:
                self._built_late.add(optimizer)

        counted_init.__wrapped__ = original  # type: ignore[attr-defined]
        # Kept with the optimizer hooks by `keep_step_hook`: the lean observation follows an optimizer
        # built again mid-run (`_ends_steps`) as the detailed one does.
        torch.optim.Optimizer.__init__ = counted_init  # type: ignore[method-assign]
        self._undo_optimizer.append(lambda: setattr(torch.optim.Optimizer, "__init__", original))

    def evaluating(self) -> bool:
        """Whether the forward that just ended is an evaluation inside a training script: it ran
        under no_grad or inference_mode, and the script has constructed an optimizer."""
        return self.optimizers_made > 0 and (not torch.is_grad_enabled() or torch.is_inference_mode_enabled())

    def _optimizer_step_ended(self, optimizer: torch.optim.Optimizer, start: int) -> None:
        """An optimizer's step ended (the hook's body began at `start`): the first optimizer's ends
        its training step."""
        self.optimizer_steps += 1
        if self._first_optimizer is None:
            self._first_optimizer = optimizer
            self.facts.add_optimizer(optimizer)
        elif not self._ends_steps(optimizer):
            self.facts.add_optimizer(optimizer)
            self.phases.charge(start)
            return
        self.facts.runtime.note_optimizer_step()
        self._boundary("optimizer", start)

    def _ends_steps(self, optimizer: torch.optim.Optimizer) -> bool:
        """Whether `optimizer`'s steps end the script's steps: the first optimizer's, or those of one the
        script built after steps had begun over the same parameters (an optimizer built again each
        epoch or each batch), which from then on takes the first one's place (the script has dropped
        that one; holding it would keep its state alive). Two optimizers built before any step over
        the same parameters (a wrapper and the optimizer it steps) keep the first."""
        first = self._first_optimizer
        if optimizer is first:
            return True
        if first is None or optimizer not in self._built_late:
            return False
        if optimized_ids([optimizer]) != optimized_ids([first]):
            self._built_late.discard(optimizer)  # another optimizer of the script (a GAN's second): asked once
            return False
        self.facts.replace_optimizer(first, optimizer)
        self._first_optimizer = optimizer
        return True

    def _follow_replaced_steps(self) -> None:
        """A script that assigns `optimizer.step = f` (a hand-written update, mid-run) bypasses the
        optimizer's own step and so its hooks: a function assigned there is wrapped so that a call
        in which no optimizer step ended ends one itself. A replacement that calls the original
        (an LR scheduler's counter, a wrapper) ends it there, once. Its time is not counted as
        the optimizer's (no hook runs inside it)."""
        inst = self

        def counted(optimizer: torch.optim.Optimizer, step: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(step)
            def replaced_step(*args: Any, **kwargs: Any) -> Any:
                before = inst.optimizer_steps
                result = step(*args, **kwargs)
                if inst.optimizer_steps == before and os.getpid() == inst.pid:
                    inst._replaced_step_ended(optimizer)
                return result

            return replaced_step

        def set_attribute(optimizer: torch.optim.Optimizer, name: str, value: Any) -> None:
            if name == "step" and callable(value) and os.getpid() == inst.pid:
                value = counted(optimizer, value)
            object.__setattr__(optimizer, name, value)

        torch.optim.Optimizer.__setattr__ = set_attribute  # type: ignore[method-assign,assignment]
        self._undo_optimizer.append(lambda: delattr(torch.optim.Optimizer, "__setattr__"))

    def _replaced_step_ended(self, optimizer: torch.optim.Optimizer) -> None:
        """A replaced `optimizer.step` returned without the optimizer's own step running: it ends
        a step itself, in the lean observation only for the first optimizer."""
        if self.lean_step is None:
            self._optimizer_step_ended(optimizer, time.perf_counter_ns())
        elif self._first_optimizer is None or self._ends_steps(optimizer):
            self.optimizer_steps += 1
            self.lean_step()

    # -- backward --------------------------------------------------------------------------
    def _patch_backward(self) -> None:
        inst = self
        original_tensor_backward = torch.Tensor.backward
        original_autograd_backward = torch.autograd.backward

        def timed(run: Callable[[], Any], loss: Any) -> Any:
            if inst._in_backward or os.getpid() != inst.pid:
                return run()
            inst._in_backward = True
            token = inst.phases.enter()
            try:
                result = run()
            finally:
                inst._in_backward = False
                inst.phases.leave(token, "backward")
            start = time.perf_counter_ns()
            if isinstance(loss, torch.Tensor) and loss.numel() == 1:
                inst.clock.current.loss = loss.detach()
            inst.facts.runtime.note_backward()
            inst._boundary("backward", start)
            return result

        def tensor_backward(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            if args or kwargs:  # a plain backward() asks nothing: no call on the step's path
                inst.facts.note_create_graph(_creates_graph(args, kwargs, 2))
            return timed(lambda: original_tensor_backward(self, *args, **kwargs), self)

        def autograd_backward(tensors: Any, *args: Any, **kwargs: Any) -> Any:
            first = tensors[0] if isinstance(tensors, (list, tuple)) and tensors else tensors
            if args or kwargs:  # a plain backward() asks nothing: no call on the step's path
                inst.facts.note_create_graph(_creates_graph(args, kwargs, 2))
            return timed(lambda: original_autograd_backward(tensors, *args, **kwargs), first)

        self._patch(torch.Tensor, "backward", tensor_backward)
        self._patch(torch.autograd, "backward", autograd_backward)
        self._patch_grad()

    def _patch_grad(self) -> None:
        """`torch.autograd.grad` is a backward pass too (a gradient penalty, a Jacobian, a hand-written
        update): its time is the step's backward, not time outside the phases. Not a step boundary:
        a step may take several (one per output row), and the step ends at its optimizer or backward."""
        inst = self
        original_grad = torch.autograd.grad

        def autograd_grad(*args: Any, **kwargs: Any) -> Any:
            inst.facts.note_create_graph(_creates_graph(args, kwargs, 4))
            if inst._in_backward or os.getpid() != inst.pid:
                return original_grad(*args, **kwargs)
            inst._in_backward = True
            token = inst.phases.enter()
            try:
                return original_grad(*args, **kwargs)
            finally:
                inst._in_backward = False
                inst.phases.leave(token, "backward")

        self._patch(torch.autograd, "grad", autograd_grad)

    # -- forward ---------------------------------------------------------------------------
    def _discover(self, module: torch.nn.Module, args: Any) -> None:
        """Global pre-hook: a module called while no known root runs is an outermost module.

        Never part of the user's compiled code: a no-op when Dynamo traces it (inlined in a compiled
        module call, with no guard on our state), and its frame skipped (`_keep_out_of_dynamo`)."""
        if torch.compiler.is_compiling() or self._root_depth or id(module) in self._roots or os.getpid() != self.pid:
            return
        self._roots[id(module)] = module
        self._batch_dims[id(module)] = batch_dimension(module)
        if self._batch_dims[id(module)] is AMBIGUOUS and self.batch_note is None:
            self.batch_note = (f"samples/s not measured: {type(module).__name__} holds both sequence-first and "
                               "batch-first layers (batch_first), so which input dimension is the batch is ambiguous")
        if self._first_root is None:
            self._first_root = module
        self.facts.add_root_module(module)
        handles = (
            module.register_forward_pre_hook(ModuleHook(self._root_pre), with_kwargs=True),
            module.register_forward_hook(ModuleHook(self._root_post), always_call=True),
        )
        for handle in handles:
            self._undo.append(handle.remove)
        # The module's own pre-hooks were already collected for this call; its post-hook was not.
        self._root_pre(module, args, {})

    def _root_pre(self, module: torch.nn.Module, args: Any, kwargs: Any) -> None:
        if torch.jit.is_tracing():
            # the tracer's call (torch.jit.trace), not the script's: nothing of ours may run in its
            # graph (a step ending there would take a profiler step inside the trace, which fails it)
            return
        if self._root_depth == 0:
            start = time.perf_counter_ns()
            current = self.clock.current
            dimension = self._batch_dims.get(id(module), 0)
            # a sequence-first model's own input says its batch better than the loader's first dimension
            if self.batch_note is None and (current.batch_size is None or dimension == 1):
                current.batch_size = batch_size(list(args) + list(kwargs.values()), dimension)
            self.facts.note_forward_state(module)
            self.facts.runtime.note_forward(module, args, kwargs)
            if self.outputs is not None and module is self._first_root and self.clock.in_capture_window():
                self.outputs.note_inputs(args, kwargs)
            self.phases.charge(start)
            self._forward_token = self.phases.enter()
        self._root_depth += 1

    def _root_post(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        if torch.jit.is_tracing():
            return
        self._root_depth -= 1
        if self._root_depth == 0 and os.getpid() == self.pid:
            self.phases.leave(self._forward_token, "forward")
            start = time.perf_counter_ns()
            if self.outputs is not None and module is self._first_root and self.clock.in_capture_window():
                self.outputs.note_output(output)
            if module is self._first_root:
                self._boundary("forward", start, evaluation=self.evaluating())
            else:
                self.phases.charge(start)

    # -- compile and marker ----------------------------------------------------------------
    def compile_unrecorded(self, function: Callable[..., Any], **options: Any) -> Callable[..., Any]:
        """torch.compile for torchdoctor's own use (the compile probe): our hooks kept out of Dynamo's
        frames as for the script's calls, but not noted as the script's call (a Record saying the
        script compiles would stop `tune` and `run --apply` from trying the compile knob)."""
        _keep_out_of_dynamo()
        return getattr(torch.compile, "__wrapped__", torch.compile)(function, **options)

    def _patch_compile(self) -> None:
        original = torch.compile
        facts = self.facts

        def recorded_compile(*args: Any, **kwargs: Any) -> Any:
            facts.note_compile(args, kwargs)
            _keep_out_of_dynamo()
            return original(*args, **kwargs)

        recorded_compile.__wrapped__ = original  # type: ignore[attr-defined]
        recorded_compile.__doc__ = original.__doc__
        self._patch(torch, "compile", recorded_compile)

    def _patch_gradcheck(self) -> None:
        for name in ("gradcheck", "gradgradcheck"):
            self._patch(torch.autograd, name, _timed(getattr(torch.autograd, name), self.facts.note_gradcheck))

    def _patch_save(self) -> None:
        """torch.save's calls and wall time: a checkpoint saved inside the steps stalls them."""
        self._patch(torch, "save", _timed(torch.save, self.facts.note_save))

    def _patch_warnings(self) -> None:
        """The warnings the process shows (torch's "... is extremely slow" among them), noted with
        the file and line they name; shown exactly as before (the original `showwarning` prints
        them), and only those the script's warning filters let through."""
        original = warnings.showwarning
        note = self.facts.note_warning

        def noted(message: Any, category: type, filename: str, lineno: int, *args: Any, **kwargs: Any) -> Any:
            if os.getpid() == self.pid:
                note(message, category, filename, lineno)
            return original(message, category, filename, lineno, *args, **kwargs)

        self._patch(warnings, "showwarning", noted)

    def _marker(self) -> None:
        if os.getpid() == self.pid:
            self._boundary("marker", time.perf_counter_ns())

    def _boundary(self, source: str, start_ns: int, *, evaluation: bool = False) -> None:
        """A step of `source` may have ended; the calling hook's body began at `start_ns`: its time
        until here is the ending step's, its time after the clock's the next step's. `evaluation`:
        see StepClock.boundary."""
        self.phases.charge(start_ns)
        before = self.clock.count
        try:
            self.clock.boundary(source, evaluation=evaluation)
        finally:  # the clock raises StopObservation once every window is measured
            resumed = time.perf_counter_ns()
            if self.clock.count > before:
                self.facts.runtime.end_step()
            elif self.clock.count < before:
                self.facts.runtime.restart_steps()
        self.after_step()
        self.phases.charge(resumed)


def _creates_graph(args: tuple[Any, ...], kwargs: dict[str, Any], index: int) -> bool:
    """Whether a backward call asks for `create_graph` (keyword, or positional at `index` of the
    arguments after the first): the script takes gradients of gradients."""
    value = kwargs.get("create_graph", args[index] if len(args) > index else False)
    return bool(value)


def _timed(original: Callable[..., Any], note: Callable[[int], None]) -> Callable[..., Any]:
    """`original`, calling `note` with each call's wall time in nanoseconds, raised or not."""

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter_ns()
        try:
            return original(*args, **kwargs)
        finally:
            note(time.perf_counter_ns() - start)

    timed.__wrapped__ = original  # type: ignore[attr-defined]
    return timed
