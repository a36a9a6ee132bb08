"""One ``backward(retain_graph=True)`` per output head instead of one backward.

Thread: "Considerable slowdown in Adam.step after a number of epochs with
multiple losses" (a model with several outputs accumulates its gradients by
calling ``loss.backward(retain_graph=True)`` once per output's loss before a
single ``optimizer.step()``),
https://github.com/pytorch/pytorch/issues/3863

Problem: the shared trunk feeds six heads and the loop calls
``loss_k.backward(retain_graph=True)`` for each head's loss, so the backward
pass through the whole trunk runs six times per step and the graph's buffers
are kept alive between the calls.
Expected fix: sum the losses and call ``backward()`` once
(``sum(losses).backward()``), without ``retain_graph``.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

HEADS = 6


class MultiTask(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                                   nn.Linear(512, 512), nn.ReLU())
        self.heads = nn.ModuleDict({f"task{i}": nn.Linear(512, 5) for i in range(HEADS)})

    def forward(self, x):
        h = self.trunk(x)
        return {name: head(h) for name, head in self.heads.items()}


def main(steps=60):
    torch.manual_seed(0)
    model = MultiTask()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(128, 128)
        targets = {f"task{i}": torch.randint(0, 5, (128,)) for i in range(HEADS)}
        outputs = model(x)
        opt.zero_grad()
        losses = [F.cross_entropy(out, targets[name]) for name, out in outputs.items()]
        for loss in losses:
            loss.backward(retain_graph=True)
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
