"""Healthy twin of problems/packed_sequence_lstm.py: the LSTM runs on the padded batch and the last valid output is gathered.

The problem it fixes: An LSTM fed PackedSequence batches of similar-length sequences.

Thread: "LSTM slow on PackedSequence",
https://github.com/pytorch/pytorch/issues/149194

Problem: every batch is packed with ``pack_padded_sequence`` before the LSTM
although the lengths barely differ; the packed path runs the recurrence per
time step over shrinking batches and is several times slower than the padded
path on a CPU.
Expected fix: run the LSTM on the padded batch and pick each sequence's last
valid output with its length (or bucket sequences by length).
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(16, 64, batch_first=True)
        self.out = nn.Linear(64, 4)

    def forward(self, x, lengths):
        out, _ = self.lstm(x)
        return self.out(out[torch.arange(len(x)), lengths - 1])


def main(steps=80):
    torch.manual_seed(0)
    model = Classifier()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        lengths = torch.randint(24, 31, (16,))
        x = torch.randn(16, 30, 16)
        y = (x[:, :5, 0].sum(1) > 0).long() + 2 * (lengths > 27).long()
        loss = F.cross_entropy(model(x, lengths), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 80)
