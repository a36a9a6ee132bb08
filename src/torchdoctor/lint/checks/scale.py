"""TDL4xx, scale layer: multi-device set-ups that waste the devices.

Sources: PyTorch documentation of `nn.DataParallel` ("It is recommended to use
DistributedDataParallel instead") and of `DistributedSampler` ("calling the set_epoch() method
at the beginning of each epoch before creating the DataLoader iterator is necessary to make
shuffling work properly across multiple epochs"). Twins of the scale-layer diagnosis rules.
"""

from __future__ import annotations

import libcst as cst

from torchdoctor.lint.args import argument, literal_bool
from torchdoctor.lint.base import Check, LintVisitor
from torchdoctor.lint.tree import walk

DATA_PARALLEL = Check(
    "TDL401",
    "data_parallel",
    "nn.DataParallel replicates the model from one process every step and is GIL-bound; "
    "use DistributedDataParallel (torchrun) even on a single machine",
)
SAMPLER_EPOCH = Check(
    "TDL402",
    "sampler_set_epoch",
    "DistributedSampler shuffles but the program never calls set_epoch(); every epoch sees the "
    "same order; call sampler.set_epoch(epoch) at the start of each epoch",
)

_DATA_PARALLEL = frozenset(
    {
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.data_parallel.DataParallel",
    }
)
_SAMPLERS = frozenset(
    {"torch.utils.data.DistributedSampler", "torch.utils.data.distributed.DistributedSampler"}
)


class DataParallelVisitor(LintVisitor):
    """Flags every construction of `torch.nn.DataParallel`."""

    CHECKS = (DATA_PARALLEL,)
    TRIGGERS = (("DataParallel",),)

    def visit_Call(self, node: cst.Call) -> None:
        if self.qualified_name(node) in _DATA_PARALLEL:
            self.hit(DATA_PARALLEL, node)


class SamplerSetEpochVisitor(LintVisitor):
    """Flags a shuffling `DistributedSampler(...)` when no `.set_epoch(...)` call exists in its
    file nor in any module of its program: the call may be on any name (the sampler is often
    reached as `loader.sampler`) and in any module (a `train()` helper is often given it)."""

    CHECKS = (SAMPLER_EPOCH,)
    TRIGGERS = (("DistributedSampler",),)

    def visit_Call(self, node: cst.Call) -> None:
        if self.qualified_name(node) not in _SAMPLERS:
            return
        shuffle = argument(node, "shuffle", 3)
        shuffles = shuffle is None or literal_bool(shuffle.value) is True
        if shuffles and not self.in_program(calls_set_epoch):
            self.hit(SAMPLER_EPOCH, node)


def calls_set_epoch(module: cst.Module) -> bool:
    """`module` calls `<anything>.set_epoch(...)`."""
    return any(
        isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "set_epoch"
        for node in walk(module)
    )
