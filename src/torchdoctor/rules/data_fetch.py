"""A dataset of in-memory tensors fetched one sample at a time.

A `TensorDataset` holds its rows in tensors, and indexing it with a list of indices returns a whole
batch in one gather. A DataLoader with `batch_size` set fetches `dataset[i]` once per sample and
`default_collate` stacks the rows again: per-sample Python and dispatch work that grows with the
batch, in the training process when `num_workers=0`. PyTorch's torch.utils.data docs ("Disable
automatic batching": `batch_size=None` with a `BatchSampler` as the sampler, so each fetch gets a
list of indices) describe the batched fetch.
"""

from __future__ import annotations

from torchdoctor.rules.base import Fix, Hit, rule, severity_at
from torchdoctor.rules.data import WAIT_PROBLEM, WAIT_WARNING
from torchdoctor.rules.evidence import Evidence

#: Datasets whose `__getitem__` accepts a list of indices and returns the batch (one gather).
BATCH_INDEXABLE = frozenset({"TensorDataset"})
MIN_BATCH = 8
MIN_SHARE = 0.05  # of the step: a fix that removes less is not worth a finding (info below WAIT_WARNING)


@rule("TD-DATA-011", "data")
def tensor_rows_fetched_per_sample(ev: Evidence) -> Hit | None:
    """The first DataLoader auto-batches (`batch_size` of MIN_BATCH or more) a dataset that can
    index a whole batch at once (BATCH_INDEXABLE), and the per-sample fetching costs MIN_SHARE of a
    typical step or more (info below TD-DATA-002's warning threshold). Upside, estimated: the steady data wait times (1 - 1/batch size),
    the per-sample share of it a single gather per batch removes."""
    loader = ev.dataloader()
    batch = loader.batch_size or 0
    if loader.dataset_type not in BATCH_INDEXABLE or batch < MIN_BATCH:
        return None
    wait = ev.steady_data_wait_fraction()
    share = wait * (1 - 1 / batch)
    if share < MIN_SHARE:
        return None
    severity = severity_at(share, WAIT_WARNING, WAIT_PROBLEM) or "info"
    return Hit(severity, f"{loader.dataset_type} fetched one sample at a time: {wait:.0%} of each step waits for "
               f"{batch} single-row fetches and their stacking", share,
               {"dataset_type": loader.dataset_type, "batch_size": batch, "sampler_type": loader.sampler_type,
                "num_workers": loader.num_workers, "data_wait_fraction_steady": round(wait, 4),
                "upside_basis": "estimated"},
               f"The rows are already in memory as tensors, yet the DataLoader calls __getitem__ {batch} times a "
               "batch and default_collate stacks the rows again; indexing the tensors with the batch's indices "
               "does the same in one gather.",
               Fix("Fetch each batch with one index: pass a BatchSampler as the sampler and batch_size=None "
                   "(the dataset then receives a list of indices), or index the tensors with a shuffled "
                   "permutation's slices.",
                   "sampler = BatchSampler(RandomSampler(dataset), batch_size=1024, drop_last=False)\n"
                   "loader = DataLoader(dataset, sampler=sampler, batch_size=None)"))
