"""Batch size: larger batches per DataLoader. It changes the training dynamics, so the tuner
tries it only with `--allow-batch-size`, compares time per sample instead of time per step, and
reports the learning-rate scaling the user should apply with it."""

from __future__ import annotations

import sys
from typing import Any

import torch.utils.data

from torchdoctor.knobs import guard
from torchdoctor.knobs.base import GENERIC, ScriptNames, CallEdit, IntRange, Knob, Undo, environment, register
from torchdoctor.knobs.patching import intercept_init
from torchdoctor.record import Record


#: The most a DataLoader's batch grows: tune tries up to this many times the measured batch size,
#: and applying the knob leaves alone a DataLoader whose own batch is smaller than the value over
#: this (a hand-edited `batch_size: 16777216` was killed for memory with no word why).
MAX_GROWTH = 8


def measured_batch_size(record: Record) -> int | None:
    sizes = [s.batch_size for s in record.steps if s.batch_size]
    return max(set(sizes), key=sizes.count) if sizes else None


@register
class BatchSize(Knob):
    name = "batch_size"
    kind = "int"
    loss_rtol = float("inf")  # another batch size is another loss curve: only NaN/divergence reject
    per_sample = True
    summary = "a larger batch per step (changes training dynamics: scale the learning rate)"

    def applies(self, record: Record) -> bool:
        loaders = environment(record).dataloaders
        return measured_batch_size(record) is not None and any(d.batch_size for d in loaders)

    def int_range(self, record: Record) -> IntRange:
        size = measured_batch_size(record) or 1
        return IntRange(low=size, high=size * MAX_GROWTH, first=size * 2)

    def value_range(self) -> tuple[int, int]:
        return 1, 2**24

    def apply(self, value: Any) -> Undo:
        def rewrite(arguments: dict[str, Any]) -> None:
            own = arguments.get("batch_size")
            if not own or arguments.get("batch_sampler") is not None:
                return
            if isinstance(own, int) and int(value) > own * MAX_GROWTH:
                sys.stderr.write(f"torchdoctor: batch_size={int(value)} not applied to a DataLoader of batch size {own}: "
                                 f"more than {MAX_GROWTH} times its own (what tune tries at most)\n")
                return
            arguments["batch_size"] = int(value)

        return intercept_init(torch.utils.data.DataLoader, rewrite, on_rewrite=guard.rewritten(self.name))

    def code_change(self, value: Any, names: ScriptNames = GENERIC) -> str:
        return (f"DataLoader(..., batch_size={value})\n"
                "# scale the learning rate with it: lr * new/old (SGD, linear rule) or lr * sqrt(new/old) (Adam)")

    def call_edit(self, value: Any) -> CallEdit:
        return CallEdit(("DataLoader",), {"batch_size": int(value)})
