"""A GRU written by hand from ``nn.Linear`` layers, stepped in a Python loop.

Thread: "Why my \"manual\" GRU is slower than nn.GRU?" (a GRU built from
six ``nn.Linear`` layers per layer and a Python loop over the sequence is
painfully slow next to ``nn.GRU``),
https://discuss.pytorch.org/t/why-my-manual-gru-is-slower-than-nn-gru/86461

Problem: the recurrence runs in Python: each of 60 time steps calls
six linear layers and a dozen element-wise ops, each a separate dispatch and
autograd node, where ``nn.GRU`` runs the same recurrence in one fused
library call.
Expected fix: use ``nn.GRU`` (the built-in, fused recurrent layer) instead
of the hand-written cell loop.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

IN, HID, SEQ = 32, 64, 60


class ManualGRU(nn.Module):
    def __init__(self):
        super().__init__()
        self.w_xz, self.w_hz = nn.Linear(IN, HID), nn.Linear(HID, HID, bias=False)
        self.w_xr, self.w_hr = nn.Linear(IN, HID), nn.Linear(HID, HID, bias=False)
        self.w_xn, self.w_hn = nn.Linear(IN, HID), nn.Linear(HID, HID, bias=False)

    def forward(self, x):
        h = torch.zeros(x.shape[0], HID)
        for t in range(x.shape[1]):
            xt = x[:, t]
            z = torch.sigmoid(self.w_xz(xt) + self.w_hz(h))
            r = torch.sigmoid(self.w_xr(xt) + self.w_hr(h))
            n = torch.tanh(self.w_xn(xt) + r * self.w_hn(h))
            h = (1 - z) * n + z * h
        return h


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = ManualGRU()
        self.head = nn.Linear(HID, 5)

    def forward(self, x):
        h = self.rnn(x)
        return self.head(h)


def main(steps=60):
    torch.manual_seed(0)
    model = Tagger()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(32, SEQ, IN)
        y = torch.randint(0, 5, (32,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
