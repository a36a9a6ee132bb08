"""Healthy twin of problems/per_sample_loop_in_forward.py: the network is applied to the whole batch.

The problem it fixes: The model's forward loops over the samples of the batch in Python.

Thread: "What's the difference between the two operations in
back-propagation with pytorch?" (a for loop over the batch is much slower in
forward and backward than one batched operation),
https://stackoverflow.com/questions/53692237

Problem: ``forward`` applies the network to each sample separately and stacks
the results, so a batch of 64 costs 64 small forward and backward passes.
Expected fix: apply the layers to the whole batch at once (vectorise; use
``torch.vmap`` where a per-sample function is unavoidable).
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(40, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                                 nn.Linear(128, 3))

    def forward(self, x):
        return self.net(x)


def main(steps=80):
    torch.manual_seed(0)
    model = Scorer()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x_all = torch.randn(4096, 40)
    y_all = torch.randint(0, 3, (4096,))
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        idx = torch.randint(0, len(x_all), (64,))
        loss = F.cross_entropy(model(x_all[idx]), y_all[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 80)
