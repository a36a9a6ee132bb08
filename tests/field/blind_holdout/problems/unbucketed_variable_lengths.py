"""Sequences of very different lengths batched at random, not bucketed by length.

Thread: "Bucketing of variable length sequences input for RNN" (padding
each batch to its longest sequence wastes computation when a batch mixes
short and long sequences; grouping similar lengths into the same batch cuts
the padding and improves training throughput),
https://codemia.io/knowledge-hub/path/bucketing_of_variable_length_sequences_input_for_rnn

Problem: sequences of 10 to 300 steps are shuffled into random
batches, so almost every batch holds one near-300-step sequence and the GRU
runs about twice as many padded time steps as the data needs.
Expected fix: bucket by length: a batch sampler that sorts indices by length,
cuts them into batches and shuffles the batch order each epoch (or
length-grouped sampling).
"""
import random
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader

BATCH = 32


def collate(batch):
    seqs, labels = zip(*batch)
    lengths = torch.tensor([len(s) for s in seqs])
    x = nn.utils.rnn.pad_sequence(seqs, batch_first=True)
    return x, lengths, torch.stack(labels)


def length_buckets(lengths, seed=0):
    """Batches of indices of similar length, in random order."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    batches = [order[i:i + BATCH] for i in range(0, len(order), BATCH)]
    random.Random(seed).shuffle(batches)
    return batches


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(16, 64, batch_first=True)
        self.head = nn.Linear(64, 2)

    def forward(self, x, lengths):
        out, _ = self.gru(x)
        last = out[torch.arange(len(x)), lengths - 1]
        return self.head(last)


def main(steps=40):
    torch.manual_seed(0)
    random.seed(0)
    lengths = [random.randint(10, 300) for _ in range(2000)]
    data = [(torch.randn(n, 16), torch.tensor(n % 2)) for n in lengths]
    loader = DataLoader(data, batch_size=BATCH, shuffle=True, collate_fn=collate)
    model = Classifier()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    times = []
    batches = iter(loader)
    for step in range(steps):
        t0 = time.perf_counter()
        x, n, y = next(batches)
        loss = F.cross_entropy(model(x, n), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 40)
