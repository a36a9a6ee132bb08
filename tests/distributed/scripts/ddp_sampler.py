"""DDP (gloo) over variable-length sequences, padded per batch, two short epochs per observation.

Default: a shuffling DistributedSampler without `set_epoch`, and rank 1's samples four times longer
than rank 0's (unbalanced batches). With --fixed: torchdoctor's LengthBucketingDistributedSampler
with `set_epoch`, over lengths shared by all ranks (balanced)."""
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler

from torchdoctor.distributed.sampler import LengthBucketingDistributedSampler

dist.init_process_group("gloo")
rank, fixed = dist.get_rank(), "--fixed" in sys.argv
generator = torch.Generator().manual_seed(0)
lengths = torch.randint(8, 128, (32,), generator=generator).tolist()
if not fixed and rank == 1:
    lengths = [4 * n for n in lengths]  # each rank builds its own dataset: rank 1's is longer
dataset = [torch.randn(n, 16, generator=generator) for n in lengths]


def pad(items):
    return torch.nn.utils.rnn.pad_sequence(items, batch_first=True)


if fixed:
    sampler = LengthBucketingDistributedSampler(lengths, 4)
    loader = DataLoader(dataset, batch_sampler=sampler, collate_fn=pad)
else:
    sampler = DistributedSampler(dataset, shuffle=True)
    loader = DataLoader(dataset, batch_size=4, sampler=sampler, collate_fn=pad)
model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
try:
    for epoch in range(20):
        if fixed:
            sampler.set_epoch(epoch)
        for batch in loader:
            optimizer.zero_grad()
            model(batch).mean().backward()
            optimizer.step()
finally:
    dist.destroy_process_group()
