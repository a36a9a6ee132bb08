"""The hooks of the lean observation (`torchdoctor watch`, after the detailed windows): the step's
end on the one source step detection chose, the time blocked in `DataLoader.__next__`, and each
`iter(DataLoader)` (an epoch). Nothing else runs on the step's path: no forward, backward or
module hooks, no facts.

The epoch hook is installed at the observation's start (it runs once an epoch, so it costs
nothing; its mark carries the DataLoader's length, for the live view's end of the epoch); the step and data hooks replace the detailed ones (observe.hooks) once the windows and
probes are done. A process forked from the script's (a DataLoader worker) records nothing: a fork
handler marks it, so that the step's path makes no `os.getpid()` system call.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable

import torch
import torch.utils.data.dataloader as dataloader_module

import torchdoctor
from torchdoctor.observe.watch import RunWatch


def _length(loader: Any) -> int | None:
    """The DataLoader's batches an epoch (None: an iterable dataset without a length)."""
    try:
        return len(loader)
    except TypeError:
        return None


class LeanHooks:
    """Installs the whole run's hooks feeding a RunWatch; `uninstall` undoes them."""

    def __init__(self, watch: RunWatch) -> None:
        self.watch = watch
        self.forked = False  # set in a process forked from this one
        os.register_at_fork(after_in_child=self._forked)
        self._undo: list[Callable[[], None]] = []

    def _forked(self) -> None:
        self.forked = True

    def _patch(self, owner: Any, name: str, replacement: Any) -> None:
        original = owner.__dict__[name]
        setattr(owner, name, replacement)
        self._undo.append(lambda: setattr(owner, name, original))

    def install_epochs(self) -> None:
        """Mark an epoch at each `iter(DataLoader)` of the script's process."""
        loader_cls = dataloader_module.DataLoader
        original_iter = loader_cls.__dict__["__iter__"]
        hooks = self

        def marked_iter(loader: Any) -> Any:
            if not hooks.forked:
                hooks.watch.mark("epoch", length=_length(loader))
            return original_iter(loader)

        self._patch(loader_cls, "__iter__", marked_iter)

    def install_steps(self, source: str, root: torch.nn.Module | None) -> None:
        """The step's end on `source` (observe.steps), and the data wait. The optimizer's step end
        is the detailed hook kept (Instrumentation.keep_step_hook), not one of these."""
        watch, hooks = self.watch, self
        if source == "forward" and root is not None:
            def forward_ended(*_: Any) -> None:
                if not torch.jit.is_tracing():  # the tracer's calls are not the script's steps (observe.hooks)
                    watch.step()

            self._undo.append(root.register_forward_hook(forward_ended).remove)
        elif source == "backward":
            self._patch_backward()
        torchdoctor._step_marker = watch.step if source == "marker" else None
        self._undo.append(lambda: setattr(torchdoctor, "_step_marker", None))
        iter_cls = dataloader_module._BaseDataLoaderIter
        original_next = iter_cls.__dict__["__next__"]

        def timed_next(iterator: Any) -> Any:
            if hooks.forked:
                return original_next(iterator)
            start = time.perf_counter_ns()
            try:
                return original_next(iterator)
            finally:
                watch.data_ns += time.perf_counter_ns() - start

        self._patch(iter_cls, "__next__", timed_next)

    def _patch_backward(self) -> None:
        watch = self.watch
        original = torch.Tensor.__dict__["backward"]

        def backward(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            result = original(tensor, *args, **kwargs)
            watch.step()
            return result

        self._patch(torch.Tensor, "backward", backward)

    def uninstall(self) -> None:
        while self._undo:
            self._undo.pop()()
