"""TDL1xx, data layer: DataLoader settings that starve the device.

Source: PyTorch Performance Tuning Guide, "Enable async data loading and augmentation" and
"Use pinned memory"; `torch.utils.data.DataLoader` documentation (num_workers, pin_memory,
persistent_workers). Twin of the diagnosis rules on DataLoader wait share.
"""

from __future__ import annotations

import libcst as cst

from torchdoctor.lint.args import argument, has_unpacking, literal_int, with_keyword
from torchdoctor.lint.base import Check, LintVisitor
from torchdoctor.lint.proofs import DATALOADERS, uses_cuda

NUM_WORKERS = Check(
    "TDL101",
    "num_workers",
    "DataLoader loads every batch in the main process (num_workers missing or 0); "
    "set num_workers (e.g. 4) so loading overlaps with compute",
)
PIN_MEMORY = Check(
    "TDL102",
    "pin_memory",
    "DataLoader without pin_memory in a script that uses CUDA; "
    "pass pin_memory=True for faster, asynchronous host-to-device copies",
)
PERSISTENT_WORKERS = Check(
    "TDL103",
    "persistent_workers",
    "DataLoader with workers but without persistent_workers; "
    "pass persistent_workers=True so workers are not restarted every epoch",
)

# Positions in DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers,
# collate_fn, pin_memory, ...); persistent_workers is keyword-only.
_NUM_WORKERS_POSITION = 5
_PIN_MEMORY_POSITION = 7


class DataLoaderSettingsVisitor(LintVisitor):
    """Flags `DataLoader(...)` calls whose arguments, as written, leave these settings off.

    A call with `*args`/`**kwargs` is skipped: the settings may be in there.
    """

    CHECKS = (NUM_WORKERS, PIN_MEMORY, PERSISTENT_WORKERS)
    TRIGGERS = (("DataLoader",),)

    def visit_Call(self, node: cst.Call) -> None:
        if self.qualified_name(node) not in DATALOADERS or has_unpacking(node):
            return
        workers = argument(node, "num_workers", _NUM_WORKERS_POSITION)
        count = 0 if workers is None else literal_int(workers.value)
        if count == 0:
            self.hit(NUM_WORKERS, node)
        # CUDA is a fact of the process: the loader may be built in `data.py` and the batches
        # moved to the device in `train.py`.
        if argument(node, "pin_memory", _PIN_MEMORY_POSITION) is None and self.in_program(uses_cuda):
            fixed = with_keyword(node, "pin_memory", cst.Name("True"))
            self.hit(PIN_MEMORY, node, replacement=fixed)
        if count is not None and count > 0 and argument(node, "persistent_workers") is None:
            self.hit(PERSISTENT_WORKERS, node)
