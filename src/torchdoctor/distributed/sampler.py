"""A distributed batch sampler that keeps the ranks' per-step token counts even.

With variable-length samples (text, audio), `DistributedSampler` hands each rank random samples,
so in every step one rank gets the longest batch and the others wait for it at the gradient
all-reduce. `LengthBucketingDistributedSampler` gives all ranks samples of similar length in each
step and splits them so that each rank's summed length is as even as the samples allow.

torch ships no such sampler (`DistributedSampler` is length-blind; bucketing samplers in other
libraries are single-process or per-rank, so they even out lengths within a rank, not across
ranks), hence this one.

Each epoch, deterministically from `seed + epoch` (every rank computes the same plan):
1. shuffle all indices (unless `shuffle=False`), pad by repeating from the start so every rank
   gets the same number of full batches (or drop the tail with `drop_last`);
2. cut them into pools of `pool_steps` global steps, sort each pool by length, and cut the sorted
   pool into global steps of `batch_size x num_replicas` samples of similar length;
3. split each global step among the ranks greedily, longest sample first to the rank with the
   fewest tokens that still has room;
4. shuffle the order of the global steps, so that lengths do not rise steadily through the epoch.
Call `set_epoch(epoch)` before each epoch, as with `DistributedSampler`, or every epoch repeats.
"""

from __future__ import annotations

import heapq
from typing import Iterator, Sequence

import torch
from torch.utils.data import Sampler


class LengthBucketingDistributedSampler(Sampler[list[int]]):
    """Yields this rank's batches (lists of dataset indices); pass it as `DataLoader(batch_sampler=...)`."""

    def __init__(self, lengths: Sequence[int], batch_size: int, *, num_replicas: int | None = None,
                 rank: int | None = None, shuffle: bool = True, seed: int = 0, drop_last: bool = False,
                 pool_steps: int = 50) -> None:
        if num_replicas is None or rank is None:
            import torch.distributed as dist

            if not dist.is_available() or not dist.is_initialized():
                raise ValueError("pass num_replicas and rank, or initialise torch.distributed first")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if batch_size < 1 or pool_steps < 1 or not 0 <= rank < num_replicas:
            raise ValueError(f"need batch_size >= 1, pool_steps >= 1 and 0 <= rank < num_replicas; got "
                             f"batch_size={batch_size}, pool_steps={pool_steps}, rank={rank}, num_replicas={num_replicas}")
        if len(lengths) == 0:
            raise ValueError("lengths is empty: nothing to sample")
        self.lengths = [int(n) for n in lengths]
        self.batch_size, self.num_replicas, self.rank = batch_size, num_replicas, rank
        self.shuffle, self.seed, self.drop_last, self.pool_steps = shuffle, seed, drop_last, pool_steps
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        step = self.batch_size * self.num_replicas
        total = len(self.lengths)
        return total // step if self.drop_last else -(-total // step)

    def __iter__(self) -> Iterator[list[int]]:
        return iter([step[self.rank] for step in self.plan()])

    def plan(self) -> list[list[list[int]]]:
        """This epoch's global steps: for each, every rank's batch of indices (the same on all ranks)."""
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        order = self._ordered_indices(generator)
        step_size = self.batch_size * self.num_replicas
        pool_size = step_size * self.pool_steps
        steps = []
        for start in range(0, len(order), pool_size):
            pool = sorted(order[start:start + pool_size], key=lambda i: self.lengths[i], reverse=True)
            steps += [self._split(pool[s:s + step_size]) for s in range(0, len(pool), step_size)]
        if self.shuffle:
            steps = [steps[i] for i in torch.randperm(len(steps), generator=generator).tolist()]
        return steps

    def _ordered_indices(self, generator: torch.Generator) -> list[int]:
        total = len(self.lengths)
        order = torch.randperm(total, generator=generator).tolist() if self.shuffle else list(range(total))
        used = len(self) * self.batch_size * self.num_replicas
        if used <= total:
            return order[:used]
        repeats = -(-used // total)
        return (order * repeats)[:used]

    def _split(self, step: list[int]) -> list[list[int]]:
        """Longest first, each sample to the rank with the fewest tokens that has room."""
        batches: list[list[int]] = [[] for _ in range(self.num_replicas)]
        heap = [(0, r) for r in range(self.num_replicas)]
        for index in sorted(step, key=lambda i: self.lengths[i], reverse=True):
            tokens, r = heapq.heappop(heap)
            batches[r].append(index)
            if len(batches[r]) < self.batch_size:
                heapq.heappush(heap, (tokens + self.lengths[index], r))
        return batches
